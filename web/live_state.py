"""What a payment's live stream says: the state a payer sees, from one read of the payment.

Built once per change and shared by every stream of that payment (web/live.py:
the hosted page's, the dashboard's); ``shown`` then applies the clock per
stream, so a Waiting payment past its expiry is announced Expired exactly as
its page shows it (``shown_status``), without a read. Nothing private leaves:
the same fields as the hosted page, never the callback URL, email or user id.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from ..core.types.errors import NotFound
from ..core.gateway import Gateway
from ..core.payments import service as svc
from ..core.types.deposit_status import FAILED

FINAL_STATUSES = frozenset({svc.PAID, svc.EXPIRED, svc.CANCELLED})
State = dict[str, Any]


def shown_status(view: Mapping[str, Any], now: int) -> str:
    """The status the payer sees (the page and its stream alike).

    A Waiting payment past its expiry is shown Expired before the expiry job
    runs: the deposit engine no longer attributes deposits to it. A Paying
    one stays Paying: money is on the way and the engine decides.
    """
    expires_at = view["expires_at"]
    if view["status"] == svc.WAITING and expires_at is not None and expires_at <= now:
        return svc.EXPIRED
    return view["status"]


def paid_and_due(gateway: Gateway, pay_currency: str, pay_amount: int | None,
                 deposits: Sequence[Mapping[str, Any]]) -> tuple[str, str | None]:
    """What the payer sent in the payment's coin (failed transfers do not count) and what is still due."""
    coin = gateway.coins.require(pay_currency)
    paid = sum(gateway.db.to_int(d["amount"]) for d in deposits if d["status"] != FAILED and d["coin"] == pay_currency)
    return coin.format(paid), None if pay_amount is None else coin.format(max(0, pay_amount - paid))


async def read_state(gateway: Gateway, track_id: str, merchant_id: str | None = None) -> State | None:
    """The payment's state whatever its type, or None when unknown (or, given ``merchant_id``, another's).

    Every type: the hub reads a payment once for all of its streams, and the
    dashboard follows white-label and static payments too. Only an invoice
    has a public stream: ``GET /pay/{id}/events`` checks ``type`` itself.
    """
    try:
        row, deposits = await svc.payment_with_deposits(gateway, merchant_id, track_id)
    except NotFound:
        return None
    return state_of(gateway, row, deposits)


def state_of(gateway: Gateway, row: Mapping[str, Any], deposits: Sequence[Mapping[str, Any]]) -> State:
    """Status, amounts paid and due (the payer's coin; failed transfers do not count), confirmations, expiry."""
    to_int = gateway.db.to_int
    due = None if row["pay_amount"] is None else to_int(row["pay_amount"])
    paid_amount, due_amount = paid_and_due(gateway, row["pay_currency"], due, deposits)
    waiting_on = min((d for d in deposits if d["status"] != FAILED),
                     key=lambda d: int(d["confirmations"]) - int(d["threshold"]), default=None)
    return {
        "track_id": row["track_id"],
        "type": row["type"],
        "status": row["status"],
        "pay_currency": row["pay_currency"],
        "pay_amount": None if due is None else gateway.coins.require(row["pay_currency"]).format(due),
        "paid_amount": paid_amount,
        "due_amount": due_amount,
        "expires_at": row["expires_at"],
        # The deposit the payer waits on most: its confirmations and how many it needs.
        "confirmations": None if waiting_on is None else int(waiting_on["confirmations"]),
        "confirmations_required": None if waiting_on is None else int(waiting_on["threshold"]),
        "transactions": [
            {"tx_hash": d["tx_hash"], "amount": gateway.coins.require(d["coin"]).format(to_int(d["amount"])),
             "coin": d["coin"], "asset": gateway.coins.require(d["coin"]).payer_asset,  # the asset the payer knows
             "status": d["status"], "confirmations": int(d["confirmations"]),
             "required": int(d["threshold"])}
            for d in deposits],
        "paid_at": row["paid_at"],
        "return_url": safe_return_url(row["return_url"]) if row["status"] == svc.PAID else None,
    }


def safe_return_url(url: Any) -> str | None:
    """``url`` when it is an absolute http(s) URL, else None: a stored value the API did not check
    (an older row, a plugin's insert) never becomes a ``javascript:`` link on the payer's page."""
    if not isinstance(url, str) or any(ch.isspace() or ord(ch) < 32 for ch in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme.lower() in ("http", "https") and parts.hostname else None


def shown(state: State, now: int) -> State:
    """``state`` as the page shows it at ``now``: the shown status, whether it is final, the seconds left."""
    status = shown_status(state, now)
    expires_at = state["expires_at"]
    open_ = status in svc.OPEN_STATUSES
    remaining = max(0, expires_at - now) if open_ and expires_at is not None else None
    return {**state, "status": status, "final": status in FINAL_STATUSES, "remaining_seconds": remaining}
