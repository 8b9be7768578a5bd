"""The payment endpoints' fields, defaults, limits and errors (SPEC 4.2, 4.7)."""

from __future__ import annotations

import pytest

from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor
from .support import Devnet, api, signup


@pytest.fixture
async def env(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    return client, await signup(client)


@pytest.mark.parametrize(
    "path, body, field",
    [
        ("/v1/payment/static-address", {}, "currency"),
        ("/v1/payment/static-address", {"currency": "BTC", "user_id": "u" * 129}, "user_id"),
        ("/v1/payment/static-address", {"currency": "BTC", "description": "d" * 501}, "description"),
        ("/v1/payment/static-address", {"currency": "BTC", "callback_url": "ftp://x"}, "callback_url"),
        ("/v1/payment/white-label", {"currency": "BTC"}, "amount"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount": "1", "amount_fiat": "5", "fiat_currency": "USD"}, "amount"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount": "0"}, "amount"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount": "-1"}, "amount"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount": "abc"}, "amount"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount": "0.000000001"}, "amount"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount_fiat": "5"}, "fiat_currency"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount_fiat": "5", "fiat_currency": "XYZ"}, "fiat_currency"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount": "1", "lifetime": 0}, "lifetime"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount": "1", "lifetime": 43201}, "lifetime"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount": "1", "order_id": "o" * 129}, "order_id"),
        ("/v1/payment/white-label", {"currency": "NOPE", "amount": "1"}, "currency"),
        ("/v1/payment/invoice", {}, "amount"),
        ("/v1/payment/invoice", {"amount": "10", "return_url": "javascript:alert(1)"}, "return_url"),
        ("/v1/payment/invoice", {"amount": "10", "expires_in": 30}, "expires_in"),
        ("/v1/payment/invoice", {"amount": "10", "email": "not-an-email"}, "email"),
        ("/v1/payment/invoice", {"amount": "10", "accepted_coins": []}, "accepted_coins"),
        # Issue 42 item 8. Breaks caught: a USD invoice of 1e-19 was priced at 1 satoshi; fiat finer than its minor
        # unit and pay amounts below the coin's dust limit (or Solana's rent floor) were accepted.
        ("/v1/payment/invoice", {"amount": "0.0000000000000000001", "currency": "USD"}, "amount"),
        ("/v1/payment/invoice", {"amount": "0.01", "currency": "USD"}, "amount"),
        ("/v1/payment/invoice", {"amount": "100.5", "currency": "JPY"}, "amount"),
        ("/v1/payment/invoice", {"amount": "0.000001", "currency": "BTC"}, "amount"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount": "0.000005"}, "amount"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount_fiat": "0.001", "fiat_currency": "USD"},
         "amount_fiat"),
        ("/v1/payment/white-label", {"currency": "BTC", "amount_fiat": "0.10", "fiat_currency": "USD"}, "amount_fiat"),
        ("/v1/payment/white-label", {"currency": "ETH", "amount": "0.0001", "pay_currency": "BTC"}, "amount"),
        ("/v1/payment/white-label", {"currency": "SOL", "amount": "0.0005"}, "amount"),
    ],
)
async def test_bad_input_names_the_field(env, path, body, field):
    client, merchant = env
    status, answer = await api(client, "POST", path, merchant.merchant_key, json=body)
    assert status == 400, answer
    assert answer["error"]["type"] == "validation" and field in answer["error"]["detail"]
    _, listed = await api(client, "GET", "/v1/payment", merchant.merchant_key)
    assert listed["data"]["total"] == 0  # nothing was created


async def test_currency_not_accepted_and_xmr(env):
    client, merchant = env
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "DOGE", "amount": "10"})
    assert status == 400 and body["message"] == "currency not accepted by merchant"
    status, body = await api(client, "POST", "/v1/payment/static-address", merchant.merchant_key,
                             json={"currency": "XMR"})
    assert status == 400 and body["error"]["code"] == "xmr_receive_unsupported"


async def test_splits_are_refused_until_enabled(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}), get_plugin_manager(blocked=["splits"]))
    merchant = await signup(client)
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "1", "splits": [{"bps": 10000, "recipient_address": "x"}]})
    assert status == 503 and body["message"].startswith("splits")


async def test_every_documented_plugin_field_nobody_serves_is_refused(make_client, make_config):
    """The fields come from the documented white-label body, not from a list in the core: each one
    sent while its plugin is blocked is a 503 naming it, never silently dropped."""
    client = await make_client(make_config(scheduler={"enabled": False}),
                               get_plugin_manager(blocked=["splits", "swaps"]))
    merchant = await signup(client)
    splits = [{"bps": 10000, "recipient_address": "x"}]
    for extra, named in (({"settlement_coin": "ETH"}, "settlement_coin:"),
                         ({"splits": splits, "settlement_coin": "ETH"}, "splits and settlement_coin:")):
        status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                                 json={"currency": "BTC", "amount": "1", **extra})
        assert status == 503 and body["error"]["type"] == "not_configured", body
        assert body["message"].startswith(named), body
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "1", "settlement_coin": None, "splits": []})
    assert status == 200, body  # empty values ask for nothing


async def test_auth_failures(env):
    client, merchant = env
    for headers in ({}, {"merchant_api_key": "wrong"}, merchant.payout_key, merchant.general_key):
        status, body = await api(client, "POST", "/v1/payment/white-label", headers, json={"currency": "BTC", "amount": "1"})
        assert status == 401, (headers, body)
    status, _ = await api(client, "GET", "/v1/deposits", {})
    assert status == 401
    status, _ = await api(client, "GET", "/dashboard/payments", merchant.merchant_key)
    assert status == 401
    status, _ = await api(client, "GET", "/v1/general/account/balance", merchant.merchant_key)
    assert status == 401


async def test_white_label_defaults_and_pay_currency_conversion(env):
    client, merchant = env
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "ETH", "amount": 0.5, "pay_currency": "btc", "unknown_field": 1,
                                   "description": "two coffees", "user_id": "u-1"})
    assert status == 200, body
    data = body["data"]
    assert data["pay_currency"] == "BTC" and data["pay_amount"] == "0.025"  # 0.5 ETH at 3000/60000
    assert data["expires_at"] - data["created_at"] == 1800 and data["description"] == "two coffees"
    assert "payment_url" not in data and "amount_fiat" not in data


async def test_fiat_priced_payment_locks_the_rate(env):
    client, merchant = env
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount_fiat": "9", "fiat_currency": "EUR", "lifetime": 5})
    data = body["data"]
    assert status == 200, body
    # 60000 USD per BTC at 0.9 EUR per USD = 54000 EUR; 9 / 54000 rounded up at 8 decimals.
    assert data["rate_locked"] == "54000" and data["fiat_currency"] == "EUR" and data["amount_fiat"] == "9"
    assert data["pay_amount"] == "0.00016667" and data["rate_locked_at"] == data["created_at"]
    devnet = Devnet(client)
    devnet.gateway.services["prices"].source.table["BTC"] *= 2  # the market moves; the lock does not
    devnet.gateway.services["prices"]._cached = None
    _, again = await api(client, "GET", f"/v1/payment/{data['track_id']}", merchant.merchant_key)
    assert again["data"]["pay_amount"] == "0.00016667"


async def test_invoice_alternative_names(env):
    client, merchant = env
    status, body = await api(client, "POST", "/v1/payment/invoice", merchant.merchant_key,
                             json={"amount": "5", "currency": "USDT_TRC20", "expires_in": 600, "customer_email": "A@B.io",
                                   "cancel_url": "https://shop.example/cart", "accepted_coins": ["USDT_TRC20", "ETH"]})
    assert status == 200, body
    data = body["data"]
    assert data["expires_at"] - data["created_at"] == 600 and data["email"] == "a@b.io"
    assert data["accepted_coins"] == ["USDT_TRC20", "ETH"] and data["address"].startswith("T")
    assert data["cancel_url"] == "https://shop.example/cart" and data["pay_amount"] == "5"
    status, body = await api(client, "POST", "/v1/payment/invoice", merchant.merchant_key,
                             json={"amount": "5", "accepted_coins": ["DOGE"]})
    assert status == 400 and body["error"]["code"] == "currency_not_accepted"


async def test_list_filters_pagination_and_order(env):
    client, merchant = env
    made = []
    for i, (path, body) in enumerate([
        ("/v1/payment/white-label", {"currency": "BTC", "amount": "1", "order_id": "A"}),
        ("/v1/payment/invoice", {"amount": "3", "currency": "USD"}),
        ("/v1/payment/static-address", {"currency": "LTC"}),
    ]):
        devnet = Devnet(client)
        devnet.gateway.clock = lambda i=i: 1_800_000_000 + i
        made.append((await api(client, "POST", path, merchant.merchant_key, json=body))[1]["data"]["track_id"])
    _, body = await api(client, "GET", "/v1/payment", merchant.merchant_key)
    assert [p["track_id"] for p in body["data"]["payments"]] == made[::-1]
    assert body["data"]["total"] == 3 and body["data"]["limit"] == 20 and body["data"]["offset"] == 0
    assert set(body["data"]["payments"][0]) == {"track_id", "type", "status", "currency", "address", "paid_at", "created_at"}
    _, body = await api(client, "GET", "/v1/payment", merchant.merchant_key,
                        params={"sort_order": "asc", "limit": "1", "offset": "1"})
    assert [p["track_id"] for p in body["data"]["payments"]] == [made[1]] and body["data"]["total"] == 3
    for params, expected in (({"type": "INVOICE"}, [made[1]]), ({"order_id": "A"}, [made[0]]),
                             ({"currency": "ltc"}, [made[2]]), ({"status": "WAITING"}, made[::-1]),
                             ({"status": "PAID"}, [])):
        _, body = await api(client, "GET", "/v1/payment", merchant.merchant_key, params=params)
        assert [p["track_id"] for p in body["data"]["payments"]] == expected, params
    for params in ({"limit": "0"}, {"limit": "201"}, {"offset": "-1"}, {"status": "DONE"}, {"sort_order": "up"}):
        status, body = await api(client, "GET", "/v1/payment", merchant.merchant_key, params=params)
        assert status == 400 and body["error"]["type"] == "validation", params
    status, body = await api(client, "GET", "/v1/deposits", merchant.merchant_key, params={"limit": "500"})
    assert status == 400
    _, body = await api(client, "GET", "/v1/deposits", merchant.merchant_key)
    assert body["data"] == {"deposits": [], "total": 0, "limit": 50, "offset": 0}


async def test_accepted_currencies_and_coin_allowlist(env):
    client, merchant = env
    _, body = await api(client, "GET", "/v1/payment/accepted-currencies", merchant.merchant_key)
    assert body["data"]["accepted_coins"] == ["BTC", "LTC", "ETH", "USDT_ERC20", "USDT_TRC20", "SOL"]
    status, body = await api(client, "POST", "/dashboard/api-keys", merchant.jwt,
                             json={"label": "btc only", "scopes": ["payment:create", "payment:read"], "coin_allowlist": ["BTC"]})
    assert status == 200, body
    scoped = {"merchant_api_key": body["data"]["api_key"]}
    status, body = await api(client, "POST", "/v1/payment/white-label", scoped, json={"currency": "ETH", "amount": "1"})
    assert status == 403 and body["error"]["code"] == "coin_not_allowed"
    status, _ = await api(client, "POST", "/v1/payment/white-label", scoped, json={"currency": "BTC", "amount": "1"})
    assert status == 200


async def test_dashboard_twins(env):
    client, merchant = env
    status, body = await api(client, "POST", "/dashboard/create-payment", merchant.jwt,
                             json={"type": "white_label", "currency": "BTC", "amount": "0.01"})
    assert status == 200 and body["data"]["type"] == "white_label"
    track_id = body["data"]["track_id"]
    for bad in ({}, {"type": "gift"}, {"type": "white_label", "amount": "1"}, {"type": "invoice"}):
        status, body = await api(client, "POST", "/dashboard/create-payment", merchant.jwt, json=bad)
        assert status == 400, bad
    _, body = await api(client, "GET", "/dashboard/payments", merchant.jwt)
    assert body["data"]["payments"][0]["track_id"] == track_id
    _, body = await api(client, "GET", f"/dashboard/payments/{track_id}", merchant.jwt)
    assert body["data"]["track_id"] == track_id
    devnet = Devnet(client)
    await devnet.pay("BTC", body["data"]["address"], "0.01")
    await devnet.mine(2)
    _, body = await api(client, "GET", "/dashboard/balances", merchant.jwt)
    assert body["data"]["balances"] == [{"coin": "BTC", "amount": "0.0099"}]
    _, body = await api(client, "GET", "/dashboard/transactions", merchant.jwt)
    deposit = body["data"]["deposits"][0]
    assert deposit["amount"] == "0.01" and deposit["amountUsd"] == "600.00" and deposit["status"] == "CREDITED"
    status, _ = await api(client, "GET", "/dashboard/transactions", merchant.jwt, params={"limit": "501"})
    assert status == 400


async def test_deposit_and_receive_addresses(env):
    client, merchant = env
    _, body = await api(client, "GET", "/dashboard/deposit-addresses", merchant.jwt)
    data = body["data"]
    assert data["account_id"].startswith("ORB-")
    coins = {row["coin"]: row for row in data["addresses"]}
    assert set(coins) == {"BTC", "LTC", "ETH", "USDT_ERC20", "USDT_TRC20", "SOL"}
    assert coins["BTC"]["address"].startswith("bc1q") and coins["LTC"]["address"].startswith("ltc1q")
    assert coins["ETH"]["address"] == coins["USDT_ERC20"]["address"]
    assert coins["SOL"]["qr"].startswith("data:image/svg+xml")
    _, again = await api(client, "GET", "/dashboard/deposit-addresses", merchant.jwt)
    assert again["data"] == data  # long-lived, idempotent
    _, body = await api(client, "GET", "/dashboard/receive-address", merchant.jwt, params={"coin": "btc"})
    assert body["data"] == {"coin": "BTC", "address": coins["BTC"]["address"]}
    for params, code in (({}, "missing_coin"), ({"coin": "DOGE"}, "coin_not_accepted"),
                         ({"coin": "XMR"}, "xmr_receive_unsupported")):
        status, body = await api(client, "GET", "/dashboard/receive-address", merchant.jwt, params=params)
        assert status == 400 and body["error"]["code"] == code
    status, body = await api(client, "GET", "/dashboard/receive-address", {}, params={"coin": "BTC"})
    assert status == 401


async def test_two_merchants_never_share_an_address(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"auth_per_minute": 100}))
    seen = set()
    for i in range(3):
        merchant = await signup(client, f"m{i}@example.com")
        for _ in range(3):
            _, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                                json={"currency": "ETH", "amount": "1"})
            seen.add(body["data"]["address"])
    assert len(seen) == 9


async def test_the_status_filter_takes_any_case_and_names_the_values_it_knows(env):
    """Issue 29 item 9 ("status=Paid returns an empty list"). On 26d3b23 the filter already matched any
    case (the audit's empty list did not reproduce); this keeps it so on both list routes: ``Paid`` and
    ``paid`` find the paid payment, and an unknown value is a 400 naming the SPEC's values."""
    client, merchant = env
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.001"})
    assert status == 200, body
    paid = body["data"]
    devnet = Devnet(client)
    await devnet.pay("BTC", paid["address"], "0.001")
    await devnet.mine(2)
    await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key, json={"currency": "BTC", "amount": "1"})
    for path, headers in (("/v1/payment", merchant.merchant_key), ("/dashboard/payments", merchant.jwt)):
        for value in ("Paid", "paid", "PAID"):
            status, body = await api(client, "GET", path, headers, params={"status": value})
            assert status == 200 and [p["track_id"] for p in body["data"]["payments"]] == [paid["track_id"]], \
                (path, value, body)
        status, body = await api(client, "GET", path, headers, params={"status": "Settled"})
        assert status == 400 and body["error"]["detail"]["status"] == \
            "must be one of WAITING, PAYING, PAID, EXPIRED, CANCELLED", body


async def test_the_smallest_payment_is_named_in_the_currency_the_amount_was_written_in(env):
    """Issue 42 item 8: the minimum is the pay coin's smallest payment (BTC 0.00001, the dust floor its payouts
    keep too), said in the amount's own currency at the moment's rate; one minor unit of a fiat is the finest
    price (a cent, a whole yen). The same on the dashboard's JSON and its no-script form."""
    client, merchant = env
    cases = [
        ({"amount": "0.59", "currency": "USD"},
         "must be at least 0.60 USD at the current rate: a BTC payment must be at least 0.00001 BTC"),
        ({"amount": "0.01", "currency": "BTC"}, None),
        ({"amount": "0.000009", "currency": "BTC"}, "must be at least 0.00001 BTC, the smallest payment BTC can receive"),
        ({"amount": "100.5", "currency": "JPY"}, "has more than 0 decimal places"),
        ({"amount": "12.345", "currency": "EUR"}, "has more than 2 decimal places"),
    ]
    for body, problem in cases:
        status, answer = await api(client, "POST", "/v1/payment/invoice", merchant.merchant_key, json=body)
        if problem is None:
            assert status == 200, answer
            continue
        assert status == 400 and answer["error"]["detail"] == {"amount": problem}, (body, answer)
        status, answer = await api(client, "POST", "/dashboard/create-payment", merchant.jwt,
                                   json={"type": "invoice", **body})
        assert status == 400 and answer["error"]["detail"] == {"amount": problem}, (body, answer)
    for body, pay_amount in (({"amount": "0.60", "currency": "USD"}, "0.00001"),
                             ({"amount": "100", "currency": "JPY"}, "0.00001112"),
                             ({"amount": "12.500", "currency": "EUR"}, "0.00023149")):
        status, answer = await api(client, "POST", "/v1/payment/invoice", merchant.merchant_key, json=body)
        assert status == 200 and answer["data"]["pay_amount"] == pay_amount, (body, answer)
    status, answer = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                               json={"currency": "ETH", "amount": "0.0001", "pay_currency": "BTC"})
    assert answer["error"]["detail"] == {"amount": "must be at least 0.0002 ETH at the current rate: a BTC payment "
                                                   "must be at least 0.00001 BTC"}, answer
    status, answer = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                               json={"currency": "SOL", "amount": "0.00089087"})
    assert answer["error"]["detail"] == {"amount": "must be at least 0.00089088 SOL, the smallest payment SOL can "
                                                   "receive"}, answer
    before = (await api(client, "GET", "/v1/payment", merchant.merchant_key))[1]["data"]["total"]

    visitor = Visitor(client)
    await visitor.sign_up("form@example.com")
    await visitor.get("/app/payments/new")
    await visitor.submit("/app/payments/new", {"type": "invoice", "amount": "0.0000000000000000001",
                                               "currency": "USD"}, expect=400)
    assert 'id="error-amount">Has more than 2 decimal places.' in visitor.page
    assert 'value="0.0000000000000000001"' in visitor.page
    await visitor.submit("/app/payments/new", {"type": "invoice", "amount": "0.10", "currency": "USD"}, expect=400)
    assert 'id="error-amount">Must be at least 0.60 USD at the current rate' in visitor.page
    await visitor.submit("/app/payments/new", {"type": "white_label", "amount": "0.000001", "currency": "BTC"},
                         expect=400)
    assert 'id="error-amount">Must be at least 0.00001 BTC, the smallest payment BTC can receive' in visitor.page
    assert (await api(client, "GET", "/v1/payment", merchant.merchant_key))[1]["data"]["total"] == before
    made = await client.app[GATEWAY].db.fetch_val(
        "SELECT COUNT(*) FROM payments p JOIN merchants m ON m.id = p.merchant_id WHERE m.email = :e",
        {"e": "form@example.com"})
    assert made == 0  # nothing the refused forms asked for was created
