"""Transfers held for approval (``decide_transfer_hold``): let one move, or give the sender its money back.

A held transfer's amount sits in the sender's held account (available ->
held when it was requested), so it cannot be spent twice, and the
recipient neither sees it nor hears of it. Approving moves held ->
recipient available, clears ``status`` and enqueues both webhooks, in one
transaction with one conditional UPDATE, so two approvals move it once;
rejecting or expiring moves held -> sender available and keeps the reason
in ``status``. ``within`` runs the caller's own writes in that transaction,
only when this call moved it.
"""

from __future__ import annotations

from typing import Awaitable, Callable

from ..ledger import book as ledger
from ..ledger.accounts import merchant_available, merchant_held
from .service import HELD, TransferRequest, enqueue_webhooks, ledger_reference
from ..infra.db import Row
from ..contract.gateway import PluginGateway as Gateway

Within = Callable[[Row], Awaitable[None]] | None


async def _settle(gateway: "Gateway", transfer_id: str, status: str | None, within: Within) -> Row | None:
    """Move a held transfer to ``status`` (None: done) and its money out of held; None when not held."""
    db = gateway.db
    async with db.transaction():
        row = await db.fetch_one("UPDATE transfers SET status = :s WHERE id = :id AND status = :held RETURNING *",
                                 {"s": status, "id": transfer_id, "held": HELD})
        if row is None:
            return None
        sender, amount = row["from_merchant_id"], db.to_int(row["amount"])
        to_merchant = row["to_merchant_id"] if status is None else sender
        suffix = "" if status is None else ":release"
        posted = await ledger.transfer(
            db, from_account=merchant_held(sender), to_account=merchant_available(to_merchant), coin=row["coin"],
            amount=amount, reference=ledger_reference(row["id"]) + suffix, kind="transfer", merchant_id=sender)
        if status is None:
            merchants = {r["id"]: r for r in await db.fetch_all(
                "SELECT * FROM merchants WHERE id IN (:a, :b)", {"a": sender, "b": row["to_merchant_id"]})}
            request = TransferRequest(row["to_account_id"], row["coin"], amount, key_id=row["key_id"],
                                      request_id=row["request_id"])
            await enqueue_webhooks(gateway, row, request, merchants)
        if within is not None:
            await within(row)
    await ledger.notify_posted(gateway, posted)
    return row


async def approve_held_transfer(gateway: "Gateway", transfer_id: str, within: Within = None) -> Row | None:
    """Complete a held transfer (recipient credited, both webhooks); None when it is no longer held."""
    return await _settle(gateway, transfer_id, None, within)


async def reject_held_transfer(gateway: "Gateway", transfer_id: str, reason: str,
                               within: Within = None) -> Row | None:
    """Give a held transfer's money back to the sender, ``reason`` kept; None when it is no longer held."""
    return await _settle(gateway, transfer_id, reason, within)
