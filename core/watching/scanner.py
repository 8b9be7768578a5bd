"""Follows each chain block by block and hands what it sees to the deposit engine.

Generic over every ``ChainAdapter``: the scanner keeps the hashes of the
blocks it processed (``chain_blocks``), so when the adapter's block at a
remembered height has another hash, it walks back to the fork point and
disconnects every block that left the best chain before scanning the new
branch. Transfers are matched against the address table in one batched
look-up per block, so the cost grows with transactions, not with the number
of watched addresses. Catching up after downtime is the same loop starting
from the last remembered block; blocks the node pruned meanwhile are caught
up through the adapter's address history (``core/watching/history.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..addresses import store as addresses
from . import conflicts, deposits, history
from ..types.chains import Block, BlockRef, BlocksPruned, Capability, ChainAdapter
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

REMEMBERED_BLOCKS = 200  # deepest reorg handled; older hashes are pruned


@dataclass(frozen=True)
class ScanReport:
    chain: str
    scanned_tip: int | None
    blocks: int = 0
    disconnected: int = 0
    observed: int = 0
    credited: int = 0
    node_tip: int | None = None


async def _remembered(gateway: "Gateway", chain: str, height: int) -> str | None:
    return await gateway.db.fetch_val("SELECT hash FROM chain_blocks WHERE chain = :c AND height = :h",
                                      {"c": chain, "h": height})


async def _last_remembered(gateway: "Gateway", chain: str) -> BlockRef | None:
    row = await gateway.db.fetch_one(
        "SELECT height, hash FROM chain_blocks WHERE chain = :c ORDER BY height DESC LIMIT 1", {"c": chain})
    return None if row is None else BlockRef(int(row["height"]), row["hash"])


async def _rewind(gateway: "Gateway", adapter: ChainAdapter, tip: BlockRef) -> tuple[int, int]:
    """Walk back from our last block to the fork point; returns (next height, blocks disconnected)."""
    last = await _last_remembered(gateway, adapter.name)
    if last is None:
        start = adapter.start_height if adapter.start_height is not None else tip.height
        return max(0, start), 0
    height, disconnected = last.height, 0
    while height >= 0:
        ours = await _remembered(gateway, adapter.name, height)
        if ours is None or history.is_gap(ours):
            break  # older than what we remember, or pruned by the node: treat as final
        try:
            if height <= tip.height and await adapter.block_hash(height) == ours:
                break
        except BlocksPruned:
            break  # the node forgot it while we were away: final
        await deposits.disconnect_block(gateway, adapter.name, ours)
        await gateway.db.execute("DELETE FROM chain_blocks WHERE chain = :c AND height = :h",
                                 {"c": adapter.name, "h": height})
        disconnected += 1
        height -= 1
    if disconnected:
        log.warning("%s: reorganisation, %d block(s) disconnected back to height %d",
                    adapter.name, disconnected, height)
    return height + 1, disconnected


async def _remember(gateway: "Gateway", chain: str, height: int, block_hash: str) -> None:
    await gateway.db.execute(
        "INSERT INTO chain_blocks (chain, height, hash) VALUES (:c, :h, :b)"
        " ON CONFLICT (chain, height) DO UPDATE SET hash = excluded.hash",
        {"c": chain, "h": height, "b": block_hash},
    )


async def _pass_gap(gateway: "Gateway", adapter: ChainAdapter, height: int, pruned: BlocksPruned,
                    tip: BlockRef) -> tuple[int, int]:
    """Catch up over pruned blocks ``height``..``first_available - 1``; returns (last gap height, observed)."""
    if not adapter.supports(Capability.HISTORY):
        raise pruned
    end = min(pruned.first_available, tip.height + 1) - 1
    if end < height:
        raise pruned  # the node contradicts itself (pruned, yet available from here): retry later
    observed = await history.catch_up(gateway, adapter, height, end)
    await _remember(gateway, adapter.name, end, history.gap_marker(height, end))
    return end, observed


async def _process_block(gateway: "Gateway", adapter: ChainAdapter, block: Block, scanned_tip: int,
                         finalized: int | None = None) -> int:
    owners = await addresses.lookup(gateway, [t.address for t in block.transfers]) if block.transfers else {}
    observed = 0
    for transfer in block.transfers:
        owner = owners.get(transfer.address)
        if owner is not None:
            await deposits.observe(gateway, adapter.name, transfer, owner, block.ref, scanned_tip,
                                   block_time=block.timestamp, finalized=finalized)
            observed += 1
    await _remember(gateway, adapter.name, block.height, block.hash)
    return observed


async def scan_chain(gateway: "Gateway", adapter: ChainAdapter) -> ScanReport:
    """One pass: handle reorgs, process new blocks (bounded), the mempool, confirmations."""
    tip = await adapter.tip()
    # Asked after the tip: a finalized height is never above the tip it was read against.
    finalized = await adapter.finalized_height() if adapter.supports(Capability.FINALITY) else None
    height, disconnected = await _rewind(gateway, adapter, tip)
    last_height = height - 1
    end = min(tip.height, height + adapter.max_blocks_per_scan - 1)
    blocks = observed = 0
    while height <= end:
        try:
            block = await adapter.block(height)
        except BlocksPruned as pruned:
            last_height, caught = await _pass_gap(gateway, adapter, height, pruned, tip)
            observed += caught
            height = last_height + 1
            end = min(tip.height, height + adapter.max_blocks_per_scan - blocks - 1)
            continue
        parent = await _remembered(gateway, adapter.name, height - 1)
        if parent is not None and not history.is_gap(parent) and block.parent_hash != parent:
            break  # the chain moved under us; the next pass rewinds
        observed += await _process_block(gateway, adapter, block, block.height, finalized)
        last_height, blocks, height = height, blocks + 1, height + 1
    await gateway.db.execute("DELETE FROM chain_blocks WHERE chain = :c AND height < :h",
                             {"c": adapter.name, "h": last_height - REMEMBERED_BLOCKS})
    mempool = list(await adapter.mempool()) if adapter.supports(Capability.MEMPOOL) else []
    if mempool:
        owners = await addresses.lookup(gateway, [t.address for t in mempool])
        for transfer in mempool:
            owner = owners.get(transfer.address)
            if owner is not None:
                await deposits.observe(gateway, adapter.name, transfer, owner, None, last_height)
                observed += 1
    in_mempool = {t.tx_hash for t in mempool}
    await conflicts.mark_conflicted(gateway, adapter, in_mempool)
    await deposits.mark_missing(gateway, adapter.name, in_mempool, adapter.drop_after_seconds)
    credited = (await deposits.refresh_confirmations(gateway, adapter.name, last_height, finalized=finalized)
                if last_height >= 0 else 0)
    return ScanReport(adapter.name, last_height, blocks, disconnected, observed, credited, tip.height)


def scan_job_name(chain: str) -> str:
    """The name of a chain's scan job, which a wake signal names to scan that chain now."""
    return f"chain.{chain}.scan"


def scan_job(adapter: ChainAdapter) -> Callable[["Gateway"], Awaitable[None]]:
    """The periodic job the core registers for each chain adapter."""

    async def run(gateway: "Gateway") -> None:
        try:
            report = await scan_chain(gateway, adapter)
        finally:  # a scan that failed because nodes are down or disagree shows that too
            gateway.metrics.chain_nodes(adapter.name, adapter.node_states())
        scanned = report.scanned_tip if report.scanned_tip is not None and report.scanned_tip >= 0 else None
        gateway.metrics.chain_scanned(adapter.name, report.node_tip or 0, scanned, gateway.clock())

    return run
