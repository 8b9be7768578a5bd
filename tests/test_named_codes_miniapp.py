"""SPEC 7's mini-app payout codes and the transfer codes on /dashboard, through the real routes (issue 19).

``tests/test_telegram.py`` already reaches totp_setup_required (payout,
transfer, swap), totp_invalid (on-chain payout, swap), self_transfer and
recipient_not_found (account-id destination), invalid_address,
insufficient_balance (on-chain) and coin_not_supported on /tgapp/payout.
This file adds the rest: burn_address, self_transfer for an on-chain payout
to the account's own receive address, totp_invalid and insufficient_balance
on the transfer path, recipient_disabled passed through, and
merchant_disabled for a session opened before the account was disabled.
Every refusal moves nothing; the ledger stays balanced.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from orbchain.core.ledger import book as ledger

from .support import api, bearer, signup
from .telegram_support import (balance, enable_totp, fund, init_data_for, link_via_bot, next_code, open_session,
                               telegram_shop)

BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
BURN_BTC = "1BitcoinEaterAddressDontSendf59kuE"


@pytest.fixture
async def env(make_client, make_config, standin):
    return await telegram_shop(make_client, make_config, standin)


async def account_of(client, who) -> str:
    _, body = await api(client, "GET", "/dashboard/account", who.jwt)
    return body["data"]["account"]["account_id"]


async def set_enabled(gateway, merchant, enabled: bool) -> None:
    await gateway.db.execute("UPDATE merchants SET enabled = :e WHERE id = :id",
                             {"e": enabled, "id": merchant.merchant_id})


async def test_miniapp_payout_codes_not_reached_elsewhere(env, standin):
    client, merchant, gateway = env
    friend = await signup(client, "friend@example.com")
    friend_account = await account_of(client, friend)
    await fund(client, merchant, gateway)  # 0.0099 BTC available
    await link_via_bot(client, gateway, standin, merchant)
    mini = bearer((await open_session(client, gateway))["token"])
    secret = await enable_totp(client, gateway, mini)
    _, received = await api(client, "GET", "/tgapp/receive", mini, params={"coin": "BTC"})
    own_address = received["data"]["address"]
    payout = {"currency": "BTC", "destination": BTC_DEST, "amount": "0.001"}

    wrong = "000000" if next_code(gateway, secret) != "000000" else "111111"
    status, body = await api(client, "POST", "/tgapp/payout", mini,
                             json={**payout, "destination": friend_account, "totp_code": wrong})
    assert (status, body["error"]["code"]) == (401, "totp_invalid"), body

    refusals = [
        ({**payout, "destination": BURN_BTC}, "burn_address"),
        ({**payout, "destination": own_address}, "self_transfer"),
        ({**payout, "destination": friend_account, "amount": "5"}, "insufficient_balance"),
    ]
    for request, code in refusals:
        status, body = await api(client, "POST", "/tgapp/payout", mini,
                                 json={**request, "totp_code": next_code(gateway, secret)})
        assert (status, body["error"]["code"]) == (400, code), (code, body)
        assert body["data"] is None and body["error"]["message"] == body["message"]

    await set_enabled(gateway, friend, False)
    status, body = await api(client, "POST", "/tgapp/payout", mini, json={
        **payout, "destination": friend_account, "totp_code": next_code(gateway, secret)})
    assert (status, body["error"]["code"]) == (400, "recipient_disabled"), body

    assert await balance(gateway, merchant) == Decimal("0.0099")  # nothing moved
    assert (await api(client, "GET", "/dashboard/transfers", merchant.jwt))[1]["data"]["total"] == 0
    assert (await ledger.check_ledger(gateway.db)).ok


async def test_miniapp_merchant_disabled_for_an_open_session_and_a_new_one(env, standin):
    client, merchant, gateway = env
    await fund(client, merchant, gateway)
    await link_via_bot(client, gateway, standin, merchant)
    mini = bearer((await open_session(client, gateway))["token"])
    secret = await enable_totp(client, gateway, mini)
    await set_enabled(gateway, merchant, False)

    status, body = await api(client, "POST", "/tgapp/payout", mini, json={
        "currency": "BTC", "destination": BTC_DEST, "amount": "0.001", "totp_code": next_code(gateway, secret)})
    assert (status, body["error"]["code"]) == (403, "merchant_disabled"), body
    status, body = await api(client, "POST", "/tgapp/session", {},
                             json={"init_data": init_data_for(5550001, gateway.now())})
    assert (status, body["error"]["code"]) == (403, "merchant_disabled"), body
    assert await balance(gateway, merchant) == Decimal("0.0099")

    # Re-enabled: a session from before is not revived (core/accounts/jwt_revocation.py, m0018); a new one works.
    await set_enabled(gateway, merchant, True)
    status, body = await api(client, "GET", "/tgapp/balances", mini)
    assert (status, body["error"]["code"]) == (401, "unauthorized"), body
    mini = bearer((await open_session(client, gateway, totp_code=next_code(gateway, secret)))["token"])
    status, body = await api(client, "POST", "/tgapp/payout", mini, json={
        "currency": "BTC", "destination": BTC_DEST, "amount": "0.001", "totp_code": next_code(gateway, secret)})
    assert status == 200 and body["data"]["kind"] == "payout", body
