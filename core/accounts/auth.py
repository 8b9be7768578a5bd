"""Credentials: password hashes, API keys, dashboard JWTs and TOTP codes.

Nothing here is ever stored or logged in plaintext except what must be
readable later (a TOTP secret, to check codes). Passwords use scrypt, a
memory-hard KDF from the standard library, with the parameters inside the
hash string so they can be raised without breaking old hashes. API keys are
stored as a SHA-256 hash plus an 8-character prefix: a key is 32 random
bytes, so a fast hash is enough and lookup is one indexed equality.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Any, Mapping

import base58
import jwt
import pyotp

from ..infra.cpu_pool import CpuPool
from ..infra.db import Database
from ..types.errors import Unauthorized

# -- passwords -------------------------------------------------------------------

# 16 MiB of memory per hash (128 * r * n); about 50 ms on a current CPU.
SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
SCRYPT_DKLEN = 32
_SCRYPT_MAXMEM = 64 * 1024 * 1024


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=dklen, maxmem=_SCRYPT_MAXMEM)


def hash_password(password: str) -> str:
    """``scrypt$n$r$p$salt$hash``: a fresh random salt per call."""
    salt = secrets.token_bytes(16)
    derived = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_DKLEN)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(derived)}"


def verify_password(password: str, stored: str) -> bool:
    """True when ``password`` matches ``stored``; constant-time on the digest."""
    try:
        scheme, n, r, p, salt, expected = stored.split("$")
        if scheme != "scrypt":
            return False
        want = _unb64(expected)
        derived = _scrypt(password, _unb64(salt), int(n), int(r), int(p), len(want))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(derived, want)


def needs_rehash(stored: str) -> bool:
    """True when the hash uses weaker parameters than the current ones."""
    try:
        scheme, n, r, p, *_ = stored.split("$")
        return scheme != "scrypt" or (int(n), int(r), int(p)) < (SCRYPT_N, SCRYPT_R, SCRYPT_P)
    except ValueError:
        return True


_dummy_hash: str | None = None


def dummy_password_hash() -> str:
    """A hash to check unknown e-mails against, so they take as long as known ones (made on first use)."""
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = hash_password(secrets.token_urlsafe(16))
    return _dummy_hash


def _verify_or_dummy(password: str, stored: str | None) -> bool:
    return verify_password(password, dummy_password_hash() if stored is None else stored)


# scrypt holds a CPU for tens of milliseconds: it runs in the gateway's bounded pool (core/infra/cpu_pool.py),
# never on the event loop; a full pool answers 503 busy instead of queueing sign-ins without end.
async def hash_password_async(pool: CpuPool, password: str) -> str:
    return await pool.run(hash_password, password)


async def verify_password_async(pool: CpuPool, password: str, stored: str | None) -> bool:
    """``verify_password`` in ``pool``; ``stored`` None checks against the dummy hash (always False)."""
    return await pool.run(_verify_or_dummy, password, stored)


# -- API keys ----------------------------------------------------------------------

# A recognisable prefix per kind, so a leaked key can be spotted by scanners.
KEY_PREFIXES = {"merchant": "ok_m_", "payout": "ok_p_", "general": "ok_g_", "scoped": "ok_s_"}
LEGACY_KINDS = ("merchant", "payout", "general")
PREFIX_LENGTH = 8
SUFFIX_LENGTH = 8  # the visible tail of a masked legacy key (SPEC 4.9)

SCOPES = ("payment:create", "payment:read", "payout:create", "payout:read", "balance:read", "transfer:create")
# The core's scopes as the gateway's scope registry starts (plugins add theirs
# with ``register_scopes``); refund:create is held by legacy payout keys only.
CORE_SCOPE_DESCRIPTIONS: Mapping[str, str] = {
    "payment:create": "Create payments.",
    "payment:read": "Read payments, deposits and accepted coins.",
    "payout:create": "Create payouts.",
    "payout:read": "Read payouts.",
    "balance:read": "Read balances.",
    "transfer:create": "Send internal transfers.",
}
HOLDER_SCOPE = "account:credentials"
# Dashboard permissions that no API key holds (members_only): a team member needs them for the dashboard's
# writes that no key scope covers. The account holder's own session holds every scope.
MEMBER_SCOPE_DESCRIPTIONS: Mapping[str, str] = {
    "refund:create": "Refund payments.",
    "key:manage": "Create, rotate and revoke API keys.",
    "webhook:manage": "Send test events and redeliver webhooks.",
    "settings:manage": "Change account settings (and any dashboard write no other scope names).",
    "team:manage": "Invite, change and remove team members.",
    HOLDER_SCOPE: "Change the account holder's own credentials (password, 2FA, linked chats): no role grants it.",
}
# Not shown by the spec; chosen to match what each header "covers" in SPEC 5.1.
LEGACY_SCOPES: Mapping[str, frozenset[str]] = {
    "merchant": frozenset({"payment:create", "payment:read", "transfer:create"}),
    "payout": frozenset({"payout:create", "payout:read", "refund:create"}),
    "general": frozenset({"balance:read"}),
}
ROTATION_GRACE_SECONDS = 30 * 60


@dataclass(frozen=True)
class IssuedKey:
    """A freshly generated key: show ``plaintext`` once, store the rest."""

    plaintext: str
    prefix: str
    key_hash: str
    suffix: str = ""

    def __repr__(self) -> str:  # never let the plaintext reach a log line
        return f"<IssuedKey {self.prefix}...>"


def hash_api_key(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def generate_api_key(kind: str) -> IssuedKey:
    """32 random bytes in base58 behind the kind's prefix."""
    plaintext = KEY_PREFIXES[kind] + base58.b58encode(secrets.token_bytes(32)).decode()
    return IssuedKey(plaintext, plaintext[:PREFIX_LENGTH], hash_api_key(plaintext), plaintext[-SUFFIX_LENGTH:])


@dataclass(frozen=True)
class KeyMatch:
    """An ``api_keys`` row found by a presented key; ``previous_valid_until`` is set for a rotated-out secret,
    ``previous_issued_by`` names the person who held that secret."""

    row: Mapping[str, Any]
    via_previous: bool
    previous_valid_until: int | None = None
    previous_issued_by: str | None = None
    # What callers work out from ``row`` alone, kept with the match so it is worked out once per
    # cached match and dies with it (an invalidation or expiry drops the match, and this with it).
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def issued_by(self) -> str:
        """The person a request with this secret acts for: who created or last rotated the key, or, for a
        rotated-out secret in its grace, who held it (``api_keys.issued_by``, ``api_key_secrets.issued_by``)."""
        return self.previous_issued_by if self.via_previous and self.previous_issued_by else self.row["issued_by"]


_KEY_SELECT = "SELECT k.*, m.enabled AS merchant_enabled FROM api_keys k JOIN merchants m ON m.id = k.merchant_id"


async def find_api_key(db: Database, plaintext: str, cache: Any = None) -> KeyMatch | None:
    """Look a presented key up by its hash: the current secret, else a rotated-out one.

    Every rotated-out secret has its own row in ``api_key_secrets`` with its
    own grace expiry, so one key can have several secrets in grace at once.
    With ``cache`` (core/auth_cache.AuthCache) a found key is remembered by
    its hash; whether it may be used now (``key_problem``) is still decided
    per request, so expiry and grace ends need no invalidation.
    """
    if not plaintext or len(plaintext) > 200:
        return None
    digest = hash_api_key(plaintext)
    if cache is None:
        return await _find_by_digest(db, digest)
    match = cache.key(digest)
    if match is None:
        generation = cache.generation
        match = await _find_by_digest(db, digest)
        if match is not None:
            cache.put_key(digest, match, generation)
    return match


def cached_api_key(plaintext: str, cache: Any) -> KeyMatch | None:
    """``find_api_key``'s answer when ``cache`` holds it, without a coroutine (the usual case); else None."""
    if not plaintext or len(plaintext) > 200:
        return None
    return cache.key(hash_api_key(plaintext))


async def _find_by_digest(db: Database, digest: str) -> KeyMatch | None:
    row = await db.fetch_one(_KEY_SELECT + " WHERE k.key_hash = :h", {"h": digest})
    if row is not None:
        return KeyMatch(row, False)
    previous = await db.fetch_one("SELECT key_id, valid_until, issued_by FROM api_key_secrets WHERE key_hash = :h",
                                  {"h": digest})
    if previous is None:
        return None
    row = await db.fetch_one(_KEY_SELECT + " WHERE k.id = :id", {"id": previous["key_id"]})
    if row is None:
        return None
    return KeyMatch(row, True, int(previous["valid_until"]), previous["issued_by"])


def key_problem(match: KeyMatch, now: int) -> str | None:
    """Why a found key may not be used now, or None when it may."""
    row = match.row
    if row["revoked_at"] is not None:
        return "API key revoked"
    if row["expires_at"] is not None and row["expires_at"] <= now:
        return "API key expired"
    if match.via_previous and (match.previous_valid_until is None or match.previous_valid_until <= now):
        return "API key rotated"
    return None


LAST_USED_RESOLUTION = 60


async def touch_api_key(db: Database, key_id: str, last_used_at: int | None, now: int) -> None:
    """Record use at most once a minute per key, so reads do not become writes."""
    if last_used_at is not None and now - last_used_at < LAST_USED_RESOLUTION:
        return
    await db.execute(
        "UPDATE api_keys SET last_used_at = :now WHERE id = :id AND (last_used_at IS NULL OR last_used_at < :cut)",
        {"now": now, "id": key_id, "cut": now - LAST_USED_RESOLUTION + 1},
    )


# -- dashboard JWT ----------------------------------------------------------------------

JWT_ALGORITHM = "HS256"
JWT_AUDIENCE = "dashboard"  # keeps mini-app and link tokens out of the dashboard
JWT_LIFETIME_SECONDS = 24 * 3600
JTI_MAX_LENGTH = 64  # ours are 22 characters; a longer one was never issued here


def issue_dashboard_token(secret: bytes, merchant_id: str, token_version: int, now: int,
                          member_id: str | None = None) -> str:
    """A token with its own id (``jti``), so it can be revoked alone (core/accounts/jwt_revocation.py).

    ``member_id`` (claim ``mbr``) makes it a team member's session on the account: its
    scopes are resolved on every request (``decide_member``), never carried in the token.
    """
    claims: dict[str, Any] = {
        "sub": merchant_id,
        "aud": JWT_AUDIENCE,
        "iat": now,
        "exp": now + JWT_LIFETIME_SECONDS,
        "tv": token_version,
        "jti": secrets.token_urlsafe(16),
    }
    if member_id is not None:
        claims["mbr"] = member_id
    return jwt.encode(claims, secret, algorithm=JWT_ALGORITHM)


def decode_dashboard_token(secret: bytes, token: str, now: int) -> dict[str, Any]:
    """The claims of a valid, unexpired dashboard token, else ``Unauthorized``.

    Expiry is checked against the gateway clock (``now``), not the wall
    clock inside pyjwt, so tests and the rest of the gateway agree on time.
    ``jti`` may be absent (tokens issued before they had one) but, when
    present, must be a short string. Revocation is checked by the caller.
    """
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[JWT_ALGORITHM],
            audience=JWT_AUDIENCE,
            options={"require": ["sub", "exp", "iat", "aud"], "verify_exp": False, "verify_iat": False},
        )
    except jwt.PyJWTError:
        raise Unauthorized("invalid token") from None
    exp, version, jti = claims.get("exp"), claims.get("tv", 0), claims.get("jti", "-")
    if not isinstance(exp, int) or exp <= now or not isinstance(claims["sub"], str) or not isinstance(version, int):
        raise Unauthorized("invalid token")
    if not isinstance(jti, str) or not 0 < len(jti) <= JTI_MAX_LENGTH:
        raise Unauthorized("invalid token")
    member = claims.get("mbr")
    if member is not None and (not isinstance(member, str) or not 0 < len(member) <= JTI_MAX_LENGTH):
        raise Unauthorized("invalid token")
    return claims


# -- TOTP ---------------------------------------------------------------------------------

TOTP_ISSUER = "Orbchain"
TOTP_STEP_SECONDS = 30
TOTP_VALID_WINDOW = 1  # one step either side, for clock drift


def new_totp_secret() -> str:
    return pyotp.random_base32(32)


def totp_provisioning_uri(secret: str, account_name: str) -> str:
    return pyotp.TOTP(secret).provisioning_uri(name=account_name, issuer_name=TOTP_ISSUER)


def normalize_totp_code(value: Any) -> str | None:
    """Six digits as text, or None. Numbers are accepted and zero-padded."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and 0 <= value < 10**6:
        return f"{value:06d}"
    if isinstance(value, str):
        text = value.strip().replace(" ", "")
        if len(text) == 6 and text.isascii() and text.isdigit():
            return text
    return None


def matching_totp_step(secret: str, code: str, now: int) -> int | None:
    """The time-step whose code equals ``code`` (within the drift window), or None."""
    totp = pyotp.TOTP(secret)
    current = now // TOTP_STEP_SECONDS
    found = None
    # Check every candidate step so timing does not reveal which one matched.
    for step in range(current - TOTP_VALID_WINDOW, current + TOTP_VALID_WINDOW + 1):
        if hmac.compare_digest(totp.at(step * TOTP_STEP_SECONDS), code):
            found = step if found is None else found
    return found
