"""Balance swaps (plugins/swaps, SPEC 3.5, 4.12) through the devnet venue, on both databases.

The venue's knobs are set on the live instance; the rate is fixed by the
test (20 ETH per BTC, 0.5 % venue fee) so every expected amount below is
worked out by hand, not by the code under test. The swap job is called
directly; ``ledger check`` runs after every path, crashes included.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.plugins.swaps import engine, store
from orbchain.plugins.swaps.engine import run_swaps
from orbchain.plugins.swaps.service import venue_account
from orbchain.plugins.swaps.venue_registry import venues_of

from .support import api, signup
from .test_payouts import advance_clock, fund, payout_env

QUOTE, SWAP = "/dashboard/swap/quote", "/dashboard/swap"
BODY = {"from_coin": "BTC", "to_coin": "ETH", "amount": "0.005"}


@pytest.fixture
async def env(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    await fund(client, merchant, devnet)  # 0.0099 BTC available
    venue = venues_of(devnet.gateway)["devnet"]
    venue.knobs.rates = {"BTC/ETH": Decimal("20")}
    venue.knobs.fee_bps = 50
    return client, merchant, devnet.gateway, venue


async def balances(client, merchant):
    status, body = await api(client, "GET", "/dashboard/balances", merchant.jwt)
    assert status == 200, body
    return {b["coin"]: b["amount"] for b in body["data"]["balances"] if Decimal(b["amount"])}


async def swap_of(client, merchant, swap_id):
    status, body = await api(client, "GET", f"{SWAP}/{swap_id}", merchant.jwt)
    assert status == 200, body
    return body["data"]


async def ledger_clean(gateway):
    report = await ledger.check_ledger(gateway.db)
    assert report.ok, report


async def start(client, merchant, body=BODY):
    status, answer = await api(client, "POST", SWAP, merchant.jwt, json=body)
    assert status == 200, answer
    assert answer["data"]["status"] == "QUOTED"
    return answer["data"]


# -- quote ------------------------------------------------------------------------------------


async def test_quote_answers_the_venue_and_changes_nothing(env):
    client, merchant, gateway, _ = env
    before = await balances(client, merchant)
    status, body = await api(client, "POST", QUOTE, merchant.jwt, json=BODY)
    assert status == 200, body
    data = body["data"]
    assert data["venue"] == "devnet" and data["from_amount"] == "0.005"
    assert data["to_amount"] == "0.0995"  # 0.005 * 20 = 0.1 ETH, less the venue's 0.5 %
    assert Decimal(data["rate"]) == Decimal("19.9") and data["floating_rate"] is True
    assert data["valid_until"].endswith("Z") and Decimal(data["min_from_amount"]) > 0
    assert await balances(client, merchant) == before
    assert (await api(client, "GET", "/dashboard/swaps", merchant.jwt))[1]["data"]["swaps"] == []


@pytest.mark.parametrize("body, field", [
    ({}, "from_coin"),
    ({**BODY, "from_coin": "NOPE"}, "from_coin"),
    ({**BODY, "to_coin": "BTC"}, "to_coin"),
    ({**BODY, "to_coin": "XMR"}, "to_coin"),  # never held as a balance
    ({**BODY, "amount": "0"}, "amount"),
    ({**BODY, "amount": "-1"}, "amount"),
    ({**BODY, "amount": "0.000000001"}, "amount"),  # finer than BTC
    ({**BODY, "amount": "abc"}, "amount"),
    ({**BODY, "amount": "0.00000001"}, "amount"),  # below the venue minimum
])
async def test_bad_bodies_are_a_400_envelope_and_change_nothing(env, body, field):
    client, merchant, gateway, _ = env
    before = await balances(client, merchant)
    for path in (QUOTE, SWAP):
        status, answer = await api(client, "POST", path, merchant.jwt, json=body)
        assert status == 400 and answer["data"] is None and field in answer["error"]["detail"], answer
    assert await balances(client, merchant) == before
    assert await store.list_for(gateway, merchant.merchant_id, 10, 0) == ([], 0)


async def test_routes_need_a_dashboard_token(env):
    client, _, _, _ = env
    for method, path in (("POST", QUOTE), ("POST", SWAP), ("GET", "/dashboard/swaps"), ("GET", f"{SWAP}/swp_x")):
        status, body = await api(client, method, path, {}, json=BODY if method == "POST" else None)
        assert status == 401 and body["error"]["code"] == "unauthorized", (path, body)


async def test_venue_down_is_a_503_and_nothing_moves(env):
    client, merchant, _, venue = env
    venue.knobs.unavailable = True
    before = await balances(client, merchant)
    for path in (QUOTE, SWAP):
        status, body = await api(client, "POST", path, merchant.jwt, json=BODY)
        assert status == 503 and body["error"]["code"] == "venue_unavailable", body
    assert await balances(client, merchant) == before


# -- the happy path ---------------------------------------------------------------------------


async def test_swap_debits_at_once_then_confirms_with_the_actual_amount(env):
    client, merchant, gateway, venue = env
    data = await start(client, merchant)
    assert data["from_amount"] == "0.005" and data["to_amount_quoted"] == "0.0995" and data["actual_to_amount"] is None
    assert await balances(client, merchant) == {"BTC": "0.0049"}
    assert await ledger.balance(gateway.db, venue_account("devnet"), "BTC") == 500_000
    await ledger_clean(gateway)

    await run_swaps(gateway)
    swap = await swap_of(client, merchant, data["swap_id"])
    assert swap["status"] == "CONFIRMED" and swap["actual_to_amount"] == "0.0995"
    assert swap["payin_hash"] and swap["payout_hash"] and swap["refund_hash"] is None and swap["failure_reason"] is None
    assert await balances(client, merchant) == {"BTC": "0.0049", "ETH": "0.0995"}
    assert await ledger.balance(gateway.db, venue_account("devnet"), "BTC") == 0
    await ledger_clean(gateway)
    await run_swaps(gateway)  # nothing left to do, nothing moves twice
    assert await balances(client, merchant) == {"BTC": "0.0049", "ETH": "0.0995"}
    assert venue.create_calls == 1


async def test_a_delayed_venue_keeps_the_swap_pending(env):
    client, merchant, gateway, venue = env
    venue.knobs.delay_seconds = 120
    data = await start(client, merchant)
    await run_swaps(gateway)
    assert (await swap_of(client, merchant, data["swap_id"]))["status"] == "PENDING"
    advance_clock(gateway, 60)
    await run_swaps(gateway)
    assert (await swap_of(client, merchant, data["swap_id"]))["status"] == "PENDING"
    advance_clock(gateway, 600)
    await run_swaps(gateway)
    assert (await swap_of(client, merchant, data["swap_id"]))["status"] == "CONFIRMED"
    await ledger_clean(gateway)


async def test_short_delivery_is_credited_as_delivered(env):
    client, merchant, gateway, venue = env
    venue.knobs.short_bps = 100  # delivers 1 % less than promised
    data = await start(client, merchant)
    await run_swaps(gateway)
    swap = await swap_of(client, merchant, data["swap_id"])
    assert swap["status"] == "CONFIRMED" and swap["actual_to_amount"] == "0.098505"  # 0.0995 * 0.99
    assert (await balances(client, merchant))["ETH"] == "0.098505"
    await ledger_clean(gateway)


async def test_list_and_foreign_swaps(env):
    client, merchant, _, _ = env
    first = await start(client, merchant, {**BODY, "amount": "0.001"})
    second = await start(client, merchant, {**BODY, "amount": "0.002"})
    status, body = await api(client, "GET", "/dashboard/swaps?limit=1", merchant.jwt)
    assert status == 200 and body["data"]["total"] == 2 and body["data"]["limit"] == 1
    assert [s["swap_id"] for s in body["data"]["swaps"]] == [second["swap_id"]]
    status, body = await api(client, "GET", "/dashboard/swaps?limit=201", merchant.jwt)
    assert status == 400
    other = await signup(client, "other@example.com")
    for swap_id in (first["swap_id"], "swp_unknown"):
        status, body = await api(client, "GET", f"{SWAP}/{swap_id}", other.jwt)
        assert status == 404 and body["data"] is None, body
    assert (await api(client, "GET", "/dashboard/swaps", other.jwt))[1]["data"]["swaps"] == []


async def test_insufficient_balance_is_a_400_and_changes_nothing(env):
    client, merchant, gateway, _ = env
    status, body = await api(client, "POST", SWAP, merchant.jwt, json={**BODY, "amount": "0.0100"})
    assert status == 400 and body["error"]["code"] == "insufficient_balance", body
    assert await balances(client, merchant) == {"BTC": "0.0099"}
    await ledger_clean(gateway)


async def test_idempotency_key_replays_the_first_swap(env):
    client, merchant, _, _ = env
    first = await start(client, merchant, {**BODY, "idempotency_key": "swap-key-0001"})
    status, again = await api(client, "POST", SWAP, merchant.jwt, json={**BODY, "idempotency_key": "swap-key-0001"})
    assert status == 200 and again["data"]["swap_id"] == first["swap_id"] and again["data"]["idempotent"] is True
    assert await balances(client, merchant) == {"BTC": "0.0049"}
    status, body = await api(client, "POST", SWAP, merchant.jwt,
                             json={**BODY, "amount": "0.001", "idempotency_key": "swap-key-0001"})
    assert status == 409 and body["error"]["code"] == "idempotency_key_reused"


async def test_with_2fa_a_swap_needs_a_fresh_totp_code(env):
    import pyotp

    client, merchant, gateway, _ = env
    now = gateway.now()
    status, body = await api(client, "POST", "/dashboard/mfa/setup", merchant.jwt, json={})
    totp = pyotp.TOTP(body["data"]["secret"])
    assert (await api(client, "POST", "/dashboard/mfa/verify", merchant.jwt, json={"code": totp.at(now)}))[0] == 200
    status, body = await api(client, "POST", SWAP, merchant.jwt, json=BODY)
    assert status == 401 and body["error"]["code"] == "totp_invalid"
    assert await balances(client, merchant) == {"BTC": "0.0099"}
    advance_clock(gateway, 30)
    status, body = await api(client, "POST", SWAP, merchant.jwt, json={**BODY, "totp_code": totp.at(now + 30)})
    assert status == 200, body


# -- failures: the source comes back in full -------------------------------------------------


async def _failed(client, merchant, gateway, data, reason_start):
    swap = await swap_of(client, merchant, data["swap_id"])
    assert swap["status"] == "FAILED" and swap["failure_reason"].startswith(reason_start), swap
    assert swap["actual_to_amount"] is None
    assert await balances(client, merchant) == {"BTC": "0.0099"}
    assert await ledger.balance(gateway.db, venue_account("devnet"), "BTC") == 0
    await ledger_clean(gateway)
    return swap


async def test_venue_refusing_the_order_credits_the_source_back(env):
    client, merchant, gateway, venue = env
    data = await start(client, merchant)
    venue.knobs.refuse_create = True
    await run_swaps(gateway)
    await _failed(client, merchant, gateway, data, "venue_refused")


async def test_venue_timeout_credits_the_source_back(env):
    client, merchant, gateway, venue = env
    data = await start(client, merchant)
    venue.knobs.unavailable = True
    await run_swaps(gateway)
    assert (await swap_of(client, merchant, data["swap_id"]))["status"] == "QUOTED"  # retried, not failed yet
    advance_clock(gateway, 3600)
    await run_swaps(gateway)
    await _failed(client, merchant, gateway, data, "venue_timeout")


async def test_failed_exchange_is_refunded(env):
    client, merchant, gateway, venue = env
    venue.knobs.fail_exchange = True
    data = await start(client, merchant)
    await run_swaps(gateway)  # order opened
    await run_swaps(gateway) if (await swap_of(client, merchant, data["swap_id"]))["status"] == "PENDING" else None
    advance_clock(gateway, 60)
    await run_swaps(gateway)
    swap = await _failed(client, merchant, gateway, data, "exchange failed")
    assert swap["refund_hash"]


async def test_a_venue_promising_materially_less_is_refused(env):
    client, merchant, gateway, venue = env
    venue.knobs.promise_short_bps = 150  # more than the 1 % threshold
    data = await start(client, merchant)
    await run_swaps(gateway)
    await _failed(client, merchant, gateway, data, "venue_short")


# -- crashes: the job resumes by swap id, one outcome ----------------------------------------


@pytest.mark.parametrize("step", ["open", "confirm"])
async def test_a_crash_at_any_step_resumes_to_one_outcome(env, monkeypatch, step):
    client, merchant, gateway, venue = env
    data = await start(client, merchant)
    real_move = store.move
    crashed = []

    async def crashing_move(gw, swap_id, expected, **changes):
        wanted = store.PENDING if step == "open" else store.CONFIRMED
        if changes.get("status") == wanted and not crashed:
            crashed.append(step)
            raise RuntimeError(f"simulated crash while moving to {wanted}")
        return await real_move(gw, swap_id, expected, **changes)

    monkeypatch.setattr(store, "move", crashing_move)
    await run_swaps(gateway)  # the crash is logged; the transaction rolled back
    await run_swaps(gateway)
    await run_swaps(gateway)
    assert crashed == [step]
    swap = await swap_of(client, merchant, data["swap_id"])
    assert swap["status"] == "CONFIRMED" and swap["actual_to_amount"] == "0.0995"
    assert venue.create_calls == 1  # the venue saw one order: the retry asked again by swap id
    assert await balances(client, merchant) == {"BTC": "0.0049", "ETH": "0.0995"}
    await ledger_clean(gateway)


async def test_two_workers_advancing_one_swap_move_it_once(env):
    client, merchant, gateway, _ = env
    data = await start(client, merchant)
    row = await store.get(gateway, data["swap_id"])
    await engine.advance(gateway, row)
    pending = await store.get(gateway, data["swap_id"])
    await engine.advance(gateway, pending)
    await engine.advance(gateway, pending)  # a stale copy: the conditional update refuses it
    assert await balances(client, merchant) == {"BTC": "0.0049", "ETH": "0.0995"}
    await ledger_clean(gateway)


async def test_concurrent_swaps_never_spend_what_is_not_there(env):
    import asyncio

    client, merchant, gateway, _ = env
    body = {**BODY, "amount": "0.006"}  # two of them exceed the 0.0099 BTC available
    results = await asyncio.gather(*(api(client, "POST", SWAP, merchant.jwt, json=body) for _ in range(2)))
    assert sorted(status for status, _ in results) == [200, 400], results
    assert await balances(client, merchant) == {"BTC": "0.0039"}
    await ledger_clean(gateway)


async def test_the_service_without_http_always_asks_totp_for_the_mini_app(env):
    from orbchain.core.types.errors import Forbidden
    from orbchain.plugins.swaps import service

    client, merchant, gateway, _ = env
    quote = await service.quote(gateway, BODY)
    assert quote["to_amount"] == "0.0995"
    with pytest.raises(Forbidden) as info:
        await service.commit(gateway, merchant.merchant_id, BODY, totp_always=True)
    assert info.value.code == "totp_setup_required"
    assert await balances(client, merchant) == {"BTC": "0.0099"}
