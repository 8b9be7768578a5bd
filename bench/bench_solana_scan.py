"""Solana deposit scanning: slots per second with 1,000 vs 1,000,000 watched addresses.

Run: ``.venv/bin/python bench/bench_solana_scan.py [--blocks 40] [--txs 60]``.
The LiteSVM-backed test node (``tests/solana_node.py``) produces
``--blocks`` blocks of ``--txs`` system transfers to random addresses plus
2 deposits per block to addresses of ours, with a skipped slot every fifth
slot. The same chain is then scanned by the core scanner through
``SolanaAdapter`` on a fresh SQLite database whose ``deposit_addresses``
holds 1,000 rows, then 1,000,000 rows (bulk-inserted fake addresses). The
design promise: the cost grows with transactions, not with watched
addresses, so the two rates stay within 20 % of each other. Each size is
scanned ``--repeats`` times on fresh copies of its database, alternating
sizes; the fastest run of each counts. Cost is the process's CPU time (the
node runs in the same process and does the same work for both sizes):
on a shared machine wall time measures the neighbours' load more than the
scan; it is printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import base58  # noqa: E402

from bench.scan_bench import OURS_PER_BLOCK, SIZES, scan_config, seed_watched, timed_scan  # noqa: E402
from orbchain.core.startup import build_gateway  # noqa: E402
from orbchain.core.contract.plugins import get_plugin_manager  # noqa: E402
from orbchain.core.keys.secrets import load_secrets  # noqa: E402
from tests.solana_node import SolanaNode  # noqa: E402


def _random_address() -> str:
    return base58.b58encode(os.urandom(32)).decode()


def build_chain(node: SolanaNode, blocks: int, txs: int, ours: list[str]) -> int:
    """Produce the benchmark blocks; returns the first slot to scan."""
    first, k = node.tip.slot + 1, 0
    for b in range(blocks):
        for i in range(txs):
            node.pay(_random_address(), 10**6 + i)
        for _ in range(OURS_PER_BLOCK):
            node.pay(ours[k % len(ours)], 10**7 + k)
            k += 1
        if b % 5 == 4:
            node.skip(1)
        node.produce(1)
    return first


def _config(node: SolanaNode, first: int, data_dir: Path, db_file: str):
    return scan_config(data_dir, db_file,
                       {"solana": {"rpc_url": node.url, "start_height": first, "max_blocks_per_scan": 10_000}})


async def prepare(node: SolanaNode, first: int, ours: list[str], rows: int, tmp: Path) -> Path:
    """A migrated database with ``rows`` watched addresses, not yet scanned."""
    data_dir = tmp / f"rows{rows}"
    config = _config(node, first, data_dir, "base.db")
    gateway = build_gateway(config, get_plugin_manager(blocked=["devnet"]))
    await seed_watched(gateway, config, "solana", ours, rows, data_dir / "base.db", _random_address)
    return data_dir


async def measure(node: SolanaNode, first: int, data_dir: Path, run: int) -> dict:
    """One full scan of the benchmark chain on a fresh copy of the prepared database."""
    shutil.copy(data_dir / "base.db", data_dir / f"run{run}.db")
    config = _config(node, first, data_dir, f"run{run}.db")
    gateway = build_gateway(config, get_plugin_manager(blocked=["devnet"]))
    gateway.secrets = load_secrets(config)
    await gateway.db.connect()
    count = int(await gateway.db.fetch_val("SELECT COUNT(*) FROM deposit_addresses"))
    adapter = gateway.chains.get("solana")
    scan = await timed_scan(gateway, adapter)
    report = scan.report
    deposits = int(await gateway.db.fetch_val("SELECT COUNT(*) FROM deposits"))
    await adapter.close()
    await gateway.db.disconnect()
    (data_dir / f"run{run}.db").unlink()
    assert report.scanned_tip == node.tip.slot, report
    return {"rows": count, "seconds": scan.cpu, "wall": scan.wall, "slots": report.blocks, "deposits": deposits,
            "lookup_s": scan.lookup}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--txs", type=int, default=60, help="random transfers per block")
    parser.add_argument("--repeats", type=int, default=3, help="runs per size; the fastest counts")
    args = parser.parse_args()
    logging.getLogger("orbchain").setLevel(logging.ERROR)
    node = await SolanaNode().start()
    node.produce(1)
    ours = [_random_address() for _ in range(50)]
    first = build_chain(node, args.blocks, args.txs, ours)
    txs = args.blocks * (args.txs + OURS_PER_BLOCK)
    print(f"chain: {args.blocks} blocks over {node.tip.slot - first + 1} slots, {txs} transactions")
    best: dict[int, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        prepared = {rows: await prepare(node, first, ours, rows, Path(tmp)) for rows in (100, *SIZES)}
        await measure(node, first, prepared[100], 0)  # warm-up, not reported
        # Alternate the sizes and keep each one's fastest run: on a shared machine a single run
        # measures the neighbours' load more than the scan.
        for run in range(args.repeats):
            for rows in SIZES:
                result = await measure(node, first, prepared[rows], run)
                if rows not in best or result["seconds"] < best[rows]["seconds"]:
                    best[rows] = result
    results = [best[rows] for rows in SIZES]
    for result in results:
        print(f"{result['rows']:>9,} addresses: {result['slots'] / result['seconds']:7.1f} slots/s,"
              f" {txs / result['seconds']:8.1f} txs/s (best scan {result['seconds']:.2f} s CPU,"
              f" {result['wall']:.2f} s wall; address"
              f" look-up {result['lookup_s'] * 1000:.0f} ms; {result['deposits']} deposits)")
    await node.stop()
    small, large = (r["slots"] / r["seconds"] for r in results)
    ratio = large / small
    print(f"1M / 1k throughput ratio: {ratio:.2f} (must be within 0.80-1.20)")
    return 0 if 0.8 <= ratio <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
