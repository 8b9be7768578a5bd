"""How many ledger transactions per second ``post`` sustains, on SQLite and PostgreSQL.

Run: ``.venv/bin/python bench/bench_ledger.py [--count 2000]``. SQLite uses a
file in a temp directory; PostgreSQL runs when ``ORBCHAIN_TEST_PG_DSN`` names a
server, in a scratch database created and dropped here.

Each operation is a ``credit_deposit`` with a fee (3 postings, 3 balance rows),
the common write. Every deposit touches the same world and platform-fee rows,
so the concurrent column measures the worst case: one hot row per coin.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import tempfile
import time
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from orbchain.core.ledger import book as ledger
from orbchain.core.infra.db import Database
from orbchain.core.infra.migrate import MigrationRegistry, migrate

CONCURRENCY = 50


async def _fresh(url: str) -> Database:
    db = Database(url)
    await db.connect()
    registry = MigrationRegistry()
    registry.add_package("core", "orbchain.migrations")
    await migrate(db, registry)
    return db


async def _deposit(db: Database, tag: str, n: int) -> None:
    await ledger.credit_deposit(db, merchant_id=f"m{n % CONCURRENCY}", coin="ETH", chain="ethereum",
                                amount=10**18 + n, fee=10**16, reference=f"{tag}:{n}")


async def _sequential(db: Database, count: int) -> float:
    start = time.perf_counter()
    for n in range(count):
        await _deposit(db, "seq", n)
    return count / (time.perf_counter() - start)


async def _pinned(db: Database, count: int) -> float:
    # What a caller that holds one connection (a request handler) sees: no
    # per-call connection set-up, which dominates on SQLite.
    async with db.connection():
        start = time.perf_counter()
        for n in range(count):
            await _deposit(db, "pin", n)
        return count / (time.perf_counter() - start)


async def _concurrent(db: Database, count: int) -> float:
    per_task = count // CONCURRENCY

    async def worker(w: int) -> None:
        for i in range(per_task):
            await _deposit(db, "con", w * per_task + i)

    start = time.perf_counter()
    await asyncio.gather(*[worker(w) for w in range(CONCURRENCY)])
    return per_task * CONCURRENCY / (time.perf_counter() - start)


async def _replays(db: Database, count: int) -> float:
    start = time.perf_counter()
    for n in range(count):
        await _deposit(db, "seq", n)
    return count / (time.perf_counter() - start)


async def _measure(name: str, url: str, count: int) -> list[str]:
    db = await _fresh(url)
    try:
        seq = await _sequential(db, count)
        pin = await _pinned(db, count)
        con = await _concurrent(db, count)
        rep = await _replays(db, count)
        start = time.perf_counter()
        report = await ledger.check_ledger(db)
        check = time.perf_counter() - start
        if not report.ok:
            raise SystemExit("\n".join(report.lines()))
    finally:
        await db.disconnect()
    return [name, f"{seq:,.0f}", f"{pin:,.0f}", f"{con:,.0f}", f"{rep:,.0f}",
            f"{check:.2f}s for {report.transactions_checked:,}"]


async def _with_pg_database(dsn: str, count: int) -> list[str]:
    plain = dsn.replace("postgresql+asyncpg://", "postgresql://", 1)
    name = f"orbchain_bench_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(plain)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        parts = urlsplit(plain)
        url = urlunsplit(parts._replace(scheme="postgresql+asyncpg", path="/" + name))
        return await _measure("postgresql", url, count)
    finally:
        admin = await asyncpg.connect(plain)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


async def main(count: int) -> None:
    rows = [["database", "sequential tx/s", "pinned conn tx/s", f"{CONCURRENCY} tasks tx/s", "replays/s",
             "check_ledger"]]
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(await _measure("sqlite", f"sqlite+aiosqlite:///{tmp}/bench.db", count))
    dsn = os.environ.get("ORBCHAIN_TEST_PG_DSN")
    if dsn:
        rows.append(await _with_pg_database(dsn, count))
    else:
        print("ORBCHAIN_TEST_PG_DSN not set: PostgreSQL skipped", file=sys.stderr)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print(f"{count} deposits per column, 3 postings each")
    for row in rows:
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="deposits per measurement (default 2000)")
    asyncio.run(main(parser.parse_args().count))
