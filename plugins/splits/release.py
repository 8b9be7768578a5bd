"""Address shares become payouts through the core's payout pipeline, once each.

A share waits in ``splits:payouts:<merchant>`` (see ``credit.py``). Releasing
it is one transaction: move it to the payment merchant's available balance
and request the payout (``request_payout``, idempotency key
``splits:<deposit>:<position>``) from there, so the merchant can never spend
it in between and a crash leaves either both or neither. Runs right after
the credit (``deposit_credited``) and from a job every minute, which also
picks up what a crash or a 503 (backlog breaker) left pending.

A payout the pipeline refuses for good (below the coin's minimum payout,
an address the chain no longer accepts) leaves the share with the merchant
and marks the row failed with the reason; a payout that later fails on
chain is re-credited to the merchant like any failed payout.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping

from ...api import ApiError, ServiceUnavailable, find_deposit, ledger, request_payout
from .credit import FAILED, PENDING, REQUESTED, REVERSED, payouts_account

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

JOB_NAME = "splits.release"
JOB_SECONDS = 60
PAGE = 200
CREDITED = "CREDITED"


class _Retry(Exception):
    """A transient refusal: roll the release back and try again at the next run."""


def idempotency_key(deposit_id: str, position: int) -> str:
    return f"splits:{deposit_id}:{position}"


async def release_deposit(gateway: "Gateway", deposit_id: str) -> int:
    """Release every pending address share of one credited deposit; returns how many were requested."""
    rows = await gateway.db.fetch_all(
        "SELECT * FROM splits_payouts WHERE deposit_id = :d AND status = :s ORDER BY position",
        {"d": deposit_id, "s": PENDING})
    return sum([await release(gateway, row) for row in rows])


async def release_pending(gateway: "Gateway") -> int:
    """The job: every pending share, oldest first, in pages."""
    done, after = 0, ("", -1)
    while rows := await gateway.db.fetch_all(
            "SELECT * FROM splits_payouts WHERE status = :s AND (deposit_id > :d OR (deposit_id = :d AND"
            " position > :p)) ORDER BY deposit_id, position LIMIT :l",
            {"s": PENDING, "d": after[0], "p": after[1], "l": PAGE}):
        after = (rows[-1]["deposit_id"], int(rows[-1]["position"]))
        for row in rows:
            done += await release(gateway, row)
    return done


async def release(gateway: "Gateway", row: Mapping[str, Any]) -> int:
    """One share: 1 when its payout was requested now, else 0 (not due, failed or retried later)."""
    deposit = await find_deposit(gateway, row["deposit_id"])
    if deposit is None or deposit.status != CREDITED:
        return 0  # reorganised away (deposit_reversed marks it) or not credited yet
    db = gateway.db
    key = (row["deposit_id"], int(row["position"]))
    posted = None
    try:
        async with db.transaction():
            current = await db.fetch_one(
                f"SELECT * FROM splits_payouts WHERE deposit_id = :d AND position = :p{db.for_update}",
                {"d": key[0], "p": key[1]})
            if current is None or current["status"] != PENDING:
                return 0
            posted, outcome = await _release_locked(gateway, current)
    except _Retry as exc:
        await _note(gateway, key, str(exc))
        return 0
    except ledger.LedgerOverdraft as exc:  # the account was emptied by a reorg reversal: wait for the hook
        await _note(gateway, key, str(exc))
        return 0
    if posted is not None and not posted.replay:
        await ledger.notify_posted(gateway, posted)
    return 1 if outcome == REQUESTED else 0


async def _release_locked(gateway: "Gateway", row: Mapping[str, Any]) -> tuple[Any, str]:
    db = gateway.db
    amount, merchant_id = db.to_int(row["amount"]), row["merchant_id"]
    posted = await ledger.transfer(
        db, from_account=payouts_account(merchant_id), to_account=ledger.merchant_available(merchant_id),
        coin=row["coin"], amount=amount, reference=f"splits:release:{row['deposit_id']}:{row['position']}",
        kind="splits_release", merchant_id=merchant_id, memo=f"split payout of {row['track_id']}")
    values = {"d": row["deposit_id"], "p": row["position"], "now": gateway.now()}
    try:
        payout = await request_payout(
            gateway, merchant_id, coin=row["coin"], destination=row["address"], amount=amount,
            idempotency_key=idempotency_key(row["deposit_id"], int(row["position"])),
            description=f"split of payment {row['track_id']}")
    except ServiceUnavailable as exc:
        raise _Retry(exc.code or exc.message) from None
    except ApiError as exc:
        reason = exc.code or exc.message
        log.warning("split payout %s:%s refused for good: %s", row["deposit_id"], row["position"], reason)
        await db.execute("UPDATE splits_payouts SET status = :s, failure_reason = :r, updated_at = :now"
                         " WHERE deposit_id = :d AND position = :p", {**values, "s": FAILED, "r": reason})
        return posted, FAILED
    await db.execute("UPDATE splits_payouts SET status = :s, payout_track_id = :po, last_error = NULL,"
                     " updated_at = :now WHERE deposit_id = :d AND position = :p",
                     {**values, "s": REQUESTED, "po": payout.track_id})
    return posted, REQUESTED


async def _note(gateway: "Gateway", key: tuple[str, int], error: str) -> None:
    await gateway.db.execute("UPDATE splits_payouts SET last_error = :e, updated_at = :now"
                             " WHERE deposit_id = :d AND position = :p",
                             {"e": error[:500], "now": gateway.now(), "d": key[0], "p": key[1]})


async def mark_reversed(gateway: "Gateway", deposit_id: str) -> None:
    """The deposit's credit was reorganised away before its shares were released: they are not owed."""
    deposit = await find_deposit(gateway, deposit_id)
    if deposit is not None and deposit.status == CREDITED:
        return  # credited again already: the rows stand
    await gateway.db.execute("UPDATE splits_payouts SET status = :r, updated_at = :now"
                             " WHERE deposit_id = :d AND status = :p",
                             {"r": REVERSED, "p": PENDING, "d": deposit_id, "now": gateway.now()})
