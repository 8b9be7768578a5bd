"""What the deposit-scan benchmarks share: a database with N watched addresses, and a timed scan.

Why: each chain's benchmark (``bench_<chain>_scan.py``) asks the same
question, does scanning cost grow with watched addresses, and answers it the
same way; only the stand-in node, the chain's transactions and the address
format differ. Keeping the set-up and the measurement here means the chains
are measured alike. Imported by the scripts after they put the repository on
``sys.path``.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from orbchain.core.accounts import merchants as accounts
from orbchain.core.addresses import store as addresses
from orbchain.core.watching import scanner
from orbchain.core.infra.config import load_config
from orbchain.core.infra.migrate import migrate
from orbchain.core.keys.secrets import load_secrets

SIZES = (1_000, 1_000_000)
OURS_PER_BLOCK = 2
ADDRESS_INSERT = ("INSERT INTO deposit_addresses (address, family, network, merchant_id, key_index, user_key,"
                  " created_at) VALUES ")


def scan_config(data_dir: Path, db_file: str, plugin: Mapping[str, Any]):
    """A development config on its own SQLite file, scheduler off, with the chain plugin's block."""
    return load_config(None, environ={}).with_overrides(
        server={"data_dir": str(data_dir), "environment": "development"},
        database={"url": f"sqlite+aiosqlite:///{data_dir / db_file}"},
        scheduler={"enabled": False},
        plugin=dict(plugin))


def bulk_insert(path: Path, family: str, merchant_id: str, rows: int, random_address: Callable[[], str]) -> None:
    """Fake deposit addresses straight through sqlite3 (the fastest bulk path)."""
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(ADDRESS_INSERT + f"(?, '{family}', 'mainnet', ?, ?, NULL, 0)",
                         ((random_address(), merchant_id, 1_000_000 + i) for i in range(rows)))
    conn.execute("ANALYZE")
    conn.close()


async def seed_watched(gateway, config, family: str, ours: list[str], rows: int, db_path: Path,
                       random_address: Callable[[], str]) -> float:
    """Migrate, sign up a merchant, watch ``ours`` plus random addresses up to ``rows``.

    Leaves the gateway disconnected; returns the seconds the bulk insert took.
    """
    await gateway.db.connect()
    await migrate(gateway.db, gateway.migrations)
    gateway.secrets = load_secrets(config)
    merchant = await accounts.sign_up(gateway, f"bench{rows}@example.com", "bench-password-1")
    await gateway.db.execute_many(ADDRESS_INSERT + f"(:a, '{family}', 'mainnet', :m, :i, NULL, 0)",
                                  [{"a": a, "m": merchant.merchant_id, "i": i} for i, a in enumerate(ours)])
    await gateway.db.disconnect()
    started = time.perf_counter()
    bulk_insert(db_path, family, merchant.merchant_id, rows - len(ours), random_address)
    return time.perf_counter() - started


@dataclass
class TimedScan:
    report: Any
    wall: float
    cpu: float
    lookup: float  # seconds spent in the address look-up


async def timed_scan(gateway, adapter) -> TimedScan:
    """One ``scanner.scan_chain`` pass, timed in wall and CPU seconds, with its address look-ups timed apart."""
    real_lookup = addresses.lookup
    lookup = 0.0

    async def timed_lookup(gw, items):
        nonlocal lookup
        t0 = time.perf_counter()
        try:
            return await real_lookup(gw, items)
        finally:
            lookup += time.perf_counter() - t0

    addresses.lookup = timed_lookup
    try:
        async with gateway.db.connection():
            t0, c0 = time.perf_counter(), time.process_time()
            report = await scanner.scan_chain(gateway, adapter)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        addresses.lookup = real_lookup
    return TimedScan(report, wall, cpu, lookup)
