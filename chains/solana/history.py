"""Catch-up over pruned slots: ``getSignaturesForAddress`` then ``getTransaction``.

Used by the core scanner (``Capability.HISTORY``) when the node no longer
has the slots it needs. ``getSignaturesForAddress`` lists an address's
transactions newest first and has no slot filter, so each address is paged
with ``before`` (the last signature of the previous page) from the newest
entry down: entries above the gap are passed over, the walk stops at the
first entry below it. ``minContextSlot`` makes a node that has not reached
the gap's end refuse rather than answer short. Entries the index marks
failed are not fetched; every fetched transaction goes through the same
balance-change rule as a block (``blocks.transaction_transfers``: failed
never credits, output index = account position), so the identity matches
a block scan of the same slot.

Bounds per call: ``pages`` pages of ``page_size`` signatures per address.
An address with more signatures than that from the newest down to the gap
is logged; its older signatures inside the gap are not fetched.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

from ...api import BlockRef, ChainUnavailable, PastTransfer
from .blocks import transaction_transfers
from .rpc import SolanaRpc, lamports

log = logging.getLogger(__name__)

HISTORY_HASH = "history"  # a deposit found this way names its slot, not a block hash the node no longer knows


def history_block(slot: int) -> BlockRef:
    return BlockRef(slot, f"{HISTORY_HASH}:{slot}")


class AddressHistory:
    def __init__(self, rpc: SolanaRpc, commitment: str, coin: str, *, pages: int, page_size: int) -> None:
        self.rpc, self.commitment, self.coin = rpc, commitment, coin
        self.pages, self.page_size = pages, page_size

    async def _signatures(self, address: str, start: int, end: int) -> dict[str, int]:
        """Successful signatures of ``address`` in slots ``start``..``end`` (signature -> slot), bounded."""
        found: dict[str, int] = {}
        before: str | None = None
        for _ in range(self.pages):
            options: dict[str, Any] = {"commitment": self.commitment, "limit": self.page_size,
                                       "minContextSlot": end}
            if before is not None:
                options["before"] = before
            page = await self.rpc.call("getSignaturesForAddress", address, options)
            if not isinstance(page, list):
                raise ChainUnavailable("getSignaturesForAddress: answer is not a list")
            for entry in page:
                slot = lamports(entry["slot"])
                if slot < start:
                    return found
                if slot <= end and entry.get("err") is None:
                    found[entry["signature"]] = slot
            if len(page) < self.page_size:
                return found
            before = page[-1]["signature"]
        log.warning("solana: %s has more than %d signatures since pruned slots %d-%d; the older ones in that"
                    " range were not searched (history_pages)", address, self.pages * self.page_size, start, end)
        return found

    async def _transaction(self, signature: str, slot: int) -> Any:
        tx = await self.rpc.call("getTransaction", signature, {
            "commitment": self.commitment, "encoding": "json", "maxSupportedTransactionVersion": 0})
        if not isinstance(tx, dict) or tx.get("slot") != slot:
            raise ChainUnavailable(f"getTransaction {signature}: not found at slot {slot}; the catch-up is retried")
        return tx

    async def transfers(self, addresses: Sequence[str], start: int, end: int) -> list[PastTransfer]:
        wanted: dict[str, int] = {}
        for address in addresses:
            wanted.update(await self._signatures(address, start, end))
        found: list[PastTransfer] = []
        for signature, slot in sorted(wanted.items(), key=lambda item: (item[1], item[0])):
            tx = await self._transaction(signature, slot)
            found.extend(PastTransfer(t, history_block(slot)) for t in transaction_transfers(tx, self.coin))
        return found
