"""Helpers of the approval-policy tests (plugins/approvals): a policy, members, the account's TOTP."""

from __future__ import annotations

import secrets

import pyotp

from orbchain.core.accounts.auth import hash_password
from orbchain.plugins.approvals import policy as policies

from orbchain.web.keys import GATEWAY

from .support import advance_clock, api, bearer, signup

PASSWORD = "correct horse battery"


async def holder_account(make_client, make_config, email="holder@example.com"):
    """A fresh app (scheduler off, sign-in and write limits out of the way of many people) and its holder:
    (client, holder, gateway)."""
    client = await make_client(make_config(scheduler={"enabled": False},
                                           rate_limits={"auth_per_minute": 1000, "write_per_minute": 1000}))
    return client, await signup(client, email), client.app[GATEWAY]


async def set_policy(gateway, merchant_id, **fields) -> None:
    """An approval policy from form-like fields (``threshold_BTC="100"`` ...)."""
    await policies.save(gateway, merchant_id, policies.parse(gateway, fields))


async def add_member(client, gateway, merchant_id, email, role="admin") -> dict:
    """A member row (as the teams plugin makes one on accepting an invite); their JSON token's headers."""
    await gateway.db.execute(
        "INSERT INTO team_members (id, merchant_id, email, role, password_hash, created_at)"
        " VALUES (:id, :m, :e, :r, :h, :now)",
        {"id": "mbr_" + secrets.token_hex(8), "m": merchant_id, "e": email, "r": role,
         "h": hash_password(PASSWORD), "now": gateway.now()})
    status, body = await api(client, "POST", "/dashboard/auth/login", {}, json={"email": email, "password": PASSWORD})
    assert status == 200, body
    return bearer(body["data"]["token"])


async def enable_totp(client, gateway, holder_jwt) -> str:
    """2FA on for the account (the holder's authenticator); the secret."""
    _, body = await api(client, "POST", "/dashboard/mfa/setup", holder_jwt)
    secret = body["data"]["secret"]
    status, body = await api(client, "POST", "/dashboard/mfa/verify", holder_jwt,
                             json={"code": pyotp.TOTP(secret).at(gateway.now())})
    assert status == 200, body
    return secret


def next_code(gateway, secret) -> str:
    advance_clock(gateway, 30)  # a code is good once: take the next time step's
    return pyotp.TOTP(secret).at(gateway.now())


async def approve(client, headers, track_id, code):
    return await api(client, "POST", f"/dashboard/approvals/{track_id}/approve", headers,
                     json={"totp_code": code})


async def reject(client, headers, track_id):
    return await api(client, "POST", f"/dashboard/approvals/{track_id}/reject", headers)


async def member_totp(gateway, merchant_id, email) -> str:
    """The member's own 2FA turned on (as their Security page does); the secret."""
    from orbchain.api.merchant import enable_member_totp, start_member_totp_setup
    member_id = await gateway.db.fetch_val("SELECT id FROM team_members WHERE email = :e", {"e": email})
    secret, _ = await start_member_totp_setup(gateway, merchant_id, member_id, email)
    await enable_member_totp(gateway, merchant_id, member_id, email, pyotp.TOTP(secret).at(gateway.now()))
    return secret
