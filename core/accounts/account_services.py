"""Core services for signing in and guarding an account: sessions, re-authentication, revocation.

Why its own module: identity-provider and chat-link plugins sign merchants in and bind things to
an account; what they may do to an account's security is all here, announced like the core's own.

Records, never rows: plugins reach these through ``orbchain.api`` (docs/plugins.md, "Core services").
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from . import auth, merchants as accounts, jwt_revocation, security_events
from .sign_in_factor import SecondFactorRequired, second_factor_due
from ..types.errors import Forbidden
from ..contract.gateway import PluginGateway as Gateway


class AccountRecord(NamedTuple):
    """A merchant's sign-in identity: the (lower-cased) e-mail and whether the account may sign in."""

    merchant_id: str
    email: str
    enabled: bool


class AccountSession(NamedTuple):
    """A signed-in merchant: a dashboard JWT (24 hours), and for a new account its three
    legacy API keys (header name to plaintext, shown once); ``api_keys`` is None otherwise."""

    merchant_id: str
    email: str
    token: str
    api_keys: Mapping[str, str] | None


async def account_by_email(gateway: "Gateway", email: str) -> AccountRecord | None:
    """The account registered with ``email`` (compared case-insensitively), or None."""
    row = await accounts.find_by_email(gateway.db, email)
    return None if row is None else AccountRecord(row["id"], row["email"], bool(row["enabled"]))


IDENTITY_PROVIDER = "identity_provider"  # the sign-in method a plugin's own authentication is recorded as


async def open_session(gateway: "Gateway", merchant_id: str, member_id: str | None, email: str, *,
                       method: str, second_factor: str | None = None) -> AccountSession:
    """The session of a person whose every factor is proven: the holder's (``member_id`` None) or a member's
    (``email`` theirs; the holder's is read from the account).

    403 ``merchant_disabled``, 404 unknown. Announced as ``sign_in`` with
    ``method`` and the ``second_factor`` used (none when their 2FA is off).
    """
    row = await accounts.require_merchant(gateway.db, merchant_id)
    if not row["enabled"]:
        raise Forbidden("account disabled", code="merchant_disabled")
    token = accounts.dashboard_token(gateway, row, member_id)
    await security_events.announce(gateway, row["id"], security_events.SIGN_IN,
                                   {"method": method, "second_factor": second_factor},
                                   actor=None if member_id is None else f"member {email}")
    return AccountSession(row["id"], row["email"] if member_id is None else email, token, None)


async def _unless_due(gateway: "Gateway", merchant_id: str, member_id: str | None, email: str) -> None:
    due = await second_factor_due(gateway, merchant_id, member_id, email)
    if due is not None:
        raise SecondFactorRequired(due)


async def sign_in_account(gateway: "Gateway", merchant_id: str, *, method: str = IDENTITY_PROVIDER) -> AccountSession:
    """A dashboard session for a merchant a plugin has authenticated itself (an identity provider).

    403 ``merchant_disabled`` for a disabled account, 404 for an unknown one.
    The caller is responsible for having proven who the user is. With the
    holder's 2FA on, no session: 401 ``totp_required``
    (``SecondFactorRequired``, whose ``due`` a plugin hands to
    ``begin_sign_in_step`` to ask the code). The sign-in is announced (a
    ``sign_in`` security event, ``method`` in its details).
    """
    row = await accounts.require_merchant(gateway.db, merchant_id)
    if not row["enabled"]:
        raise Forbidden("account disabled", code="merchant_disabled")
    await _unless_due(gateway, row["id"], None, row["email"])
    return await open_session(gateway, row["id"], None, row["email"], method=method)


async def sign_in_member(gateway: "Gateway", merchant_id: str, member_id: str, email: str, *,
                         method: str = "invite") -> AccountSession:
    """A dashboard session for a team member of ``merchant_id`` (their JWT carries ``member_id``).

    The caller (a teams plugin) has proven who the member is (an invite
    accepted, a password) and must answer ``decide_member`` for them, or the
    token is refused. 403 ``merchant_disabled``, 404 and, with the member's
    own 2FA on, 401 ``totp_required`` as ``sign_in_account``.
    The sign-in is announced with the member as its actor.
    """
    row = await accounts.require_merchant(gateway.db, merchant_id)
    if not row["enabled"]:
        raise Forbidden("account disabled", code="merchant_disabled")
    await _unless_due(gateway, merchant_id, member_id, email)
    return await open_session(gateway, merchant_id, member_id, email, method=method)


async def hash_password(gateway: "Gateway", password: str) -> str:
    """A password's stored form (scrypt, off the event loop), for credentials a plugin keeps (a member's)."""
    return await auth.hash_password_async(gateway.cpu, password)


async def create_account(gateway: "Gateway", email: str, *, method: str = IDENTITY_PROVIDER) -> AccountSession:
    """A new merchant with ``email`` and no password, signed in, with its API keys (shown once).

    Exactly what ``POST /dashboard/auth/signup`` creates, minus the password:
    a password login with this e-mail answers "invalid credentials", so the
    account signs in through the plugin that created it. 409 ``Conflict``
    when the e-mail is already registered. Its first sign-in is announced like ``sign_in_account``'s.
    """
    result = await accounts.sign_up(gateway, email, None)
    await security_events.announce(gateway, result.merchant_id, security_events.SIGN_IN, {"method": method})
    return AccountSession(result.merchant_id, result.email, result.token, dict(result.api_keys))


async def announce_security_event(gateway: "Gateway", merchant_id: str, kind: str,
                                  details: Mapping[str, Any] | None = None, *, alert: bool = False) -> None:
    """Tell every plugin (``security_event_occurred``) that ``kind`` happened to the account, after the commit.

    ``details``: short text values under lower-case names, never a secret
    (a name such as ``password`` or ``token`` raises ``ValueError``). The
    request's client IP, user agent and id are added by the core. ``alert``
    asks the dashboard to show it on the home page until dismissed.
    """
    await security_events.announce(gateway, merchant_id, kind, details, alert=alert)


async def confirm_account_holder(gateway: "Gateway", merchant_id: str, *, password: Any = None,
                                 totp_code: Any = None) -> None:
    """Re-authenticate the account holder before binding something to the account (a chat, a device).

    With 2FA on a fresh TOTP code, else the password: 400 validation naming
    the missing field, 401 wrong (``totp_invalid`` for a code), 429 while the
    account's sign-in (or TOTP) lockout runs (every wrong answer counts),
    403 ``password_not_set`` for a password-less account without 2FA.
    """
    await accounts.confirm_account_holder(gateway, merchant_id, password=password, totp_code=totp_code)


async def revoke_dashboard_token(gateway: "Gateway", token: str) -> bool:
    """End one dashboard JWT (a sign-out) in every process before returning; False for no valid token.

    A token from before tokens carried an id can only be ended with all of
    its merchant's: that is what happens to it.
    """
    return await jwt_revocation.revoke_token(gateway, token)


async def revoke_dashboard_tokens(gateway: "Gateway", merchant_id: str) -> None:
    """End every dashboard and mini-app token of the merchant issued until now (sign out everywhere)."""
    await jwt_revocation.revoke_all_tokens(gateway, merchant_id)


async def dashboard_token_revoked(gateway: "Gateway", claims: Mapping[str, Any]) -> bool:
    """Whether the token with these claims (``auth.decode_dashboard_token``'s) was revoked alone; cached."""
    return await jwt_revocation.is_revoked(gateway, claims)
