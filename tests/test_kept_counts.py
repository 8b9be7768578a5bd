"""The deposits list, the webhook delivery log and the activity log read an exact ``total`` from counts the
database keeps (core/infra/kept_counts.py, m0056, the activity plugin's m0003; issue 48 item 1).

Each test compares what the lists answer, and the kept counts as a whole (``mismatches``: every list
against ``COUNT(*)`` of its table, one statement), with ``COUNT(*)`` after what changes them: inserts,
status changes and deletes written by SQL (the triggers cannot be bypassed by a code path), the webhook
history's pruning, many concurrent inserts while folds run, and counts that drifted (rows loaded with
the triggers off) repaired by ``rebuild``. On both databases.
"""

from __future__ import annotations

import asyncio

from orbchain.core.events import retention
from orbchain.core.events.webhooks import delivery_log
from orbchain.core.infra import kept_counts
from orbchain.core.payments import counts
from orbchain.core.types.deposit_status import CREDITED, PENDING
from orbchain.core.types.views import SecurityEvent
from orbchain.core.watching.deposits import list_deposits
from orbchain.plugins.activity import store as activity
from orbchain.testing.fixtures import open_shop

from .support import freeze_clock

DAY = 86400
MEMBER = "member a@example.com"


async def _deposit(db, merchant_id: str, n: int, coin: str, status: str, at: int) -> None:
    await db.execute(
        "INSERT INTO deposits (id, chain, coin, network, tx_hash, output_index, address, amount, merchant_id,"
        " threshold, status, created_at, updated_at) VALUES (:id, 'litecoin', :coin, 'regtest', :tx, 0, :a, 1000,"
        " :m, 1, :s, :t, :t)",
        {"id": f"D{n}", "coin": coin, "tx": f"tx{n}", "a": f"addr{n % 3}", "m": merchant_id, "s": status, "t": at})


async def _delivery(db, merchant_id: str, n: int, at: int) -> None:
    await db.execute(
        "INSERT INTO webhook_events (event_id, merchant_id, event_type, logical_key, body, event_timestamp,"
        " status, attempts, created_at, updated_at, delivered_at)"
        " VALUES (:e, :m, 'payment.paid', :e, '{}', :t, 'delivered', 1, :t, :t, :t)",
        {"e": f"E{n}", "m": merchant_id, "t": at})
    await db.execute(
        "INSERT INTO webhook_deliveries (event_id, merchant_id, url, status_code, success, attempt, created_at)"
        " VALUES (:e, :m, 'https://example.com/hook', 200, TRUE, 1, :t)", {"e": f"E{n}", "m": merchant_id, "t": at})


async def _activity(gateway, merchant_id: str, n: int, at: int) -> None:
    await activity.record(gateway, SecurityEvent(merchant_id=merchant_id, kind="sign_in", at=at, details={},
                                                 actor=MEMBER if n % 3 == 0 else None))


async def _count(db, table: str, merchant_id: str, **filters: str) -> int:
    where = "".join(f" AND {column} = :{column}" for column in filters)
    return int(await db.fetch_val(f"SELECT COUNT(*) FROM {table} WHERE merchant_id = :m{where}",
                                  {"m": merchant_id, **filters}))


async def _assert_exact(gateway, merchant_id: str) -> None:
    """Every list's answer equals ``COUNT(*)``, unfiltered and by each counted filter; the counts agree."""
    db = gateway.db
    for coin, status in ((None, None), ("LTC", None), (None, CREDITED), ("ETH", PENDING)):
        filters = {k: v for k, v in (("coin", coin), ("status", status)) if v is not None}
        listed = await list_deposits(gateway, merchant_id, coin=coin, status=status, limit=1)
        assert listed["total"] == await _count(db, "deposits", merchant_id, **filters), filters
    assert (await delivery_log(gateway, merchant_id, limit=1, offset=0))[1] == \
        await _count(db, "webhook_deliveries", merchant_id)
    assert (await activity.events(gateway, merchant_id, limit=1, offset=0))[1] == \
        await _count(db, "security_events", merchant_id)
    assert (await activity.events(gateway, merchant_id, limit=1, offset=0, actor=MEMBER))[1] == \
        await _count(db, "security_events", merchant_id, actor=MEMBER)
    assert await kept_counts.mismatches(db) == []


async def test_totals_stay_exact_through_inserts_changes_deletes_and_pruning(make_config, make_client):
    """Breaks caught: a total that misses an insert (no trigger), a status change (the UPDATE trigger), a
    deletion (the webhook history's pruning), or one that reads the deltas twice once folded; a fallback
    filter (address, since) answered from the counts, which do not hold it."""
    shop = await open_shop(make_config, make_client)
    gateway, db, merchant_id = shop.gateway, shop.gateway.db, shop.merchant.merchant_id
    now = freeze_clock(gateway)
    old = now - (gateway.config.webhooks.retention_days + 1) * DAY
    for n in range(9):
        await _deposit(db, merchant_id, n, ("LTC", "ETH")[n % 2], PENDING, now - n)
        await _delivery(db, merchant_id, n, old if n < 6 else now)
        await _activity(gateway, merchant_id, n, now - n)
    await _assert_exact(gateway, merchant_id)  # from the deltas alone, not folded yet
    await counts.fold_all(db)
    await db.execute("UPDATE deposits SET status = :s WHERE id IN ('D0', 'D1', 'D2')", {"s": CREDITED})
    await db.execute("UPDATE deposits SET confirmations = 3 WHERE id = 'D3'")  # moves no count
    await db.execute("DELETE FROM deposits WHERE id = 'D4'")
    assert await db.fetch_val("SELECT COUNT(*) FROM kept_count_deltas WHERE list = 'deposits'") == 7
    assert await retention.prune_history(gateway, batch=2) == 12  # six old attempts and their events
    await _assert_exact(gateway, merchant_id)
    assert (await delivery_log(gateway, merchant_id, limit=1, offset=0))[1] == 3
    listed = await list_deposits(gateway, merchant_id, address="addr1", limit=1)
    assert listed["total"] == await _count(db, "deposits", merchant_id, address="addr1") == 2  # D1, D7
    assert (await list_deposits(gateway, merchant_id, since=now - 2, limit=1))["total"] == 3
    await counts.fold_all(db)
    await _assert_exact(gateway, merchant_id)
    assert await db.fetch_val("SELECT COUNT(*) FROM kept_count_deltas") == 0


async def test_concurrent_inserts_while_folds_run(make_config, make_client):
    """On PostgreSQL the inserts run on many connections at once while folds of 7 loop: a fold that reads
    and deletes in two snapshots would lose or double a delta committed between them."""
    shop = await open_shop(make_config, make_client)
    gateway, db, merchant_id = shop.gateway, shop.gateway.db, shop.merchant.merchant_id
    now, done, writes = freeze_clock(gateway), asyncio.Event(), 40

    async def write(n: int) -> None:
        async with db.transaction():
            await _deposit(db, merchant_id, n, "LTC", PENDING, now)
            await _delivery(db, merchant_id, n, now)
            await _activity(gateway, merchant_id, n, now)

    async def keep_folding() -> None:
        while not done.is_set():
            await kept_counts.fold(db, 7)
            await asyncio.sleep(0)

    folding = asyncio.ensure_future(keep_folding())
    await asyncio.gather(*(write(n) for n in range(writes)))
    done.set()
    await folding
    await _assert_exact(gateway, merchant_id)
    assert (await delivery_log(gateway, merchant_id, limit=1, offset=0))[1] == writes


async def test_counts_that_drifted_are_found_and_rebuilt(make_config, make_client):
    """As rows loaded with the triggers off would leave them (a restore with --disable-triggers, a bulk
    fill): ``mismatches`` names each list, merchant and key by name; ``rebuild`` recounts every list."""
    shop = await open_shop(make_config, make_client)
    gateway, db, merchant_id = shop.gateway, shop.gateway.db, shop.merchant.merchant_id
    now = freeze_clock(gateway)
    for n in range(3):
        await _deposit(db, merchant_id, n, "LTC", PENDING, now)
        await _delivery(db, merchant_id, n, now)
        await _activity(gateway, merchant_id, n, now)
    await counts.fold_all(db)
    await db.execute("UPDATE kept_counts SET n = n + 2 WHERE merchant_id = :m AND list <> 'payments'",
                     {"m": merchant_id})
    drifted = {(m["list"], m.get("coin"), m.get("status"), m.get("actor"), m["difference"])
               for m in await kept_counts.mismatches(db)}
    assert drifted == {("deposits", "LTC", PENDING, None, 2), ("webhook_log", None, None, None, 2),
                       ("activity", None, None, MEMBER, 2), ("activity", None, None, "", 2)}
    assert (await delivery_log(gateway, merchant_id, limit=1, offset=0))[1] == 5  # wrong until rebuilt
    await kept_counts.rebuild(db)
    await _assert_exact(gateway, merchant_id)
