"""Payer replacements and double-spends: a deposit whose inputs another transaction spent.

Why: a payer can replace an unconfirmed transaction (BIP 125, or any node
running full replacement) or double-spend it. Waiting for it to be "gone from
the mempool" for ``drop_after_seconds`` left the payment Paying for hours and
the page counting the original and its replacement both (issue 46 item 3).

Each deposit keeps the outpoints its transaction spends (``Transfer.spends``,
column ``deposits.spends``). Within one scan:

* a new deposit (pool or block) sharing an input with an unconfirmed PENDING
  deposit replaces it: the old one is FAILED with ``failure_reason``
  ``replaced``; the replacement is a deposit of its own and credits once;
* an unconfirmed deposit gone from the pool whose inputs the node reports
  spent by another transaction (``ChainAdapter.conflicted``: a payment back
  to the payer, mined or in the pool) is FAILED as ``double_spent``.

Either way the payment is recomputed (``refresh_payment``), so it goes back to
Waiting or stays Paying, with a ``payment.reverted`` webhook when it steps
back. A FAILED deposit that shows up in a block after all is revived by the
deposit engine, as one dropped from the mempool always was.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..types.chains import Capability, ChainAdapter, Transfer
from ..events.after_commit import AfterCommit, run_after_commit
from ..payments.changes import payment_changed
from ..payments.status import refresh_payment
from ..types.deposit_status import FAILED, PENDING

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

REPLACED, DOUBLE_SPENT = "replaced", "double_spent"


def spends_column(spends: Sequence[str]) -> str | None:
    """``deposits.spends``: the outpoints, space-separated (NULL when the chain reports none)."""
    return " ".join(spends) or None


def spends_of(row: Mapping[str, Any]) -> frozenset[str]:
    return frozenset((row["spends"] or "").split())


async def _unconfirmed_with_spends(gateway: "Gateway", chain: str) -> list[Mapping[str, Any]]:
    return await gateway.db.fetch_all(
        "SELECT id, tx_hash, output_index, address, coin, amount, spends FROM deposits WHERE chain = :c"
        " AND status = :p AND block_height IS NULL AND spends IS NOT NULL", {"c": chain, "p": PENDING})


async def replace_conflicting(gateway: "Gateway", chain: str, transfer: Transfer, after: AfterCommit) -> None:
    """Inside a new deposit's transaction (after its insert): the unconfirmed deposits it replaces are FAILED."""
    if not transfer.spends:
        return
    spends = frozenset(transfer.spends)
    for row in await _unconfirmed_with_spends(gateway, chain):
        if row["tx_hash"] != transfer.tx_hash and spends & spends_of(row):
            await fail_conflicted(gateway, row["id"], REPLACED, transfer.tx_hash, after)


async def mark_conflicted(gateway: "Gateway", adapter: ChainAdapter, mempool_hashes: set[str]) -> int:
    """Unconfirmed deposits gone from the pool whose inputs were spent elsewhere: FAILED now. Returns how many."""
    if not adapter.supports(Capability.MEMPOOL):
        return 0
    gone = [r for r in await _unconfirmed_with_spends(gateway, adapter.name) if r["tx_hash"] not in mempool_hashes]
    if not gone:
        return 0
    to_int = gateway.db.to_int
    conflicted = await adapter.conflicted([
        Transfer(r["tx_hash"], int(r["output_index"]), r["address"], r["coin"], to_int(r["amount"]),
                 tuple(sorted(spends_of(r)))) for r in gone])
    failed = 0
    for row in gone:
        if row["tx_hash"] not in conflicted:
            continue
        after: AfterCommit = []
        async with gateway.db.transaction():
            failed += await fail_conflicted(gateway, row["id"], DOUBLE_SPENT, None, after)
        await run_after_commit(after)
    return failed


async def fail_conflicted(gateway: "Gateway", deposit_id: str, reason: str, by: str | None,
                          after: AfterCommit) -> int:
    """One unconfirmed PENDING deposit FAILED for ``reason`` and its payment recomputed (caller's transaction)."""
    db = gateway.db
    deposit = await db.fetch_one(f"SELECT * FROM deposits WHERE id = :id{db.for_update}", {"id": deposit_id})
    if deposit is None or deposit["status"] != PENDING or deposit["block_height"] is not None:
        return 0
    if deposit["track_id"]:  # the engine's lock order: the payment before anything it posts
        await db.fetch_val(f"SELECT track_id FROM payments WHERE track_id = :t{db.for_update}",
                           {"t": deposit["track_id"]})
    await db.execute(
        "UPDATE deposits SET status = :s, failure_reason = :r, missing_since = NULL, updated_at = :now"
        " WHERE id = :id", {"s": FAILED, "r": reason, "now": gateway.now(), "id": deposit_id})
    log.warning("deposit %s (%s %s) %s%s: it will not confirm", deposit_id, deposit["chain"], deposit["tx_hash"],
                reason.replace("_", "-"), f" by {by}" if by else "")
    payment_changed(gateway, deposit["track_id"], after)
    if deposit["track_id"]:
        await refresh_payment(gateway, deposit["track_id"], after)
    return 1
