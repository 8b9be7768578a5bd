"""Deposit scanning speed of the bitcoin plugin does not depend on how many addresses are watched.

Run: ``.venv/bin/python bench/bench_bitcoin_scan.py [--outputs 2000] [--blocks 5]``.

A synthetic Litecoin block of ``--outputs`` outputs (node JSON text, parsed
with ``parse_float=Decimal`` as the RPC client does) is served by a stub RPC to
the real ``BitcoinAdapter``; the core scanner processes ``--blocks`` such
blocks per scan, ``--rounds`` scans after one warm-up scan (median reported),
against a migrated SQLite database holding 1,000 and then 1,000,000 rows in
``deposit_addresses``. Twenty outputs per block pay watched addresses
(so deposits are recorded too); the rest pay unknown addresses. It prints the
outputs scanned per second for both sizes and fails when they differ by more
than 20 %.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

from orbchain.chains.bitcoin.adapter import BitcoinAdapter
from orbchain.chains.bitcoin.settings import read_settings
from orbchain.core.accounts.merchants import sign_up
from orbchain.core.infra.config import load_config
from orbchain.core.startup import build_gateway
from orbchain.chains.bitcoin.families import address_families
from orbchain.core.keys import SeedKeyStore
from orbchain.core.infra.migrate import migrate
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.watching.scanner import scan_chain
from orbchain.core.keys.secrets import load_secrets

HITS_PER_BLOCK = 20
INSERT_CHUNK = 100_000


def fake_address(n: int) -> str:
    # Address-shaped and unique; the table is matched exactly, the format is irrelevant to the cost.
    return f"rltc1qbench{n:030d}"


class StubNode:
    """Answers the adapter's calls from synthetic blocks of node JSON text."""

    def __init__(self, base_height: int, blocks: int, outputs: int, watched: list[str]) -> None:
        self.texts: dict[int, str] = {}
        for b in range(blocks):
            height = base_height + b
            txs = []
            for t in range(outputs // 2):
                vout = []
                for n in range(2):
                    i = (b * outputs) + t * 2 + n
                    hit = i % (outputs // HITS_PER_BLOCK) == 0
                    address = watched[(i // (outputs // HITS_PER_BLOCK)) % len(watched)] if hit else \
                        f"rltc1qunknown{i:029d}"
                    vout.append({"value": "VALUE", "n": n, "scriptPubKey": {
                        "type": "witness_v0_keyhash", "addresses": [address]}})
                txs.append({"txid": f"{height:08x}{t:056x}", "vout": vout})
            block = {"hash": f"{height:064x}", "height": height, "time": 1_700_000_000 + height,
                     "previousblockhash": f"{height - 1:064x}", "tx": txs}
            self.texts[height] = json.dumps(block).replace('"VALUE"', "0.00123456")
        self.tip = base_height + blocks - 1

    async def call(self, method: str, *params):
        if method == "getblockchaininfo":
            return {"blocks": self.tip, "bestblockhash": f"{self.tip:064x}"}
        if method == "getblockhash":
            return f"{params[0]:064x}"
        if method == "getblock":
            return json.loads(self.texts[int(params[0], 16)], parse_float=Decimal)
        if method == "getrawmempool":
            return []
        raise AssertionError(method)

    async def close(self) -> None:
        pass


async def _gateway(workdir: Path):
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(workdir / "var"), "environment": "development"},
        database={"url": f"sqlite+aiosqlite:///{workdir / 'bench.db'}"},
        plugin={"bitcoin": {"LTC": {"rpc_url": "http://127.0.0.1:1", "rpc_user": "u", "rpc_password": "p",
                                    "network": "regtest"}}},
    )
    gateway = build_gateway(config, get_plugin_manager(blocked=["devnet"]))
    await gateway.db.connect()
    await migrate(gateway.db, gateway.migrations)
    gateway.secrets = load_secrets(config)
    return gateway, config


def _fill(db_path: Path, merchant_id: str, rows: int, now: int) -> list[str]:
    """``rows`` address rows: a few real derived ones (watched), the rest fake; returns the watched.

    Written with the sqlite3 module's ``executemany`` in big transactions:
    the async driver's per-row round trips would take minutes for a million.
    """
    family = next(f for f in address_families("regtest") if f.name == "ltc")
    store = SeedKeyStore(bytes(32))
    watched = [family.derive(store, 1, i).address for i in range(HITS_PER_BLOCK)]
    values = [(a, i) for i, a in enumerate(watched)]
    values += [(fake_address(n), HITS_PER_BLOCK + n) for n in range(rows - len(watched))]
    query = ("INSERT INTO deposit_addresses (address, family, network, merchant_id, key_index, user_key, created_at)"
             " VALUES (?, 'ltc', 'regtest', ?, ?, NULL, ?)")
    conn = sqlite3.connect(db_path, timeout=30)
    try:
        for start in range(0, len(values), INSERT_CHUNK):
            with conn:
                conn.executemany(query, [(a, merchant_id, i, now) for a, i in values[start:start + INSERT_CHUNK]])
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # a long-running node's table is in the main file
    finally:
        conn.close()
    return watched


async def measure(rows: int, outputs: int, blocks: int, rounds: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        gateway, config = await _gateway(Path(tmp))
        try:
            signup = await sign_up(gateway, "bench@example.com", "bench-password")
            started = time.perf_counter()
            watched = _fill(Path(tmp) / "bench.db", signup.merchant_id, rows, gateway.now())
            print(f"  {rows:>9,} address rows inserted in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            settings = read_settings(config)["LTC"]
            node = StubNode(1_000, blocks * (rounds + 1), outputs, watched)
            adapter = BitcoinAdapter(gateway, settings, rpc=node)
            adapter.start_height = 1_000
            adapter.max_blocks_per_scan = blocks
            rates = []
            for round_ in range(rounds + 1):  # the first round warms the caches and is not counted
                node.tip = 1_000 + blocks * (round_ + 1) - 1
                started = time.perf_counter()
                report = await scan_chain(gateway, adapter)
                elapsed = time.perf_counter() - started
                assert report.blocks == blocks and report.observed == blocks * HITS_PER_BLOCK, report
                if round_:
                    rates.append(blocks * outputs / elapsed)
            return statistics.median(rates)
        finally:
            await gateway.db.disconnect()


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--outputs", type=int, default=2_000, help="outputs per synthetic block")
    parser.add_argument("--blocks", type=int, default=5, help="blocks scanned per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="measured scans per size (median reported)")
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    args = parser.parse_args()
    small = await measure(args.small, args.outputs, args.blocks, args.rounds)
    large = await measure(args.large, args.outputs, args.blocks, args.rounds)
    print(f"outputs scanned per second with {args.small:>9,} watched addresses: {small:,.0f}")
    print(f"outputs scanned per second with {args.large:>9,} watched addresses: {large:,.0f}")
    ratio = large / small
    print(f"ratio large/small: {ratio:.2f} (must be within 0.80..1.20)")
    return 0 if 0.8 <= ratio <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
