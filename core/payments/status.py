"""A payment's status follows its deposits and its lifetime (docs/decisions.md, "Payments").

Paid once its credited deposits add up to at least its pay_amount (static
addresses: the first credited deposit); Paying while money is on its way or
underpaid; Expired when its lifetime elapsed and nothing is still
confirming (``payment.expired``, beyond SPEC 6.3). A step back (Paid to
Paying, Paying to Waiting: a deposit replaced, double-spent, dropped or
reorganised away) sends ``payment.reverted`` with the status it now has.
Every change enqueues its webhook inside the caller's transaction and
fires its hook after the commit, with a ``PaymentView``, and is announced on the change feed (core/payments/changes.py).
"""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable, Mapping

from ..events.after_commit import AfterCommit, run_after_commit
from .changes import payment_changed
from ..types.deposit_status import CREDITED, IN_PROGRESS
from ..events.key_destination import RunDestination
from ..types.statuses import EXPIRED, OPEN_STATUSES, PAID, PAYING, WAITING
from .loaded import LoadedPayment, load_payment, lock_payment, with_deposits
from .service import STATIC, payment_view
from ..types.views import payment_view_of
from ..contract.gateway import PluginGateway as Gateway

# The open statuses in the order money moves them; a move to an earlier one is a revert.
_PROGRESS = (WAITING, PAYING, PAID)


async def refresh_payment(gateway: "Gateway", track_id: str, after: AfterCommit, *,
                          locked: Mapping[str, Any] | None = None, destination: RunDestination | None = None) -> None:
    """Recompute a payment's status from its deposits (inside the caller's transaction).

    ``locked``: the payment's row as the caller read it under its lock in this transaction (``lock_payment``),
    so it is not read again; without it the row is read and locked here. ``destination``: where the caller's
    transaction already sends this payment's events (its first lookup is reused), else looked up here.
    """
    db = gateway.db
    payment = locked if locked is not None else await lock_payment(gateway, track_id)
    if payment is None or payment["status"] not in (WAITING, PAYING, PAID):
        return
    state = await with_deposits(gateway, payment)
    deposits = list(state.deposits)
    credited = sum(db.to_int(d["amount"]) for d in deposits if d["status"] == CREDITED)
    live = any(d["status"] in IN_PROGRESS for d in deposits)
    covered = await gateway.hooks.decide_payment_covered(payment=payment, deposits=deposits)
    if covered is not None:
        paid = bool(covered)  # a plugin settles this payment in another coin (a venue's payout)
    elif payment["type"] == STATIC:
        paid = credited > 0
    else:
        paid = credited >= db.to_int(payment["pay_amount"])
    status = PAID if paid else (PAYING if live or credited else WAITING)
    if status == payment["status"]:
        return
    now = gateway.now()
    payment_changed(gateway, track_id, after)
    if status == PAID:
        generation = int(payment["paid_count"]) + 1
        await db.execute(
            "UPDATE payments SET status = :s, paid_at = :now, paid_count = :g, updated_at = :now WHERE track_id = :t",
            {"s": PAID, "now": now, "g": generation, "t": track_id},
        )
        state = state.changed(status=PAID, paid_at=now, paid_count=generation, updated_at=now)
        await payment_event(gateway, state, "payment.paid", f"payment.paid:{track_id}:{generation}", destination)
        emit_after(gateway, gateway.hooks.payment_paid, state.row, after)
    elif _PROGRESS.index(status) < _PROGRESS.index(payment["status"]):
        # A step back (a deposit replaced, double-spent, dropped or reorganised away): the merchant must know.
        generation = int(payment["reverted_count"]) + 1
        await db.execute(
            "UPDATE payments SET status = :s, paid_at = NULL, reverted_count = :g, updated_at = :now"
            " WHERE track_id = :t", {"s": status, "g": generation, "now": now, "t": track_id})
        state = state.changed(status=status, paid_at=None, reverted_count=generation, updated_at=now)
        await payment_event(gateway, state, "payment.reverted", f"payment.reverted:{track_id}:{generation}",
                            destination)
    else:
        await db.execute("UPDATE payments SET status = :s, paid_at = NULL, updated_at = :now WHERE track_id = :t",
                         {"s": status, "now": now, "t": track_id})


def emit_after(gateway: "Gateway", event: Callable[..., Awaitable[None]], row: Mapping[str, Any],
               after: AfterCommit) -> None:
    """Queue ``event(payment=PaymentView)`` (a payment event of ``gateway.hooks``) with the payment as it
    stands now in this transaction (``row``, read or brought up to date by the caller)."""
    view = payment_view_of(gateway, row)
    after.append(lambda: event(payment=view))


async def payment_event(gateway: "Gateway", state: LoadedPayment, event_type: str, logical_key: str,
                        destination: RunDestination | None = None) -> None:
    """Enqueue a payment webhook (SPEC 6.4) with the payment as it stands now in this transaction (``state``), to
    ``destination`` (the transaction's, when an earlier event of it looked it up)."""
    payment = state.row
    view = payment_view(gateway, payment, state.deposits)
    body = {
        "type": "payment",
        **{k: view.get(k) for k in ("track_id", "status", "amount", "currency", "pay_currency", "pay_amount",
                                    "address", "order_id", "paid_at", "transactions")},
    }
    if gateway.coins.require(payment["pay_currency"]).webhook_status_upper:
        body["status"] = str(body["status"]).upper()
    # A plugin's receive fields (a settled invoice's block) travel with the payment (SPEC 6.4).
    if payment["receive_extra"]:
        body.update({k: v for k, v in json.loads(payment["receive_extra"]).items() if k not in body})
    await add_plugin_fields(gateway, body, payment_view_of(gateway, payment))
    destination = destination or RunDestination(gateway, payment)
    await destination.enqueue(merchant_id=payment["merchant_id"], event_type=event_type, body=body,
                              logical_key=logical_key)


async def expire_payments(gateway: "Gateway") -> int:
    """Waiting payments past their lifetime -> Expired; so are underpaid Paying ones
    whose deposits have all settled (nothing still on its way). Fires ``payment_expired``."""
    db = gateway.db
    now = gateway.now()
    rows = await db.fetch_all(
        "SELECT track_id, status FROM payments WHERE status IN ('Waiting', 'Paying') AND expires_at IS NOT NULL"
        " AND expires_at <= :now", {"now": now})
    expired = 0
    for row in rows:
        after: AfterCommit = []
        async with db.transaction():
            payment = await db.fetch_one(f"SELECT * FROM payments WHERE track_id = :t{db.for_update}",
                                         {"t": row["track_id"]})
            assert payment is not None, "selected just above; payments are never deleted"
            if payment["status"] not in OPEN_STATUSES:
                continue
            if await gateway.hooks.decide_payment_held_open(payment=payment):
                continue  # paid in time where only a plugin sees it (a venue's deposit address)
            if payment["status"] == PAYING:
                waiting_on = await db.fetch_val(
                    "SELECT COUNT(*) FROM deposits WHERE track_id = :t AND status IN (:p, :c)",
                    {"t": row["track_id"], "p": IN_PROGRESS[0], "c": IN_PROGRESS[1]})
                if waiting_on:
                    continue  # paid in time, still confirming or converting: wait for it
            await db.execute("UPDATE payments SET status = :s, updated_at = :now WHERE track_id = :t",
                             {"s": EXPIRED, "now": now, "t": row["track_id"]})
            # The merchant's order can be released now (issue 46: expiry sent no webhook); one per payment.
            expired_now = await load_payment(gateway, row["track_id"])
            await payment_event(gateway, expired_now, "payment.expired", f"payment.expired:{row['track_id']}")
            emit_after(gateway, gateway.hooks.payment_expired, expired_now.row, after)
            payment_changed(gateway, row["track_id"], after)
            expired += 1
        await run_after_commit(after)
    return expired


async def add_plugin_fields(gateway: "Gateway", body: dict[str, Any], payment: Any) -> None:
    """``extra_payment_webhook_fields``: each plugin's extra fields, never replacing one already there."""
    for plugin, extra in await gateway.hooks.extra_payment_webhook_fields_answers(payment=payment):
        if not isinstance(extra, Mapping):
            raise TypeError(f"plugin {plugin} answered extra_payment_webhook_fields with {type(extra).__name__}")
        for key, value in extra.items():
            body.setdefault(key, value)
