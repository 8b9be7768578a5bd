"""POST /v1/payout, GET /v1/payout/:track_id and the dashboard twins: every error of SPEC 7."""

from __future__ import annotations

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.payouts import service as payouts

from .support import advance_clock, api, fill_backlog, signup
from .test_payouts import BTC_DEST, EVM_DEST, balance, create, fund, payout_env, payout_row, work

BURN_BTC = "1BitcoinEaterAddressDontSendf59kuE"
ZERO_EVM = "0x0000000000000000000000000000000000000000"


@pytest.fixture
async def env(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    await fund(client, merchant, devnet)  # 0.0099 BTC available
    return client, merchant, devnet


def error_of(body):
    return body["error"].get("code"), body["message"]


# -- auth -----------------------------------------------------------------------------------------


async def test_auth_is_required_and_scoped(env):
    client, merchant, _ = env
    body = {"currency": "BTC", "address": BTC_DEST, "amount": "0.001"}
    assert (await api(client, "POST", "/v1/payout", {}, json=body))[0] == 401
    assert (await api(client, "POST", "/v1/payout", merchant.merchant_key, json=body))[0] == 401
    assert (await api(client, "POST", "/v1/payout", {"payout_api_key": "nope"}, json=body))[0] == 401
    assert (await api(client, "GET", "/v1/payout/whatever", {}))[0] == 401
    status, key = await api(client, "POST", "/dashboard/api-keys", merchant.jwt,
                            json={"label": "read only", "scopes": ["payout:read"]})
    assert status == 200, key
    read_only = {"payout_api_key": key["data"]["api_key"]}
    status, denied = await api(client, "POST", "/v1/payout", read_only, json=body)
    assert status == 403 and denied["data"] is None
    assert (await api(client, "POST", "/v1/payout/batch", read_only, json={"items": [body]}))[0] == 403
    assert (await api(client, "GET", "/v1/payout/unknown", read_only))[0] == 404


async def test_scoped_key_coin_allowlist(env):
    client, merchant, _ = env
    status, key = await api(client, "POST", "/dashboard/api-keys", merchant.jwt,
                            json={"label": "eth only", "scopes": ["payout:create"], "coin_allowlist": ["ETH"]})
    assert status == 200, key
    status, body = await create(client, {"payout_api_key": key["data"]["api_key"]}, "0.001")
    assert status == 403 and error_of(body)[0] == "coin_not_allowed"


# -- validation and named errors -------------------------------------------------------------------


@pytest.mark.parametrize("amount, problem", [
    ("0", "must be greater than 0"),
    ("-1", "must be greater than 0"),
    ("0.000000001", "more than 8 decimal places"),
    ("0.00001", "must be at least 0.0001 BTC"),
    (True, "must be a decimal string"),
    ("abc", "must be a decimal string"),
])
async def test_bad_amounts_are_validation_errors(env, amount, problem):
    client, merchant, _ = env
    status, body = await create(client, merchant, amount)
    assert status == 400 and body["error"]["type"] == "validation"
    assert problem in body["error"]["detail"]["amount"] and body["message"].startswith("validation error:")


async def test_missing_and_oversized_fields(env):
    client, merchant, _ = env
    status, body = await api(client, "POST", "/v1/payout", merchant.payout_key, json={})
    assert status == 400 and set(body["error"]["detail"]) == {"currency", "address", "amount"}
    status, body = await create(client, merchant, "0.001", address="b" * 129)
    assert status == 400 and "address" in body["error"]["detail"]
    status, body = await create(client, merchant, "0.001", description="d" * 501)
    assert status == 400 and "description" in body["error"]["detail"]
    for key in ("short", "k" * 129):
        status, body = await create(client, merchant, "0.001", idempotency_key=key)
        assert status == 400 and "idempotency_key" in body["error"]["detail"]
    status, body = await create(client, merchant, "0.001", currency="NOPE")
    assert status == 400 and "currency" in body["error"]["detail"]
    status, body = await create(client, merchant, "0.001", callback_url="ftp://example.com/x")
    assert status == 400 and "callback_url" in body["error"]["detail"]
    status, body = await api(client, "POST", "/v1/payout", merchant.payout_key, data="not json")
    assert status == 400 and body["error"]["type"] == "validation"


async def test_invalid_and_burn_destinations(env):
    client, merchant, devnet = env
    for address in ("bc1qnotanaddress", EVM_DEST, "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx"):
        status, body = await create(client, merchant, "0.001", address=address)
        assert status == 400 and error_of(body) == ("invalid_address", "invalid destination address"), address
    status, body = await create(client, merchant, "0.001", address=BURN_BTC)
    assert status == 400 and error_of(body) == ("burn_address", "destination is a burn/null address")
    await fund(client, merchant, devnet, "0.01", coin="ETH")
    status, body = await create(client, merchant, "0.002", address=ZERO_EVM, currency="ETH")
    assert status == 400 and error_of(body)[0] == "burn_address"
    assert await balance(client, merchant) == {"BTC": "0.0099", "ETH": "0.0099"}  # nothing moved


async def test_insufficient_balance(env):
    client, merchant, _ = env
    status, body = await create(client, merchant, "0.01")  # 0.0099 credited
    assert status == 400 and error_of(body) == ("insufficient_balance", "insufficient balance")
    assert body["error"]["type"] == "invalid_request"
    status, body = await create(client, merchant, "0.01", currency="ETH", address=EVM_DEST)  # never held ETH
    assert status == 400 and error_of(body)[0] == "insufficient_balance"
    assert (await create(client, merchant, "0.0099"))[0] == 200  # exactly everything
    assert await balance(client, merchant) == {}
    status, body = await create(client, merchant, "0.0001")
    assert status == 400 and error_of(body)[0] == "insufficient_balance"


async def test_a_coin_the_merchant_does_not_accept_is_currency_not_accepted(env):
    """Issue 29 item 9 (SPEC 7 "currency not accepted by merchant"). Break caught: a payout in a coin
    outside accepted_coins answered ``insufficient_balance``. A coin the merchant still holds (accepted
    when it came in, since dropped) stays payable: its money is never trapped."""
    client, merchant, devnet = env
    doge = "DBus3bamQjgJULBJtYXpEzDWQRwF5iwxgC"
    status, body = await create(client, merchant, "20", address=doge, currency="DOGE")
    assert status == 400 and error_of(body) == ("currency_not_accepted", "currency not accepted by merchant"), body
    status, body = await api(client, "POST", "/v1/payout/batch", merchant.payout_key, json={"items": [
        {"currency": "DOGE", "address": doge, "amount": "20", "external_id": "doge-1"}]})
    assert status == 200 and body["data"]["results"][0]["error"] == "currency_not_accepted", body
    status, _ = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt, json={"accepted_coins": ["LTC"]})
    assert status == 200  # BTC dropped, 0.0099 BTC still held: it can still be paid out
    status, body = await create(client, merchant, "0.001")
    assert status == 200 and body["data"]["status"] == "Confirming", body
    status, body = await create(client, merchant, "0.01", currency="ETH", address=EVM_DEST)  # ETH: not held
    assert status == 400 and error_of(body)[0] == "currency_not_accepted", body
    assert await balance(client, merchant) == {"BTC": "0.0089"}


async def test_unsupported_coins_are_400_coin_not_supported(env):
    """SPEC 7 coin_not_supported: a coin nobody can pay out here (source-only XMR) or no coin at all.
    (BTC_LN has the devnet Lightning node in development; without a node it is 503: test_lightning_devnet.py.)"""
    client, merchant, _ = env
    status, body = await create(client, merchant, "0.001", currency="XMR", address="4" + "A" * 94)
    assert status == 400 and error_of(body) == ("coin_not_supported", "XMR cannot be paid out")
    status, body = await create(client, merchant, "0.001", currency="NOPE", address=BTC_DEST)
    assert status == 400 and body["error"]["type"] == "validation" and error_of(body)[0] == "coin_not_supported"


async def test_maintenance_is_503(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    await fund(client, merchant, devnet)
    devnet.gateway.maintenance = True
    status, body = await create(client, merchant, "0.001")
    assert status == 503 and body["message"] == "maintenance"
    assert (await api(client, "POST", "/v1/payout/batch", merchant.payout_key, json={"items": []}))[0] == 503


async def test_backlog_circuit_breaker_is_per_merchant(env):
    client, merchant, devnet = env
    await fill_backlog(devnet.gateway, merchant.merchant_id, payouts.BACKLOG_LIMIT - 1)
    assert (await create(client, merchant, "0.001"))[0] == 200  # the 500th
    status, body = await create(client, merchant, "0.001")
    assert status == 503 and error_of(body) == ("payout_backlog_too_large", "payout backlog too large")
    assert await balance(client, merchant) == {"BTC": "0.0089"}
    # Another merchant is not held back by this one's queue.
    other = await signup(client, "other@example.com")
    await fund(client, other, devnet)
    assert (await create(client, other, "0.001"))[0] == 200
    # Final payouts do not count.
    await devnet.gateway.db.execute("UPDATE payouts SET status = 'Failed' WHERE id = 'po_fake1'")
    assert (await create(client, merchant, "0.001"))[0] == 200


# -- idempotency ------------------------------------------------------------------------------------


async def test_idempotency_key_replays_and_conflicts(env):
    client, merchant, _ = env
    status, first = await create(client, merchant, "0.001", idempotency_key="order-0001")
    assert status == 200 and "idempotent" not in first["data"]
    status, again = await create(client, merchant, "0.001", idempotency_key="order-0001")
    assert status == 200 and again["data"] == {**first["data"], "idempotent": True}
    # The header works too, and agrees with the body.
    response = await client.post("/v1/payout", headers={**merchant.payout_key, "X-Idempotency-Key": "order-0001"},
                                 json={"currency": "BTC", "address": BTC_DEST, "amount": "0.001"})
    assert (await response.json())["data"]["track_id"] == first["data"]["track_id"]
    status, body = await create(client, merchant, "0.002", idempotency_key="order-0001")
    assert status == 409 and error_of(body)[0] == "idempotency_key_reused"
    response = await client.post("/v1/payout", headers={**merchant.payout_key, "X-Idempotency-Key": "order-0002"},
                                 json={"currency": "BTC", "address": BTC_DEST, "amount": "0.001",
                                       "idempotency_key": "order-0003"})
    assert response.status == 400
    assert await balance(client, merchant) == {"BTC": "0.0089"}  # one payout only
    # Keys are per merchant.
    other = await signup(client, "other@example.com")
    status, body = await create(client, other, "0.001", idempotency_key="order-0001")
    assert status == 400 and error_of(body)[0] == "insufficient_balance"


# -- reads --------------------------------------------------------------------------------------------


async def test_get_payout_fields_and_foreign_404(env):
    client, merchant, devnet = env
    track_id = (await create(client, merchant, "0.001", description="rent"))[1]["data"]["track_id"]
    status, body = await api(client, "GET", f"/v1/payout/{track_id}", merchant.payout_key)
    assert status == 200
    assert set(body["data"]) == {"track_id", "status", "coin", "amount", "destination", "tx_hash", "failure_reason",
                                 "created_at", "updated_at"}
    other = await signup(client, "other@example.com")
    status, body = await api(client, "GET", f"/v1/payout/{track_id}", other.payout_key)
    assert status == 404 and body["message"] == "not found"
    assert (await api(client, "GET", "/v1/payout/does-not-exist", merchant.payout_key))[0] == 404


async def test_dashboard_create_list_and_transactions(env):
    client, merchant, devnet = env
    status, body = await api(client, "POST", "/dashboard/create-payout", merchant.jwt,
                             json={"currency": "btc", "address": BTC_DEST, "amount": "0.002", "description": "x"})
    assert status == 200 and body["data"]["status"] == "Confirming"
    track_id = body["data"]["track_id"]
    assert (await api(client, "POST", "/dashboard/create-payout", {},
                      json={"currency": "BTC", "address": BTC_DEST, "amount": "0.002"}))[0] == 401
    status, body = await api(client, "POST", "/dashboard/create-payout", merchant.jwt,
                             json={"currency": "BTC", "address": BURN_BTC, "amount": "0.002"})
    assert status == 400 and error_of(body)[0] == "burn_address"
    advance_clock(devnet.gateway, 1)  # newest first: make the order unambiguous
    await create(client, merchant, "0.001")
    await work(devnet.gateway)
    await devnet.mine(1)
    await work(devnet.gateway)
    status, body = await api(client, "GET", "/dashboard/payouts", merchant.jwt, params={"limit": "1"})
    assert status == 200 and body["data"]["total"] == 2 and body["data"]["limit"] == 1
    (row,) = body["data"]["payouts"]
    assert set(row) == {"id", "trackId", "coin", "destination", "amount", "status", "txHash"}
    assert row["status"] == "CONFIRMED" and row["amount"] == "0.001" and row["txHash"]
    status, body = await api(client, "GET", "/dashboard/payouts", merchant.jwt, params={"offset": "1"})
    assert [r["trackId"] for r in body["data"]["payouts"]] == [track_id] and body["data"]["offset"] == 1
    for bad in ({"limit": "0"}, {"limit": "201"}, {"offset": "-1"}):
        assert (await api(client, "GET", "/dashboard/payouts", merchant.jwt, params=bad))[0] == 400
    assert (await api(client, "GET", "/dashboard/payouts", {}))[0] == 401
    body = (await api(client, "GET", "/dashboard/transactions", merchant.jwt))[1]
    payouts_list = body["data"]["payouts"]
    assert len(payouts_list) == 2 and set(payouts_list[0]) == {"id", "coin", "destination", "amount", "status"}
    assert {p["status"] for p in payouts_list} == {"CONFIRMED"}
    row = await payout_row(devnet.gateway, track_id)
    assert payouts_list[1]["id"] == row["id"]
    assert (await ledger.check_ledger(devnet.gateway.db)).ok
