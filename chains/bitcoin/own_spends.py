"""Transactions the platform makes between its own places: a sweep to cold, a consolidation into the hot wallet.

Why one module: both are a row of the plugin's own (``bitcoin_cold_sweeps``,
``bitcoin_consolidations``) holding the signed bytes, written with the
inputs' reservation before anything is broadcast; both are sent again until
the node has them, followed without ``-txindex`` as payouts are, and once
``payout_confirmations`` deep their ledger postings are recorded for
``serve`` to book (``ledger.record_sweep_booking``: the process that signs
writes no ledger, core/ledger/sweep_bookings.py), idempotent by the row's
reference. Only what is recorded differs, so that is what a caller passes in.

Not done here: a transaction the node refuses for good (its inputs spent
elsewhere) stays live, logged at ERROR each tick, for the operator.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping

from ...api import BroadcastError, SignedPayout
from . import wallet

if TYPE_CHECKING:  # pragma: no cover
    from .adapter import BitcoinAdapter

log = logging.getLogger(__name__)

SENT, DONE = "sent", "done"
TABLES = ("bitcoin_cold_sweeps", "bitcoin_consolidations")  # constants: never a name from input

Settle = Callable[["BitcoinAdapter", Mapping[str, Any]], Awaitable[None]]  # records the postings, marks the row done


async def live(adapter: "BitcoinAdapter", table: str) -> Mapping[str, Any] | None:
    """The chain's oldest row of ``table`` not yet final (one is live at a time)."""
    assert table in TABLES
    return await adapter.gateway.db.fetch_one(
        f"SELECT * FROM {table} WHERE chain = :c AND status = :s ORDER BY created_at LIMIT 1",
        {"c": adapter.name, "s": SENT})


async def row(adapter: "BitcoinAdapter", table: str, spend_id: str) -> Mapping[str, Any]:
    assert table in TABLES
    found = await adapter.gateway.db.fetch_one(f"SELECT * FROM {table} WHERE id = :id", {"id": spend_id})
    assert found is not None, "stored with the inputs' reservation before the signer returned"
    return found


async def statuses(adapter: "BitcoinAdapter") -> dict[str, str]:
    """Own spend id -> "Confirmed" (final, its postings recorded: the custody check counts them until ``serve``
    books them) or "Confirming", in the payout statuses' words (for ``custody.py``)."""
    found: dict[str, str] = {}
    for table in TABLES:
        rows = await adapter.gateway.db.fetch_all(f"SELECT id, status FROM {table} WHERE chain = :c",
                                                  {"c": adapter.name})
        found.update({r["id"]: "Confirmed" if r["status"] == DONE else "Confirming" for r in rows})
    return found


async def follow(adapter: "BitcoinAdapter", spend: Mapping[str, Any], settle: Settle, what: str) -> None:
    """Send the stored bytes until the node has them; once deep enough, ``settle`` (record its postings for
    ``serve`` to book, mark the row done)."""
    tx = await wallet.payout_tx(adapter.gateway, adapter.name, spend["tx_hash"])
    confirmations, block_hash = await adapter.locate(
        spend["tx_hash"], tx["block_hash"] if tx else None, int(tx["signed_height"]) if tx else None)
    if confirmations is None:
        try:
            await adapter.broadcast(SignedPayout(spend["tx_hash"], spend["raw_tx"]))
        except BroadcastError as exc:
            log.log(logging.ERROR if exc.permanent else logging.WARNING, "%s: %s %s not accepted: %s",
                    adapter.name, what, spend["id"], exc)
        return
    if block_hash is not None and (tx is None or tx["block_hash"] != block_hash):
        await wallet.confirm_payout(adapter.gateway, adapter.name, spend["id"], block_hash)
    if confirmations >= adapter.payout_confirmations:
        await settle(adapter, spend)


async def mark_done(adapter: "BitcoinAdapter", table: str, spend_id: str) -> None:
    assert table in TABLES
    await adapter.gateway.db.execute(f"UPDATE {table} SET status = :s, updated_at = :t WHERE id = :id",
                                     {"s": DONE, "t": adapter.gateway.now(), "id": spend_id})
