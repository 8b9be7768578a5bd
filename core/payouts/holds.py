"""Payouts held for approval (``decide_payout_hold``): let one go, or give its money back.

A held payout is Confirming at stage ``held`` with its money already
reserved (merchant available -> payouts in flight), so it cannot be spent
twice. Approving moves it to stage ``queued`` in one conditional UPDATE: the
worker then signs and sends it like any payout, crash-safe as ever, and two
approvals at once move it once. Rejecting (or expiring) settles it Failed:
in flight -> merchant available (what the ledger reserved,
``reserve_release.py``), the row and the ``payout.failed`` webhook
in the same transaction. ``within`` lets the caller write its own record of
the decision in that transaction, and runs only when this call moved it.
"""

from __future__ import annotations

from typing import Awaitable, Callable

from ..events.outbox import enqueue_event
from ..ledger import book as ledger
from .reserve_release import give_back, report
from .service import CONFIRMING, HELD, QUEUED, Row, fail_held, hook_record, locked_merchant, webhook_body
from ..contract.gateway import PluginGateway as Gateway

Within = Callable[[Row], Awaitable[None]] | None


async def approve_held_payout(gateway: "Gateway", payout_id: str, within: Within = None) -> Row | None:
    """Queue a held payout for the worker; None when it is no longer held (approved, rejected, expired)."""
    db = gateway.db
    now = gateway.now()
    async with db.transaction():
        row = await db.fetch_one(
            "UPDATE payouts SET stage = :queued, next_attempt_at = :now, updated_at = :now"
            " WHERE id = :id AND status = :s AND stage = :held RETURNING *",
            {"queued": QUEUED, "now": now, "id": payout_id, "s": CONFIRMING, "held": HELD})
        if row is not None and within is not None:
            await within(row)
    return row


async def reject_held_payout(gateway: "Gateway", payout_id: str, reason: str, within: Within = None) -> Row | None:
    """Fail a held payout with ``reason`` and give its reserve back; None when it is no longer held."""
    db = gateway.db
    now = gateway.now()
    async with db.transaction():
        row = await fail_held(db, payout_id, held_stage=HELD, reason=reason, now=now)
        if row is None:
            return None
        release = await give_back(gateway, row)  # what the ledger reserved; nothing for a row it never reserved
        if release.posted is not None:
            await enqueue_event(gateway, merchant_id=row["merchant_id"], event_type="payout.failed",
                                body=webhook_body(gateway, row), logical_key=f"payout.failed:{row['track_id']}",
                                url=row["callback_url"], request_id=row["request_id"])
        if within is not None:
            await within(row)
    await report(gateway, row, release, reason)
    if release.posted is not None:
        await ledger.notify_posted(gateway, release.posted)
        await gateway.hooks.payout_finished(payout=hook_record(gateway, row))
    return row


async def released_subjects(gateway: "Gateway", ids: list[str]) -> set[str]:
    """Which of these payout or transfer ids no longer hold their money against a daily limit: payouts
    that failed (rejected, expired or refused) and transfers no longer held (approved ones count on
    their own rows; rejected and expired ones gave the money back). For a plugin's limit sums."""
    if not ids:
        return set()
    params = {f"i{n}": value for n, value in enumerate(ids)}
    marks = ", ".join(f":{name}" for name in params)
    rows = await gateway.db.fetch_all(
        f"SELECT id FROM payouts WHERE id IN ({marks}) AND status = 'Failed'"
        f" UNION SELECT id FROM transfers WHERE id IN ({marks}) AND status <> 'held'", params)
    return {row["id"] for row in rows}


async def lock_merchant_money(gateway: "Gateway", merchant_id: str) -> None:
    """Serialise a plugin's check with the merchant's payouts and transfers: the lock the payout reserve takes."""
    await locked_merchant(gateway.db, merchant_id)
