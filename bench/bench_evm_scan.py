"""EVM deposit scanning: blocks and Transfer logs per second with 1,000 vs 1,000,000 watched addresses.

Run: ``.venv/bin/python bench/bench_evm_scan.py [--blocks 40] [--txs 60]``
(needs ``scripts/ensure_node_tools.sh``). A real anvil gets ``--blocks``
blocks of ``--txs`` transactions each: half native transfers, half pinned
token transfers, to random addresses, plus 2 native and 2 token deposits per
block to addresses of ours. The same chain is then scanned by the core
scanner through ``EvmAdapter`` on a fresh SQLite database whose
``deposit_addresses`` holds 1,000 rows, then 1,000,000 rows (bulk-inserted
fake addresses). The design promise: the cost grows with transactions, not
with watched addresses, so the two rates stay within 20 % of each other.
The time spent in the address look-up itself is printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from eth_abi import encode  # noqa: E402
from eth_utils import keccak, to_checksum_address  # noqa: E402

from bench.scan_bench import OURS_PER_BLOCK, SIZES, scan_config, seed_watched, timed_scan  # noqa: E402
from orbchain.core.startup import build_gateway  # noqa: E402
from orbchain.core.contract.plugins import get_plugin_manager  # noqa: E402
from tests.anvil import CHAIN_ID, DEPLOYER, PAYER, start_anvil  # noqa: E402

TRANSFER = keccak(text="transfer(address,uint256)")[:4].hex()
MINT = keccak(text="mint(address,uint256)")[:4].hex()


def _random_address() -> str:
    return to_checksum_address("0x" + os.urandom(20).hex())


def build_chain(node, blocks: int, txs: int, ours: list[str]) -> tuple[str, int, int]:
    """Mine the benchmark blocks; returns (token, first height, token logs)."""
    token = node.deploy_token("Tether USD", "USDT", 6)
    node.send(DEPLOYER, token, data="0x" + MINT + encode(["address", "uint256"], [PAYER, 10**15]).hex())
    node.set_automine(False)
    first, logs, k = node.height() + 1, 0, 0
    try:
        for _ in range(blocks):
            for i in range(txs // 2):
                node.send(PAYER, _random_address(), value=1000 + i)
                node.send(PAYER, token, data="0x" + TRANSFER + encode(["address", "uint256"],
                                                                       [_random_address(), 1 + i]).hex())
                logs += 1
            for _ in range(OURS_PER_BLOCK):
                node.send(PAYER, ours[k % len(ours)], value=10**15)
                node.send(PAYER, token, data="0x" + TRANSFER + encode(["address", "uint256"],
                                                                       [ours[k % len(ours)], 10**6]).hex())
                logs, k = logs + 1, k + 1
            node.mine(1)
    finally:
        node.set_automine(True)
    return token, first, logs


async def measure(node, token: str, first: int, last: int, ours: list[str], rows: int, tmp: Path) -> dict:
    data_dir = tmp / f"rows{rows}"
    config = scan_config(data_dir, "orbchain.db", {
        "evm": {"ethereum": {"rpc_url": node.url, "chain_id": CHAIN_ID, "start_height": first,
                             "max_blocks_per_scan": 10_000, "contracts": {"USDT_ERC20": token}}}})
    gateway = build_gateway(config, get_plugin_manager(blocked=["devnet"]))
    inserted = await seed_watched(gateway, config, "evm", ours, rows, data_dir / "orbchain.db",
                                  lambda: "0x" + os.urandom(20).hex())
    await gateway.db.connect()
    count = int(await gateway.db.fetch_val("SELECT COUNT(*) FROM deposit_addresses"))
    adapter = gateway.chains.get("ethereum")
    scan = await timed_scan(gateway, adapter)
    report, elapsed = scan.report, scan.wall
    deposits = int(await gateway.db.fetch_val("SELECT COUNT(*) FROM deposits"))
    await adapter.close()
    await gateway.db.disconnect()
    assert report.scanned_tip == last, report
    return {"rows": count, "insert_s": inserted, "seconds": elapsed, "blocks": report.blocks,
            "deposits": deposits, "lookup_s": scan.lookup}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--txs", type=int, default=60, help="random transactions per block (half token)")
    args = parser.parse_args()
    logging.getLogger("orbchain").setLevel(logging.ERROR)  # "webhook not sent: no secret" per deposit
    node = start_anvil()
    ours = [_random_address() for _ in range(50)]
    token, first, logs = build_chain(node, args.blocks, args.txs, ours)
    last = node.height()
    txs = args.blocks * (args.txs + 2 * OURS_PER_BLOCK)
    print(f"chain: {args.blocks} blocks, {txs} transactions, {logs} pinned Transfer logs, anvil {node.url}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        # A warm-up pass (not reported): the first scan of a process pays one-off costs
        # (imports, connection set-up, anvil's caches) that would flatter the second size.
        await measure(node, token, first, last, ours, 100, Path(tmp))
        for rows in SIZES:
            result = await measure(node, token, first, last, ours, rows, Path(tmp))
            results.append(result)
            print(f"{result['rows']:>9,} addresses: {result['blocks'] / result['seconds']:7.1f} blocks/s,"
                  f" {logs / result['seconds']:8.1f} logs/s, {txs / result['seconds']:8.1f} txs/s"
                  f" (scan {result['seconds']:.2f} s, of which address look-up {result['lookup_s'] * 1000:.0f} ms;"
                  f" {result['deposits']} deposits; bulk insert {result['insert_s']:.1f} s)")
    node.stop()
    small, large = (r["blocks"] / r["seconds"] for r in results)
    ratio = large / small
    print(f"1M / 1k throughput ratio: {ratio:.2f} (must be within 0.80-1.20)")
    return 0 if 0.8 <= ratio <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
