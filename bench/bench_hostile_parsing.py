"""How fast hostile input is refused: the latency figures the tests no longer assert.

Run: ``.venv/bin/python bench/bench_hostile_parsing.py [--rounds 30]`` (``make bench``).

The tests check what happens to hostile input (a 400 naming the field, the
server alive) and bound time only against a hang (docs/decisions.md, "Time in
tests"); this prints the distributions those tests used to bet on:

* ``parse_decimal`` on huge exponents and long numbers (was: < 50 ms each);
* whole requests with huge exponents and 75,000 nested arrays through the full
  app on SQLite (was: < 1 s each, and 20 at once with /health < 5 s);
* a SQLite read past its step budget stopped inline (was: < 100 ms).

Figures depend on the machine; compare runs on the same one.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from orbchain.core.money import amounts as money
from orbchain.core.infra.config import load_config
from orbchain.core.infra.db import Database
from orbchain.web.app import create_app
from orbchain.testing.api import signup

NUMBERS = ["1e900000", "-1E-900000", "9" * 70, "1e999999999999", "0." + "0" * 60 + "1", "12345.678e-3"]
JSON = {"Content-Type": "application/json"}
BODIES = {
    "huge exponent (string)": ("/v1/payment/white-label", '{"currency":"BTC","amount":"1e900000"}'),
    "huge exponent (number)": ("/v1/payment/white-label", '{"currency":"BTC","amount":1e900000}'),
    "huge lifetime": ("/v1/payment/white-label", '{"currency":"BTC","amount":"1","lifetime":1e1000000}'),
    "75,000 nested arrays": ("/dashboard/auth/login", "[" * 75_000 + "]" * 75_000),
}
LONG_READ = ("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < :top)"
             " SELECT COUNT(*) AS n FROM c")


def report(name: str, seconds: list[float]) -> None:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    print(f"  {name:32} median {statistics.median(ordered) * 1000:8.3f} ms  p95 {p95 * 1000:8.3f} ms"
          f"  max {ordered[-1] * 1000:8.3f} ms  (n={len(ordered)})")


def bench_parse_decimal(rounds: int) -> None:
    print("parse_decimal")
    for text in NUMBERS:
        timings = []
        for _ in range(rounds * 10):
            started = time.perf_counter()
            try:
                money.parse_decimal(text)
            except money.AmountError:
                pass
            timings.append(time.perf_counter() - started)
        report(repr(text[:20]), timings)


async def bench_requests(directory: Path, rounds: int) -> None:
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(directory / "var"), "environment": "development"},
        database={"url": f"sqlite+aiosqlite:///{directory / 'bench.db'}"},
        scheduler={"enabled": False}, rate_limits={"enabled": False})
    client = TestClient(TestServer(create_app(config)))
    await client.start_server()
    try:
        merchant = await signup(client)
        headers = {**JSON, **merchant.merchant_key}
        print("whole requests, refused with 400 (full app, SQLite)")
        for name, (path, body) in BODIES.items():
            timings = []
            for _ in range(rounds):
                started = time.perf_counter()
                response = await client.post(path, data=body, headers=headers)
                await response.read()
                timings.append(time.perf_counter() - started)
                assert response.status == 400, (name, response.status)
            report(name, timings)
        timings = []
        for _ in range(max(1, rounds // 5)):
            bodies = [f'{{"currency":"BTC","amount":"{i + 1}e{900_000 + i}"}}' for i in range(20)]
            started = time.perf_counter()
            await asyncio.gather(*(client.post("/v1/payment/white-label", data=b, headers=headers) for b in bodies),
                                 client.get("/health"))
            timings.append(time.perf_counter() - started)
        report("20 huge values + /health at once", timings)
    finally:
        await client.close()


async def bench_long_read(directory: Path, rounds: int) -> None:
    db = Database(f"sqlite+aiosqlite:///{directory / 'long.db'}")
    await db.connect()
    try:
        timings = []
        for _ in range(rounds):
            started = time.perf_counter()
            assert db._read_inline(LONG_READ, {"top": 2_000_000}) is None
            timings.append(time.perf_counter() - started)
            db._overran.clear()
        print("SQLite read past its step budget")
        report("stopped inline", timings)
    finally:
        await db.disconnect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    rounds = parser.parse_args().rounds
    bench_parse_decimal(rounds)
    with tempfile.TemporaryDirectory(prefix="orbchain-bench-") as directory:
        asyncio.run(bench_requests(Path(directory), rounds))
        asyncio.run(bench_long_read(Path(directory), rounds))


if __name__ == "__main__":
    main()
