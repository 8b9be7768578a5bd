"""Catch-up over blocks the node pruned: deposits made while the gateway was down.

When the scanner's next block is gone from the node (``BlocksPruned``: a
pruned ledger, a restart from a recent snapshot), it cannot read the gap
block by block. An adapter with ``Capability.HISTORY`` is asked instead for
the transfers to the addresses of open payments (Waiting or Paying) inside
the gap; the deposits are observed like any other, keyed by (chain,
tx_hash, output_index), so a block scan of the same slots later (another
node with the history) refreshes them and never credits twice. The gap is
then remembered as one marker row, which the scanner treats as final: no
parent-hash check across it, no rewind into it.

Payments that expired in the last ``RECENTLY_EXPIRED_SECONDS`` count as
open: the expiry job may have run at restart before the scan reached the
gap, yet the payer may have paid in time while the gateway was down (the
deposit is then credited by the late-deposit rules). The number of
addresses is bounded (``adapter.max_history_addresses``, the oldest
payments first); the rest are logged and not searched (docs/decisions.md).
"""

from __future__ import annotations

import logging

from ..addresses import store as addresses
from . import deposits
from ..types.chains import ChainAdapter
from ..types.statuses import EXPIRED, PAYING, WAITING
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

RECENTLY_EXPIRED_SECONDS = 7 * 86_400  # longer than any node's ledger lasts: an outage that outlived it
GAP_PREFIX = "pruned:"  # chain_blocks hash of a gap marker; no chain names a block like this


def gap_marker(start: int, end: int) -> str:
    return f"{GAP_PREFIX}{start}-{end}"


def is_gap(block_hash: str | None) -> bool:
    return block_hash is not None and block_hash.startswith(GAP_PREFIX)


async def open_payment_addresses(gateway: "Gateway", coins: tuple[str, ...], limit: int) -> tuple[list[str], int]:
    """Addresses of open (or recently expired) payments in ``coins``, oldest payment first.

    Returns at most ``limit`` of them and how many there are.
    """
    if not coins:
        return [], 0
    names: dict[str, object] = {f"c{i}": coin for i, coin in enumerate(coins)}
    rows = await gateway.db.fetch_all(
        "SELECT address, MIN(created_at) AS opened FROM payments WHERE (status IN (:waiting, :paying)"
        " OR (status = :expired AND expires_at >= :since))"
        f" AND address IS NOT NULL AND pay_currency IN ({', '.join(':' + k for k in names)})"
        " GROUP BY address ORDER BY opened, address",
        {**names, "waiting": WAITING, "paying": PAYING, "expired": EXPIRED,
         "since": gateway.now() - RECENTLY_EXPIRED_SECONDS})
    found = [row["address"] for row in rows]
    return found[:limit], len(found)


async def catch_up(gateway: "Gateway", adapter: ChainAdapter, start: int, end: int) -> int:
    """Observe the transfers ``address_history`` finds in pruned blocks ``start``..``end``; how many matched."""
    watched, total = await open_payment_addresses(gateway, adapter.coins, adapter.max_history_addresses)
    if total > len(watched):
        log.warning("%s: blocks %d-%d were pruned; %d of %d addresses with open payments searched"
                    " (max_history_addresses), deposits to the other %d in that range are not seen",
                    adapter.name, start, end, len(watched), total, total - len(watched))
    found = list(await adapter.address_history(watched, start, end)) if watched else []
    owners = await addresses.lookup(gateway, [p.transfer.address for p in found]) if found else {}
    observed = 0
    for past in sorted(found, key=lambda p: (p.block.height, p.transfer.tx_hash, p.transfer.output_index)):
        owner = owners.get(past.transfer.address)
        if owner is not None and start <= past.block.height <= end:
            await deposits.observe(gateway, adapter.name, past.transfer, owner, past.block, end)
            observed += 1
    log.warning("%s: blocks %d-%d were pruned by the node; caught up through address history"
                " (%d address(es), %d deposit(s))", adapter.name, start, end, len(watched), observed)
    return observed
