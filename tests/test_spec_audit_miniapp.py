"""SPEC 4.13 and 6.1 conformance of the mini-app: the session's fields, and request ids in the webhooks it causes.

SPEC 6.1: "Any webhook caused by a request carries X-Request-Id ... and
request_id in the body". POST /tgapp/payout moves money by request like /v1/transfer and /v1/payout
do; the transfer webhooks it causes, and the payout it queues (whose final
webhook the core seals from the stored request id), carry the request's
id. Both databases.
"""

from __future__ import annotations

import json

import pytest

from .support import api, bearer, signup
from .telegram_support import enable_totp, fund, link_via_bot, next_code, open_session, telegram_shop
from .test_telegram import BTC_DEST



@pytest.fixture
async def env(make_client, make_config, standin):
    return await telegram_shop(make_client, make_config, standin)


SESSION = {"token", "expires_in", "merchant"}
SESSION_MERCHANT = {"id", "account_id", "email", "default_settlement_coin", "accepted_coins"}


async def test_session_carries_every_spec_field(env, standin):
    client, merchant, gateway = env
    await link_via_bot(client, gateway, standin, merchant)
    session = await open_session(client, gateway)
    assert SESSION <= set(session) and SESSION_MERCHANT <= set(session["merchant"]), session
    account = (await api(client, "GET", "/dashboard/account", merchant.jwt))[1]["data"]["account"]
    assert session["merchant"]["account_id"] == account["account_id"] and session["expires_in"] == 3600


async def test_miniapp_payout_and_transfer_carry_the_request_id(env, standin):
    client, merchant, gateway = env
    friend = await signup(client, "friend@example.com")
    friend_account = (await api(client, "GET", "/dashboard/account", friend.jwt))[1]["data"]["account"]["account_id"]
    await fund(client, merchant, gateway)
    await link_via_bot(client, gateway, standin, merchant)
    mini = bearer((await open_session(client, gateway))["token"])
    secret = await enable_totp(client, gateway, mini)

    body = {"currency": "BTC", "destination": friend_account, "amount": "0.001"}
    status, answer = await api(client, "POST", "/tgapp/payout", {**mini, "X-Request-Id": "req-mini-transfer"},
                               json={**body, "totp_code": next_code(gateway, secret)})
    assert status == 200 and answer["data"]["kind"] == "transfer", answer
    rows = await gateway.db.fetch_all(
        "SELECT event_type, body FROM webhook_events WHERE event_type IN ('transfer.sent', 'transfer.received')")
    assert sorted(r["event_type"] for r in rows) == ["transfer.received", "transfer.sent"]
    assert all(json.loads(r["body"])["request_id"] == "req-mini-transfer" for r in rows)

    status, answer = await api(client, "POST", "/tgapp/payout", {**mini, "X-Request-Id": "req-mini-payout"},
                               json={**body, "destination": BTC_DEST, "totp_code": next_code(gateway, secret)})
    assert status == 200 and answer["data"]["kind"] == "payout", answer
    row = await gateway.db.fetch_one("SELECT request_id FROM payouts WHERE track_id = :t",
                                     {"t": answer["data"]["track_id"]})
    assert row["request_id"] == "req-mini-payout"
