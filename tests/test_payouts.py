"""The payout pipeline on devnet (core/payouts/service.py, core/payouts/worker.py), on both databases.

Helpers here (``payout_env``, ``fund``, ``work`` ...) are shared by the other
payout test modules.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest
from orbchain.core.contract.plugins import hookimpl
from orbchain.core.events.webhooks import deliver_due
from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import NETWORK_FEES, payouts_in_flight, world
from orbchain.core.payouts import service as payouts
from orbchain.core.payouts import worker
from orbchain.core.types.chains import BroadcastError, PayoutStatus, SignedPayout

from .support import Devnet, WebhookReceiver, advance_clock, api, signup

BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
EVM_DEST = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"


# -- shared helpers ---------------------------------------------------------------------------


async def payout_env(make_client, make_config, **sections):
    """A client (scheduler off), a merchant and the devnet driver."""
    sections.setdefault("scheduler", {"enabled": False})
    client = await make_client(make_config(**sections))
    merchant = await signup(client)
    return client, merchant, Devnet(client)


async def fund(client, merchant, devnet, amount="0.01", coin="BTC") -> str:
    """Pay a white-label payment of ``amount`` and confirm it; the merchant is credited 99 %."""
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": coin, "amount": amount})
    assert status == 200, body
    await devnet.pay(coin, body["data"]["address"], amount)
    await devnet.mine(devnet.gateway.coins.require(coin).confirmations)
    return body["data"]["track_id"]


async def work(gateway, seconds: int = 5) -> int:
    """Let ``seconds`` pass, then run one worker tick."""
    advance_clock(gateway, seconds)
    return await worker.process_payouts(gateway)


async def balance(client, merchant) -> dict[str, str]:
    body = (await api(client, "GET", "/v1/general/account/balance", merchant.general_key))[1]
    return {b["coin"]: b["amount"] for b in body["data"]["balances"]}


async def create(client, merchant, amount="0.005", address=BTC_DEST, currency="BTC", **extra):
    """POST /v1/payout as ``merchant`` (or with explicit key headers)."""
    headers = merchant if isinstance(merchant, dict) else merchant.payout_key
    return await api(client, "POST", "/v1/payout", headers,
                     json={"currency": currency, "address": address, "amount": amount, **extra})


async def payout_row(gateway, track_id):
    return await gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": track_id})


async def in_flight(gateway, coin="BTC") -> int:
    return await ledger.balance(gateway.db, payouts_in_flight("devnet"), coin)


async def devnet_txs(gateway, tx_hash):
    return await gateway.db.fetch_all("SELECT * FROM devnet_txs WHERE tx_hash = :h", {"h": tx_hash})


async def outbox(gateway, event_type):
    rows = await gateway.db.fetch_all("SELECT body FROM webhook_events WHERE event_type = :t", {"t": event_type})
    return [json.loads(r["body"]) for r in rows]


@pytest.fixture
async def env(make_client, make_config):
    return await payout_env(make_client, make_config)


# -- the happy path ---------------------------------------------------------------------------


async def test_payout_is_signed_broadcast_and_confirmed(env):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet)
    assert await balance(client, merchant) == {"BTC": "0.0099"}
    status, body = await create(client, merchant, "0.004")
    assert status == 200, body
    data = body["data"]
    assert data["status"] == "Confirming" and data["amount"] == "0.004" and data["destination"] == BTC_DEST
    assert set(data) == {"track_id", "status", "coin", "amount", "destination", "tx_hash", "failure_reason",
                         "created_at", "updated_at"}
    assert data["tx_hash"] is None and data["failure_reason"] is None
    # Reserved at once: the balance drops, the in-flight account holds it.
    assert await balance(client, merchant) == {"BTC": "0.0059"}
    assert await in_flight(gw) == 400_000

    assert await work(gw) == 1
    row = await payout_row(gw, data["track_id"])
    assert row["stage"] == "broadcast" and row["status"] == "Confirming"
    (tx,) = await devnet_txs(gw, row["tx_hash"])
    assert tx["address"] == BTC_DEST and gw.db.to_int(tx["amount"]) == 400_000 and tx["status"] == "mempool"
    view = (await api(client, "GET", f"/v1/payout/{data['track_id']}", merchant.payout_key))[1]["data"]
    assert view["status"] == "Confirming" and view["tx_hash"] is None

    await devnet.mine(1)
    await work(gw)
    view = (await api(client, "GET", f"/v1/payout/{data['track_id']}", merchant.payout_key))[1]["data"]
    assert view["status"] == "Confirmed" and view["tx_hash"] == row["tx_hash"] and view["failure_reason"] is None
    assert await in_flight(gw) == 0
    assert await ledger.balance(gw.db, world("devnet"), "BTC") == -1_000_000 + 400_000
    # SPEC 4.6: credited deposits minus payouts and fees.
    assert await balance(client, merchant) == {"BTC": "0.0059"}
    (hook,) = await outbox(gw, "payout.confirmed")
    assert hook == {**hook, "type": "payout", "track_id": data["track_id"], "status": "Confirmed", "coin": "BTC",
                    "amount": "0.004", "destination": BTC_DEST, "tx_hash": row["tx_hash"], "failure_reason": None}
    assert (await ledger.check_ledger(gw.db)).ok
    # Nothing left to do, and a second tick changes nothing.
    assert await work(gw, 60) == 0


async def test_webhook_is_delivered_signed_with_the_request_id(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    hook = WebhookReceiver()
    url = await hook.start()
    try:
        secret = (await api(client, "PUT", "/dashboard/settings/webhook", merchant.jwt,
                            json={"webhook_url": url}))[1]["data"]["webhook_secret"]
        await fund(client, merchant, devnet)
        response = await client.post("/v1/payout", headers={**merchant.payout_key, "X-Request-Id": "req-payout-1"},
                                     json={"currency": "BTC", "address": BTC_DEST, "amount": "0.001"})
        track_id = (await response.json())["data"]["track_id"]
        await work(devnet.gateway)
        await devnet.mine(1)
        await work(devnet.gateway)
        await deliver_due(devnet.gateway)
        (body,) = [b for b in hook.verified(secret) if b["event_type"] == "payout.confirmed"]
        assert body["track_id"] == track_id and body["request_id"] == "req-payout-1" and body["tx_hash"]
    finally:
        await hook.close()


async def test_payout_finished_hook_fires_once_after_commit(env):
    client, merchant, devnet = env
    gw = devnet.gateway
    seen = []

    class Watcher:
        @staticmethod
        @hookimpl
        async def payout_finished(gateway, payout):
            row = await payout_row(gw, payout["track_id"])
            seen.append((payout["status"], payout["amount"], row["status"]))

    gw.pm.register(Watcher, name="payout-finished-watcher")
    try:
        await fund(client, merchant, devnet)
        await create(client, merchant, "0.001")
        await work(gw)
        await devnet.mine(1)
        await work(gw)
        await work(gw)
    finally:
        gw.pm.unregister(name="payout-finished-watcher")
    assert seen == [("Confirmed", 100_000, "Confirmed")]


async def test_evm_payout_with_18_decimals(env):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet, "1.000000000000000001", coin="ETH")
    status, body = await create(client, merchant, "0.500000000000000001", address=EVM_DEST.lower(), currency="ETH")
    assert status == 200, body
    assert body["data"]["destination"] == EVM_DEST  # stored checksummed
    await work(gw)
    await devnet.mine(1)
    await work(gw)
    row = await payout_row(gw, body["data"]["track_id"])
    assert row["status"] == "Confirmed" and gw.db.to_int(row["amount"]) == 500_000_000_000_000_001
    assert (await ledger.check_ledger(gw.db)).ok


# -- failures re-credit ----------------------------------------------------------------------------


async def test_permanent_refusal_fails_and_recredits(env, monkeypatch):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet)

    async def refuse(signed):
        raise BroadcastError("bad-txns-inputs-missingorspent", permanent=True)

    monkeypatch.setattr(devnet.adapter, "broadcast", refuse)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    assert await balance(client, merchant) == {"BTC": "0.0059"}
    await work(gw)
    view = (await api(client, "GET", f"/v1/payout/{track_id}", merchant.payout_key))[1]["data"]
    assert view["status"] == "Failed" and view["tx_hash"] is None
    assert view["failure_reason"] == "broadcast_rejected: bad-txns-inputs-missingorspent"
    assert await balance(client, merchant) == {"BTC": "0.0099"}
    assert await in_flight(gw) == 0
    (hook,) = await outbox(gw, "payout.failed")
    assert hook["status"] == "Failed" and hook["tx_hash"] is None and hook["failure_reason"].startswith("broadcast_")
    assert await outbox(gw, "payout.confirmed") == []
    assert (await ledger.check_ledger(gw.db)).ok


async def test_transient_failures_back_off_then_time_out(env, monkeypatch):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet)
    calls = []

    async def flaky(signed):
        calls.append(signed.tx_hash)
        raise BroadcastError("connection reset")

    monkeypatch.setattr(devnet.adapter, "broadcast", flaky)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    await work(gw)
    row = await payout_row(gw, track_id)
    assert row["stage"] == "signed" and row["attempts"] == 1 and "connection reset" in row["last_error"]
    assert await work(gw, 1) == 0  # backing off
    for attempt in range(1, worker.MAX_ATTEMPTS):
        await work(gw, worker.backoff_seconds(attempt))
    row = await payout_row(gw, track_id)
    assert row["status"] == "Failed" and row["failure_reason"] == "broadcast_timeout"
    assert len(calls) == worker.MAX_ATTEMPTS and len(set(calls)) == 1  # the same signed bytes every time
    assert await balance(client, merchant) == {"BTC": "0.0099"}
    assert (await ledger.check_ledger(gw.db)).ok


async def test_transient_failure_then_success(env, monkeypatch):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet)
    real = devnet.adapter.broadcast
    failures = [BroadcastError("timeout")]

    async def once_flaky(signed):
        if failures:
            raise failures.pop()
        await real(signed)

    monkeypatch.setattr(devnet.adapter, "broadcast", once_flaky)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    await work(gw)
    await work(gw, worker.backoff_seconds(1))
    row = await payout_row(gw, track_id)
    assert row["stage"] == "broadcast" and row["attempts"] == 0 and row["last_error"] is None
    await devnet.mine(1)
    await work(gw)
    assert (await payout_row(gw, track_id))["status"] == "Confirmed"


async def test_timeout_never_recredits_a_transaction_the_node_has(env, monkeypatch):
    """Every broadcast "fails" but actually lands: the payout confirms instead of failing."""
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet)
    real = devnet.adapter.broadcast

    async def lands_but_errors(signed):
        await real(signed)
        raise BroadcastError("read timeout")

    monkeypatch.setattr(devnet.adapter, "broadcast", lands_but_errors)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    for _ in range(worker.MAX_ATTEMPTS):
        await work(gw, worker.MAX_BACKOFF_SECONDS)
    row = await payout_row(gw, track_id)
    assert row["stage"] == "broadcast" and row["status"] == "Confirming"
    await devnet.mine(1)
    await work(gw, 60)
    assert (await payout_row(gw, track_id))["status"] == "Confirmed"
    assert await balance(client, merchant) == {"BTC": "0.0059"}


async def test_dropped_transaction_fails_after_the_grace_period(env):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    await work(gw)
    row = await payout_row(gw, track_id)
    await devnet.chain.reorg(1, drop=[row["tx_hash"]])
    await work(gw)
    row = await payout_row(gw, track_id)
    assert row["status"] == "Confirming" and row["missing_since"] is not None
    await work(gw, devnet.adapter.drop_after_seconds)
    row = await payout_row(gw, track_id)
    assert row["status"] == "Failed" and row["failure_reason"] == "dropped"
    assert await balance(client, merchant) == {"BTC": "0.0099"} and await in_flight(gw) == 0


async def test_reverted_transaction_fails(env, monkeypatch):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet)

    real = devnet.adapter.sign_payout

    async def with_fee(order):
        return replace(await real(order), network_fee=300)

    async def reverted(signed):
        return PayoutStatus(found=True, confirmations=3, failed=True)

    monkeypatch.setattr(devnet.adapter, "sign_payout", with_fee)
    monkeypatch.setattr(devnet.adapter, "payout_status", reverted)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    await work(gw)
    row = await payout_row(gw, track_id)
    assert row["status"] == "Failed" and row["failure_reason"] == "reverted"
    assert await balance(client, merchant) == {"BTC": "0.0099"}
    assert await ledger.balance(gw.db, NETWORK_FEES, "BTC") == -300  # a reverted transaction still paid gas
    assert (await ledger.check_ledger(gw.db)).ok


async def test_a_failed_sign_is_retried_and_the_payout_signed_once(env, monkeypatch):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet)
    real = devnet.adapter.sign_payout
    signs = []

    async def sign(order):
        signs.append(order.payout_id)
        if len(signs) == 1:
            raise ConnectionError("wallet locked")
        return await real(order)

    monkeypatch.setattr(devnet.adapter, "sign_payout", sign)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    await work(gw)
    assert (await payout_row(gw, track_id))["stage"] == "queued"
    await work(gw, 10)
    await work(gw, 10)
    assert (await payout_row(gw, track_id))["stage"] == "broadcast" and len(signs) == 2


# -- claims ------------------------------------------------------------------------------------------


async def test_two_workers_never_process_one_payout(env, monkeypatch):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet, "0.1")
    real = devnet.adapter.sign_payout
    signs = []

    async def slow_sign(order):
        signs.append(order.payout_id)
        await asyncio.sleep(0.01)
        return await real(order)

    monkeypatch.setattr(devnet.adapter, "sign_payout", slow_sign)
    for _ in range(10):
        assert (await create(client, merchant, "0.001"))[0] == 200
    advance_clock(gw, 5)
    claimed = await asyncio.gather(*(worker.process_payouts(gw, limit=4) for _ in range(4)))
    assert sum(claimed) == 10
    assert sorted(signs) == sorted(set(signs)) and len(signs) == 10
    rows = await gw.db.fetch_all("SELECT stage FROM payouts")
    assert {r["stage"] for r in rows} == {"broadcast"}


async def test_a_crashed_claim_is_retaken_after_its_lease(env):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    advance_clock(gw, 1)
    (claimed,) = await payouts.claim_due(gw, 10, worker.LEASE_SECONDS)  # ... and the worker dies here
    assert await work(gw, 1) == 0
    assert await work(gw, worker.LEASE_SECONDS) == 1
    row = await payout_row(gw, track_id)
    assert row["stage"] == "broadcast" and row["claim_token"] is None
    # The dead worker's token no longer moves anything.
    assert await payouts.record_signed(gw, claimed, SignedPayout("00" * 32, "{}")) is None


async def test_a_tick_cut_short_by_a_stop_gives_its_claims_back_and_sends_once(env, monkeypatch):
    """Issue 34: a stop cancels a tick waiting on the node's broadcast. Its claims are given back at once (the
    payout in flight and the one it had not reached), so the next tick, after a restart, takes both instead
    of waiting ``LEASE_SECONDS``; the stored transaction goes out, never a new signature, and once."""
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet)
    first = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    second = (await create(client, merchant, "0.001"))[1]["data"]["track_id"]
    real_sign, real_broadcast, signs, waiting = devnet.adapter.sign_payout, devnet.adapter.broadcast, [], asyncio.Event()

    async def counted_sign(order):
        signs.append(order.payout_id)
        return await real_sign(order)

    async def silent_node(signed):
        waiting.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(devnet.adapter, "sign_payout", counted_sign)
    monkeypatch.setattr(devnet.adapter, "broadcast", silent_node)
    advance_clock(gw, 5)
    tick = asyncio.create_task(worker.process_payouts(gw))
    await waiting.wait()
    tick.cancel()
    with pytest.raises(asyncio.CancelledError):
        await tick
    held = {row["stage"]: row for row in [await payout_row(gw, track_id) for track_id in (first, second)]}
    assert set(held) == {"signed", "queued"} and {row["claim_token"] for row in held.values()} == {None}

    monkeypatch.setattr(devnet.adapter, "broadcast", real_broadcast)
    assert await work(gw, 1) == 2  # at once: before, the claims held for LEASE_SECONDS
    sent = {row["id"]: row for row in [await payout_row(gw, track_id) for track_id in (first, second)]}
    assert {row["stage"] for row in sent.values()} == {"broadcast"}
    assert sent[held["signed"]["id"]]["tx_hash"] == held["signed"]["tx_hash"]  # the stored bytes, not re-signed
    assert sorted(signs) == sorted(sent)  # each signed once
    for row in sent.values():
        assert len(await devnet_txs(gw, row["tx_hash"])) == 1
    await devnet.mine(1)
    await work(gw, 10)
    assert {(await payout_row(gw, t))["status"] for t in (first, second)} == {"Confirmed"}
    assert await in_flight(gw) == 0 and (await ledger.check_ledger(gw.db)).ok


async def test_a_stopping_worker_finishes_the_payout_in_hand_and_gives_back_the_rest(env, monkeypatch):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet)
    tracks = [(await create(client, merchant, "0.001"))[1]["data"]["track_id"] for _ in range(2)]
    advance_clock(gw, 5)
    real_advance = worker.advance

    async def stop_during(gateway, row):
        await real_advance(gateway, row)
        gateway.stop.begin("SIGTERM")  # arrives while the first payout is being sent

    monkeypatch.setattr(worker, "advance", stop_during)
    assert await worker.process_payouts(gw) == 2
    rows = [await payout_row(gw, track_id) for track_id in tracks]
    assert sorted((row["stage"], row["claim_token"]) for row in rows) == [("broadcast", None), ("queued", None)]


# -- network fees ------------------------------------------------------------------------------------


async def test_network_fee_is_booked_in_the_native_coin_when_mined(env, monkeypatch):
    client, merchant, devnet = env
    gw = devnet.gateway
    real = devnet.adapter.sign_payout

    async def with_fee(order):
        return replace(await real(order), network_fee=21_000)

    monkeypatch.setattr(devnet.adapter, "sign_payout", with_fee)
    await fund(client, merchant, devnet, "20", coin="USDT_ERC20")
    track_id = (await create(client, merchant, "5", address=EVM_DEST, currency="USDT_ERC20"))[1]["data"]["track_id"]
    await work(gw)
    assert (await payout_row(gw, track_id))["network_fee"] in (21_000, "21000")
    assert await ledger.balance(gw.db, NETWORK_FEES, "ETH") == 0  # not before it is mined
    await devnet.mine(1)
    await work(gw)
    assert (await payout_row(gw, track_id))["status"] == "Confirmed"
    assert await ledger.balance(gw.db, NETWORK_FEES, "ETH") == -21_000
    assert await ledger.balance(gw.db, world("devnet"), "ETH") == 21_000
    assert await balance(client, merchant) == {"USDT_ERC20": "14.8"}  # the merchant pays the amount only
    assert (await ledger.check_ledger(gw.db)).ok


async def test_no_network_fee_for_a_transaction_that_never_landed(env, monkeypatch):
    client, merchant, devnet = env
    gw = devnet.gateway
    real = devnet.adapter.sign_payout

    async def with_fee(order):
        return replace(await real(order), network_fee=500)

    async def refuse(signed):
        raise BroadcastError("min relay fee not met", permanent=True)

    monkeypatch.setattr(devnet.adapter, "sign_payout", with_fee)
    monkeypatch.setattr(devnet.adapter, "broadcast", refuse)
    await fund(client, merchant, devnet)
    await create(client, merchant, "0.004")
    await work(gw)
    assert await ledger.balance(gw.db, NETWORK_FEES, "BTC") == 0
    assert await balance(client, merchant) == {"BTC": "0.0099"}
