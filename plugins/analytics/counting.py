"""Counting ledger transactions into daily sums, exactly once each.

What counts (decided in docs/decisions.md "Analytics"):

* a deposit credit (``deposit``): the whole deposit the payer sent (the
  world leg), on the day it was credited;
* a confirmed payout (``payout_confirm``): the amount that left;
* a reversal of a credit (a deposit that left the chain): minus what that
  credit counted, on the credit's own day, so history shows what stands.

USD is valued when the transaction is counted, at the price service's
price (cached up to a minute): the hook runs right after the commit, so
that is the time of the event; the catch-up job (every five minutes over
the last six hours) values what a crash kept from the hook when it finds
it. A price the service does not know counts as 0 USD (the count still
counts).
"""

from __future__ import annotations

import logging
from datetime import datetime, UTC
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from ...api import WORLD_PREFIX, ledger_history, usd_units

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

KINDS = ("deposit", "payout_confirm", "reversal")
CATCH_UP_SECONDS = 300
CATCH_UP_WINDOW = 6 * 3600


class Event(NamedTuple):
    merchant_id: str
    day: str
    kind: str  # "deposit" or "payout"
    count_delta: int
    usd: int


def day_of(timestamp: int) -> str:
    return datetime.fromtimestamp(int(timestamp), tz=UTC).strftime("%Y-%m-%d")


def _world_leg(txn: Mapping[str, Any]) -> tuple[str, int] | None:
    legs = [(p["coin"], int(p["amount"])) for p in txn["postings"] if p["account"].startswith(WORLD_PREFIX)]
    return legs[0] if len(legs) == 1 else None


async def event_of(gateway: "Gateway", txn: Mapping[str, Any]) -> Event | None:
    """What ``txn`` adds to the daily sums, or None when it counts for nothing."""
    merchant_id = txn.get("merchant_id")
    if not merchant_id:
        return None
    if txn["kind"] == "reversal":
        original = await gateway.db.fetch_one(
            "SELECT merchant_id, day, kind, count_delta, usd FROM analytics_events WHERE transaction_id = :t",
            {"t": txn.get("reverses") or ""})
        if original is None or original["kind"] != "deposit":
            return None  # a transaction never counted (or not a deposit) takes nothing back
        return Event(original["merchant_id"], original["day"], "deposit", -int(original["count_delta"]),
                     -int(original["usd"]))
    leg = _world_leg(txn)
    if leg is None:
        return None
    coin, world_amount = leg
    if txn["kind"] == "deposit" and world_amount < 0:
        return Event(merchant_id, day_of(txn["created_at"]), "deposit", 1,
                     await usd_units(gateway, coin, -world_amount))
    if txn["kind"] == "payout_confirm" and world_amount > 0:
        return Event(merchant_id, day_of(txn["created_at"]), "payout", 1,
                     await usd_units(gateway, coin, world_amount))
    return None


async def count(gateway: "Gateway", txn: Mapping[str, Any]) -> bool:
    """Add ``txn`` to the daily sums once; True when it was added now."""
    if txn["kind"] not in KINDS:
        return False
    event = await event_of(gateway, txn)
    if event is None:
        return False
    db = gateway.db
    deposit = event.kind == "deposit"
    async with db.transaction():
        claimed = await db.fetch_one(
            "INSERT INTO analytics_events (transaction_id, merchant_id, day, kind, count_delta, usd, created_at)"
            " VALUES (:t, :m, :day, :kind, :n, :usd, :at) ON CONFLICT (transaction_id) DO NOTHING"
            " RETURNING transaction_id",
            {"t": txn["id"], "m": event.merchant_id, "day": event.day, "kind": event.kind, "n": event.count_delta,
             "usd": event.usd, "at": int(txn["created_at"])})
        if claimed is None:
            return False
        await db.execute(
            "INSERT INTO analytics_daily (merchant_id, day, deposits_usd, payouts_usd, deposit_count, payout_count)"
            " VALUES (:m, :day, :du, :pu, :dc, :pc) ON CONFLICT (merchant_id, day) DO UPDATE SET"
            " deposits_usd = analytics_daily.deposits_usd + excluded.deposits_usd,"
            " payouts_usd = analytics_daily.payouts_usd + excluded.payouts_usd,"
            " deposit_count = analytics_daily.deposit_count + excluded.deposit_count,"
            " payout_count = analytics_daily.payout_count + excluded.payout_count",
            {"m": event.merchant_id, "day": event.day, "du": event.usd if deposit else 0,
             "pu": 0 if deposit else event.usd, "dc": event.count_delta if deposit else 0,
             "pc": 0 if deposit else event.count_delta})
    return True


async def on_posted(gateway: "Gateway", txn: Mapping[str, Any]) -> None:
    await count(gateway, txn)


async def catch_up(gateway: "Gateway") -> int:
    """Count the last six hours' transactions the hook missed; the number counted now."""
    now = gateway.now()
    start = now - CATCH_UP_WINDOW
    rows = await gateway.db.fetch_all("SELECT transaction_id FROM analytics_events WHERE created_at >= :s",
                                      {"s": start})
    known = {row["transaction_id"] for row in rows}
    counted = 0
    async for txn in ledger_history(gateway, start, now + 1, KINDS):
        if txn["id"] in known:
            continue
        try:
            counted += await count(gateway, txn)
        except Exception:  # one bad transaction must not stop the rest
            log.exception("analytics catch-up failed on ledger transaction %s", txn["id"])
    return counted
