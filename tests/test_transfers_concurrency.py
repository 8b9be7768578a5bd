"""Transfers under concurrent requests, on SQLite and PostgreSQL.

Many requests draining one balance, some money flowing back at the same
time, and retries of one idempotency key racing each other: nothing is
overdrawn, nothing is created or lost, and no request fails with a lock or
deadlock error (those would surface as 500s and in the log).
"""

from __future__ import annotations

import asyncio
import logging
import random

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.transfers import service as transfers

from .support import Devnet, api, signup
from .test_transfers import account_id, fund

@pytest.fixture
async def env(make_client, make_config):
    client = await make_client(make_config(rate_limits={"write_per_minute": 100000}, scheduler={"enabled": False}))
    return client, Devnet(client)


async def available(gateway, merchant) -> int:
    return await ledger.balance(gateway.db, ledger.merchant_available(merchant.merchant_id), "BTC")


def no_lock_errors(caplog) -> None:
    text = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records).lower()
    assert "database is locked" not in text and "deadlock" not in text and "internal error" not in text


async def test_200_concurrent_transfers_never_overdraw_and_conserve_money(env, caplog):
    caplog.set_level(logging.WARNING)
    client, devnet = env
    gateway = devnet.gateway
    alice, bob, carol, dave = [await signup(client, f"{n}@example.com") for n in ("alice", "bob", "carol", "dave")]
    await fund(client, devnet, alice, "0.01")  # 990000 units after the 1 % fee
    await fund(client, devnet, bob, "0.001")  # 99000
    merchants = [alice, bob, carol, dave]
    ids = {m.merchant_id: await account_id(client, m) for m in merchants}
    before = {m.merchant_id: await available(gateway, m) for m in merchants}

    btc = gateway.coins.require("BTC")
    rng = random.Random(7)
    # (sender, recipient, units). Alice's 150 transfers (at least 1.8M units)
    # exceed her 990000 plus every unit the other 50 (at most 750000) could
    # bring back to her, so in any order some of hers must be refused; and
    # while fewer than 66 of hers have gone she still holds 15000, so at
    # least 66 must succeed.
    plan = []
    for i in range(200):
        if i % 4 == 3:
            sender, recipient = rng.choice([(bob, alice), (carol, alice), (bob, carol), (dave, bob)])
            plan.append((sender, recipient, rng.randint(1, 15_000)))
        else:
            plan.append((alice, rng.choice([bob, carol, dave]), rng.randint(12_000, 15_000)))

    async def one(sender, recipient, units):
        return await api(client, "POST", "/v1/transfer", sender.merchant_key, json={
            "to_account_id": ids[recipient.merchant_id], "coin": "BTC", "amount": btc.format(units)})

    results = await asyncio.gather(*(one(*p) for p in plan))

    expected = dict(before)
    done = 0
    for (sender, recipient, units), (status, body) in zip(plan, results):
        if status == 200:
            done += 1
            expected[sender.merchant_id] -= units
            expected[recipient.merchant_id] += units
        else:
            assert (status, body["error"]["code"]) == (400, "insufficient_balance"), body
    alice_done = sum(1 for (sender, _, _), (status, _) in zip(plan, results) if sender is alice and status == 200)
    assert 66 <= alice_done < 150  # both outcomes happened: the race was real
    after = {m.merchant_id: await available(gateway, m) for m in merchants}
    assert after == expected and min(after.values()) >= 0
    assert sum(after.values()) == sum(before.values())
    report = await ledger.check_ledger(gateway.db)
    assert report.ok, report.lines()
    assert int(await gateway.db.fetch_val("SELECT COUNT(*) FROM transfers")) == done
    assert int(await gateway.db.fetch_val(
        "SELECT COUNT(*) FROM webhook_events WHERE event_type IN ('transfer.sent', 'transfer.received')")) == 2 * done
    no_lock_errors(caplog)


async def test_one_idempotency_key_sent_20_times_at_once_creates_one_transfer(env, caplog):
    caplog.set_level(logging.WARNING)
    client, devnet = env
    alice, bob = await signup(client, "alice@example.com"), await signup(client, "bob@example.com")
    await fund(client, devnet, alice, "0.01")
    bob_account = await account_id(client, bob)
    request = {"to_account_id": bob_account, "coin": "BTC", "amount": "0.005", "idempotency_key": "race-key-0001"}
    results = await asyncio.gather(*(api(client, "POST", "/v1/transfer", alice.merchant_key, json=request)
                                     for _ in range(20)))
    assert all(status == 200 for status, _ in results), results
    assert len({body["data"]["transfer_id"] for _, body in results}) == 1
    assert sum(1 for _, body in results if not body["data"].get("idempotent")) == 1
    assert await available(devnet.gateway, bob) == 500_000
    assert await available(devnet.gateway, alice) == 490_000
    assert int(await devnet.gateway.db.fetch_val("SELECT COUNT(*) FROM transfers")) == 1
    assert (await ledger.check_ledger(devnet.gateway.db)).ok
    no_lock_errors(caplog)


async def test_opposite_transfers_at_once_do_not_deadlock(env, caplog):
    """A -> B and B -> A together lock the same balance rows; the ledger's lock order prevents a deadlock."""
    caplog.set_level(logging.WARNING)
    client, devnet = env
    alice, bob = await signup(client, "alice@example.com"), await signup(client, "bob@example.com")
    await fund(client, devnet, alice, "0.01")
    await fund(client, devnet, bob, "0.01")
    ids = {m.merchant_id: await account_id(client, m) for m in (alice, bob)}

    async def one(sender, recipient):
        return await api(client, "POST", "/dashboard/transfer", sender.jwt, json={
            "to_account_id": ids[recipient.merchant_id], "coin": "BTC", "amount": "0.0001"})

    results = await asyncio.gather(*(one(alice, bob) if i % 2 else one(bob, alice) for i in range(100)))
    assert all(status == 200 for status, _ in results), [b for s, b in results if s != 200][:3]
    assert await available(devnet.gateway, alice) == await available(devnet.gateway, bob) == 990_000
    assert (await ledger.check_ledger(devnet.gateway.db)).ok
    no_lock_errors(caplog)


async def test_a_twin_that_finds_the_balance_spent_by_its_winner_replays_it(env, monkeypatch):
    """The key look-up misses, the winner commits, then the twin sees too little balance: a replay, not a 400.

    The interleaving that 20 concurrent twins hit now and then, forced here.
    """
    client, devnet = env
    alice, bob = await signup(client, "alice@example.com"), await signup(client, "bob@example.com")
    await fund(client, devnet, alice, "0.01")  # 990,000 available after the fee: one transfer of 500,000 fits
    request = {"to_account_id": await account_id(client, bob), "coin": "BTC", "amount": "0.005",
               "idempotency_key": "race-key-0002"}
    status, first = await api(client, "POST", "/v1/transfer", alice.merchant_key, json=request)
    assert status == 200
    real_lookup = transfers._by_idempotency_key
    misses = iter([None])

    async def first_lookup_misses(db, sender_id, key):
        missed = next(misses, "found")
        return None if missed is None else await real_lookup(db, sender_id, key)

    monkeypatch.setattr(transfers, "_by_idempotency_key", first_lookup_misses)
    status, replay = await api(client, "POST", "/v1/transfer", alice.merchant_key, json=request)
    assert status == 200, replay
    assert replay["data"]["transfer_id"] == first["data"]["transfer_id"] and replay["data"]["idempotent"] is True
    assert await available(devnet.gateway, alice) == 490_000
