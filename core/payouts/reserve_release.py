"""Giving a failed payout's money back: what the LEDGER reserved for it, to whom it reserved it, once.

Every path that ends a payout Failed (the worker's ``service.finish``, a
rejected approval hold in ``holds.py``, a cancelled policy hold in
``policy_holds.py``) gives its money back through :func:`give_back`, never
by the row's word: a row written into the database by hand (or by a
compromised web process) names any merchant and amount, and crediting it
would mint balance. The reserve ``payout:<id>:reserve`` is read and judged by
the signer's own proof (``reservations.reservation_of``,
``signing_policy.reservation_problem``):

* no reserve, a malformed one, or one already given back (released or
  reversed): nothing is posted; the payout ends Failed all the same.
* a reserve whose figures differ from the row's (amount, merchant, coin or
  chain edited after reserving): the reserve's own figures are given back to
  the merchant it was taken from, never more than was reserved.
* a reserve matching the row: given back as always (one transfer under
  ``payout:<id>:release``, so twice is once).

Anything but the last is counted (``orbchain_payout_release_anomalies_total``),
logged as an ERROR and written to the merchant's activity log (:func:`report`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ..ledger import book as ledger
from ..ledger.accounts import merchant_available, payouts_in_flight
from .payout_events import announce_payout
from .reservations import release_reference, reservation_of
from .signing_policy import reservation_problem

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

Row = Mapping[str, Any]
NOTHING_GIVEN_BACK = "nothing re-credited"  # a failed payout's ``last_error``, "<this>: <reason>", when so
REFUSED_EVENT = "payout_release_refused"  # activity log: nothing given back
MISMATCH_EVENT = "payout_release_mismatch"  # activity log: the reserve's figures given back, not the row's


@dataclass(frozen=True)
class Release:
    """What :func:`give_back` did: the posting (None: nothing given back) and what the proof found wrong."""

    posted: ledger.LedgerTransaction | None
    problem: str | None  # signing_policy's reason (no_reservation, reservation_mismatch ...), None when all agreed


async def give_back(gateway: "Gateway", row: Row) -> Release:
    """Give ``row``'s reserve back (payouts in flight -> merchant available), inside the caller's transaction."""
    db = gateway.db
    reservation, given_back = await reservation_of(gateway, row, binding=False)
    problem = reservation_problem(reservation, given_back, merchant_id=row["merchant_id"], coin=row["coin"],
                                  chain=row["chain"], amount=db.to_int(row["amount"]))
    if reservation is None or reservation.merchant_id is None or given_back:
        return Release(None, problem)
    posted = await ledger.transfer(
        db, from_account=payouts_in_flight(reservation.chain), to_account=merchant_available(reservation.merchant_id),
        coin=reservation.coin, amount=reservation.amount, reference=release_reference(row["id"]),
        kind="payout_release", merchant_id=reservation.merchant_id)
    return Release(posted, problem)


async def report(gateway: "Gateway", row: Row, release: Release, cause: str | None) -> None:
    """After the commit: count, log and announce a give-back the reserve did not back as the row said."""
    if release.problem is None:
        return
    coin = row["coin"] if gateway.coins.get(row["coin"]) is not None else "unknown"  # a forged row's text: no label
    gateway.metrics.payout_release_anomalies.labels(coin=coin, reason=release.problem).inc()
    if release.posted is None:
        log.error("payout %s (%s, merchant %s) failed (%s) and NOTHING was given back: %s; the ledger holds no"
                  " reserve of it to return (a row written outside the gateway?)", row["id"], row["coin"],
                  row["merchant_id"], cause, release.problem)
        await announce_payout(gateway, row, REFUSED_EVENT, reason=release.problem)
        return
    given = release.posted.postings[0]
    log.error("payout %s (%s, merchant %s) failed (%s); its row no longer matches its reserve (%s): gave back what"
              " the ledger reserved (%d base units of %s to merchant %s), not the row's figures", row["id"],
              row["coin"], row["merchant_id"], cause, release.problem, abs(given.amount), given.coin,
              release.posted.merchant_id)
    await announce_payout(gateway, row, MISMATCH_EVENT, reason=release.problem)
