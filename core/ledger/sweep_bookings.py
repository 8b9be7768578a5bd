"""A sweep's ledger postings: recorded by the process that signs it, booked by ``serve`` (issue 45).

Why: the signer only signs. Its PostgreSQL role (core/custody/signer_role.py)
holds no ledger write, so a signing job (a deposit sweep, its gas top-up, a
hot-to-cold sweep) that sees its transaction final records here what it owes
the books (:func:`record_sweep_booking`, keyed by the ledger reference the
postings will carry, so recording again after a crash changes nothing), and
``serve``'s job ``ledger.book_sweeps`` (:func:`book_sweeps`, the owner's
role) books each row once: the ledger transaction and the row's
``booked_at`` in one database transaction. A sweep signed but not yet booked
(``serve`` stopped, crashed, restarted) is booked at the next run; never
twice (``booked_at``, and the ledger's unique reference behind it).

What ``serve`` accepts: a sweep moves no merchant's money, so every posting
must be on the sweep chain's outside-world accounts (``world:<chain>`` and
its sub-accounts: deposit addresses, hot wallet, cold) or the platform's
network fees. A row naming any other account (written by hand, or by a
signer that was made to) is refused: left unbooked with its reason and
logged at ERROR, never a merchant credited. What the world accounts then say
is proved against the nodes by ``orbchain custody check``.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..infra.wakes import wake_after_commit
from .accounts import NETWORK_FEES, world
from .book import Posting, ReferenceConflict, notify_posted, post

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway
    from ..infra.db import Database

log = logging.getLogger(__name__)

JOB_NAME = "ledger.book_sweeps"
TICK_SECONDS = 10  # a backstop: a recorded sweep wakes the job at once
BATCH = 200


def refusal(chain: str, postings: Sequence[Posting]) -> str | None:
    """Why ``postings`` are no sweep of ``chain`` (an account outside its world and the network fees), or None."""
    outside = world(chain)
    for posting in postings:
        if posting.account != NETWORK_FEES and posting.account != outside \
                and not posting.account.startswith(outside + ":"):
            return f"account {posting.account!r} is neither {outside}[:...] nor {NETWORK_FEES}"
    return None


def _encoded(postings: Sequence[Posting]) -> str:
    return json.dumps([[p.account, p.coin, int(p.amount)] for p in postings])


def _decoded(text: str) -> list[Posting]:
    return [Posting(str(account), str(coin), int(amount)) for account, coin, amount in json.loads(text)]


async def record_sweep_booking(gateway: "Gateway", *, chain: str, kind: str, reference: str,
                               postings: Sequence[Posting]) -> None:
    """Record what a final sweep owes the ledger, for ``serve`` to book once; idempotent by ``reference``.

    ``ValueError`` for postings ``serve`` would refuse (a plugin's mistake, found where it is made).
    """
    refused = refusal(chain, postings)
    if refused:
        raise ValueError(f"sweep booking {reference}: {refused}")
    db = gateway.db
    await db.execute(
        "INSERT INTO sweep_bookings (reference, chain, kind, postings, recorded_at) VALUES (:r, :c, :k, :p, :t)"
        " ON CONFLICT (reference) DO NOTHING",
        {"r": reference, "c": chain, "k": kind, "p": _encoded(postings), "t": gateway.now()})
    wake_after_commit(gateway, JOB_NAME)  # serve books it now, in whichever process leads the job


async def recorded_sweep_postings(db: "Database") -> list[Posting]:
    """The postings of every sweep recorded and neither booked nor refused yet (the custody check counts them)."""
    postings: list[Posting] = []
    for row in await db.fetch_all("SELECT chain, postings FROM sweep_bookings WHERE booked_at IS NULL"
                                  " AND refused IS NULL"):
        try:
            due = _decoded(row["postings"])
        except (ValueError, TypeError):
            continue  # unreadable: refused at its booking, never counted
        if refusal(row["chain"], due) is None:
            postings.extend(due)
    return postings


async def book_sweeps(gateway: "Gateway") -> int:
    """Book every recorded sweep not booked yet, each once; how many were booked now."""
    booked = 0
    while True:
        rows = await gateway.db.fetch_all(
            "SELECT * FROM sweep_bookings WHERE booked_at IS NULL AND refused IS NULL"
            " ORDER BY recorded_at, reference LIMIT :n", {"n": BATCH})
        for row in rows:
            booked += await _book(gateway, row)
        if len(rows) < BATCH:
            return booked


async def _book(gateway: "Gateway", row: Mapping[str, Any]) -> int:
    db, reference = gateway.db, row["reference"]
    try:
        postings = _decoded(row["postings"])
        reason = refusal(row["chain"], postings)
    except (ValueError, TypeError) as exc:
        reason = f"unreadable postings: {exc}"
    if reason:
        return await _refuse(gateway, row, reason)
    try:
        async with db.transaction():
            claimed = await db.fetch_one(
                "UPDATE sweep_bookings SET booked_at = :t WHERE reference = :r AND booked_at IS NULL"
                " AND refused IS NULL RETURNING reference", {"t": gateway.now(), "r": reference})
            if claimed is None:  # another serve booked it meanwhile
                return 0
            transaction = await post(db, kind=row["kind"], reference=reference, postings=postings,
                                     memo=f"sweep on {row['chain']}")
    except ReferenceConflict as exc:
        return await _refuse(gateway, row, str(exc))
    if not transaction.replay:
        await notify_posted(gateway, transaction)
    return 1


async def _refuse(gateway: "Gateway", row: Mapping[str, Any], reason: str) -> int:
    log.error("sweep booking %s on %s refused, not booked: %s", row["reference"], row["chain"], reason)
    await gateway.db.execute("UPDATE sweep_bookings SET refused = :why WHERE reference = :r AND booked_at IS NULL",
                             {"why": reason, "r": row["reference"]})
    return 0


async def book_sweeps_job(gateway: "Gateway") -> None:
    await book_sweeps(gateway)
