"""Turning referee deposit credits into referrer earnings, exactly once, from the ledger.

Driven by ``ledger_posted``: a ``deposit`` transaction (a credit) of a
referred merchant inside its 12-month window pays the referrer 2000 bps of
the platform fee the credit took, as its own ledger transaction
``referral:<credit reference>`` from ``platform:fees`` to the referrer's
available balance; a ``reversal`` of that credit (the deposit left the
chain) reverses the earning the same way the core reverses the credit
(allowed to go negative: the money is gone whatever we say). Both are
idempotent by ledger reference, so the hook and the catch-up job
(``catch_up``, every five minutes over the last six hours, for events a
crash kept from the hook) may see the same transaction twice.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping

from ...api import (
    MerchantRecord, PLATFORM_FEES, ledger, ledger_history, merchant_available, merchant_record, reversed_references,
    usd_units,
)
from .terms import earning_units, eligibility_ends_at

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

CATCH_UP_SECONDS = 300
CATCH_UP_WINDOW = 6 * 3600
KINDS = ("deposit", "reversal")


def _platform_fee(txn: Mapping[str, Any]) -> tuple[str, int] | None:
    fees = [(p["coin"], int(p["amount"])) for p in txn["postings"] if p["account"] == PLATFORM_FEES]
    if not fees:
        return None
    coin = fees[0][0]
    return coin, sum(amount for c, amount in fees if c == coin)


async def earn(gateway: "Gateway", txn: Mapping[str, Any],
               merchants: dict[str, MerchantRecord] | None = None) -> bool:
    """Pay the referrer its share of this credit's platform fee; True when something was posted.
    ``merchants`` caches merchant records across calls (the catch-up job)."""
    fee = _platform_fee(txn)
    if fee is None or fee[1] <= 0 or not txn.get("merchant_id"):
        return False
    coin, fee_units = fee
    referee = merchants.get(txn["merchant_id"]) if merchants is not None else None
    if referee is None:
        referee = await merchant_record(gateway, txn["merchant_id"])
        if merchants is not None:
            merchants[referee.merchant_id] = referee
    if referee.referrer_id is None or txn["created_at"] >= eligibility_ends_at(referee.signed_up_at):
        return False
    earning = earning_units(fee_units)
    if earning <= 0 or await reversed_references(gateway, [txn["reference"]]):
        return False  # a credit already reversed earns nothing
    reference = f"referral:{txn['reference']}"
    fee_usd = await usd_units(gateway, coin, fee_units)
    earning_usd = await usd_units(gateway, coin, earning)
    db = gateway.db
    async with db.transaction():
        posted = await ledger.post(
            db, kind="referral", reference=reference, merchant_id=referee.referrer_id,
            memo=f"referral share of {txn['reference']}",
            postings=[ledger.Posting(PLATFORM_FEES, coin, -earning),
                      ledger.Posting(merchant_available(referee.referrer_id), coin, earning)])
        if not posted.replay:
            await db.execute(
                "INSERT INTO referral_earnings (reference, source_txn_id, referrer_id, referee_id, coin, fee, earning,"
                " fee_usd, earning_usd, reversed, created_at) VALUES (:r, :src, :referrer, :referee, :coin, :fee,"
                " :earning, :fee_usd, :earning_usd, FALSE, :at)",
                {"r": reference, "src": txn["id"], "referrer": referee.referrer_id, "referee": referee.merchant_id,
                 "coin": coin, "fee": db.amount_param(fee_units), "earning": db.amount_param(earning),
                 "fee_usd": fee_usd, "earning_usd": earning_usd, "at": int(txn["created_at"])})
    if posted.replay:
        return False
    await ledger.notify_posted(gateway, posted)
    return True


async def unearn(gateway: "Gateway", txn: Mapping[str, Any]) -> bool:
    """A reversed credit reverses its referral earning; True when something was posted."""
    source = txn.get("reverses")
    if not source:
        return False
    db = gateway.db
    row = await db.fetch_one("SELECT reference, reversed FROM referral_earnings WHERE source_txn_id = :s",
                             {"s": source})
    if row is None or row["reversed"]:
        return False
    async with db.transaction():
        reversal = await ledger.reverse(db, original_reference=row["reference"],
                                        reference=f"{row['reference']}:reversal", allow_negative=True)
        await db.execute("UPDATE referral_earnings SET reversed = TRUE WHERE reference = :r",
                         {"r": row["reference"]})
    if reversal.replay:
        return False
    await ledger.notify_posted(gateway, reversal)
    return True


async def on_posted(gateway: "Gateway", txn: Mapping[str, Any]) -> None:
    if txn["kind"] == "deposit":
        await earn(gateway, txn)
    elif txn["kind"] == "reversal":
        await unearn(gateway, txn)


async def catch_up(gateway: "Gateway") -> int:
    """Apply the last six hours of credits and reversals again (idempotent); the count posted."""
    now = gateway.now()
    start = now - CATCH_UP_WINDOW
    rows = await gateway.db.fetch_all(
        "SELECT source_txn_id FROM referral_earnings WHERE created_at >= :start AND reversed = FALSE",
        {"start": start})
    earned = {row["source_txn_id"] for row in rows}
    merchants: dict[str, MerchantRecord] = {}
    posted = 0
    async for txn in ledger_history(gateway, start, now + 1, KINDS):
        if txn["kind"] == "deposit" and txn["id"] in earned:
            continue
        try:
            posted += await (earn(gateway, txn, merchants) if txn["kind"] == "deposit" else unearn(gateway, txn))
        except Exception:  # one bad transaction must not stop the rest
            log.exception("referral catch-up failed on ledger transaction %s", txn["id"])
    return posted
