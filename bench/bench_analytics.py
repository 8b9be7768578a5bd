"""GET /dashboard/analytics with a busy merchant's year: 1,000,000 payments (issue 18).

On a scratch PostgreSQL database (``ORBCHAIN_TEST_PG_DSN``, else the local
127.0.0.1:5432 server; created and dropped here) one merchant gets a year of
history written straight in SQL: 1,000,000 credited deposits as ledger
transactions with their postings, counted by the analytics plugin into its
events and daily sums exactly as its hook would (one row per transaction).
Then the real app (``create_app``, every plugin) answers the endpoint over
HTTP on a loopback port, one request at a time, next to a bare aiohttp GET
in the same process; reported: p50 and p99 in ms and the ratio to the bare
GET. Also timed: one run of the analytics catch-up job over its six-hour
window of that history. The goal is p99 under 100 ms; no figure fails the
run, a wrong answer does.

    .venv/bin/python bench/bench_analytics.py [--payments 1000000] [--requests 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import aiohttp
import asyncpg
from aiohttp import web
from aiohttp.test_utils import TestServer

from orbchain.plugins.analytics.counting import catch_up
from scratch_shop import scratch_shop

YEAR = 365 * 86_400



async def fill(conn: asyncpg.Connection, merchant_id: str, payments: int, now: int) -> None:
    """A year of credited deposits of 0.001 BTC (1 % fee) and their analytics rows, in bulk."""
    span = YEAR - 3600
    await conn.execute(f"""
        INSERT INTO ledger_transactions (id, kind, reference, merchant_id, memo, created_at)
        SELECT 'lt_b' || g, 'deposit', 'deposit:b' || g || ':credit:1', '{merchant_id}', NULL,
               {now} - {span} + (g::bigint * {span}) / {payments}
        FROM generate_series(1, {payments}) g""")
    await conn.execute(f"""
        INSERT INTO ledger_postings (transaction_id, account, coin, amount, created_at)
        SELECT 'lt_b' || g, a.account, 'BTC', a.amount, {now}
        FROM generate_series(1, {payments}) g,
             (VALUES ('world:devnet', -100000), ('merchant:{merchant_id}:available', 99000),
                     ('platform:fees', 1000)) AS a(account, amount)""")
    await conn.execute("""
        INSERT INTO analytics_events (transaction_id, merchant_id, day, kind, count_delta, usd, created_at)
        SELECT id, merchant_id, to_char(to_timestamp(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD'),
               'deposit', 1, 6000000000, created_at
        FROM ledger_transactions WHERE id LIKE 'lt_b%'""")
    await conn.execute("""
        INSERT INTO analytics_daily (merchant_id, day, deposits_usd, payouts_usd, deposit_count, payout_count)
        SELECT merchant_id, day, SUM(usd), 0, SUM(count_delta), 0 FROM analytics_events GROUP BY merchant_id, day""")
    await conn.execute("ANALYZE")


async def timed_gets(session: aiohttp.ClientSession, url: str, headers: dict[str, str], count: int,
                     check=None) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        async with session.get(url, headers=headers) as response:
            body = await response.json()
        times.append((time.perf_counter() - start) * 1000)
        assert response.status == 200, body
        if check is not None:
            check(body)
    return times


def summary(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def run(payments: int, requests: int) -> None:
    async with scratch_shop("bench_analytics") as shop:
        app, gateway, url, signed = shop.app, shop.gateway, shop.url, shop.signed
        now = int(time.time())
        conn = await asyncpg.connect(url)
        started = time.perf_counter()
        await fill(conn, signed.merchant_id, payments, now)
        print(f"filled {payments:,} payments in {time.perf_counter() - started:.1f} s")
        await conn.close()

        bare = web.Application()
        bare.router.add_get("/get", lambda request: web.json_response({"result": 100, "data": {"ok": True}}))
        async with TestServer(app) as server, TestServer(bare) as bare_server, aiohttp.ClientSession() as s:
            jwt = {"Authorization": f"Bearer {signed.token}"}

            def check(body):
                assert len(body["data"]["daily"]) == 30 and body["data"]["totals"]["total_deposit_count"] > 0

            await timed_gets(s, str(server.make_url("/dashboard/analytics")), jwt, 20, check)  # warm up
            gateway_ms = await timed_gets(s, str(server.make_url("/dashboard/analytics")), jwt, requests, check)
            bare_ms = await timed_gets(s, str(bare_server.make_url("/get")), {}, requests)
            started = time.perf_counter()
            counted = await catch_up(gateway)
            catch_up_ms = (time.perf_counter() - started) * 1000
        g50, g99 = summary(gateway_ms)
        b50, b99 = summary(bare_ms)
        print(f"GET /dashboard/analytics  p50 {g50:.2f} ms  p99 {g99:.2f} ms  (goal p99 < 100 ms)")
        print(f"bare aiohttp GET          p50 {b50:.2f} ms  p99 {b99:.2f} ms")
        print(f"ratio of p50 to bare: {g50 / b50:.1f}x")
        print(f"catch-up over the last 6 h of {payments:,} payments: {catch_up_ms:.0f} ms, {counted} counted"
              " (all were already counted)")
        assert counted == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payments", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(run(args.payments, args.requests))


if __name__ == "__main__":
    sys.exit(main())
