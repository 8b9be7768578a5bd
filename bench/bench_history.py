"""Hot reads and a write against years of history, at two sizes: is the cost flat in the data? (issue 48 item 4).

For each size, a scratch PostgreSQL database (``ORBCHAIN_TEST_PG_DSN``, else the
local 127.0.0.1:5432 server; created and dropped here) gets the gateway's own
schema and a history written straight in SQL (``fill``): ``payments`` rows over a
year, a tenth of them the busy merchant's (the one measured), the rest spread over
neighbours (1,000, or one per thousand payments beyond a million); a deposit, its
ledger transaction and postings for every other payment of each merchant (the busy one's too: its deposits
list and a new deposit's crediting are measured at size); a webhook event and its
delivery attempt per payment; a security-log line per busy-merchant payment. Then
``VACUUM ANALYZE``, the lists' kept counts rebuilt (the fill's triggers were off),
and the real app (``create_app``, every plugin) answers over HTTP
on a loopback port, one request at a time: p50 and p99 in ms per hot path at
both sizes, the large/small ratio of p50 (goal <= 1.5), and the database's
bytes per payment (all tables and indexes, the empty schema subtracted). At the
small size, also the latency of two hot paths while the retention job prunes
``--prune-rows`` old delivery attempts, against the same without. No figure
fails the run; a wrong answer does.

    .venv/bin/python bench/bench_history.py                       # 100,000 and 1,000,000 payments
    .venv/bin/python bench/bench_history.py --sizes 20000,200000 --prune-rows 0  # quick
    .venv/bin/python bench/bench_history.py --sizes 100000,3000000  # 7.6 GB, filled in 13 min on 2 loaded cores
    .venv/bin/python bench/bench_history.py --sizes 100000,10000000 --requests 300  # the issue's large size:
        # about 26 GB and 45 minutes of filling there (extrapolated); the busy merchant holds 1,000,000 payments
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from typing import Any

import aiohttp
import asyncpg
from aiohttp.test_utils import TestServer

from scratch_shop import scratch_shop

from orbchain.core.events import retention
from orbchain.core.infra.db import Database
from orbchain.core.infra import kept_counts
from orbchain.testing import pay_on_devnet

YEAR = 365 * 86_400
BUSY_SHARE = 10  # one payment in BUSY_SHARE is the busy merchant's
NEIGHBOURS = 1_000



CHUNK = 1_000_000  # payments per round of INSERTs: progress shows, and no statement runs for an hour


def neighbours_for(payments: int) -> int:
    """1,000 merchants up to a million payments, one per thousand payments beyond (10,000 at 10 million)."""
    return max(NEIGHBOURS, payments // 1_000)


async def secondary_indexes(conn: asyncpg.Connection) -> list[tuple[str, str]]:
    """The indexes no constraint owns (name, definition): dropped for the fill, built once after it."""
    rows = await conn.fetch("""
        SELECT i.indexname, i.indexdef FROM pg_indexes i
        WHERE i.schemaname = 'public' AND i.tablename IN
              ('payments', 'deposits', 'webhook_events', 'webhook_deliveries', 'security_events',
               'ledger_transactions', 'ledger_postings')
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)""")
    return [(r["indexname"], r["indexdef"]) for r in rows]


async def fill_chunk(conn: asyncpg.Connection, busy: str, lo: int, hi: int, start: int, step: int,
                     neighbours: int) -> None:
    """Payments ``lo``..``hi`` and what they imply: payment ``g`` is the busy merchant's when
    ``g % BUSY_SHARE == 0``, else a neighbour's; statuses cycle within each merchant's payments (three Paid,
    one Expired, one Cancelled in five); every other payment of each merchant (the busy one's too) has a
    credited deposit and its ledger transaction (world, merchant, fee); each has a webhook event and a
    delivery attempt."""
    owner = f"CASE WHEN g % {BUSY_SHARE} = 0 THEN '{busy}' ELSE 'mn' || (1 + g % {neighbours}) END"
    at = f"{start} + g::bigint * {step}"
    series = f"generate_series({lo}, {hi}) g"
    # A deposit each for every other payment of each merchant: the odd ones (neighbours') and every other
    # one of the busy merchant's (whose payments are the multiples of BUSY_SHARE, all even).
    paid = f"{series} WHERE g % 2 = 1 OR g % {2 * BUSY_SHARE} = 0"
    await conn.execute(f"""
        INSERT INTO payments (track_id, merchant_id, type, status, currency, pay_currency, pay_amount, address,
                              chain, order_id, description, created_at, updated_at, expires_at, paid_at)
        SELECT 'H' || lpad(g::text, 10, '0'), {owner}, 'INVOICE',
               (ARRAY['Paid','Paid','Expired','Cancelled','Paid'])[1 + (g / {BUSY_SHARE}) % 5], 'ETH', 'ETH',
               500000000000000000,
               '0x' || md5(g::text), 'ethereum', 'order-' || g, 'order ' || g, {at}, {at}, {at} + 3600,
               CASE WHEN (g / {BUSY_SHARE}) % 5 IN (0, 1, 4) THEN {at} + 600 END
        FROM {series}""")
    await conn.execute(f"""
        INSERT INTO deposits (id, chain, coin, network, tx_hash, output_index, address, amount, merchant_id,
                              track_id, block_height, block_hash, confirmations, threshold, status, credited,
                              credit_count, created_at, updated_at, credited_at)
        SELECT 'dep' || g, 'ethereum', 'ETH', 'devnet', '0x' || md5('tx' || g), 0, '0x' || md5(g::text),
               500000000000000000, {owner}, 'H' || lpad(g::text, 10, '0'), g, md5('b' || g), 12, 12, 'CREDITED',
               TRUE, 1, {at} + 300, {at} + 600, {at} + 600
        FROM {paid}""")
    await conn.execute(f"""
        INSERT INTO ledger_transactions (id, kind, reference, merchant_id, memo, created_at)
        SELECT 'ltx' || g, 'deposit', 'deposit:dep' || g || ':credit:1', {owner}, NULL, {at} + 600
        FROM {paid}""")
    await conn.execute(f"""
        INSERT INTO ledger_postings (transaction_id, account, coin, amount, created_at)
        SELECT 'ltx' || g, a.account, 'ETH', a.amount, {at} + 600
        FROM {series}, LATERAL (VALUES ('world:ethereum', -500000000000000000),
                                       ('merchant:' || {owner} || ':available', 495000000000000000),
                                       ('platform:fees', 5000000000000000)) a(account, amount)
        WHERE g % 2 = 1 OR g % {2 * BUSY_SHARE} = 0""")
    await conn.execute(f"""
        INSERT INTO webhook_events (event_id, merchant_id, event_type, logical_key, body, event_timestamp,
                                    status, attempts, next_attempt_at, created_at, updated_at, delivered_at)
        SELECT 'ev' || g, {owner}, 'payment.paid', 'payment.paid:H' || g, repeat('x', 600), {at},
               'delivered', 1, {at}, {at}, {at}, {at}
        FROM {series}""")
    await conn.execute(f"""
        INSERT INTO webhook_deliveries (event_id, merchant_id, url, status_code, success, attempt,
                                        payload_preview, response_preview, duration_ms, created_at)
        SELECT 'ev' || g, {owner}, 'https://shop.example/hook', 200, TRUE, 1, repeat('x', 300), 'ok', 40, {at}
        FROM {series}""")
    await conn.execute(f"""
        INSERT INTO security_events (merchant_id, kind, details, alert, created_at)
        SELECT '{busy}', 'sign_in', '{{}}', FALSE, {at} FROM {series} WHERE g % {BUSY_SHARE} = 0""")


async def fill(conn: asyncpg.Connection, busy: str, payments: int, now: int) -> None:
    """The history, a million payments per round, written server-side (``INSERT ... SELECT`` over
    ``generate_series``: no row crosses the wire, which a client-side COPY would need) with the secondary
    indexes dropped and the foreign-key triggers off (``session_replication_role``, as ``pg_restore
    --disable-triggers``): the rows are consistent by construction. Then the indexes are built once, by sort,
    and ``VACUUM ANALYZE`` does what autovacuum would have done over a year (index-only counts)."""
    start, step = now - YEAR, max(1, YEAR // payments)
    neighbours = neighbours_for(payments)
    began = time.perf_counter()
    await conn.execute(f"""
        INSERT INTO merchants (id, account_id, email, password_hash, key_account, accepted_coins, created_at,
                               updated_at)
        SELECT 'mn' || g, 'OC-n' || g, 'n' || g || '@example.com', 'x', 1000000 + g, '[]', {start}, {start}
        FROM generate_series(1, {neighbours}) g""")
    indexes = await secondary_indexes(conn)
    for name, _ in indexes:
        await conn.execute(f'DROP INDEX "{name}"')
    await conn.execute("SET session_replication_role = replica")
    await conn.execute("SET maintenance_work_mem = '256MB'")
    for lo in range(1, payments + 1, CHUNK):
        await fill_chunk(conn, busy, lo, min(payments, lo + CHUNK - 1), start, step, neighbours)
        print(f"  rows for payments {lo:,}..{min(payments, lo + CHUNK - 1):,}"
              f" at {time.perf_counter() - began:.0f} s", flush=True)
    await conn.execute("RESET session_replication_role")
    phase = time.perf_counter()
    for _, definition in indexes:
        await conn.execute(definition)
    print(f"  {len(indexes)} indexes built in {time.perf_counter() - phase:.0f} s", flush=True)
    phase = time.perf_counter()
    await conn.execute("VACUUM ANALYZE")
    print(f"  VACUUM ANALYZE in {time.perf_counter() - phase:.0f} s", flush=True)


async def timed(session: aiohttp.ClientSession, method: str, url: str, headers: dict[str, str], count: int,
                **kwargs: Any) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        async with session.request(method, url, headers=headers, **kwargs) as response:
            body = await response.read()
        times.append((time.perf_counter() - started) * 1000)
        assert response.status == 200, (url, response.status, body[:300])
    return times


async def credit_deposits(gateway: Any, session: aiohttp.ClientSession, url: str, headers: dict[str, str],
                          count: int) -> list[float]:
    """A deposit's crediting at size, ``count`` times: a new BTC payment of the busy merchant paid on the
    devnet, then mined and scanned until its deposit is credited (``pay_on_devnet``: the scanner's look-ups
    of the address and the payment, the credit's ledger postings, the deposits' and payments' updates and
    their kept counts' deltas). ms from the payer's transfer to the credit; the payment must end Paid."""
    times = []
    for _ in range(count):
        async with session.post(url, headers=headers, json={"currency": "BTC", "amount": "0.001"}) as response:
            assert response.status == 200, await response.text()
            payment = (await response.json())["data"]
        started = time.perf_counter()
        record = await pay_on_devnet(gateway, payment)
        times.append((time.perf_counter() - started) * 1000)
        assert record.status == "Paid", record.status
    return times


def p50_p99(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


PRUNE_PATHS = ("payment by id", "payment creation")


async def add_old_deliveries(url: str, rows: int, payments: int, before: int) -> None:
    """``rows`` delivery attempts older than any other row (all before ``before``), for the pruning run."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("SET session_replication_role = replica")
        await conn.execute(f"""
            INSERT INTO webhook_deliveries (event_id, merchant_id, url, status_code, success, attempt,
                                            payload_preview, response_preview, duration_ms, created_at)
            SELECT 'ev' || (1 + g % {payments}), 'old', 'https://shop.example/hook', 200, TRUE, 1,
                   repeat('x', 300), 'ok', 40, {before} - g
            FROM generate_series(1, {rows}) g""")
        await conn.execute("RESET session_replication_role")
        # Loaded with the triggers off: counted by hand, so the prune's delete triggers leave the counts right.
        await conn.execute("INSERT INTO kept_counts (list, merchant_id, k1, k2, k3, n)"
                           " VALUES ('webhook_log', 'old', '', '', '', $1)", rows)
        await conn.execute("VACUUM ANALYZE webhook_deliveries")
    finally:
        await conn.close()


async def while_pruning(gateway: Any, url: str, session: aiohttp.ClientSession,
                        hot: list[tuple[str, str, dict[str, str]]], rows: int, payments: int, requests: int) -> None:
    """p50/p99 of ``hot`` without pruning, then while the retention job's own batches
    (``retention.prune_deliveries``, 500 a statement) delete ``rows`` old attempts; printed as a table."""
    cut = int(time.time()) - YEAR - 86_400
    await add_old_deliveries(url, rows, payments, cut)
    body = {"json": {"currency": "ETH", "amount": "0.5"}}

    async def sample() -> list[list[float]]:
        return [await timed(session, method, target, auth, 1, **(body if method == "POST" else {}))
                for target, method, auth in hot]

    quiet: list[list[list[float]]] = [await sample() for _ in range(requests)]

    async def prune() -> tuple[int, float]:
        started, total = time.perf_counter(), 0
        while (deleted := await retention.prune_deliveries(gateway, cut, retention.BATCH)):
            total += deleted
        return total, time.perf_counter() - started

    job = asyncio.ensure_future(prune())
    busy: list[list[list[float]]] = []
    while not job.done():
        busy.append(await sample())
    pruned, seconds = await job
    assert pruned == rows, (pruned, rows)
    print(f"\n{pruned:,} old delivery attempts pruned in {seconds:.0f} s ({pruned / seconds:,.0f} rows/s),"
          f" {len(busy)} request rounds meanwhile")
    print("| hot path | p50 / p99 ms, no pruning | p50 / p99 ms, while pruning |\n|---|---|---|")
    for i, label in enumerate(PRUNE_PATHS):
        (q50, q99), (b50, b99) = (p50_p99([t for r in rounds for t in r[i]]) for rounds in (quiet, busy))
        print(f"| {label} | {q50:.1f} / {q99:.1f} | {b50:.1f} / {b99:.1f} |", flush=True)


# Each kept list's total both ways: its table and filter for COUNT(*), and its kept_counts keys (m0056).
COUNTED_LISTS = {
    "payments list": ("payments", "payments", ""),
    "payments list by status": ("payments", "payments", " AND status = 'Expired'"),
    "webhook log": ("webhook_log", "webhook_deliveries", ""),
    "deposits list": ("deposits", "deposits", ""),
    "activity log": ("activity", "security_events", ""),
}


async def list_totals(url: str, merchant_id: str, requests: int) -> dict[str, tuple[float, float]]:
    """Each kept list's ``total`` alone, in SQL on one connection, both ways in the same run (the shared
    machine's load moves HTTP figures between runs): ``COUNT(*)`` of the merchant's rows, as before m0048 and
    m0056, against the kept counts (``KeptList.total``'s statement)."""
    conn = await asyncpg.connect(url)
    try:
        kept = ("SELECT COALESCE((SELECT SUM(n) FROM kept_counts WHERE {w}), 0)"
                " + COALESCE((SELECT SUM(delta) FROM kept_count_deltas WHERE {w}), 0)")
        results = {}
        for label, (name, table, filtered) in COUNTED_LISTS.items():
            statements = {
                f"{label} total, COUNT(*) (before)": f"SELECT COUNT(*) FROM {table} WHERE merchant_id = $1{filtered}",
                f"{label} total, kept counts (after)": kept.format(
                    w=f"list = '{name}' AND merchant_id = $1{filtered.replace('status', 'k1')}"),
            }
            answers = set()
            for key, query in statements.items():
                times = []
                for _ in range(requests):
                    started = time.perf_counter()
                    answers.add(int(await conn.fetchval(query, merchant_id)))
                    times.append((time.perf_counter() - started) * 1000)
                results[key] = p50_p99(times)
            assert len(answers) == 1, (label, answers)  # both ways give the same exact total
        return results
    finally:
        await conn.close()


async def measure(payments: int, requests: int, prune_rows: int = 0) -> tuple[dict[str, tuple[float, float]], float]:
    """One size: each hot path's (p50, p99) in ms, and bytes per payment; with ``prune_rows``, then the
    latency of two hot paths while that many old delivery attempts are pruned, against the same without."""
    async with scratch_shop("bench_history") as shop:
        app, url, signed = shop.app, shop.url, shop.signed
        conn = await asyncpg.connect(url)
        empty = await conn.fetchval("SELECT pg_database_size(current_database())")
        started = time.perf_counter()
        await fill(conn, signed.merchant_id, payments, int(time.time()))
        phase = time.perf_counter()
        db = Database(url)  # the app's own is connected only while it serves
        await db.connect()
        try:
            await kept_counts.rebuild(db)  # the fill ran with the triggers off (session_replication_role)
        finally:
            await db.disconnect()
        await conn.execute("VACUUM ANALYZE kept_counts")
        print(f"  list counts rebuilt in {time.perf_counter() - phase:.0f} s", flush=True)
        size = await conn.fetchval("SELECT pg_database_size(current_database())")
        print(f"{payments:,} payments filled in {time.perf_counter() - started:.0f} s,"
              f" {(size - empty) / 2**20:.0f} MB", flush=True)
        await conn.close()
        busy_track = "H" + str(BUSY_SHARE * 777).zfill(10)
        since = int(time.time()) - 30 * 86_400
        paths = {
            "payment by id": ("GET", f"/v1/payment/{busy_track}", "merchant"),
            "payments list, first page": ("GET", "/v1/payment?limit=20", "merchant"),
            "payments list, page 500": ("GET", "/v1/payment?limit=20&offset=9980", "merchant"),
            "payments list by status": ("GET", "/v1/payment?status=EXPIRED&limit=20", "merchant"),
            "payment by order_id": ("GET", f"/v1/payment?order_id=order-{BUSY_SHARE * 777}", "merchant"),
            "deposits since 30 days": ("GET", f"/v1/deposits?since={since}&limit=50", "merchant"),
            "deposits list, first page": ("GET", "/v1/deposits?limit=50", "merchant"),
            "deposits list, page 100": ("GET", "/v1/deposits?limit=50&offset=4950", "merchant"),
            "balances": ("GET", "/v1/general/account/balance", "general"),
            "dashboard payments": ("GET", "/dashboard/payments?limit=20", "jwt"),
            "dashboard webhook log": ("GET", "/dashboard/webhook-logs?limit=50", "jwt"),
            "dashboard activity log": ("GET", "/dashboard/activity?limit=50", "jwt"),
            "payment creation": ("POST", "/v1/payment/white-label", "merchant"),
        }
        headers = {"merchant": {"merchant_api_key": signed.api_keys["merchant_api_key"]},
                   "general": {"general_api_key": signed.api_keys["general_api_key"]},
                   "jwt": {"Authorization": f"Bearer {signed.token}"}}
        results = {}
        async with TestServer(app) as server, aiohttp.ClientSession() as session:
            for label, (method, path, auth) in paths.items():
                body = {"json": {"currency": "ETH", "amount": "0.5"}} if method == "POST" else {}
                target = str(server.make_url(path))
                await timed(session, method, target, headers[auth], 10, **body)  # warm up
                results[label] = p50_p99(await timed(session, method, target, headers[auth], requests, **body))
            results["deposit crediting (pay, mine, scan)"] = p50_p99(await credit_deposits(
                shop.gateway, session, str(server.make_url("/v1/payment/white-label")), headers["merchant"],
                max(5, requests // 10)))
            results.update(await list_totals(url, signed.merchant_id, requests))
            if prune_rows:
                hot = [(str(server.make_url(paths[label][1])), paths[label][0], headers[paths[label][2]])
                       for label in PRUNE_PATHS]
                await while_pruning(shop.gateway, url, session, hot, prune_rows, payments, requests)
        return results, (size - empty) / payments


async def run(sizes: list[int], requests: int, prune_rows: int) -> None:
    measured = [await measure(size, requests, prune_rows if i == 0 else 0) for i, size in enumerate(sizes)]
    (small, small_bytes), (large, large_bytes) = measured[0], measured[-1]
    print(f"\n| hot path | p50 / p99 ms at {sizes[0]:,} | p50 / p99 ms at {sizes[-1]:,} | ratio of p50 |")
    print("|---|---|---|---|")
    for label in small:
        (s50, s99), (l50, l99) = small[label], large[label]
        print(f"| {label} | {s50:.1f} / {s99:.1f} | {l50:.1f} / {l99:.1f} | {l50 / s50:.2f} |")
    print(f"\nbytes per payment (all tables and indexes): {small_bytes:,.0f} at {sizes[0]:,},"
          f" {large_bytes:,.0f} at {sizes[-1]:,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="two payment counts, small then large")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--prune-rows", type=int, default=1_000_000,
                        help="old delivery attempts pruned under load at the small size (0: skip)")
    args = parser.parse_args()
    asyncio.run(run([int(s) for s in args.sizes.split(",")], args.requests, args.prune_rows))


if __name__ == "__main__":
    sys.exit(main())
