"""The payout worker: signs, broadcasts and confirms queued payouts, crash-safe.

Runs as the core job ``payouts.process`` (every ``TICK_SECONDS``, one leader
per job across processes) and as ``orbchain payouts work [--once]``. Each
tick claims due payouts (``payouts.claim_due``: ``FOR UPDATE SKIP LOCKED``
plus a lease) and moves each as far as it can go now:

* queued: waits (``last_error`` "paused: ...") while a custody shortfall
  pauses its coin (``custody.pause_payouts``), and (``last_error`` "waiting:
  hot wallet short: ...", no attempt counted) while the sender says its hot
  wallet cannot pay it yet (``HotWalletShort``); else the signer's policy
  (``signing_gate.authorize``: the ledger's reserve, the operator's caps and
  allow-lists) holds it or lets it on; then ``sign_payout`` once, or, when
  the sender says the fee is above the operator's ceiling
  (``FeeAboveCeiling``), it waits (``last_error`` "waiting: fee ...",
  ``fee_waits.py``) and asks again later; the signed
  bytes are stored (stage signed) before any broadcast, so a crash never
  leads to a second signature.
* signed: ``broadcast`` the stored bytes (after a crash: the same bytes
  again, which the sender contract makes harmless), then stage broadcast.
* broadcast: ``payout_status`` (and ``bump_stuck`` while it waits in the
  mempool, or when the node refuses it back after evicting it) until
  ``payout_confirmations`` deep
  (Confirmed, once ``confirm_gate`` finds the transaction signed for that
  payout; else held), reverted (Failed ``reverted``) or missing from the node for
  longer than the chain's ``drop_after_seconds`` (Failed ``dropped``, but
  only once the sender's ``close_dropped`` says no transaction of it can
  confirm any more: never paid and re-credited both).

On a ``SIGNER_SENDS`` chain (Lightning) with a separate signer, the stages
run here as for any chain, but paying and asking about the payment are the
signer's (``remote_signing.SignerSends``, the sender for such a payout): it
holds the paying credential; this process records the stages and finishes.

Batch payouts (``batches.py``): the items of one batch request, on a chain
declaring ``Capability.BATCH_PAYOUTS``, are claimed and signed together as
one transaction; from then on every step above runs once for the
transaction and its outcome applies to every item, each booking its share
of the fee. With the sender's ``batch_window_seconds`` set, payouts of
separate requests are gathered into such a batch first (``batches.gather``).
Any other payout is a group of one.

Chain calls never run inside a database transaction. A permanent refusal
fails the payout at once (``broadcast_rejected: <reason>``); transient
errors back off and fail as ``broadcast_timeout`` after ``MAX_ATTEMPTS`` or
``BROADCAST_TIMEOUT_SECONDS``, but only once the node says it has never seen
the transaction: money that may be on its way is never re-credited.

Test hook: with ``ORBCHAIN_FAULT=before_sign``, ``after_sign`` or
``after_broadcast`` in the environment the process kills itself (SIGKILL) at
that point (``before_sign``: claimed, nothing signed yet). Unset, it is
a no-op; it exists for ``tests/test_payouts_crash.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal

from . import service as payouts
from . import batches, confirm_gate, remote_signing, signing_gate
from .fee_waits import FEE_RECHECK_SECONDS, waiting_error
from .pauses import pause_reason
from ..types.chains import (BroadcastError, Capability, ChainAdapter, FeeAboveCeiling, HotWalletShort, PayoutOrder,
                          PayoutSender, SignedPayout)
from ..infra.db_faults import unavailable_cause
from ..infra.stopping import undone_if_cancelled
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

JOB_NAME = "payouts.process"
TICK_SECONDS = 2
BATCH_SIZE = 100
# A claim outlives any sane chain call; a crashed worker's payouts return after it.
LEASE_SECONDS = 60
MAX_ATTEMPTS = 10
BROADCAST_TIMEOUT_SECONDS = 1800
MAX_BACKOFF_SECONDS = 300
DEFAULT_POLL_SECONDS = 10
PAUSED_RECHECK_SECONDS = 30  # a payout of a coin paused by a custody shortfall looks again this often
FAULT_ENV = "ORBCHAIN_FAULT"

Row = payouts.Row
Group = list[Row]  # the payouts that move as one: one transaction's items (batches.py), else one payout


def _fault(point: str) -> None:
    """Test hook: die here, uncleanly, when ``ORBCHAIN_FAULT`` names this point."""
    if os.environ.get(FAULT_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)


def backoff_seconds(attempts: int) -> int:
    return min(MAX_BACKOFF_SECONDS, 2 ** max(1, attempts))


async def process_payouts(gateway: "Gateway", *, limit: int = BATCH_SIZE) -> int:
    """One tick: claim due payouts and advance each; returns how many were claimed.

    Cancelled (a stop's deadline), the tick gives back the claims it still
    holds, so the payouts go on at the next tick, here after a restart or in
    another worker, instead of after ``LEASE_SECONDS``.
    """
    claimed = await payouts.claim_due(gateway, limit, LEASE_SECONDS)
    if not claimed:
        return 0
    async with undone_if_cancelled(lambda: payouts.release_claim(gateway, claimed[0]["claim_token"]),
                                   f"the payout tick ({len(claimed)} claimed)"):
        handled: set[str] = set()  # a batch's items move with the first of them claimed
        for row in claimed:
            if gateway.stop.requested.is_set():
                break  # stopping: the payouts not started yet keep for the next tick (claims given back below)
            if row["id"] in handled:
                continue
            try:
                handled.update(await advance(gateway, row))
            except Exception as exc:  # one payout's bug must not stall the others
                # The claim is left to expire, so the payout is retried after LEASE_SECONDS.
                if unavailable_cause(exc) is not None:
                    raise  # the database is away: the next payouts would fail too; the job's run reports it once
                log.exception("payout %s: unexpected error at stage %s", row["id"], row["stage"])
        if gateway.stop.requested.is_set():
            await payouts.release_claim(gateway, claimed[0]["claim_token"])
    return len(claimed)


async def process_job(gateway: "Gateway") -> None:
    await process_payouts(gateway)


async def run_worker(gateway: "Gateway", *, once: bool = False) -> int:
    """The CLI loop: tick every ``TICK_SECONDS`` (or once) until the gateway's stop; returns the exit status."""
    stop = gateway.stop.requested
    while not stop.is_set():
        claimed = await process_payouts(gateway)
        if once:
            print(f"processed {claimed} payout(s)")
            return 0
        try:
            await asyncio.wait_for(stop.wait(), TICK_SECONDS)
        except TimeoutError:
            pass
    return 0


async def create_and_send(gateway: "Gateway", merchant_id: str,
                          request: payouts.PayoutRequest) -> payouts.PayoutOutcome:
    """``payouts.create_payout``, then, on a chain with ``INSTANT_PAYOUTS``, the payout sent before answering."""
    outcome = await payouts.create_payout(gateway, merchant_id, request)
    if request.route.instant and not outcome.replay:
        outcome = payouts.PayoutOutcome(await drive_now(gateway, outcome.row), False, outcome.posted)
    return outcome


async def drive_now(gateway: "Gateway", row: Row) -> Row:
    """Advance one just-reserved payout of an ``INSTANT_PAYOUTS`` chain in the request that made it.

    The payout is claimed like the worker claims it, so a worker tick cannot
    send it at the same time; whatever is still undecided when the sender
    returns (an in-flight Lightning payment) stays Confirming for the worker.
    Returns the row as it stands afterwards.
    """
    claimed = await payouts.claim_one(gateway, row["id"], LEASE_SECONDS)
    if claimed is not None:
        async with undone_if_cancelled(lambda: payouts.release_claim(gateway, claimed["claim_token"]),
                                       f"sending payout {row['id']} at once"):
            try:
                await advance(gateway, claimed)
            except Exception as exc:  # the worker takes it over when the claim expires
                if not gateway.db_outage.absorb(exc, "sending a payout at once"):
                    log.exception("payout %s: unexpected error while sending it at once", row["id"])
    current = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": row["id"]})
    assert current is not None, "payouts are never deleted"
    return current


def _sender(gateway: "Gateway", row: Row) -> tuple[ChainAdapter | None, PayoutSender | None]:
    adapter = gateway.chains.get(row["chain"])
    return adapter, (payouts.sender_of(adapter) if adapter is not None else None)


def _batchable(gateway: "Gateway", adapter: ChainAdapter) -> bool:
    """Sign a batch's items together here: the chain can, and this process signs (a remote signer signs one by one)."""
    return adapter.supports(Capability.BATCH_PAYOUTS) and not gateway.config.signer.url


async def advance(gateway: "Gateway", row: Row) -> list[str]:
    """Move one claimed payout (with the batch items that move with it) as far as it can go now; their ids."""
    adapter, sender = _sender(gateway, row)
    if adapter is None or sender is None:
        log.warning("payout %s: chain %s has no payout sender here; retrying later", row["id"], row["chain"])
        await payouts.record_retry(gateway, row, error=f"chain {row['chain']} is not configured",
                                   next_at=gateway.now() + DEFAULT_POLL_SECONDS)
        return [row["id"]]
    if gateway.config.signer.url and adapter.supports(Capability.SIGNER_SENDS):
        # Sending spends: the signer pays and follows the payment; this worker records and finishes it.
        sender = remote_signing.SignerSends(gateway, row["id"], sender.payout_confirmations)
    batchable = _batchable(gateway, adapter)
    if batchable and sender.batch_window_seconds > 0 and row["stage"] == payouts.QUEUED and not row["batch_id"]:
        gathered = await batches.gather(gateway, row, sender.batch_window_seconds, LEASE_SECONDS)
        if gathered is None:  # its window is open: others may join it
            return [row["id"]]
        row = gathered
    group = await batches.claim_group(gateway, row, LEASE_SECONDS, batchable=batchable)
    if group is None:  # another worker holds an item of the same transaction: it decides for all
        await payouts.record_retry(gateway, row, error="waiting: its batch transaction is in another worker's hands",
                                   next_at=gateway.now() + TICK_SECONDS)
        return [row["id"]]
    ids = [r["id"] for r in group]
    current: Group | None = group  # None once another worker holds the claim
    if row["stage"] == payouts.QUEUED and (pause := await pause_reason(gateway.db, row["coin"])) is not None:
        # Waits, never fails: no attempt is counted, so no timeout; signed payouts go on to the chain.
        await batches.record_retry_group(gateway, group, error=f"paused: {pause}",
                                         next_at=gateway.now() + PAUSED_RECHECK_SECONDS)
        return ids
    if row["stage"] == payouts.QUEUED:
        current = await _sign(gateway, sender, group)
    if current and current[0]["stage"] == payouts.SIGNED:
        current = await _broadcast(gateway, sender, current)
    if current and current[0]["stage"] == payouts.BROADCAST:
        await _poll(gateway, adapter, sender, current)
    return ids


def _signed(row: Row) -> SignedPayout:
    return SignedPayout(row["tx_hash"], row["raw_tx"])


async def _sign(gateway: "Gateway", sender: PayoutSender, group: Group) -> Group | None:
    """Have the group signed, here or by the ``orbchain signer`` the config names; the stored rows or None."""
    row = group[0]
    try:
        if gateway.config.signer.url:
            signed_row = await remote_signing.sign_remotely(gateway, row)  # a group of one (_batchable)
            stored = None if signed_row is None else [signed_row]
        else:
            stored = await sign_group_here(gateway, sender, group)
    except FeeAboveCeiling as exc:  # waits, never fails: no attempt counted (fee_waits.py)
        log.info("payout %s waits: %s", row["id"], exc)
        await batches.record_retry_group(gateway, group, error=waiting_error(str(exc)),
                                         next_at=gateway.now() + FEE_RECHECK_SECONDS)
        return None
    except HotWalletShort as exc:
        # Waits queued, never fails: the books hold the money, the hot wallet will (change, deposits, a top-up).
        await batches.record_retry_group(gateway, group, error=f"waiting: hot wallet short: {exc}",
                                         next_at=gateway.now() + PAUSED_RECHECK_SECONDS)
        return None
    except BroadcastError as exc:
        if exc.permanent:
            await batches.finish_group(gateway, group, status=payouts.FAILED,
                                       failure_reason=exc.reason or f"sign_rejected: {exc}")
        else:
            await _retry_or_time_out(gateway, sender, group, exc)
        return None
    except Exception as exc:  # noqa: BLE001 - a node (or signer) outage: retried with backoff
        await _retry_or_time_out(gateway, sender, group, exc)
        return None
    if stored is not None:
        _fault("after_sign")
    return stored


async def sign_here(gateway: "Gateway", sender: PayoutSender, row: Row) -> Row | None:
    """The signer's step, in the process holding the seed: the policy, then ``sign_payout``, then the stored row.

    The signed bytes are stored (stage signed) before this returns, so a caller
    that never hears the answer (the serve of a remote signer) finds them in the
    row and no payout is ever signed twice. None: held by the policy, or the
    claim was lost. Raises what ``sign_payout`` raises.
    """
    authorized = await signing_gate.authorize(gateway, row)  # the signer's policy: held, or on to sign
    if authorized is None:
        return None
    order = PayoutOrder(payout_id=authorized["id"], coin=authorized["coin"], destination=authorized["destination"],
                        amount=gateway.db.to_int(authorized["amount"]))
    _fault("before_sign")
    signed = await sender.sign_payout(order)
    return await payouts.record_signed(gateway, authorized, signed)


async def sign_group_here(gateway: "Gateway", sender: PayoutSender, group: Group) -> Group | None:
    """``sign_here`` for a batch's items: the policy judges each, the ones it lets on are signed as one transaction.

    A group of one (or one item left) is ``sign_here``'s single payout. None:
    every item was held, or a claim was lost (nothing stored).
    """
    if len(group) == 1:
        stored = await sign_here(gateway, sender, group[0])
        return None if stored is None else [stored]
    authorized = [a for a in [await signing_gate.authorize(gateway, r) for r in group] if a is not None]
    if len(authorized) <= 1:
        return await sign_group_here(gateway, sender, authorized) if authorized else None
    orders = [PayoutOrder(payout_id=a["id"], coin=a["coin"], destination=a["destination"],
                          amount=gateway.db.to_int(a["amount"])) for a in authorized]
    _fault("before_sign")
    signed = await sender.sign_batch(orders)
    return await batches.record_signed_group(gateway, authorized, signed)


async def _broadcast(gateway: "Gateway", sender: PayoutSender, group: Group) -> Group | None:
    row = group[0]
    try:
        await sender.broadcast(_signed(row))
    except BroadcastError as exc:
        if not exc.permanent:
            await _retry_or_time_out(gateway, sender, group, exc)
        elif await _seen(sender, row):  # an earlier attempt did land: the refusal is about a duplicate
            return await batches.record_broadcast_group(gateway, group)
        else:
            await batches.finish_group(gateway, group, status=payouts.FAILED,
                                       failure_reason=exc.reason or f"broadcast_rejected: {exc}")
        return None
    except Exception as exc:  # noqa: BLE001 - a node outage: retried with backoff
        await _retry_or_time_out(gateway, sender, group, exc)
        return None
    _fault("after_broadcast")
    return await batches.record_broadcast_group(gateway, group)


async def _seen(sender: PayoutSender, row: Row) -> bool | None:
    """Does the node know the stored transaction? None when it cannot say."""
    try:
        return (await sender.payout_status(_signed(row))).found
    except Exception:  # noqa: BLE001
        return None


async def _retry_or_time_out(gateway: "Gateway", sender: PayoutSender, group: Group, exc: BaseException) -> None:
    row = group[0]
    now = gateway.now()
    attempts = int(row["attempts"]) + 1
    first = row["first_attempt_at"] or now
    error = f"{type(exc).__name__}: {exc}"
    log.warning("payout %s: %s failed (attempt %d): %s", row["id"], row["stage"], attempts, error)
    if attempts >= MAX_ATTEMPTS or now - first >= BROADCAST_TIMEOUT_SECONDS:
        seen = False if row["stage"] == payouts.QUEUED else await _seen(sender, row)
        if seen is False:
            await batches.finish_group(gateway, group, status=payouts.FAILED, failure_reason=payouts.BROADCAST_TIMEOUT)
            return
        if seen:
            await batches.record_broadcast_group(gateway, group)
            return
        # The node cannot even say whether it has the transaction: keep trying, never re-credit blind.
    await batches.record_retry_group(gateway, group, error=error, attempts=attempts,
                                     next_at=now + backoff_seconds(attempts))


def _poll_seconds(adapter: ChainAdapter) -> int:
    return max(1, int(adapter.scan_seconds))


async def _poll(gateway: "Gateway", adapter: ChainAdapter, sender: PayoutSender, group: Group) -> None:
    row = group[0]
    now = gateway.now()
    try:
        status = await sender.payout_status(_signed(row))
    except Exception as exc:  # noqa: BLE001 - ask again next time
        await batches.record_retry_group(gateway, group, error=f"{type(exc).__name__}: {exc}",
                                         next_at=now + _poll_seconds(adapter))
        return
    if status.failed:
        await batches.finish_group(gateway, group, status=payouts.FAILED,
                             failure_reason=status.failure_reason or payouts.REVERTED,
                             confirmations=status.confirmations, network_fee=status.network_fee,
                             details=status.details, mined=status.mined)
    elif status.found and status.confirmations >= sender.payout_confirmations:
        signed_for = await confirm_gate.vouched(gateway, sender, group, status.mined)  # the rest are held
        if signed_for:
            await batches.finish_group(gateway, signed_for, status=payouts.CONFIRMED,
                                       confirmations=status.confirmations, network_fee=status.network_fee,
                                       details=status.details, mined=status.mined)
    elif status.found:
        waiting = await _bump(gateway, sender, row) if status.confirmations == 0 else None
        await batches.record_progress_group(gateway, group, confirmations=status.confirmations, missing_since=None,
                                            next_at=now + _poll_seconds(adapter), note=waiting)
    else:
        missing_since = row["missing_since"] or now
        if now - missing_since >= int(adapter.drop_after_seconds):
            await _close_dropped(gateway, adapter, sender, group)
            return
        bump_error = None
        try:  # evicted from a mempool: offer the same bytes again
            await sender.broadcast(_signed(row))
        except Exception as exc:  # noqa: BLE001 - best effort; the grace period decides
            log.info("payout %s: re-broadcast of a missing transaction failed: %s", row["id"], exc)
            # Refused: some nodes (anvil among them) evict a transaction a fee spike priced out rather than
            # keep it waiting, and take it back only at a higher fee. The sender may re-sign it (its same nonce).
            bump_error = await _bump(gateway, sender, row)
        await batches.record_progress_group(gateway, group, confirmations=0, missing_since=missing_since,
                                            next_at=now + _poll_seconds(adapter), note=bump_error)


async def _bump(gateway: "Gateway", sender: PayoutSender, row: Row) -> str | None:
    """Still in the mempool: the sender may bump it (CPFP, replacement); a fee wait's reason for ``last_error``.

    A bump above the operator's fee ceiling is a wait, worded as the fee
    policy words a queued payout's ("waiting: fee ... above the ceiling ...").
    """
    try:
        if gateway.config.signer.url:
            return await remote_signing.bump_remotely(gateway, row)
        return await sender.bump_stuck(row["id"], _signed(row))
    except FeeAboveCeiling as exc:
        return waiting_error(str(exc))
    except Exception as exc:  # noqa: BLE001 - best effort; the payout stays as it is
        log.warning("payout %s: bumping failed: %s", row["id"], exc)
    return None


async def _close_dropped(gateway: "Gateway", adapter: ChainAdapter, sender: PayoutSender, group: Group) -> None:
    """Past the drop timeout: re-credit only once the sender says nothing of the payout can confirm any more.

    Until then the payout stays Confirming (the sender's closing transaction
    is on its way, its state in ``last_error``) and the original bytes are no
    longer offered: they would conflict with our closing transaction.
    """
    row = group[0]
    now = gateway.now()
    try:
        signed = SignedPayout(row["tx_hash"], row["raw_tx"], await batches.signed_fee(gateway, row))
        closure = (await remote_signing.close_remotely(gateway, row) if gateway.config.signer.url
                   else await sender.close_dropped(row["id"], signed))
    except Exception as exc:  # noqa: BLE001 - a node outage: ask again next time, never re-credit blind
        await batches.record_retry_group(gateway, group,
                                         error=f"closing the dropped payout: {type(exc).__name__}: {exc}",
                                         next_at=now + _poll_seconds(adapter))
        return
    if closure.closed:
        await batches.finish_group(gateway, group, status=payouts.FAILED, failure_reason=payouts.DROPPED,
                                   confirmations=0, network_fee=closure.network_fee)
        return
    await batches.record_retry_group(gateway, group, error=closure.detail or "closing the dropped payout",
                                     next_at=now + _poll_seconds(adapter))
