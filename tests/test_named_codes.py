"""SPEC 7's named error codes, each provoked where its condition can happen (issue 19, part 2 item 5).

The mini-app's payout codes are in ``test_named_codes_miniapp.py`` and
``test_telegram.py``; splits and subscriptions are their own plugins
(``test_splits.py``, ``test_subscriptions.py``). Every other named code is
reached here through the public API, with the status SPEC 7 gives it.
"""

from __future__ import annotations

import pyotp
import pytest

from orbchain import api as services
from orbchain.core.types.errors import Forbidden
from orbchain.web.keys import GATEWAY

from .support import Devnet, api, signup

BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"


def code_of(body) -> str | None:
    return body["error"].get("code") if body.get("error") else None


@pytest.fixture
async def shop(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    owner = await signup(client, "owner@example.com")
    friend = await signup(client, "friend@example.com")
    return client, owner, friend, Devnet(client)


async def fund(client, merchant, devnet, amount="0.01"):
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": amount})
    assert status == 200, body
    await devnet.pay("BTC", body["data"]["address"], amount)
    await devnet.mine(devnet.gateway.coins.require("BTC").confirmations)


async def deposit_address(client, merchant) -> str:
    status, body = await api(client, "POST", "/v1/payment/static-address", merchant.merchant_key,
                             json={"currency": "BTC", "user_id": "u1"})
    assert status == 200, body
    return body["data"]["address"]


async def disable(client, merchant) -> None:
    await client.app[GATEWAY].db.execute("UPDATE merchants SET enabled = :f WHERE id = :id",
                                          {"f": False, "id": merchant.merchant_id})


# -- self_transfer -----------------------------------------------------------------------------------


async def test_self_transfer_payout_to_your_own_deposit_address(shop):
    client, owner, friend, devnet = shop
    await fund(client, owner, devnet)
    own = await deposit_address(client, owner)
    payout = {"currency": "BTC", "address": own, "amount": "0.001"}
    status, body = await api(client, "POST", "/v1/payout", owner.payout_key, json=payout)
    assert status == 400 and code_of(body) == "self_transfer", body
    status, body = await api(client, "POST", "/dashboard/create-payout", owner.jwt, json=payout)
    assert status == 400 and code_of(body) == "self_transfer"
    status, body = await api(client, "POST", "/v1/payout/batch", owner.payout_key,
                             json={"items": [{**payout, "external_id": "self-1"}]})
    assert status == 200 and body["data"]["results"][0]["error"] == "self_transfer"
    # Nothing was reserved; paying another merchant's deposit address is an ordinary payout.
    status, body = await api(client, "GET", "/v1/general/account/balance", owner.general_key)
    assert body["data"]["balances"] == [{"coin": "BTC", "amount": "0.0099"}]
    theirs = await deposit_address(client, friend)
    status, body = await api(client, "POST", "/v1/payout", owner.payout_key, json={**payout, "address": theirs})
    assert status == 200, body


async def test_self_transfer_forbidden_and_the_other_transfer_codes(shop):
    client, owner, friend, devnet = shop
    await fund(client, owner, devnet)
    accounts = {}
    for who in (owner, friend):
        _, body = await api(client, "GET", "/dashboard/account", who.jwt)
        accounts[who.merchant_id] = body["data"]["account"]["account_id"]
    transfer = {"coin": "BTC", "amount": "0.001"}
    cases = [
        ({**transfer, "to_account_id": accounts[owner.merchant_id]}, "self_transfer_forbidden"),
        ({**transfer, "to_account_id": "ORB-" + "1" * 20}, "recipient_not_found"),
        ({**transfer, "to_account_id": accounts[friend.merchant_id], "amount": "5"}, "insufficient_balance"),
        ({**transfer, "to_account_id": accounts[friend.merchant_id], "coin": "NOPE"}, "coin_not_supported"),
    ]
    surfaces = (("/v1/transfer", owner.merchant_key), ("/dashboard/transfer", owner.jwt))
    for path, headers in surfaces:
        for body_in, code in cases:
            status, body = await api(client, "POST", path, headers, json=body_in)
            assert status == 400 and code_of(body) == code, (path, code, body)
    await disable(client, friend)
    for path, headers in surfaces:
        status, body = await api(client, "POST", path, headers,
                                 json={**transfer, "to_account_id": accounts[friend.merchant_id]})
        assert status == 400 and code_of(body) == "recipient_disabled", (path, body)
    status, body = await api(client, "GET", "/dashboard/transfers", owner.jwt)
    assert body["data"]["total"] == 0  # nothing moved


# -- invalid_address, burn_address, insufficient_balance (single payouts; batch items in test_payouts_batch) --


async def test_payout_destination_and_balance_codes_on_v1_and_dashboard(shop):
    client, owner, _, devnet = shop
    await fund(client, owner, devnet)
    cases = [({"address": "bc1qnotanaddress"}, "invalid_address"),
             ({"address": "1BitcoinEaterAddressDontSendf59kuE"}, "burn_address"),
             ({"amount": "5"}, "insufficient_balance")]
    for path, headers in (("/v1/payout", owner.payout_key), ("/dashboard/create-payout", owner.jwt)):
        for change, code in cases:
            payout = {"currency": "BTC", "address": BTC_DEST, "amount": "0.001", **change}
            status, body = await api(client, "POST", path, headers, json=payout)
            assert status == 400 and code_of(body) == code, (path, code, body)
    status, body = await api(client, "GET", "/v1/general/account/balance", owner.general_key)
    assert body["data"]["balances"] == [{"coin": "BTC", "amount": "0.0099"}]


# -- coin_not_supported ------------------------------------------------------------------------------


async def test_coin_not_supported_for_payouts(shop):
    client, owner, _, _ = shop
    for path, headers in (("/v1/payout", owner.payout_key), ("/dashboard/create-payout", owner.jwt)):
        for currency, address, kind in (("XMR", "4" + "A" * 94, "invalid_request"), ("NOPE", BTC_DEST, "validation")):
            status, body = await api(client, "POST", path, headers,
                                     json={"currency": currency, "address": address, "amount": "1"})
            assert status == 400 and code_of(body) == "coin_not_supported" and body["error"]["type"] == kind, body
    status, body = await api(client, "POST", "/v1/payout/batch", owner.payout_key, json={"items": [
        {"currency": "XMR", "address": "4" + "A" * 94, "amount": "1", "external_id": "x-1"}]})
    assert body["data"]["results"][0]["error"] == "coin_not_supported"


# -- totp_setup_required and totp_invalid ----------------------------------------------------------------


async def test_totp_setup_required_where_a_code_is_asked_of_an_account_without_2fa(shop):
    client, owner, _, _ = shop
    for path in ("/dashboard/mfa/verify", "/dashboard/mfa/disable"):
        status, body = await api(client, "POST", path, owner.jwt, json={"code": "123456"})
        assert status == 403 and code_of(body) == "totp_setup_required", (path, body)
    status, body = await api(client, "POST", "/dashboard/mfa/setup", owner.jwt)
    totp = pyotp.TOTP(body["data"]["secret"])
    wrong = "000000" if totp.now() != "000000" else "111111"
    status, body = await api(client, "POST", "/dashboard/mfa/verify", owner.jwt, json={"code": wrong})
    assert status == 401 and code_of(body) == "totp_invalid"


# -- merchant_disabled ----------------------------------------------------------------------------------


async def test_merchant_disabled_everywhere_the_account_acts(shop):
    client, owner, _, devnet = shop
    await fund(client, owner, devnet)
    await disable(client, owner)
    for method, path, headers in (("GET", "/v1/general/account/balance", owner.general_key),
                                  ("POST", "/v1/payout", owner.payout_key),
                                  ("GET", "/dashboard/account", owner.jwt)):
        status, body = await api(client, method, path, headers, json={})
        assert status == 403 and code_of(body) == "merchant_disabled", (path, body)
    status, body = await api(client, "POST", "/dashboard/auth/login", {},
                             json={"email": "owner@example.com", "password": "s3cret-pass"})
    assert status == 403 and code_of(body) == "merchant_disabled"
    # Payouts a plugin's job requests (schedules, auto-withdraw) stop too: nothing is reserved.
    gateway = client.app[GATEWAY]
    with pytest.raises(Forbidden) as refused:
        await services.request_payout(gateway, owner.merchant_id, coin="BTC", destination=BTC_DEST, amount=100_000,
                                      idempotency_key="test:disabled")
    assert refused.value.code == "merchant_disabled"
    assert await services.available_balance(gateway, owner.merchant_id, "BTC") == 990_000


# -- the receive-address and key codes ------------------------------------------------------------------


async def test_receive_address_and_key_codes(shop):
    client, owner, _, _ = shop
    cases = [("", 400, "missing_coin"), ("?coin=DOGE", 400, "coin_not_accepted"),
             ("?coin=XMR", 400, "xmr_receive_unsupported")]
    for query, status_wanted, code in cases:
        status, body = await api(client, "GET", "/dashboard/receive-address" + query, owner.jwt)
        assert status == status_wanted and code_of(body) == code, (query, body)
    status, body = await api(client, "GET", "/dashboard/receive-address?coin=BTC", {})
    assert status == 401 and code_of(body) == "unauthorized"
    for extra, status_wanted, code in (({"coin_allowlist": ["LTC"]}, 403, "coin_not_allowed"),
                                       ({"ip_allowlist": ["10.0.0.0/8"]}, 401, "ip_not_allowed")):
        status, body = await api(client, "POST", "/dashboard/api-keys", owner.jwt,
                                 json={"label": code, "scopes": ["payment:create"], **extra})
        assert status == 200, body
        status, body = await api(client, "POST", "/v1/payment/white-label",
                                 {"merchant_api_key": body["data"]["api_key"]},
                                 json={"currency": "BTC", "amount": "0.001"})
        assert status == status_wanted and code_of(body) == code, body
