"""The second-person rule sees through API keys (issue 42 item 2), on SQLite and PostgreSQL.

A payout or transfer made with a key counts as requested by the person who created or last rotated the key:
they cannot approve it, and it counts toward their daily limit. Keys of the holder, of an admin and of a
member who was later removed (keys kept) are each tried; a secret still in its rotation grace counts as
whoever held it.
"""

from __future__ import annotations

import json

import pytest

from orbchain.testing import pay_on_devnet
from orbchain.testing.api import create_payment

from .approvals_support import add_member, approve, enable_totp, holder_account, member_totp, next_code, set_policy
from .support import api, signup

BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"


@pytest.fixture
async def shop(make_client, make_config):
    """A funded account ($1,200 of BTC at the dev price) with an admin, both with their own 2FA; the policy on."""
    client, holder, gateway = await holder_account(make_client, make_config)
    payment = await create_payment(client, holder, "BTC", "0.0202")
    await pay_on_devnet(client, payment["track_id"])
    admin = await add_member(client, gateway, holder.merchant_id, "admin@example.com")
    secrets_ = {"holder": await enable_totp(client, gateway, holder.jwt),
                "admin": await member_totp(gateway, holder.merchant_id, "admin@example.com")}
    return client, holder, gateway, admin, secrets_


async def payout_with(client, headers, amount="0.005"):  # $300 at the dev price
    status, body = await api(client, "POST", "/v1/payout", headers,
                             json={"currency": "BTC", "address": BTC_DEST, "amount": amount})
    assert status == 200, body
    return body["data"]


async def scoped_key(client, headers, scopes=("payout:create",)):
    status, body = await api(client, "POST", "/dashboard/api-keys", headers,
                             json={"label": "integration", "scopes": list(scopes)})
    assert status == 200, body
    return body["data"]


async def hold_of(gateway, track):
    return await gateway.db.fetch_one("SELECT requested_by, key_id, state FROM approval_holds WHERE ref = :r",
                                      {"r": track})


async def test_the_holder_cannot_approve_a_payout_made_with_their_payout_key(shop):
    client, holder, gateway, admin, secrets_ = shop
    await set_policy(gateway, holder.merchant_id, threshold_BTC="100")
    held = await payout_with(client, holder.payout_key)
    assert held["awaiting_approval"] is True
    status, body = await approve(client, holder.jwt, held["track_id"], next_code(gateway, secrets_["holder"]))
    assert status == 403 and body["error"]["code"] == "self_approval", body
    assert dict(await hold_of(gateway, held["track_id"])) == {
        "requested_by": "holder", "key_id": f"legacy_payout_{holder.merchant_id}", "state": "awaiting"}
    status, listed = await api(client, "GET", "/dashboard/approvals", admin)
    shown = listed["data"]["held"][0]
    assert shown["requested_by"] == f"account holder with key legacy_payout_{holder.merchant_id}"
    assert shown["requested_by_id"] == "holder" and shown["key_id"] == f"legacy_payout_{holder.merchant_id}"
    status, body = await approve(client, admin, held["track_id"], next_code(gateway, secrets_["admin"]))
    assert status == 200 and body["data"]["state"] == "approved"


async def test_an_admin_cannot_approve_a_payout_made_with_their_own_key(shop):
    client, holder, gateway, admin, secrets_ = shop
    await set_policy(gateway, holder.merchant_id, threshold_BTC="100")
    key = await scoped_key(client, admin)
    held = await payout_with(client, {"payout_api_key": key["api_key"]})
    status, body = await approve(client, admin, held["track_id"], next_code(gateway, secrets_["admin"]))
    assert status == 403 and body["error"]["code"] == "self_approval", body
    admin_id = await gateway.db.fetch_val("SELECT id FROM team_members WHERE email = 'admin@example.com'")
    assert (await hold_of(gateway, held["track_id"]))["requested_by"] == f"member:{admin_id}"
    status, body = await approve(client, holder.jwt, held["track_id"], next_code(gateway, secrets_["holder"]))
    assert status == 200 and body["data"]["state"] == "approved"
    events = await gateway.db.fetch_all("SELECT details FROM security_events WHERE kind = 'payout_approved'")
    assert json.loads(events[0]["details"])["requested_by"] == f"member admin@example.com with key {key['id']}"


async def test_a_transfer_made_with_a_key_is_its_issuers_too(shop):
    client, holder, gateway, admin, secrets_ = shop
    await set_policy(gateway, holder.merchant_id, threshold_BTC="100")
    bob = await signup(client, "bob@example.com")
    bob_account = (await api(client, "GET", "/dashboard/account", bob.jwt))[1]["data"]["account"]["account_id"]
    key = await scoped_key(client, admin, ("transfer:create",))
    status, body = await api(client, "POST", "/v1/transfer", {"merchant_api_key": key["api_key"]},
                             json={"to_account_id": bob_account, "coin": "BTC", "amount": "0.005",
                                   "totp_code": next_code(gateway, secrets_["holder"])})
    assert status == 200 and body["data"]["awaiting_approval"] is True, body
    status, refused = await approve(client, admin, body["data"]["transfer_id"], next_code(gateway, secrets_["admin"]))
    assert status == 403 and refused["error"]["code"] == "self_approval"


async def test_a_persons_daily_limit_counts_their_keys(shop):
    """$400 a day per person: the admin's $300 from the dashboard and then $300 with their key make $600."""
    client, holder, gateway, admin, _ = shop
    await set_policy(gateway, holder.merchant_id, member_daily_usd="400")
    status, body = await api(client, "POST", "/dashboard/create-payout", admin,
                             json={"currency": "BTC", "address": BTC_DEST, "amount": "0.005"})
    assert status == 200 and "awaiting_approval" not in body["data"], body
    key = await scoped_key(client, admin)
    held = await payout_with(client, {"payout_api_key": key["api_key"]})
    assert held["awaiting_approval"] is True
    status, listed = await api(client, "GET", "/dashboard/approvals", holder.jwt)
    assert listed["data"]["held"][0]["reason"] == "daily_limit"
    # A second key of the same person does not start a new allowance either.
    other = await scoped_key(client, admin)
    assert (await payout_with(client, {"payout_api_key": other["api_key"]}, amount="0.001"))["awaiting_approval"]


async def test_a_removed_members_kept_key_still_counts_as_theirs(shop):
    """The admin leaves and the owner keeps their key working: what it asks for is still the admin's, and
    counts toward the admin's daily limit, not a fresh one."""
    client, holder, gateway, admin, secrets_ = shop
    owner = await add_member(client, gateway, holder.merchant_id, "owner@example.com", role="owner")
    admin_id = await gateway.db.fetch_val("SELECT id FROM team_members WHERE email = 'admin@example.com'")
    key = await scoped_key(client, admin)
    await set_policy(gateway, holder.merchant_id, member_daily_usd="400")
    assert "awaiting_approval" not in await payout_with(client, {"payout_api_key": key["api_key"]})  # $300
    status, body = await api(client, "POST", f"/dashboard/team/members/{admin_id}/remove", owner,
                             json={"api_keys": "keep"})
    assert status == 200 and body["data"]["keys"] == [key["id"]], body
    held = await payout_with(client, {"payout_api_key": key["api_key"]})  # $600 for the admin today
    assert held["awaiting_approval"] is True
    assert dict(await hold_of(gateway, held["track_id"])) == {
        "requested_by": f"member:{admin_id}", "key_id": key["id"], "state": "awaiting"}
    status, listed = await api(client, "GET", "/dashboard/approvals", holder.jwt)
    assert listed["data"]["held"][0]["requested_by"] == f"a removed member with key {key['id']}"
    assert listed["data"]["held"][0]["reason"] == "daily_limit"
    status, body = await approve(client, holder.jwt, held["track_id"], next_code(gateway, secrets_["holder"]))
    assert status == 200, body


async def test_a_secret_in_its_grace_counts_as_whoever_held_it(shop):
    """The admin's key rotated by the holder: the admin's old secret, still in its 30 minutes, asks as the
    admin (who cannot approve it), not as the holder; removing the admin ends that secret too."""
    client, holder, gateway, admin, secrets_ = shop
    await set_policy(gateway, holder.merchant_id, threshold_BTC="100")
    key = await scoped_key(client, admin)
    status, body = await api(client, "POST", f"/dashboard/api-keys/{key['id']}/rotate", holder.jwt)
    assert status == 200 and body["data"]["issued_by"] == "holder"
    held = await payout_with(client, {"payout_api_key": key["api_key"]})  # the old secret
    status, refused = await approve(client, admin, held["track_id"], next_code(gateway, secrets_["admin"]))
    assert status == 403 and refused["error"]["code"] == "self_approval"
    admin_id = await gateway.db.fetch_val("SELECT id FROM team_members WHERE email = 'admin@example.com'")
    assert (await hold_of(gateway, held["track_id"]))["requested_by"] == f"member:{admin_id}"
    new = await payout_with(client, {"payout_api_key": body["data"]["api_key"]})
    assert (await hold_of(gateway, new["track_id"]))["requested_by"] == "holder"
    owner = await add_member(client, gateway, holder.merchant_id, "owner@example.com", role="owner")
    status, _ = await api(client, "POST", f"/dashboard/team/members/{admin_id}/remove", owner, json={})
    assert status == 200
    status, _ = await api(client, "POST", "/v1/payout", {"payout_api_key": key["api_key"]},
                          json={"currency": "BTC", "address": BTC_DEST, "amount": "0.001"})
    assert status == 401  # the admin's old secret is gone with them
    assert (await payout_with(client, {"payout_api_key": body["data"]["api_key"]}, "0.001"))  # the holder's works
