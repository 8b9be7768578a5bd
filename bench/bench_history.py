"""Hot reads and a write against years of history, at two sizes: is the cost flat in the data? (issue 48 item 4).

For each size, a scratch PostgreSQL database (``ORBCHAIN_TEST_PG_DSN``, else the
local 127.0.0.1:5432 server; created and dropped here) gets the gateway's own
schema and a history written straight in SQL: ``payments`` rows over a year, a
tenth of them the busy merchant's (the one measured), the rest spread over
neighbours; a deposit for every other payment; a webhook event and its delivery
attempt per payment; a security-log line per busy-merchant payment. Then
``ANALYZE``, and the real app (``create_app``, every plugin) answers over HTTP
on a loopback port, one request at a time: p50 and p99 in ms per hot path at
both sizes, the large/small ratio of p50 (goal <= 1.5), and the database's
bytes per payment (all tables and indexes, the empty schema subtracted). No
figure fails the run; a wrong answer does.

    .venv/bin/python bench/bench_history.py                       # 100,000 and 1,000,000 payments
    .venv/bin/python bench/bench_history.py --sizes 20000,200000  # quick
    .venv/bin/python bench/bench_history.py --sizes 100000,10000000 --requests 300  # the issue's large size:
        # about 5 GB and an hour of filling on two cores; the busy merchant then holds 1,000,000 payments
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

YEAR = 365 * 86_400
BUSY_SHARE = 10  # one payment in BUSY_SHARE is the busy merchant's
NEIGHBOURS = 1_000



async def fill(conn: asyncpg.Connection, busy: str, payments: int, now: int) -> None:
    """The history: payment ``g`` is the busy merchant's when ``g % BUSY_SHARE == 0``, else a neighbour's;
    statuses cycle within each merchant's payments (three Paid, one Expired, one Cancelled in five)."""
    start, step = now - YEAR, max(1, YEAR // payments)
    await conn.execute(f"""
        INSERT INTO merchants (id, account_id, email, password_hash, key_account, accepted_coins, created_at,
                               updated_at)
        SELECT 'mn' || g, 'OC-n' || g, 'n' || g || '@example.com', 'x', 1000000 + g, '[]', {start}, {start}
        FROM generate_series(1, {NEIGHBOURS}) g""")
    owner = f"CASE WHEN g % {BUSY_SHARE} = 0 THEN '{busy}' ELSE 'mn' || (1 + g % {NEIGHBOURS}) END"
    at = f"{start} + g::bigint * {step}"
    await conn.execute(f"""
        INSERT INTO payments (track_id, merchant_id, type, status, currency, pay_currency, pay_amount, address,
                              chain, order_id, description, created_at, updated_at, expires_at, paid_at)
        SELECT 'H' || lpad(g::text, 10, '0'), {owner}, 'INVOICE',
               (ARRAY['Paid','Paid','Expired','Cancelled','Paid'])[1 + (g / {BUSY_SHARE}) % 5], 'ETH', 'ETH',
               500000000000000000,
               '0x' || md5(g::text), 'ethereum', 'order-' || g, 'order ' || g, {at}, {at}, {at} + 3600,
               CASE WHEN (g / {BUSY_SHARE}) % 5 IN (0, 1, 4) THEN {at} + 600 END
        FROM generate_series(1, {payments}) g""")
    await conn.execute(f"""
        INSERT INTO deposits (id, chain, coin, network, tx_hash, output_index, address, amount, merchant_id,
                              track_id, block_height, block_hash, confirmations, threshold, status, credited,
                              credit_count, created_at, updated_at, credited_at)
        SELECT 'dep' || g, 'ethereum', 'ETH', 'devnet', '0x' || md5('tx' || g), 0, '0x' || md5(g::text),
               500000000000000000, {owner}, 'H' || lpad(g::text, 10, '0'), g, md5('b' || g), 12, 12, 'CREDITED',
               TRUE, 1, {at} + 300, {at} + 600, {at} + 600
        FROM generate_series(1, {payments}, 2) g""")
    await conn.execute(f"""
        INSERT INTO webhook_events (event_id, merchant_id, event_type, logical_key, body, event_timestamp,
                                    status, attempts, next_attempt_at, created_at, updated_at, delivered_at)
        SELECT 'ev' || g, {owner}, 'payment.paid', 'payment.paid:H' || g, repeat('x', 600), {at},
               'delivered', 1, {at}, {at}, {at}, {at}
        FROM generate_series(1, {payments}) g""")
    await conn.execute(f"""
        INSERT INTO webhook_deliveries (event_id, merchant_id, url, status_code, success, attempt,
                                        payload_preview, response_preview, duration_ms, created_at)
        SELECT 'ev' || g, {owner}, 'https://shop.example/hook', 200, TRUE, 1, repeat('x', 300), 'ok', 40, {at}
        FROM generate_series(1, {payments}) g""")
    await conn.execute(f"""
        INSERT INTO security_events (merchant_id, kind, details, alert, created_at)
        SELECT '{busy}', 'sign_in', '{{}}', FALSE, {at} FROM generate_series(1, {payments}, {BUSY_SHARE}) g""")
    await conn.execute("VACUUM ANALYZE")  # what autovacuum would have done over a year: index-only counts


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


def p50_p99(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def measure(payments: int, requests: int) -> tuple[dict[str, tuple[float, float]], float]:
    """One size: each hot path's (p50, p99) in ms, and bytes per payment."""
    async with scratch_shop("bench_history") as shop:
        app, url, signed = shop.app, shop.url, shop.signed
        conn = await asyncpg.connect(url)
        empty = await conn.fetchval("SELECT pg_database_size(current_database())")
        started = time.perf_counter()
        await fill(conn, signed.merchant_id, payments, int(time.time()))
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
            "balances": ("GET", "/v1/general/account/balance", "general"),
            "dashboard payments": ("GET", "/dashboard/payments?limit=20", "jwt"),
            "dashboard webhook log": ("GET", "/dashboard/webhook-logs?limit=50", "jwt"),
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
        return results, (size - empty) / payments


async def run(sizes: list[int], requests: int) -> None:
    measured = [await measure(size, requests) for size in sizes]
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
    args = parser.parse_args()
    asyncio.run(run([int(s) for s in args.sizes.split(",")], args.requests))


if __name__ == "__main__":
    sys.exit(main())
