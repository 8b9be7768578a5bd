"""Whoever acts proves it with their own second factor: the holder's TOTP, or a team member's (issue 36).

A team member's secret is theirs (``member_totp``, checked exactly like the
holder's in ``totp_codes``): a member never types the holder's code and the
holder's code never passes for a member. ``verify_second_factor`` is the one
check every step-up (transfers, swaps, approvals) makes for the acting
principal; an API key acts for the holder. When the holder turned 2FA on, a
member without their own is refused money actions (403
``totp_setup_required``) rather than let through without a code. Each
person's recovery codes (``recovery_codes``) are made with their 2FA and
renewed here; sign-in takes them (``sign_in_factor``), step-ups never do.
"""

from __future__ import annotations

from typing import Any

from . import auth, auth_cache, lockout, recovery_codes, security_events
from .totp_codes import check_stored_code
from ..types.errors import Forbidden, InvalidRequest, NotFound, Unauthorized
from ..infra.db import Database, Row
from ..contract.gateway import PluginGateway as Gateway

TABLE = "member_totp"


def invalid_code() -> Unauthorized:
    return Unauthorized("invalid TOTP code", code="totp_invalid")


async def _member_row(db: Database, merchant_id: str, member_id: str) -> Row | None:
    return await db.fetch_one(f"SELECT * FROM {TABLE} WHERE id = :id AND merchant_id = :m",
                              {"id": member_id, "m": merchant_id})


async def _holder(db: Database, merchant_id: str) -> Row:
    row = await db.fetch_one("SELECT id, totp_enabled FROM merchants WHERE id = :id", {"id": merchant_id})
    if row is None:
        raise NotFound()
    return row


async def member_totp_enabled(db: Database, merchant_id: str, member_id: str) -> bool:
    row = await _member_row(db, merchant_id, member_id)
    return row is not None and bool(row["totp_enabled"])


async def verify_acting(gateway: "Gateway", merchant_id: str, member_id: str | None, code: Any, *,
                        channel: str = lockout.DASHBOARD_CHANNEL, holder: Row | None = None) -> None:
    """Nothing when the actor needs no code or gave a fresh one of their own; 401 ``totp_invalid``
    (a wrong, replayed or missing code), 403 ``totp_setup_required``, 429 while locked."""
    if member_id is None:
        holder = holder if holder is not None else await _holder(gateway.db, merchant_id)
        if holder["totp_enabled"] and not await check_stored_code(gateway.db, "merchants", merchant_id, code,
                                                                  now=gateway.now(), channel=channel):
            raise invalid_code()
        return
    if not await member_totp_enabled(gateway.db, merchant_id, member_id):
        holder = holder if holder is not None else await _holder(gateway.db, merchant_id)
        if holder["totp_enabled"]:
            raise Forbidden("this account uses two-factor authentication: set up your own on your Security page"
                            " first", code="totp_setup_required")
        return
    if not await check_stored_code(gateway.db, TABLE, member_id, code, now=gateway.now(), channel=channel):
        raise invalid_code()


async def verify_second_factor(gateway: "Gateway", principal: Any, code: Any, *,
                               channel: str = lockout.DASHBOARD_CHANNEL) -> None:
    """Check ``code`` as the acting ``principal``'s own second factor (the holder's for the holder and keys).

    Raises what the holder's step-up always raised: 401 ``totp_invalid``,
    429 ``LockedOut``; and 403 ``totp_setup_required`` for a member without
    2FA on an account whose holder has it on.
    """
    await verify_acting(gateway, principal.merchant_id, principal.member_id, code, channel=channel)


# -- a member's own setup -----------------------------------------------------------------------


async def start_member_totp_setup(gateway: "Gateway", merchant_id: str, member_id: str,
                                  email: str) -> tuple[str, str]:
    """A new pending secret for the member and its otpauth URL; their 2FA stays off until a code confirms it."""
    secret = auth.new_totp_secret()
    written = await gateway.db.execute(
        f"INSERT INTO {TABLE} (id, merchant_id, totp_secret, totp_enabled, totp_last_step)"
        " VALUES (:id, :m, :s, :off, NULL) ON CONFLICT (id) DO UPDATE SET totp_secret = excluded.totp_secret,"
        f" totp_last_step = NULL WHERE {TABLE}.totp_enabled = :off RETURNING id",
        {"id": member_id, "m": merchant_id, "s": secret, "off": False})
    if written is None:
        raise InvalidRequest("two-factor authentication is already enabled; disable it first")
    return secret, auth.totp_provisioning_uri(secret, email)


async def enable_member_totp(gateway: "Gateway", merchant_id: str, member_id: str, email: str,
                             code: Any) -> list[str]:
    """Turn the member's 2FA on with a first code; their new recovery codes (show them once)."""
    row = await _member_row(gateway.db, merchant_id, member_id)
    if row is not None and row["totp_enabled"]:
        raise InvalidRequest("two-factor authentication is already enabled")
    if row is None or not row["totp_secret"]:
        raise Forbidden("run MFA setup first", code="totp_setup_required")
    if not await check_stored_code(gateway.db, TABLE, member_id, code, now=gateway.now(), pending=True):
        raise invalid_code()
    async with gateway.db.transaction():
        await gateway.db.execute(f"UPDATE {TABLE} SET totp_enabled = :on WHERE id = :id",
                                 {"on": True, "id": member_id})
        codes = await recovery_codes.issue(gateway.db, merchant_id, member_id, gateway.now())
    await auth_cache.changed(gateway)  # the teams plugin caches what a member may do, which 2FA can change
    await security_events.announce(gateway, merchant_id, security_events.TOTP_ENABLED,
                                   {"via": lockout.DASHBOARD_CHANNEL}, actor=f"member {email}")
    return codes


async def disable_member_totp(gateway: "Gateway", merchant_id: str, member_id: str, email: str, code: Any) -> None:
    if not await member_totp_enabled(gateway.db, merchant_id, member_id):
        raise Forbidden("two-factor authentication is not enabled", code="totp_setup_required")
    if not await check_stored_code(gateway.db, TABLE, member_id, code, now=gateway.now()):
        raise invalid_code()
    async with gateway.db.transaction():
        await gateway.db.execute(f"UPDATE {TABLE} SET totp_enabled = :off, totp_secret = NULL WHERE id = :id",
                                 {"off": False, "id": member_id})
        await recovery_codes.forget(gateway.db, member_id)
    await auth_cache.changed(gateway)
    await security_events.announce(gateway, merchant_id, security_events.TOTP_DISABLED,
                                   {"via": lockout.DASHBOARD_CHANNEL}, actor=f"member {email}")


async def forget_member_second_factor(gateway: "Gateway", merchant_id: str, member_id: str) -> None:
    """Drop a removed member's secret and recovery codes (the teams plugin calls this when it deletes the member)."""
    await gateway.db.execute(f"DELETE FROM {TABLE} WHERE id = :id AND merchant_id = :m",
                             {"id": member_id, "m": merchant_id})
    await recovery_codes.forget(gateway.db, member_id)
    await auth_cache.changed(gateway)


# -- recovery codes, for the holder and members alike ----------------------------------------------------


async def recovery_codes_left(gateway: "Gateway", merchant_id: str, member_id: str | None) -> int:
    """How many unused recovery codes the holder (``member_id`` None) or that member has."""
    return await recovery_codes.remaining(gateway.db, member_id or merchant_id)


async def renew_recovery_codes(gateway: "Gateway", merchant_id: str, member_id: str | None, code: Any, *,
                               via: str = lockout.DASHBOARD_CHANNEL) -> list[str]:
    """A new set of the person's recovery codes (the old set stops working), against a fresh TOTP code of theirs.

    The person is the holder (``member_id`` None) or that member. 403
    ``totp_setup_required`` while their 2FA is off; 401 ``totp_invalid``
    for a wrong code (a recovery code does not renew the set); 429 while
    their TOTP lockout of ``via`` runs. Announced as ``recovery_codes_created``.
    """
    table, owner = ("merchants", merchant_id) if member_id is None else (TABLE, member_id)
    if member_id is None:
        on = bool((await _holder(gateway.db, merchant_id))["totp_enabled"])
    else:
        on = await member_totp_enabled(gateway.db, merchant_id, member_id)
    if not on:
        raise Forbidden("two-factor authentication is not enabled", code="totp_setup_required")
    if not await check_stored_code(gateway.db, table, owner, code, now=gateway.now(), channel=via):
        raise invalid_code()
    codes = await recovery_codes.issue(gateway.db, merchant_id, owner, gateway.now())
    await security_events.announce(gateway, merchant_id, security_events.RECOVERY_CODES_CREATED, {"via": via})
    return codes
