"""Tron deposit scanning: blocks per second with 1,000 vs 1,000,000 watched addresses.

Run: ``.venv/bin/python bench/bench_tron_scan.py [--blocks 30] [--txs 40]``.
The stand-in node (``tests/tron_node.py``, served on a loopback port) gets
``--blocks`` blocks of ``--txs`` payer transactions each: half TRX
transfers, half pinned TRC-20 transfers, to random addresses, plus 2 TRX and
2 token deposits per block to addresses of ours. The same chain is then
scanned by the core scanner through ``TronAdapter`` on a fresh SQLite
database whose ``deposit_addresses`` holds 1,000 rows, then 1,000,000. The
cost must grow with transactions, not with watched addresses: the two rates
stay within 20 % of each other.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from aiohttp import web  # noqa: E402

from orbchain.core import accounts, addresses, scanner  # noqa: E402
from orbchain.core.config import load_config  # noqa: E402
from orbchain.core.gateway import build_gateway  # noqa: E402
from orbchain.core.migrate import migrate  # noqa: E402
from orbchain.core.plugins import get_plugin_manager  # noqa: E402
from orbchain.core.secrets import load_secrets  # noqa: E402
from tests.tron_node import TronNode, address_of, compile_protos, t_address  # noqa: E402

SIZES = (1_000, 1_000_000)
OURS_PER_BLOCK = 2


def _random_address() -> str:
    return t_address(address_of(os.urandom(32)))


def build_chain(node: TronNode, usdt: str, blocks: int, txs: int, ours: list[str]) -> tuple[int, int]:
    """Mine the benchmark blocks; returns (first height, token transfers)."""
    first, logs, k = node.head.number + 1, 0, 0
    for _ in range(blocks):
        for i in range(txs // 2):
            node.pay_trx(_random_address(), 1000 + i)
            node.pay_token(usdt, _random_address(), 1 + i)
            logs += 1
        for _ in range(OURS_PER_BLOCK):
            node.pay_trx(ours[k % len(ours)], 10**6)
            node.pay_token(usdt, ours[k % len(ours)], 10**6)
            logs, k = logs + 1, k + 1
        node.mine(1)
    return first, logs


def bulk_insert(path: Path, merchant_id: str, rows: int) -> None:
    """Fake deposit addresses straight through sqlite3 (the fastest bulk path)."""
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(
            "INSERT INTO deposit_addresses (address, family, network, merchant_id, key_index, user_key, created_at)"
            " VALUES (?, 'tron', 'mainnet', ?, ?, NULL, 0)",
            (("T" + os.urandom(20).hex()[:33], merchant_id, 1_000_000 + i) for i in range(rows)))
    conn.execute("ANALYZE")
    conn.close()


async def measure(url: str, usdt: str, first: int, last: int, ours: list[str], rows: int, tmp: Path) -> dict:
    data_dir = tmp / f"rows{rows}"
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(data_dir), "environment": "development"},
        database={"url": f"sqlite+aiosqlite:///{data_dir / 'orbchain.db'}"},
        scheduler={"enabled": False},
        plugin={"tron": {"url": url, "api_key": "bench", "start_height": first, "max_blocks_per_scan": 10_000,
                         "contracts": {"USDT_TRC20": usdt}}})
    gateway = build_gateway(config, get_plugin_manager(blocked=["devnet"]))
    await gateway.db.connect()
    await migrate(gateway.db, gateway.migrations)
    gateway.secrets = load_secrets(config)
    merchant = await accounts.sign_up(gateway, f"bench{rows}@example.com", "bench-password-1")
    await gateway.db.execute_many(
        "INSERT INTO deposit_addresses (address, family, network, merchant_id, key_index, user_key, created_at)"
        " VALUES (:a, 'tron', 'mainnet', :m, :i, NULL, 0)",
        [{"a": a, "m": merchant.merchant_id, "i": i} for i, a in enumerate(ours)])
    await gateway.db.disconnect()
    started = time.perf_counter()
    bulk_insert(data_dir / "orbchain.db", merchant.merchant_id, rows - len(ours))
    inserted = time.perf_counter() - started
    await gateway.db.connect()
    count = int(await gateway.db.fetch_val("SELECT COUNT(*) FROM deposit_addresses"))

    lookup_seconds = 0.0
    real_lookup = addresses.lookup

    async def timed_lookup(gw, items):
        nonlocal lookup_seconds
        t0 = time.perf_counter()
        try:
            return await real_lookup(gw, items)
        finally:
            lookup_seconds += time.perf_counter() - t0

    addresses.lookup = timed_lookup
    adapter = gateway.chains.get("tron")
    try:
        async with gateway.db.connection():
            t0 = time.perf_counter()
            report = await scanner.scan_chain(gateway, adapter)
            elapsed = time.perf_counter() - t0
    finally:
        addresses.lookup = real_lookup
    deposits = int(await gateway.db.fetch_val("SELECT COUNT(*) FROM deposits"))
    await adapter.close()
    await gateway.db.disconnect()
    assert report.scanned_tip == last, report
    return {"rows": count, "insert_s": inserted, "seconds": elapsed, "blocks": report.blocks,
            "deposits": deposits, "lookup_s": lookup_seconds}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--txs", type=int, default=40, help="random transactions per block (half token)")
    args = parser.parse_args()
    logging.getLogger("orbchain").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        node = TronNode(compile_protos(Path(tmp) / "protos"), api_key="bench")
        usdt = node.deploy_token("USDT", 10**15)
        runner = web.AppRunner(node.app())
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{port}"
        ours = [_random_address() for _ in range(50)]
        first, logs = build_chain(node, usdt, args.blocks, args.txs, ours)
        last = node.head.number
        txs = args.blocks * (args.txs + 2 * OURS_PER_BLOCK)
        print(f"chain: {args.blocks} blocks, {txs} transactions, {logs} pinned Transfer logs")
        results = []
        await measure(url, usdt, first, last, ours, 100, Path(tmp))  # warm-up, not reported
        for rows in SIZES:
            result = await measure(url, usdt, first, last, ours, rows, Path(tmp))
            results.append(result)
            print(f"{result['rows']:>9,} addresses: {result['blocks'] / result['seconds']:7.1f} blocks/s,"
                  f" {txs / result['seconds']:8.1f} txs/s (scan {result['seconds']:.2f} s, of which address"
                  f" look-up {result['lookup_s'] * 1000:.0f} ms; {result['deposits']} deposits;"
                  f" bulk insert {result['insert_s']:.1f} s)")
        await runner.cleanup()
    small, large = (r["blocks"] / r["seconds"] for r in results)
    ratio = large / small
    print(f"1M / 1k throughput ratio: {ratio:.2f} (must be within 0.80-1.20)")
    return 0 if 0.8 <= ratio <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
