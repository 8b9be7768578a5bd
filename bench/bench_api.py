"""API throughput: payment creation and reads, sequential and concurrent.

Runs the real app in-process on a loopback port (aiohttp test server) with
rate limits off, on SQLite and, when ORBCHAIN_TEST_PG_DSN is set, on a
scratch PostgreSQL database. Prints requests per second; compare ratios
within one run, not absolute numbers across machines.

    .venv/bin/python bench/bench_api.py [--requests 300] [--concurrency 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import tempfile
import time
from pathlib import Path

import asyncpg
from aiohttp.test_utils import TestClient, TestServer

from orbchain.core.infra.config import load_config
from orbchain.web.app import create_app


async def _timed(count: int, concurrency: int, make_request) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            response = await make_request(i)
            assert response.status == 200, await response.text()
            response.release()

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    return count / (time.perf_counter() - started)


async def run(db_url: str, data_dir: Path, count: int, concurrency: int) -> dict[str, float]:
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(data_dir)}, database={"url": db_url},
        rate_limits={"enabled": False}, scheduler={"enabled": False},
    )
    async with TestClient(TestServer(create_app(config))) as client:
        signup = await client.post("/dashboard/auth/signup",
                                   json={"email": "bench@example.com", "password": "benchmark-pw"})
        keys = (await signup.json())["data"]["api_keys"]
        headers = {"merchant_api_key": keys["merchant_api_key"]}
        body = {"currency": "BTC", "amount": "0.01"}
        created = await client.post("/v1/payment/white-label", json=body, headers=headers)
        track_id = (await created.json())["data"]["track_id"]
        results = {}
        for label, conc in (("sequential", 1), (f"{concurrency} concurrent", concurrency)):
            results[f"create white-label, {label}"] = await _timed(
                count, conc, lambda i: client.post("/v1/payment/white-label", json=body, headers=headers))
            results[f"GET payment, {label}"] = await _timed(
                count, conc, lambda i: client.get(f"/v1/payment/{track_id}", headers=headers))
            results[f"GET currencies (no auth, no db), {label}"] = await _timed(
                count, conc, lambda i: client.get("/v1/common/currencies"))
        return results


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=20)
    args = parser.parse_args()
    table: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        table["SQLite"] = await run(f"sqlite+aiosqlite:///{tmp}/bench.db", Path(tmp) / "var", args.requests,
                                    args.concurrency)
        dsn = os.environ.get("ORBCHAIN_TEST_PG_DSN")
        if dsn:
            name = f"orbchain_bench_{secrets.token_hex(4)}"
            admin = await asyncpg.connect(dsn.replace("postgresql+asyncpg://", "postgresql://"))
            await admin.execute(f'CREATE DATABASE "{name}"')
            try:
                url = dsn.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://") + "/" + name
                table["PostgreSQL"] = await run(url, Path(tmp) / "var-pg", args.requests, args.concurrency)
            finally:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                await admin.close()
    rows = list(next(iter(table.values())))
    width = max(map(len, rows))
    print(f"{'requests/second':<{width}}  " + "  ".join(f"{db:>10}" for db in table))
    for row in rows:
        print(f"{row:<{width}}  " + "  ".join(f"{table[db][row]:10.0f}" for db in table))


if __name__ == "__main__":
    asyncio.run(main())
