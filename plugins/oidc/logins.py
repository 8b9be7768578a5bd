"""A started sign-in: single-use, expiring, bound to the browser that started it.

Starting a sign-in makes a random ``state``, ``nonce`` and PKCE
``code_verifier``. The verifier and nonce stay on the server, in a row of
``oidc_logins`` keyed by SHA-256 of the state (the plain state is never
stored). The browser gets the state twice: in the provider's redirect and
in an HMAC-signed, expiring, HttpOnly cookie. The callback accepts a state
only when the cookie signs the same state (a callback URL replayed in
another browser fails: no login CSRF) and when it can delete the row (a
state works once, in whichever worker process receives the callback).

Starting also makes a random browser key for the landing (``landings.py``):
the browser gets it in a cookie, the row keeps its SHA-256
(``binding_hash``), and the callback binds the payload it hands out to it.
A sign-in a signed-in person starts to link their identity carries their
account and member id (``link_*``; no member id: the account holder): the
callback links, it does not look up. One started to prove an address for
another plugin (``decide_address_prover``) carries that plugin's purpose and
reference (``proof_*``): the callback hands the verified address over.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from ...api import derived_key, insert_statement

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

COOKIE_NAME = "orbchain_oidc"
_STATE = re.compile(r"[A-Za-z0-9_-]{1,128}")  # secrets.token_urlsafe
_EXPIRY = re.compile(r"[0-9]{1,12}")
_HEX_MAC = re.compile(r"[0-9a-f]{64}")
_KEY_COLUMN = {"oidc_landings": "landing_hash"}  # tables of keep_hashed


class PendingLogin(NamedTuple):
    state: str
    nonce: str
    code_verifier: str
    expires_at: int
    binding_hash: str  # SHA-256 of the browser key the landing cookie holds
    link: "LinkTarget | None" = None  # set when a signed-in person started this to link their identity
    proof: "AddressRequest | None" = None  # set when it proves an address for another plugin


class LinkTarget(NamedTuple):
    """Whom a started sign-in links the provider's identity to (``linking.py``): a member, or the holder (None)."""

    merchant_id: str
    member_id: str | None


class AddressRequest(NamedTuple):
    """What another plugin asked an address proof for (``decide_proven_address``): its purpose and reference."""

    purpose: str
    reference: str


def secret_hash(value: str) -> str:
    """SHA-256 hex of a random secret we issued: what the tables keep instead of the secret."""
    return hashlib.sha256(value.encode()).hexdigest()


def _cookie_key(gateway: "Gateway") -> bytes:
    # A key of this purpose only, the same in every worker: any worker can check the cookie.
    return derived_key(gateway, "oidc/login-state")


def _mac(gateway: "Gateway", state: str, expires_at: int) -> str:
    return hmac.new(_cookie_key(gateway), f"{state}.{expires_at}".encode(), hashlib.sha256).hexdigest()


def cookie_value(gateway: "Gateway", login: PendingLogin) -> str:
    return f"{login.state}.{login.expires_at}.{_mac(gateway, login.state, login.expires_at)}"


def cookie_matches(gateway: "Gateway", cookie: str | None, state: str) -> bool:
    """True when ``cookie`` is our unexpired signature of ``state`` (compared in constant time)."""
    if not cookie or cookie.count(".") != 2:
        return False
    signed_state, expires, mac = cookie.split(".")
    # The browser writes this cookie: ``isdigit`` passes "²" (then ``int`` raises) and compare_digest refuses
    # non-ASCII text, so anything but the shape we issue is simply not ours.
    if not (_STATE.fullmatch(signed_state) and _EXPIRY.fullmatch(expires) and _HEX_MAC.fullmatch(mac)):
        return False
    if int(expires) <= gateway.now():
        return False
    good_mac = hmac.compare_digest(mac.encode(), _mac(gateway, signed_state, int(expires)).encode())
    return good_mac and hmac.compare_digest(signed_state.encode(), state.encode("utf-8", "replace"))


async def keep_hashed(gateway: "Gateway", table: str, fields: Mapping[str, Any], ttl_seconds: int) -> str:
    """A new random secret, recorded as a row of ``table`` keyed by its hash: ``key`` (the hash) plus ``fields``.

    The row gets ``created_at`` now and ``expires_at`` ``ttl_seconds`` later;
    the table's expired rows are dropped first, so it stays small. ``key``
    is the table's first column (``landing_hash``, ``step_hash``).
    """
    now = gateway.now()
    secret = secrets.token_urlsafe(32)
    row = {_KEY_COLUMN[table]: secret_hash(secret), **fields, "created_at": now, "expires_at": now + ttl_seconds}
    await gateway.db.execute(f"DELETE FROM {table} WHERE expires_at <= :now", {"now": now})
    await gateway.db.execute(insert_statement(table, row), row)
    return secret


async def start(gateway: "Gateway", ttl_seconds: int, link: LinkTarget | None = None,
                proof: AddressRequest | None = None) -> tuple[PendingLogin, str]:
    """Record a new pending sign-in (and forget expired ones, so the table stays small).

    Returns the sign-in and the browser key for the landing cookie (only its hash is stored).
    """
    now = gateway.now()
    browser_key = secrets.token_urlsafe(32)
    login = PendingLogin(secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(48),
                         now + ttl_seconds, secret_hash(browser_key), link, proof)
    await gateway.db.execute("DELETE FROM oidc_logins WHERE expires_at <= :now", {"now": now})
    await gateway.db.execute(
        "INSERT INTO oidc_logins (state_hash, nonce, code_verifier, created_at, expires_at, binding_hash,"
        " link_merchant_id, link_member_id, proof_purpose, proof_reference)"
        " VALUES (:h, :nonce, :verifier, :now, :exp, :binding, :lm, :lmbr, :pp, :pr)",
        {"h": secret_hash(login.state), "nonce": login.nonce, "verifier": login.code_verifier, "now": now,
         "exp": login.expires_at, "binding": login.binding_hash, "lm": link.merchant_id if link else None,
         "lmbr": link.member_id if link else None, "pp": proof.purpose if proof else None,
         "pr": proof.reference if proof else None})
    return login, browser_key


async def consume(gateway: "Gateway", state: str) -> PendingLogin | None:
    """The pending sign-in of ``state``, deleted in the same statement; None when used, unknown or expired.

    ``DELETE ... RETURNING`` hands the row to exactly one caller, also when
    two workers receive the same callback at once.
    """
    row = await gateway.db.fetch_one(
        "DELETE FROM oidc_logins WHERE state_hash = :h"
        " RETURNING nonce, code_verifier, expires_at, binding_hash, link_merchant_id, link_member_id,"
        " proof_purpose, proof_reference", {"h": secret_hash(state)})
    if row is None or int(row["expires_at"]) <= gateway.now():
        return None
    link = LinkTarget(row["link_merchant_id"], row["link_member_id"]) if row["link_merchant_id"] else None
    proof = AddressRequest(row["proof_purpose"], row["proof_reference"] or "") if row["proof_purpose"] else None
    return PendingLogin(state, row["nonce"], row["code_verifier"], int(row["expires_at"]), row["binding_hash"], link,
                        proof)
