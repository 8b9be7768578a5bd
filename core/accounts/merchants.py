"""Merchant accounts: sign-up, sign-in, settings and two-factor.

Scoped API keys live in ``api_keys.py``.

Service functions take the :class:`Gateway` (config, db, coins, secrets,
clock) and raise :mod:`orbchain.core.types.errors`; the dashboard routes only
parse and shape. Secrets shown once (API keys, webhook secret) are returned
to the caller and never logged.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import dataclass
from types import MappingProxyType
from decimal import Decimal
from typing import Any, Mapping, Sequence

from . import auth, lockout, recovery_codes, security_events
from .totp_codes import check_stored_code
from .sign_in_factor import check_sign_in_code, second_factor_due
from .key_powers import KeyIssuer, check_may_rotate_legacy, confirm_issuer, lock_account_keys
from . import settlement
from .auth_cache import changed as auth_changed
from .auth_cache import remembered
from ..infra.db import Database, Row, is_unique_violation
from ..types.errors import (
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    ServiceUnavailable,
    Unauthorized,
    ValidationError,
)
from ..infra.netguard import UnsafeUrl, check_public_url
from ..types.pages import MAX_BRAND_NAME_LENGTH as MAX_DISPLAY_NAME  # shown where a brand's name would be
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

ACCOUNT_ID_PREFIX = "ORB"  # the brand-specific prefix of public account ids (SPEC 2.12)
ACCOUNT_ID_BODY_LENGTH = 20
BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
KEY_ACCOUNT_COUNTER = "merchant_key_account"
MAX_KEY_ACCOUNT = 2**31 - 1  # hardened BIP-32 indices stop here
MAX_CONFIRMATIONS = 1000


def new_merchant_id() -> str:
    return "mer_" + secrets.token_hex(12)


def new_account_id() -> str:
    body = "".join(secrets.choice(BASE58_ALPHABET) for _ in range(ACCOUNT_ID_BODY_LENGTH))
    return f"{ACCOUNT_ID_PREFIX}-{body}"


def normalize_email(email: str) -> str:
    # Stored lower-cased, so the UNIQUE column is case-insensitive on both databases.
    return email.strip().lower()


def _json(value: Any, default: Any) -> Any:
    if value is None or value == "":
        return default
    return json.loads(value) if isinstance(value, str) else value


def legacy_key_id(kind: str, merchant_id: str) -> str:
    return f"legacy_{kind}_{merchant_id}"


def legacy_kind_of(key_id: str) -> str:
    """The kind (merchant, payout, general) of the legacy key ``legacy_key_id`` named ``key_id``."""
    return key_id.split("_", 2)[1]


# -- records --------------------------------------------------------------------------


async def get_merchant(db: Database, merchant_id: str) -> Row | None:
    return await db.fetch_one("SELECT * FROM merchants WHERE id = :id", {"id": merchant_id})


async def require_merchant(db: Database, merchant_id: str) -> Row:
    row = await get_merchant(db, merchant_id)
    if row is None:
        raise NotFound()
    return row


async def find_by_email(db: Database, email: str) -> Row | None:
    return await db.fetch_one("SELECT * FROM merchants WHERE email = :e", {"e": normalize_email(email)})


async def merchant_for_payments(gateway: Gateway, merchant_id: str) -> Mapping[str, Any]:
    """The merchant row a payment creation reads (accepted coins, key account...), cached per process.

    Read on every create; changed rarely. Settings changes (``_update``)
    answer only after every process has dropped its copy (``auth_changed``),
    and on PostgreSQL any other change to ``merchants``, however made, is
    NOTIFYed by a trigger (migration m0017), as for credentials
    (core/accounts/auth_cache.py). The row is shared: it comes read-only.
    """

    async def load() -> Mapping[str, Any]:
        return MappingProxyType(await require_merchant(gateway.db, merchant_id))  # unknown: 404, not cached

    return await remembered(gateway, "merchant_rows", merchant_id, load)


async def find_by_account_id(db: Database, account_id: str) -> Row | None:
    """The merchant behind a public account id (transfers, tips, referrals)."""
    if not isinstance(account_id, str) or len(account_id) > 64:
        return None
    return await db.fetch_one("SELECT * FROM merchants WHERE account_id = :a", {"a": account_id})


def effective_fee_percent(gateway: Gateway, row: Row) -> str:
    """The merchant's own rate, else the operator default, as a decimal string."""
    return str(Decimal(row["fee_percent"] or gateway.config.fees.default_fee_percent))


def accepted_coins(row: Row) -> list[str]:
    return list(_json(row["accepted_coins"], []))


def effective_confirmations(gateway: Gateway, row: Row) -> dict[str, int]:
    """Threshold per accepted coin: the merchant's setting, else the coin default."""
    overrides = _json(row["confirmations"], {})
    result = {}
    for symbol in accepted_coins(row):
        coin = gateway.coins.get(symbol)
        if coin is not None:
            result[symbol] = max(int(overrides.get(symbol, coin.default_threshold)), coin.confirmations)
    return result


def account_view(gateway: Gateway, row: Row) -> dict[str, Any]:
    """SPEC 2.15; never carries a hash or a secret."""
    return {
        "id": row["id"],
        "account_id": row["account_id"],
        "email": row["email"],
        "webhook_url": row["webhook_url"],
        "fee_percent": effective_fee_percent(gateway, row),
        "accepted_coins": accepted_coins(row),
        "confirmations": effective_confirmations(gateway, row),
        "totp_enabled": bool(row["totp_enabled"]),
        "enabled": bool(row["enabled"]),
        "created_at": row["created_at"],
        "default_settlement_coin": row["default_settlement_coin"],
        "customer_static_mode": bool(row["customer_static_mode"]),
    }


# -- sign-up and sign-in ------------------------------------------------------------------


@dataclass(frozen=True)
class SignupResult:
    merchant_id: str
    email: str
    token: str
    api_keys: Mapping[str, str]  # header name -> plaintext, shown once

    def __repr__(self) -> str:
        return f"<SignupResult {self.merchant_id}>"


async def next_key_account(db: Database) -> int:
    """The next hardened HD account index; call inside the sign-up transaction."""
    await db.execute(
        "INSERT INTO counters (name, value) VALUES (:n, 0) ON CONFLICT (name) DO NOTHING", {"n": KEY_ACCOUNT_COUNTER}
    )
    value = await db.fetch_val(
        "UPDATE counters SET value = value + 1 WHERE name = :n RETURNING value", {"n": KEY_ACCOUNT_COUNTER}
    )
    if value is None or int(value) > MAX_KEY_ACCOUNT:
        raise ServiceUnavailable("no merchant accounts left on this deployment")
    return int(value)


async def _insert_key(db: Database, *, key_id: str, merchant_id: str, kind: str, issued: auth.IssuedKey,
                      now: int, **extra: Any) -> None:
    columns = {
        "id": key_id, "merchant_id": merchant_id, "kind": kind, "prefix": issued.prefix,
        "suffix": issued.suffix, "key_hash": issued.key_hash, "created_at": now, **extra,
    }
    names = ", ".join(columns)
    params = ", ".join(f":{name}" for name in columns)
    await db.execute(f"INSERT INTO api_keys ({names}) VALUES ({params})", columns)


# Stored for accounts created through an identity provider: no scrypt hash has
# this shape, so ``auth.verify_password`` is False for every password.
NO_PASSWORD = "!no-password"


async def sign_up(gateway: Gateway, email: str, password: str | None, ref: str | None = None) -> SignupResult:
    """Create a merchant with its three legacy keys; 409 when the e-mail is taken (a team member's too:
    one e-mail signs in to one place).

    ``password`` None creates an account that cannot sign in with a password
    (identity-provider sign-in, ``services.create_account``).
    """
    db, email = gateway.db, normalize_email(email)
    if await db.fetch_val("SELECT 1 FROM merchants WHERE email = :e", {"e": email}) or (
            await gateway.hooks.decide_member_login(email=email) is not None):
        raise Conflict("email already registered")
    password_hash = NO_PASSWORD if password is None else await auth.hash_password_async(gateway.cpu, password)
    referrer = await find_by_account_id(db, ref) if ref else None
    merchant_id, now = new_merchant_id(), gateway.now()
    issued = {kind: auth.generate_api_key(kind) for kind in auth.LEGACY_KINDS}
    try:
        async with db.transaction():
            key_account = await next_key_account(db)
            await db.execute(
                "INSERT INTO merchants (id, account_id, email, password_hash, key_account, accepted_coins,"
                " confirmations, referrer_id, created_at, updated_at)"
                " VALUES (:id, :aid, :email, :pw, :ka, :coins, '{}', :ref, :now, :now)",
                {"id": merchant_id, "aid": new_account_id(), "email": email, "pw": password_hash, "ka": key_account,
                 "coins": json.dumps(gateway.coins.default_accepted()), "ref": referrer["id"] if referrer else None,
                 "now": now},
            )
            for kind, key in issued.items():
                await _insert_key(db, key_id=legacy_key_id(kind, merchant_id), merchant_id=merchant_id, kind=kind,
                                  issued=key, now=now, label=f"{kind}_api_key", is_legacy=True,
                                  scopes=json.dumps(sorted(auth.LEGACY_SCOPES[kind])))
    except Exception as exc:
        if is_unique_violation(exc) and await db.fetch_val("SELECT 1 FROM merchants WHERE email = :e", {"e": email}):
            raise Conflict("email already registered") from None
        raise
    log.info("merchant %s signed up", merchant_id)
    token = auth.issue_dashboard_token(gateway.require_secrets().jwt_secret, merchant_id, 0, now)
    keys = {f"{kind}_api_key": key.plaintext for kind, key in issued.items()}
    return SignupResult(merchant_id, email, token, keys)


async def _count_password_check(gateway: Gateway, email: str, row: Row | None, message: str, *,
                                challenged: bool = False) -> None:
    """Count a password check against the e-mail's sign-in lockout; 429 ``message`` while it is locked.

    The check that starts a lock is announced once to the account holder
    (``sign_in_locked``, an alert): a burst of wrong passwords, whoever sent them.
    ``challenged``: this request passed a plugin's human challenge (a
    captcha, ``decide_sign_in_challenge``), which then stands in for the
    lock: the password is checked rather than refused, so ten wrong
    passwords from anyone do not lock the person out (issue 42).
    """
    found = await lockout.count_attempt(gateway.db, lockout.LOGIN_POLICY, email, gateway.now())
    if found.newly_locked and row is not None:
        await security_events.announce(gateway, row["id"], security_events.SIGN_IN_LOCKED, {
            "failures": lockout.LOGIN_POLICY.max_failures, "locked_minutes": lockout.LOGIN_POLICY.lock_seconds // 60,
            "then": "challenge" if challenged else "refused"}, alert=True)
    if found.locked_seconds and not challenged:
        raise lockout.LockedOut(message, found.locked_seconds)


async def log_in(gateway: Gateway, email: str, password: str, totp_code: Any = None, *,
                 challenged: bool = False) -> tuple[Row, str]:
    """The merchant row and a fresh token; one message for any wrong credential.

    An e-mail no account holder has may be a team member's (``decide_member_login``):
    the same lockout, timing and message, and a member session on their account.
    Whoever has their own 2FA on also gives ``totp_code`` (a fresh code or a
    recovery code): 401 ``totp_required`` (``SecondFactorRequired``, carrying
    who owes it) until they do, only once the password was right.
    ``challenged``: see ``_count_password_check``.
    """
    db = gateway.db
    email = normalize_email(email)
    row = await db.fetch_one("SELECT * FROM merchants WHERE email = :e", {"e": email})
    member = None
    if row is None:
        member = await gateway.hooks.decide_member_login(email=email)
        if member is not None:
            row = await get_merchant(db, member.merchant_id)
    # Counted per e-mail whether or not an account has it (lockout.LOGIN_POLICY).
    await _count_password_check(gateway, email, row, "too many failed sign-ins; try again later",
                                challenged=challenged)
    # Unknown e-mails still pay for one scrypt, so timing does not reveal accounts.
    # Accounts without a password (identity-provider sign-in) take the same path.
    stored_hash = member.password_hash if member is not None else row["password_hash"] if row is not None else None
    has_password = stored_hash is not None and stored_hash != NO_PASSWORD
    ok = await auth.verify_password_async(gateway.cpu, password, stored_hash if has_password else None)
    if row is None or not has_password or not ok:
        raise Unauthorized("invalid credentials")
    await lockout.succeeded(db, lockout.LOGIN_POLICY, email)
    if not row["enabled"]:
        raise Forbidden("account disabled", code="merchant_disabled")
    member_id = member.member_id if member is not None else None
    details = {"method": "password"}
    due = await second_factor_due(gateway, row["id"], member_id, email)
    if due is not None:
        details["second_factor"] = await check_sign_in_code(gateway, due, totp_code, method="password")
    if member is None and auth.needs_rehash(row["password_hash"]):
        await db.execute("UPDATE merchants SET password_hash = :pw WHERE id = :id",
                         {"pw": await auth.hash_password_async(gateway.cpu, password), "id": row["id"]})
    await security_events.announce(gateway, row["id"], security_events.SIGN_IN, details,
                                   actor=f"member {email}" if member is not None else None)
    return row, dashboard_token(gateway, row, member_id)


def dashboard_token(gateway: Gateway, row: Row, member_id: str | None = None) -> str:
    """A fresh 24-hour dashboard JWT for the merchant ``row`` (bound to its token version), a member's with an id."""
    secret = gateway.require_secrets().jwt_secret
    return auth.issue_dashboard_token(secret, row["id"], row["token_version"], gateway.now(), member_id)


async def check_password(gateway: Gateway, row: Row, password: str) -> None:
    """401 "wrong password" unless ``password`` is the account's (``row``); 429 while sign-in is locked.

    A stolen session must not turn a password prompt into a password oracle:
    every check counts against the same per-e-mail lockout as sign-in.
    """
    await _count_password_check(gateway, row["email"], row, "too many failed password checks; try again later")
    if not await auth.verify_password_async(gateway.cpu, password, row["password_hash"]):
        raise Unauthorized("wrong password")
    await lockout.succeeded(gateway.db, lockout.LOGIN_POLICY, row["email"])


async def change_password(gateway: Gateway, merchant_id: str, current: str, new: str) -> str:
    """Replace the password and invalidate every older token; returns a fresh one."""
    db = gateway.db
    row = await require_merchant(db, merchant_id)
    await check_password(gateway, row, current)
    new_hash = await auth.hash_password_async(gateway.cpu, new)
    async with db.transaction():
        version = await db.fetch_val(
            "UPDATE merchants SET password_hash = :pw, token_version = token_version + 1, updated_at = :now"
            " WHERE id = :id RETURNING token_version",
            {"pw": new_hash, "now": gateway.now(), "id": merchant_id},
        )
    await auth_changed(gateway)  # older tokens die in every process at once (core/accounts/auth_cache.py)
    log.info("merchant %s changed password", merchant_id)
    await security_events.announce(gateway, merchant_id, security_events.PASSWORD_CHANGED)
    return auth.issue_dashboard_token(gateway.require_secrets().jwt_secret, merchant_id, int(version), gateway.now())


async def rotate_legacy_key(gateway: Gateway, merchant_id: str, kind: str, *, issuer: KeyIssuer) -> str:
    """A new plaintext for a legacy key, now ``issuer``'s; the old value stops working at once.

    403 unless ``issuer`` may (``check_may_rotate_legacy``: the payout key is the holder's alone, any other
    needs its scopes). Rotating a key revoked with a departing member brings it back for its new issuer.
    """
    issued = auth.generate_api_key(kind)
    async with gateway.db.transaction():
        await lock_account_keys(gateway, merchant_id)
        check_may_rotate_legacy(gateway, await confirm_issuer(gateway, merchant_id, issuer), kind)
        await gateway.db.execute(
            "UPDATE api_keys SET key_hash = :h, prefix = :p, suffix = :s, previous_hash = NULL,"
            " previous_valid_until = NULL, last_used_at = NULL, revoked_at = NULL, issued_by = :by"
            " WHERE id = :id AND merchant_id = :m",
            {"h": issued.key_hash, "p": issued.prefix, "s": issued.suffix, "id": legacy_key_id(kind, merchant_id),
             "m": merchant_id, "by": issuer.person},
        )
    await auth_changed(gateway)
    log.info("merchant %s rotated its %s key", merchant_id, kind)
    await security_events.announce(gateway, merchant_id, security_events.API_KEY_ROTATED,
                                   {"key_id": legacy_key_id(kind, merchant_id), "label": f"{kind}_api_key",
                                    "issued_by": issuer.person})
    return issued.plaintext


# -- settings -------------------------------------------------------------------------------


async def _update(gateway: Gateway, merchant_id: str, assignments: str, values: Mapping[str, Any]) -> Row:
    await gateway.db.execute(
        f"UPDATE merchants SET {assignments}, updated_at = :now WHERE id = :id",
        {**values, "now": gateway.now(), "id": merchant_id},
    )
    # Payment creation reads settings from a per-process cache (merchant_for_payments):
    # answer once no process holds the old row. Inside a transaction the caller
    # does this after its commit (the other processes must see the new row).
    if not gateway.db.in_transaction:
        await auth_changed(gateway)
    return await require_merchant(gateway.db, merchant_id)


async def check_webhook_url(gateway: Gateway, url: str, field: str = "webhook_url") -> str:
    """The URL if it is public http(s), else a validation error naming ``field``."""
    try:
        await check_public_url(url, allow_private=gateway.config.webhooks.allow_private_urls)
    except UnsafeUrl as exc:
        raise ValidationError({field: str(exc)}) from None
    return url.strip()


def new_webhook_secret() -> str:
    return secrets.token_hex(32)


async def set_webhook(gateway: Gateway, merchant_id: str, url: str, rotate_secret: bool = False) -> dict[str, Any]:
    """Save the webhook URL; a secret is created the first time or on request (shown once)."""
    url = await check_webhook_url(gateway, url)
    row = await require_merchant(gateway.db, merchant_id)
    result: dict[str, Any] = {"webhook_url": url}
    if rotate_secret or not row["webhook_secret"]:
        secret = new_webhook_secret()
        await _update(gateway, merchant_id, "webhook_url = :u, webhook_secret = :s", {"u": url, "s": secret})
        result["webhook_secret"] = secret
    else:
        await _update(gateway, merchant_id, "webhook_url = :u", {"u": url})
    return result


async def webhook_target(db: Database, merchant_id: str, key_id: str | None = None) -> tuple[str, str] | None:
    """``(url, secret)`` to deliver a merchant's webhook to, or None when it cannot be signed.

    A scoped key's own URL (and secret, if it has one) wins over the account's.
    The engine must refuse to send when this is None (SPEC 6.2).
    """
    row = await get_merchant(db, merchant_id)
    if row is None:
        return None
    url, secret = row["webhook_url"], row["webhook_secret"]
    if key_id:
        key = await db.fetch_one("SELECT webhook_url, webhook_secret FROM api_keys WHERE id = :id AND merchant_id = :m",
                                 {"id": key_id, "m": merchant_id})
        if key is not None and key["webhook_url"]:
            url, secret = key["webhook_url"], key["webhook_secret"] or secret
    return (url, secret) if url and secret else None


async def set_accepted_coins(gateway: Gateway, merchant_id: str, coins: Sequence[str]) -> Row:
    row = await require_merchant(gateway.db, merchant_id)
    clean: list[str] = []
    for symbol in coins:
        coin = gateway.coins.get(symbol)
        if coin is None or not coin.receivable:
            raise ValidationError({"accepted_coins": f"{symbol} is not a supported coin"})
        if not settlement.settles(gateway, row, coin):
            raise ValidationError({"accepted_coins": f"{symbol} requires a non-{symbol} default_settlement_coin"})
        if symbol not in clean:
            clean.append(symbol)
    if not clean:
        raise ValidationError({"accepted_coins": "must have at least 1 item(s)"})
    return await _update(gateway, merchant_id, "accepted_coins = :c", {"c": json.dumps(clean)})


async def set_default_settlement_coin(gateway: Gateway, merchant_id: str, symbol: str | None) -> Row:
    """The account's ``default_settlement_coin`` (SPEC 2.7); the caller validated the symbol (None clears it).

    Core data the core never interprets: the settling plugin reads it back
    when asked ``decide_settlement_coin`` (docs/decisions.md, issue 30).
    """
    return await _update(gateway, merchant_id, "default_settlement_coin = :c", {"c": symbol})


async def set_confirmations(gateway: Gateway, merchant_id: str, thresholds: Mapping[str, Any]) -> Row:
    """Merge per-coin thresholds into the account; never below the coin's floor."""
    errors: dict[str, str] = {}
    clean: dict[str, int] = {}
    for symbol, value in thresholds.items():
        coin = gateway.coins.get(symbol)
        if coin is None:
            errors[symbol] = "is not a supported coin"
            continue
        if coin.default_threshold == 0:
            errors[symbol] = "has no confirmation threshold"
            continue
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)) or value != int(value):
            errors[symbol] = "must be an integer"
        elif value < coin.confirmations:
            errors[symbol] = f"must be at least {coin.confirmations}"
        elif value > MAX_CONFIRMATIONS:
            errors[symbol] = f"must be at most {MAX_CONFIRMATIONS}"
        else:
            clean[symbol] = int(value)
    if not thresholds:
        errors["confirmations"] = "must name at least one coin"
    if errors:
        raise ValidationError(errors)
    async with gateway.db.transaction():
        row = await gateway.db.fetch_one(
            "SELECT confirmations FROM merchants WHERE id = :id" + gateway.db.for_update, {"id": merchant_id})
        if row is None:
            raise NotFound()
        merged = {**_json(row["confirmations"], {}), **clean}
        updated = await _update(gateway, merchant_id, "confirmations = :c", {"c": json.dumps(merged, sort_keys=True)})
    await auth_changed(gateway)  # committed now: see _update
    return updated


async def set_display_name(gateway: Gateway, merchant_id: str, name: str | None) -> Row:
    """The name payers see on the hosted pages (a brand's own name wins); empty clears it."""
    name = (name or "").strip() or None
    if name is not None and len(name) > MAX_DISPLAY_NAME:
        raise ValidationError({"display_name": f"must be at most {MAX_DISPLAY_NAME} characters"})
    return await _update(gateway, merchant_id, "display_name = :n", {"n": name})


async def set_customer_static_mode(gateway: Gateway, merchant_id: str, enabled: bool) -> Row:
    return await _update(gateway, merchant_id, "customer_static_mode = :e", {"e": bool(enabled)})


# -- two-factor (TOTP) ------------------------------------------------------------------------


async def start_totp_setup(gateway: Gateway, merchant_id: str) -> tuple[str, str]:
    """A new pending secret and its otpauth URL; MFA stays off until verified."""
    row = await require_merchant(gateway.db, merchant_id)
    if row["totp_enabled"]:
        raise InvalidRequest("two-factor authentication is already enabled; disable it first")
    secret = auth.new_totp_secret()
    await _update(gateway, merchant_id, "totp_secret = :s, totp_last_step = NULL", {"s": secret})
    return secret, auth.totp_provisioning_uri(secret, row["email"])


async def verify_totp(db: Database, merchant_id: str, code: Any, *, now: int, pending: bool = False,
                      channel: str = lockout.DASHBOARD_CHANNEL) -> bool:
    """True when ``code`` is valid now and was not used before (replay guard).

    Step-up checks (transfers, payouts) call this with the default
    ``pending=False``: it then requires MFA to be enabled. The accepted
    time-step is stored, so a code (or an older one) cannot be used again.
    Past ``lockout.totp_policy(channel)`` failures it raises ``LockedOut``
    (429) for every code, right or wrong, until the lockout ends; each
    ``channel`` (the dashboard's, or a plugin client's such as the mini-app)
    counts and locks on its own.
    """
    return await check_stored_code(db, "merchants", merchant_id, code, now=now, pending=pending, channel=channel)


async def enable_totp(gateway: Gateway, merchant_id: str, code: Any, *,
                      via: str = lockout.DASHBOARD_CHANNEL) -> list[str]:
    """Turn 2FA on with a first code; the new recovery codes (show them once). ``via`` is the channel asking
    (its own TOTP lockout); turned on anywhere but the dashboard, the dashboard is alerted (a ``totp_enabled``
    event with ``alert``)."""
    row = await require_merchant(gateway.db, merchant_id)
    if row["totp_enabled"]:
        raise InvalidRequest("two-factor authentication is already enabled")
    if not row["totp_secret"]:
        raise Forbidden("run MFA setup first", code="totp_setup_required")
    if not await verify_totp(gateway.db, merchant_id, code, now=gateway.now(), pending=True, channel=via):
        raise Unauthorized("invalid TOTP code", code="totp_invalid")
    async with gateway.db.transaction():
        await _update(gateway, merchant_id, "totp_enabled = :t", {"t": True})
        codes = await recovery_codes.issue(gateway.db, merchant_id, merchant_id, gateway.now())
    await auth_changed(gateway)  # committed now: see _update
    log.info("merchant %s enabled two-factor authentication", merchant_id)
    await security_events.announce(gateway, merchant_id, security_events.TOTP_ENABLED, {"via": via},
                                   alert=via != lockout.DASHBOARD_CHANNEL)
    return codes


async def disable_totp(gateway: Gateway, merchant_id: str, code: Any, *,
                       via: str = lockout.DASHBOARD_CHANNEL) -> None:
    row = await require_merchant(gateway.db, merchant_id)
    if not row["totp_enabled"]:
        raise Forbidden("two-factor authentication is not enabled", code="totp_setup_required")
    if not await verify_totp(gateway.db, merchant_id, code, now=gateway.now(), channel=via):
        raise Unauthorized("invalid TOTP code", code="totp_invalid")
    async with gateway.db.transaction():
        await _update(gateway, merchant_id, "totp_enabled = :t, totp_secret = NULL", {"t": False})
        await recovery_codes.forget(gateway.db, merchant_id)
    await auth_changed(gateway)  # committed now: see _update
    log.info("merchant %s disabled two-factor authentication", merchant_id)
    await security_events.announce(gateway, merchant_id, security_events.TOTP_DISABLED, {"via": via},
                                   alert=via != lockout.DASHBOARD_CHANNEL)


async def confirm_account_holder(gateway: Gateway, merchant_id: str, *, password: Any = None,
                                 totp_code: Any = None) -> None:
    """The account holder proves it is them again before something is bound to the account (a chat).

    With 2FA on a fresh TOTP code (``totp_code``), else the password. 400
    validation naming the missing field (nothing counted); 401 "wrong
    password" or ``totp_invalid``, counted like every other check (the
    sign-in lockout per e-mail, the dashboard's TOTP lockout); 429 while
    locked; 403 ``password_not_set`` for an account without a password
    (identity-provider sign-in) and without 2FA: it confirms with a code
    once 2FA is on.
    """
    row = await require_merchant(gateway.db, merchant_id)
    if row["totp_enabled"]:
        if totp_code in (None, ""):
            raise ValidationError({"totp_code": "is required: two-factor authentication is on, so enter the"
                                                " 6-digit code from your authenticator app"})
        if auth.normalize_totp_code(totp_code) is None:
            raise ValidationError({"totp_code": "must be a 6-digit code"})
        if not await verify_totp(gateway.db, merchant_id, totp_code, now=gateway.now()):
            raise Unauthorized("invalid TOTP code", code="totp_invalid")
        return
    if row["password_hash"] == NO_PASSWORD:
        raise Forbidden("this account has no password (it signs in through an identity provider): turn on"
                        " two-factor authentication first, then confirm with a code", code="password_not_set")
    if password in (None, ""):
        raise ValidationError({"password": "is required: enter your account password to confirm"})
    if not isinstance(password, str) or len(password) > 1024:
        raise ValidationError({"password": "must be a string of at most 1024 characters"})
    await check_password(gateway, row, password)
