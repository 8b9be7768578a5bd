"""Batch payouts in one transaction: the items of a batch request move through the worker together.

A batch request (``POST /v1/payout/batch``) gives its payouts one
``batch_id``. On a chain that declares ``Capability.BATCH_PAYOUTS`` the worker
claims the queued items of a batch together (:func:`claim_group`), the
signer's policy judges each item on its own, and the ones it lets on are
signed as ONE transaction (``PayoutSender.sign_batch``) and stored for every
item in one database transaction (:func:`record_signed_group`): all or none,
so no item is ever signed twice. From then on the items share ``tx_hash`` and
the worker drives them as one unit: one broadcast, one status, one bump, one
closing of a dropped transaction; every final move applies to every item
(:func:`finish_group`), so a batch is never half paid and half re-credited.

Payouts of separate requests (``gather``): on a chain whose sender sets
``batch_window_seconds`` (the operator's setting, off by default), a payout
waits queued that long after its request, then takes every queued payout of
its chain and coin that has no batch yet (up to ``MAX_GATHERED``) into a
batch of its own making: one UPDATE gives them one ``batch_id`` and this
worker's claim, so from there on they are a batch like a batch request's
(crash-safe the same way: a crash after the UPDATE leaves a queued batch
whose first item claimed gathers the rest; none is signed twice).

The fee is the transaction's; each item books its share (:func:`fee_shares`:
equal shares, since every item adds one output of the same size, the
remainder one unit each to the first items in output order), so the shares
sum exactly to the fee paid, also when a bump or a closing transaction changed
it. Items held by the policy, or claimed by another worker at signing time,
go in a transaction of their own later: correct, only less cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from . import service as payouts
from .service import CONFIRMING, QUEUED, Row
from .fee_waits import WAITING
from ..types.chains import SignedPayout

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway


BATCHING = f"{WAITING}for other payouts to share one transaction: "  # last_error while a payout's window is open


def fee_shares(total: int, count: int) -> list[int]:
    """``total`` split in ``count`` integer shares summing to it exactly; the first ``total % count`` get one more."""
    if count <= 0:
        raise ValueError("a fee is shared by at least one payout")
    base, remainder = divmod(int(total), count)
    return [base + (1 if index < remainder else 0) for index in range(count)]


def _order(rows: Sequence[Row]) -> list[Row]:
    """Output order, and the order of the fee shares: creation, then id."""
    return sorted(rows, key=lambda r: (int(r["created_at"]), r["id"]))


async def claim_group(gateway: "Gateway", row: Row, lease_seconds: int, *, batchable: bool) -> list[Row] | None:
    """``row`` and the siblings that move with it, all claimed with its token; None: wait for another worker.

    Queued (``batchable``: the chain signs batches here): every queued item of
    the batch nobody else holds; signed or broadcast: every Confirming item of
    the same transaction at the same stage. None when another worker holds an
    item of the same transaction (the caller retries shortly): one unit,
    one decision.
    """
    if not row["batch_id"] or (row["stage"] == QUEUED and not batchable):
        return [row]
    db = gateway.db
    now = gateway.now()
    values: dict[str, Any] = {"until": now + lease_seconds, "tok": row["claim_token"], "b": row["batch_id"],
                              "s": CONFIRMING, "stage": row["stage"], "now": now}
    if row["stage"] == QUEUED:
        same_tx = "tx_hash IS NULL"
    else:
        same_tx, values["tx"] = "tx_hash = :tx", row["tx_hash"]
        values["chain"] = row["chain"]
        elsewhere = await db.fetch_val(
            "SELECT COUNT(*) FROM payouts WHERE chain = :chain AND tx_hash = :tx AND status = :s"
            " AND claim_token <> :tok AND claimed_until > :now",
            {k: values[k] for k in ("chain", "tx", "s", "tok", "now")})
        if int(elsewhere):
            return None
    async with db.transaction():
        claimed = await db.fetch_all(
            f"UPDATE payouts SET claimed_until = :until, claim_token = :tok WHERE batch_id = :b AND status = :s"
            f" AND stage = :stage AND {same_tx}"
            " AND (claimed_until IS NULL OR claimed_until <= :now OR claim_token = :tok) RETURNING *", values)
    group = _order(claimed)
    return group if any(r["id"] == row["id"] for r in group) else [row]


MAX_GATHERED = 100  # payouts gathered into one transaction at most (the batch request's own limit)


async def gather(gateway: "Gateway", row: Row, window_seconds: int, lease_seconds: int) -> Row | None:
    """The claimed queued ``row`` of no batch, in a batch with the payouts of its coin queued meanwhile; None: wait.

    None while ``row``'s window is open (it is given back until the window
    closes, so others can join it). Then every queued payout of the same chain
    and coin without a batch and not claimed by another worker, oldest first,
    gets one new ``batch_id`` and ``row``'s claim in one UPDATE; ``row`` as
    updated (alone, it stays a payout of its own).
    """
    db = gateway.db
    now = gateway.now()
    closes = int(row["created_at"]) + window_seconds
    if now < closes:
        await payouts.record_retry(gateway, row, error=f"{BATCHING}{row['coin']} until {closes}", next_at=closes)
        return None
    free = "(claimed_until IS NULL OR claimed_until <= :now OR claim_token = :tok)"
    values = {"b": payouts.new_batch_id(), "until": now + lease_seconds, "tok": row["claim_token"], "now": now,
              "chain": row["chain"], "coin": row["coin"], "s": CONFIRMING, "queued": QUEUED, "n": MAX_GATHERED}
    async with db.transaction():
        gathered = await db.fetch_all(
            "UPDATE payouts SET batch_id = :b, claimed_until = :until, claim_token = :tok"
            " WHERE id IN (SELECT id FROM payouts WHERE chain = :chain AND coin = :coin AND status = :s"
            f" AND stage = :queued AND batch_id IS NULL AND tx_hash IS NULL AND {free}"
            " ORDER BY created_at, id LIMIT :n)"
            f" AND status = :s AND stage = :queued AND batch_id IS NULL AND {free} RETURNING *", values)
    return next((r for r in gathered if r["id"] == row["id"]), row)


class _ClaimLost(RuntimeError):
    """An item of the group is no longer this worker's: nothing of the signature is stored."""


async def record_signed_group(gateway: "Gateway", rows: Sequence[Row], signed: SignedPayout) -> list[Row] | None:
    """Store one signed transaction for every item (stage signed), each with its fee share; all or none.

    None (nothing stored, nothing will be broadcast) when any item's claim was
    lost: another worker may be signing it.
    """
    ordered = _order(rows)
    shares = fee_shares(int(signed.network_fee or 0), len(ordered))
    stored: list[Row] = []
    try:
        async with gateway.db.transaction():
            for row, share in zip(ordered, shares):
                item = await payouts.record_signed(
                    gateway, row, SignedPayout(signed.tx_hash, signed.raw, share, signed.details))
                if item is None:
                    raise _ClaimLost(row["id"])
                stored.append(item)
    except _ClaimLost:
        return None
    return stored


async def _shares_of(gateway: "Gateway", lead: Row, network_fee: int | None) -> dict[str, int]:
    """Each item's share of the transaction's fee: ``network_fee`` (the chain's figure), else the signed one."""
    db = gateway.db
    members = _order(await db.fetch_all(
        "SELECT id, created_at, network_fee FROM payouts WHERE chain = :c AND tx_hash = :h",
        {"c": lead["chain"], "h": lead["tx_hash"]}))
    total = network_fee if network_fee is not None else sum(db.to_int(m["network_fee"] or 0) for m in members)
    return {m["id"]: share for m, share in zip(members, fee_shares(total, len(members)))}


async def signed_fee(gateway: "Gateway", row: Row) -> int:
    """The fee the payout's signed transaction pays: the sum of its items' shares (the row's own, alone)."""
    db = gateway.db
    if not row["batch_id"]:
        return db.to_int(row["network_fee"] or 0)
    members = await db.fetch_all("SELECT network_fee FROM payouts WHERE chain = :c AND tx_hash = :h",
                                 {"c": row["chain"], "h": row["tx_hash"]})
    return sum(db.to_int(m["network_fee"] or 0) for m in members)


async def finish_group(gateway: "Gateway", rows: Sequence[Row], *, status: str, failure_reason: str | None = None,
                       confirmations: int | None = None, network_fee: int | None = None,
                       details: Any = None, mined: SignedPayout | None = None) -> None:
    """``payouts.finish`` for every item of one transaction, each booking its share of ``network_fee``.

    ``mined``: the replacement that was mined, when not the stored version (every item then shows it).
    """
    lead = rows[0]
    if len(rows) == 1 and not lead["batch_id"]:
        await payouts.finish(gateway, lead, status=status, failure_reason=failure_reason,
                             confirmations=confirmations, network_fee=network_fee, details=details, mined=mined)
        return
    shares = await _shares_of(gateway, lead, network_fee) if lead["tx_hash"] else {}
    for row in rows:
        await payouts.finish(gateway, row, status=status, failure_reason=failure_reason,
                             confirmations=confirmations, network_fee=shares.get(row["id"], 0), details=details,
                             mined=mined)


async def record_retry_group(gateway: "Gateway", rows: Sequence[Row], *, error: str, next_at: int,
                             attempts: int | None = None) -> None:
    for row in rows:
        await payouts.record_retry(gateway, row, error=error, next_at=next_at, attempts=attempts)


async def record_broadcast_group(gateway: "Gateway", rows: Sequence[Row]) -> list[Row] | None:
    stored = [r for r in [await payouts.record_broadcast(gateway, row) for row in rows] if r is not None]
    return stored or None


async def record_progress_group(gateway: "Gateway", rows: Sequence[Row], *, confirmations: int,
                                missing_since: int | None, next_at: int, note: str | None = None) -> None:
    for row in rows:
        await payouts.record_progress(gateway, row, confirmations=confirmations, missing_since=missing_since,
                                      next_at=next_at, note=note)

