"""The deposit engine shared by every chain: what an observed transfer means.

Chain adapters only report transfers and blocks (``core/types/chains.py``); the
scanner feeds them here. A deposit is recorded once per (chain, tx_hash,
output_index) however often it is re-observed, goes PENDING -> CREDITED when
its confirmations reach the merchant's threshold (never below the coin's
floor), and credits the merchant minus the platform fee in the same database
transaction as its status change and its webhook. A deposit whose block
leaves the best chain goes back to PENDING; one that was already credited is
reversed in the ledger and announced with a ``deposit.reversed`` event. An
unconfirmed deposit whose inputs another transaction spent (a payer's
replacement or double-spend) is FAILED within one scan (``conflicts.py``).

Payment rules (docs/decisions.md): a payment is Paid once its credited
deposits add up to at least its pay_amount (static addresses: the first
credited deposit); underpaid payments stay Paying until they expire;
overpayments and late deposits are credited in full; a deposit that arrives
after its payment expired or was cancelled is credited to the merchant with
no payment attached (``track_id`` null in ``/v1/deposits``).

Plugins shape a credit inside its transaction: ``filter_credit_postings`` filters
the ledger postings (splits, auto-settle, brand fees; see
``core/ledger/credit_postings.py`` for what the core still enforces) and
``decide_credit_status`` may hold the deposit CONFIRMED until
:func:`complete_credit`. What a deposit does to its payment lives in
``core/payments/status.py``. Every change to a payment's deposit is announced
after its commit on the change feed (``core/payments/changes.py``).
"""

from __future__ import annotations

import json
import logging
import secrets
from decimal import Decimal
from typing import Any, Mapping

from ..ledger import book as ledger
from ..accounts.merchants import effective_confirmations, effective_fee_percent
from ..events.after_commit import AfterCommit, run_after_commit
from ..types.chains import BlockRef, Transfer
from ..ledger.credit_postings import CreditRefused, credit_status, report_refusal, shaped_postings
from ..addresses.store import recovery_of
from .conflicts import replace_conflicting, spends_column
from .recovery import recovered_memo
from ..types.deposit_status import CONFIRMED, CREDITED, DEPOSIT_STATUSES, FAILED, PENDING, POSTED
from ..events.key_destination import RunDestination
from ..money.amounts import fee_units
from ..payments.changes import announce_now, payment_changed
from ..payments.loaded import load_payment, lock_payment
from ..payments.status import emit_after, expire_payments, payment_event, refresh_payment
from ..types.statuses import EXPIRED, PAYING, WAITING
from ..infra import kept_counts
from ..infra.db_faults import unavailable_cause
from ..types.views import Credit, deposit_view_of
from ..contract.gateway import PluginGateway as Gateway
from ..money.prices import PRICES

log = logging.getLogger(__name__)

__all__ = ["PENDING", "CONFIRMED", "CREDITED", "FAILED", "DEPOSIT_STATUSES", "expire_payments", "observe",
           "observe_final", "deposit_threshold",
           "refresh_confirmations", "complete_credit", "disconnect_block", "mark_missing", "deposit_view",
           "deposit_body", "list_deposits"]

# Credited deposits keep their confirmation count (and reorg protection) this deep.
REORG_WATCH_BLOCKS = 100
# m0056: the list's total by coin and status; its other filters (address, user, since) COUNT(*).
DEPOSITS = kept_counts.KeptList("deposits", ("coin", "status"))


def new_deposit_id() -> str:
    return "dep_" + secrets.token_hex(10)


def deposit_threshold(gateway: "Gateway", merchant: Mapping[str, Any], coin: str) -> int:
    """Confirmations a new deposit of ``coin`` needs: the merchant's or the coin's, never below its floor."""
    floor = gateway.coins.require(coin).confirmations
    configured = effective_confirmations(gateway, merchant).get(coin)
    return max(floor, configured or gateway.coins.require(coin).default_threshold)


async def speed_threshold(gateway: "Gateway", merchant: Mapping[str, Any], transfer: Transfer,
                          payment: Mapping[str, Any] | None) -> int:
    """``deposit_threshold``, or a speed policy's answer (``decide_deposit_confirmations``: scaled by value),
    never below the coin's floor."""
    answer = await gateway.hooks.decide_deposit_confirmations(
        merchant_id=merchant["id"], coin=transfer.coin, amount=transfer.amount, payment=payment)
    if answer is None or isinstance(answer, bool) or not isinstance(answer, int):
        return deposit_threshold(gateway, merchant, transfer.coin)
    return max(gateway.coins.require(transfer.coin).confirmations, answer)


async def _usd_value(gateway: "Gateway", coin: str, units: int) -> str:
    service = gateway.services.get(PRICES)
    if service is None:
        return "0"
    price = await service.price(coin)
    value = (price * units).scaleb(-gateway.coins.require(coin).decimals)
    return format(value.quantize(Decimal("0.01")), "f")


# -- observation --------------------------------------------------------------------------


async def observe(
    gateway: "Gateway", chain: str, transfer: Transfer, owner: Mapping[str, Any], block: BlockRef | None,
    scanned_tip: int | None, block_time: int | None = None, finalized: int | None = None,
) -> None:
    """Record (or refresh) one transfer to one of our addresses.

    ``owner`` is the address-table row; ``block`` is None for a mempool
    transfer; ``block_time`` the block's own time (Unix seconds) when the chain
    says it: lateness is judged by it, not by when the scanner got there.
    ``finalized``: the chain's finalized height (``Capability.FINALITY``), a
    deposit above it is never credited yet. Idempotent: re-observing updates
    block placement only.
    """
    coin = gateway.coins.get(transfer.coin)
    if coin is None or coin.address_family != owner["family"]:
        return  # a coin this address cannot receive (a coin of another address family)
    after: AfterCommit = []
    db = gateway.db
    async with db.transaction():
        existing = await db.fetch_one(
            f"SELECT * FROM deposits WHERE chain = :c AND tx_hash = :h AND output_index = :i{db.for_update}",
            {"c": chain, "h": transfer.tx_hash, "i": transfer.output_index},
        )
        if existing is not None:
            await _replace_block(gateway, existing, block, scanned_tip, after)
        else:
            await _insert(gateway, chain, transfer, owner, block, scanned_tip, after, block_time=block_time,
                          finalized=finalized)
    await run_after_commit(after)


async def observe_final(
    gateway: "Gateway", chain: str, transfer: Transfer, *, merchant_id: str, track_id: str | None,
    extra: Mapping[str, Any] | None = None,
) -> bool:
    """Record and credit at once a transfer that is final when seen and names its payment.

    Why: some receive targets have no address to look up and no blocks to
    confirm (a settled Lightning invoice): the plugin knows the payment
    (``track_id``) and the money cannot be taken back. The deposit is keyed by
    (chain, tx_hash, output_index) like any other, so reporting it twice (a
    replayed stream, a restart) credits once; returns True only the first
    time. The payment rules are the on-chain ones: attributed while the
    payment is Waiting or Paying (Waiting goes straight to Paid when it is
    covered); after it expired or was cancelled the money is a late deposit,
    credited in full with no payment attached. ``extra`` (public fields such as
    the settled invoice) is merged into the payment's receive fields in the
    same transaction, so its ``payment.paid`` webhook carries them.
    """
    if gateway.coins.get(transfer.coin) is None:
        raise ValueError(f"unknown coin {transfer.coin}")
    after: AfterCommit = []
    db = gateway.db
    async with db.transaction():
        await lock_payment(gateway, track_id)
        existing = await db.fetch_val(
            f"SELECT id FROM deposits WHERE chain = :c AND tx_hash = :h AND output_index = :i{db.for_update}",
            {"c": chain, "h": transfer.tx_hash, "i": transfer.output_index})
        if existing is not None:
            return False
        payment = None
        if track_id:
            payment = await db.fetch_one(
                "SELECT * FROM payments WHERE track_id = :t AND merchant_id = :m AND status IN ('Waiting', 'Paying')",
                {"t": track_id, "m": merchant_id})
        if payment is not None and extra:
            merged = {**json.loads(payment["receive_extra"] or "{}"), **extra}
            await db.execute("UPDATE payments SET receive_extra = :x WHERE track_id = :t",
                             {"x": json.dumps(merged, sort_keys=True), "t": track_id})
        owner = {"merchant_id": merchant_id, "user_key": None}
        await _insert(gateway, chain, transfer, owner, None, None, after, payment=payment, final=True)
    await run_after_commit(after)
    return True


async def _insert(gateway: "Gateway", chain: str, transfer: Transfer, owner: Mapping[str, Any],
                  block: BlockRef | None, scanned_tip: int | None, after: AfterCommit, *,
                  payment: Mapping[str, Any] | None = None, final: bool = False, block_time: int | None = None,
                  finalized: int | None = None) -> None:
    """Insert a new deposit; credit it when it is deep enough (or ``final``: settled when seen).

    Without ``final`` the payment is the open one at the transfer's address,
    judged at the block's time when the deposit is first seen mined (a
    scanner that was away must not make an on-time payment late); with it the
    caller found the payment itself (or None: not attributed).
    """
    db = gateway.db
    now = gateway.now()
    merchant = await db.fetch_one("SELECT * FROM merchants WHERE id = :m", {"m": owner["merchant_id"]})
    assert merchant is not None, "an address belongs to a merchant, and merchants are never deleted"
    if not final:
        payment = await _open_payment(gateway, transfer, now if block is None or block_time is None else block_time)
        if payment is None:
            payment = await _plugin_payment(gateway, chain, transfer, merchant["id"])
    late_for = None
    if payment is None and not final:
        late_for = await db.fetch_val(  # the payment this money came too late for: kept, never attached
            "SELECT track_id FROM payments WHERE address = :a AND pay_currency = :c AND merchant_id = :m"
            " AND status IN ('Expired', 'Cancelled') ORDER BY created_at DESC LIMIT 1",
            {"a": transfer.address, "c": transfer.coin, "m": merchant["id"]})
    threshold = await speed_threshold(gateway, merchant, transfer, payment)
    confirmations = threshold if final else _confirmations(block, scanned_tip)
    deposit = {
        "id": new_deposit_id(), "chain": chain, "coin": transfer.coin,
        "network": gateway.coins.require(transfer.coin).chain, "tx_hash": transfer.tx_hash,
        "output_index": transfer.output_index, "address": transfer.address,
        "amount": db.amount_param(transfer.amount),
        "amount_usd": await _usd_value(gateway, transfer.coin, transfer.amount),
        "merchant_id": merchant["id"], "user_id": owner["user_key"] or (payment["user_id"] if payment else None),
        "track_id": payment["track_id"] if payment else None,
        "block_height": block.height if block else None, "block_hash": block.hash if block else None,
        "confirmations": confirmations, "threshold": threshold, "status": PENDING,
        "spends": spends_column(transfer.spends), "created_at": now, "updated_at": now, "late_for": late_for,
    }
    await db.execute(
        f"INSERT INTO deposits ({', '.join(deposit)}) VALUES ({', '.join(':' + k for k in deposit)})", deposit
    )
    if not final:  # after the insert: a payment this replacement pays stays Paying, never steps back
        await replace_conflicting(gateway, chain, transfer, after)
    payment_changed(gateway, deposit["track_id"], after)
    if payment is not None and payment["status"] == EXPIRED:
        # Mined before it expired, scanned after (a node or scanner outage): the payment is open again.
        log.info("payment %s: deposit %s was mined before the expiry; reopened", payment["track_id"], deposit["id"])
        payment = {**payment, "status": WAITING}
    if payment is not None and payment["status"] == WAITING:
        await db.execute("UPDATE payments SET status = :s, updated_at = :now WHERE track_id = :t",
                         {"s": PAYING, "now": now, "t": payment["track_id"]})
        if confirmations < threshold:
            paying = await load_payment(gateway, payment["track_id"])
            await payment_event(gateway, paying, "payment.paying", f"payment.paying:{payment['track_id']}")
            emit_after(gateway, gateway.hooks.payment_detected, paying.row, after)
    if confirmations >= threshold and _is_final(block, finalized):
        row = await db.fetch_one("SELECT * FROM deposits WHERE id = :id", {"id": deposit["id"]})
        assert row is not None, "inserted just above, in this transaction"
        credit_after: AfterCommit = []
        locked = await lock_payment(gateway, deposit["track_id"])  # as it stands after the status moves above
        if final:  # nothing rescans a final deposit: a refused credit rolls it all back for the caller to retry
            await _credit(gateway, row, merchant, locked, credit_after)
        else:
            try:
                async with db.transaction():  # a savepoint: a refused credit keeps the deposit, PENDING
                    await _credit(gateway, row, merchant, locked, credit_after)
            except CreditRefused as refused:  # logged once per plugin and reason; the next scan retries
                report_refusal(gateway, refused, deposit["id"])
                return
            except Exception as exc:  # a plugin's filter failed (or the database left); the next scan retries
                if not gateway.db_outage.absorb(exc, "crediting a deposit"):
                    log.exception("crediting deposit %s failed; it stays PENDING and is retried", deposit["id"])
                return
        after.extend(credit_after)


async def _open_payment(gateway: "Gateway", transfer: Transfer, seen_at: int) -> Mapping[str, Any] | None:
    """The payment at the transfer's address that was open at ``seen_at`` (locked), or None: a late deposit.

    Waiting or Paying and not expired at ``seen_at``; or already Expired by the
    gateway's clock although ``seen_at`` (the block's time) is before its expiry.
    """
    db = gateway.db
    return await db.fetch_one(
        "SELECT * FROM payments WHERE address = :a AND pay_currency = :c AND ("
        " (status IN ('Waiting', 'Paying') AND (expires_at IS NULL OR expires_at > :seen OR status = 'Paying'))"
        " OR (status = 'Expired' AND expires_at > :seen))"
        f" ORDER BY created_at DESC LIMIT 1{db.for_update}",
        {"a": transfer.address, "c": transfer.coin, "seen": seen_at})


async def _plugin_payment(gateway: "Gateway", chain: str, transfer: Transfer,
                          merchant_id: str) -> Mapping[str, Any] | None:
    """The open payment a plugin attaches this deposit to (``decide_deposit_payment``: a venue's payout), locked."""
    track_id = await gateway.hooks.decide_deposit_payment(chain=chain, coin=transfer.coin, address=transfer.address,
                                                          merchant_id=merchant_id)
    if not isinstance(track_id, str) or not track_id:
        return None
    return await gateway.db.fetch_one(
        "SELECT * FROM payments WHERE track_id = :t AND merchant_id = :m AND status IN ('Waiting', 'Paying')"
        f"{gateway.db.for_update}", {"t": track_id, "m": merchant_id})


def _is_final(block: BlockRef | None, finalized: int | None) -> bool:
    """Not above the chain's finalized height (no height known: the confirmation count alone decides)."""
    return finalized is None or block is None or block.height <= finalized


def _confirmations(block: BlockRef | None, scanned_tip: int | None) -> int:
    if block is None or scanned_tip is None or scanned_tip < block.height:
        return 0
    return scanned_tip - block.height + 1


async def _replace_block(gateway: "Gateway", deposit: Mapping[str, Any], block: BlockRef | None,
                         scanned_tip: int | None, after: AfterCommit) -> None:
    """A known transfer seen again: in a (new) block, or back in the mempool."""
    if block is None:
        if deposit["block_height"] is None and deposit["missing_since"] is not None:
            await gateway.db.execute("UPDATE deposits SET missing_since = NULL WHERE id = :id", {"id": deposit["id"]})
        return
    if deposit["block_hash"] == block.hash:
        return
    status = PENDING if deposit["status"] == FAILED else deposit["status"]
    await gateway.db.execute(
        "UPDATE deposits SET block_height = :h, block_hash = :b, missing_since = NULL, status = :s,"
        " failure_reason = NULL, confirmations = :conf, updated_at = :now WHERE id = :id",
        {"h": block.height, "b": block.hash, "s": status, "conf": _confirmations(block, scanned_tip),
         "now": gateway.now(), "id": deposit["id"]},
    )
    payment_changed(gateway, deposit["track_id"], after)
    if deposit["status"] == FAILED and deposit["track_id"]:
        await refresh_payment(gateway, deposit["track_id"], after)


# -- confirmations and crediting ---------------------------------------------------------------


async def refresh_confirmations(gateway: "Gateway", chain: str, scanned_tip: int, *,
                                finalized: int | None = None) -> int:
    """Recompute confirmations from the scanned tip; credit what reached its threshold (and, on a chain with
    finality, is not above the ``finalized`` height).

    Returns how many deposits were credited.
    """
    db = gateway.db
    rows = await db.fetch_all(
        "SELECT id, track_id, block_height, confirmations, threshold, status FROM deposits WHERE chain = :c"
        " AND block_height IS NOT NULL AND (status = :pending OR (status IN (:credited, :confirmed)"
        " AND block_height > :deep))",
        {"c": chain, "pending": PENDING, "credited": CREDITED, "confirmed": CONFIRMED,
         "deep": scanned_tip - REORG_WATCH_BLOCKS},
    )
    credited = 0
    changed: set[str | None] = set()
    for row in rows:
        confirmations = max(0, scanned_tip - int(row["block_height"]) + 1)
        final = finalized is None or int(row["block_height"]) <= finalized
        if row["status"] == PENDING and confirmations >= row["threshold"] and final:
            credited += await _credit_by_id(gateway, row["id"], confirmations)
        elif confirmations != row["confirmations"]:
            await db.execute("UPDATE deposits SET confirmations = :n WHERE id = :id",
                             {"n": confirmations, "id": row["id"]})
            changed.add(row["track_id"])
    for track_id in changed:  # committed: each statement above ran on its own
        announce_now(gateway, track_id)
    return credited


async def _credit_by_id(gateway: "Gateway", deposit_id: str, confirmations: int) -> int:
    try:
        return await _credit_in_transaction(gateway, deposit_id, confirmations)
    except CreditRefused as refused:  # a plugin's lines broke a rule: logged once per plugin and reason
        report_refusal(gateway, refused, deposit_id)
        return 0
    except Exception as exc:  # a plugin's filter failed: rolled back, retried at the next scan
        if unavailable_cause(exc) is not None:
            raise  # the database is away: every next deposit would fail too; the scan's run reports it once
        log.exception("crediting deposit %s failed; it stays PENDING and is retried", deposit_id)
        return 0


async def _credit_in_transaction(gateway: "Gateway", deposit_id: str, confirmations: int) -> int:
    after: AfterCommit = []
    db = gateway.db
    async with db.transaction():
        deposit = await db.fetch_one(f"SELECT * FROM deposits WHERE id = :id{db.for_update}", {"id": deposit_id})
        if deposit is None or deposit["status"] != PENDING or deposit["block_height"] is None:
            return 0
        await db.execute("UPDATE deposits SET confirmations = :n WHERE id = :id",
                         {"n": confirmations, "id": deposit_id})
        payment = await lock_payment(gateway, deposit["track_id"])  # the run's one read of its payment row
        merchant = await db.fetch_one("SELECT * FROM merchants WHERE id = :m", {"m": deposit["merchant_id"]})
        assert merchant is not None, "a deposit's merchant is never deleted"
        deposit = {**deposit, "confirmations": confirmations}
        await _credit(gateway, deposit, merchant, payment, after)
    await run_after_commit(after)
    return 1


async def _credit(gateway: "Gateway", deposit: Mapping[str, Any], merchant: Mapping[str, Any],
                  payment: Mapping[str, Any] | None, after: AfterCommit) -> None:
    """Credit one deposit (inside the caller's transaction): ledger, status, webhook.

    ``payment`` is the deposit's payment row as the caller locked it (``lock_payment``; None: no payment),
    passed on to the webhooks and the status recompute instead of read again.
    Plugins' ``filter_credit_postings`` shape the postings and ``decide_credit_status``
    may hold the deposit CONFIRMED (awaiting a conversion) instead of CREDITED.
    """
    db = gateway.db
    amount = db.to_int(deposit["amount"])
    fee = fee_units(amount, effective_fee_percent(gateway, merchant))
    generation = int(deposit["credit_count"]) + 1
    reference = f"deposit:{deposit['id']}:credit:{generation}"
    credit = Credit(
        deposit=deposit_view_of(gateway, {**deposit, "fee": fee}), merchant_id=merchant["id"],
        track_id=deposit["track_id"], chain=deposit["chain"], coin=deposit["coin"], amount=amount, fee=fee,
        reference=reference,
    )
    postings = await shaped_postings(gateway, credit)
    txn = await ledger.post(db, kind="deposit", reference=reference, postings=postings, merchant_id=merchant["id"],
                            memo=await recovered_memo(gateway, deposit))
    fee = sum(p.amount for p in postings if p.account == ledger.PLATFORM_FEES)
    held = await credit_status(gateway, credit) == CONFIRMED
    status = CONFIRMED if held else CREDITED
    now = gateway.now()
    await db.execute(
        "UPDATE deposits SET status = :s, credited = :t, credit_count = :g, fee = :fee, credited_at = :now,"
        " updated_at = :now WHERE id = :id",
        {"s": status, "t": not held, "g": generation, "fee": db.amount_param(fee), "now": now, "id": deposit["id"]},
    )
    after.append(lambda: ledger.notify_posted(gateway, txn))
    credited = {**deposit, "status": status, "credited": not held, "credit_count": generation, "fee": fee,
                "credited_at": now}
    destination = RunDestination(gateway, payment, merchant)  # looked up at the first webhook, once
    if not held:
        await _announce_credit(gateway, credited, payment, destination, after)
    payment_changed(gateway, deposit["track_id"], after)
    if payment is not None:
        await refresh_payment(gateway, payment["track_id"], after, locked=payment, destination=destination)


async def _enqueue_deposit_event(gateway: "Gateway", event_type: str, deposit: Mapping[str, Any],
                                 generation: Any, payment: Mapping[str, Any] | None,
                                 destination: RunDestination) -> None:
    """A deposit webhook, once per (deposit, credit generation), to its payment's destination (``payment``: its
    row in this transaction; None: the account's), looked up once for the transaction (``destination``)."""
    await destination.enqueue(
        merchant_id=deposit["merchant_id"], event_type=event_type,
        body=await deposit_body(gateway, deposit, payment), logical_key=f"{event_type}:{deposit['id']}:{generation}",
    )


async def _announce_credit(gateway: "Gateway", credited: Mapping[str, Any], payment: Mapping[str, Any] | None,
                           destination: RunDestination, after: AfterCommit) -> None:
    """The deposit.credited webhook (in the transaction) and hook (after it)."""
    await _enqueue_deposit_event(gateway, "deposit.credited", credited, credited["credit_count"], payment,
                                 destination)
    view = deposit_view_of(gateway, credited)
    after.append(lambda: gateway.hooks.deposit_credited(deposit=view))


async def complete_credit(gateway: "Gateway", deposit_id: str) -> bool:
    """A CONFIRMED deposit (held by ``decide_credit_status``) becomes CREDITED.

    The plugin that held it calls this once the conversion landed (it posts
    its own ledger movements first). Sends ``deposit.credited``, lets the
    payment become Paid and fires the hooks after the commit. Idempotent:
    returns False, changing nothing, when the deposit is not CONFIRMED.
    """
    after: AfterCommit = []
    db = gateway.db
    async with db.transaction():
        deposit = await db.fetch_one(f"SELECT * FROM deposits WHERE id = :id{db.for_update}", {"id": deposit_id})
        if deposit is None or deposit["status"] != CONFIRMED:
            return False
        payment = await lock_payment(gateway, deposit["track_id"])
        now = gateway.now()
        await db.execute("UPDATE deposits SET status = :s, credited = :t, updated_at = :now WHERE id = :id",
                         {"s": CREDITED, "t": True, "now": now, "id": deposit_id})
        destination = RunDestination(gateway, payment)
        await _announce_credit(gateway, {**deposit, "status": CREDITED, "credited": True, "updated_at": now},
                               payment, destination, after)
        payment_changed(gateway, deposit["track_id"], after)
        if payment is not None:
            await refresh_payment(gateway, payment["track_id"], after, locked=payment, destination=destination)
    await run_after_commit(after)
    return True


async def deposit_body(gateway: "Gateway", deposit: Mapping[str, Any],
                       payment: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Body of deposit.* webhooks: the /v1/deposits row plus the merchant's net and fee.

    ``payment``: the deposit's payment row when the caller holds it (else its order id is read here).
    """
    if "order_id" not in deposit and deposit.get("track_id"):
        # The deposit row has no order_id: take the payment's, as GET /v1/deposits does (its join).
        order_id = payment["order_id"] if payment is not None else await gateway.db.fetch_val(
            "SELECT order_id FROM payments WHERE track_id = :t", {"t": deposit["track_id"]})
        deposit = {**deposit, "order_id": order_id}
    view = deposit_view(gateway, deposit)
    coin = gateway.coins.require(deposit["coin"])
    fee = deposit.get("fee")
    if fee is not None:
        fee_int = fee if isinstance(fee, int) else gateway.db.to_int(fee)
        view["fee"] = coin.format(fee_int)
        view["net_amount"] = coin.format(gateway.db.to_int(deposit["amount"]) - fee_int)
    view["type"] = "deposit"
    if not deposit.get("track_id") and (label := await recovery_of(gateway, deposit["address"])):
        view["recovered_from"] = label  # its invoice was lost in a restore: the merchant matches it by hand
    return view


# -- reorganisations and vanished transactions ---------------------------------------------------


async def disconnect_block(gateway: "Gateway", chain: str, block_hash: str) -> int:
    """A block left the best chain: its deposits go back to the mempool state.

    Credited ones are reversed in the ledger (the money is gone whatever we
    say, so the reversal may take a balance negative) with an event.
    Returns how many deposits were affected.
    """
    db = gateway.db
    ids = [r["id"] for r in await db.fetch_all(
        "SELECT id FROM deposits WHERE chain = :c AND block_hash = :b", {"c": chain, "b": block_hash})]
    for deposit_id in ids:
        after: AfterCommit = []
        async with db.transaction():
            deposit = await db.fetch_one(f"SELECT * FROM deposits WHERE id = :id{db.for_update}", {"id": deposit_id})
            if deposit is None or deposit["block_hash"] != block_hash:
                continue
            payment = await lock_payment(gateway, deposit["track_id"])
            destination = RunDestination(gateway, payment)  # deposit.reversed and payment.reverted: one look-up
            if deposit["status"] in POSTED:
                await _reverse(gateway, deposit, payment, destination, after)
            await db.execute(
                "UPDATE deposits SET block_height = NULL, block_hash = NULL, confirmations = 0, status = :s,"
                " credited = :f, updated_at = :now WHERE id = :id",
                {"s": PENDING, "f": False, "now": gateway.now(), "id": deposit_id},
            )
            payment_changed(gateway, deposit["track_id"], after)
            if payment is not None:
                await refresh_payment(gateway, payment["track_id"], after, locked=payment, destination=destination)
        await run_after_commit(after)
    return len(ids)


async def _reverse(gateway: "Gateway", deposit: Mapping[str, Any], payment: Mapping[str, Any] | None,
                   destination: RunDestination, after: AfterCommit) -> None:
    generation = int(deposit["credit_count"])
    txn = await ledger.reverse(
        gateway.db, original_reference=f"deposit:{deposit['id']}:credit:{generation}",
        reference=f"deposit:{deposit['id']}:reversal:{generation}", allow_negative=True,
    )
    log.warning("deposit %s (%s %s) left the best chain after crediting: reversed", deposit["id"],
                deposit["chain"], deposit["tx_hash"])
    reversed_row = {**deposit, "status": PENDING, "credited": False, "confirmations": 0}
    await _enqueue_deposit_event(gateway, "deposit.reversed", reversed_row, generation, payment, destination)
    view = deposit_view_of(gateway, reversed_row)
    after.append(lambda: ledger.notify_posted(gateway, txn))
    after.append(lambda: gateway.hooks.deposit_reversed(deposit=view))


async def mark_missing(gateway: "Gateway", chain: str, mempool_hashes: set[str], drop_after_seconds: int) -> int:
    """Unconfirmed deposits gone from chain and mempool: FAILED after a grace period."""
    db = gateway.db
    now = gateway.now()
    failed = 0
    rows = await db.fetch_all(
        "SELECT id, tx_hash, missing_since, track_id FROM deposits WHERE chain = :c AND status = :p"
        " AND block_height IS NULL", {"c": chain, "p": PENDING})
    for row in rows:
        if row["tx_hash"] in mempool_hashes:
            if row["missing_since"] is not None:
                await db.execute("UPDATE deposits SET missing_since = NULL WHERE id = :id", {"id": row["id"]})
            continue
        if row["missing_since"] is None:
            await db.execute("UPDATE deposits SET missing_since = :now WHERE id = :id", {"now": now, "id": row["id"]})
            if drop_after_seconds > 0:
                continue
        elif now - int(row["missing_since"]) < drop_after_seconds:
            continue
        after: AfterCommit = []
        async with db.transaction():
            await db.execute("UPDATE deposits SET status = :s, updated_at = :now WHERE id = :id AND status = :p"
                             " AND block_height IS NULL", {"s": FAILED, "now": now, "id": row["id"], "p": PENDING})
            payment_changed(gateway, row["track_id"], after)
            if row["track_id"]:
                await refresh_payment(gateway, row["track_id"], after)
        await run_after_commit(after)
        failed += 1
    return failed


# -- reads ---------------------------------------------------------------------------------------


def deposit_view(gateway: "Gateway", deposit: Mapping[str, Any]) -> dict[str, Any]:
    """SPEC 2.4: a row of ``GET /v1/deposits`` (status in mixed case)."""
    coin = gateway.coins.require(deposit["coin"])
    return {
        "tx_hash": deposit["tx_hash"],
        "coin": deposit["coin"],
        "network": deposit["network"],
        "amount": coin.format(gateway.db.to_int(deposit["amount"])),
        "amount_usd": deposit["amount_usd"] or "0",
        "confirmations": int(deposit["confirmations"]),
        "status": deposit["status"].capitalize(),
        "credited": bool(deposit["credited"]),
        "address": deposit["address"],
        "user_id": deposit["user_id"],
        "track_id": deposit["track_id"],
        "order_id": deposit.get("order_id"),
        "created_at": deposit["created_at"],
    }


async def list_deposits(
    gateway: "Gateway", merchant_id: str, *, coin: str | None = None, status: str | None = None,
    address: str | None = None, user_id: str | None = None, since: int | None = None, limit: int = 50,
    offset: int = 0, sort_order: str = "desc",
) -> dict[str, Any]:
    clauses = ["d.merchant_id = :m"]
    values: dict[str, str | int] = {"m": merchant_id}
    for column, value in (("coin", coin), ("status", status), ("address", address), ("user_id", user_id)):
        if value is not None:
            clauses.append(f"d.{column} = :{column}")
            values[column] = value
    if since is not None:
        clauses.append("d.created_at >= :since")
        values["since"] = since
    where = " AND ".join(clauses)
    direction = "ASC" if sort_order == "asc" else "DESC"
    if address is None and user_id is None and since is None:
        total = await DEPOSITS.total(gateway.db, merchant_id, coin=coin, status=status)
    else:  # not counted by the database: COUNT(*) through the address, user or date index
        total = await gateway.db.fetch_val(f"SELECT COUNT(*) FROM deposits d WHERE {where}", values)
    # The page first, then its payments' order ids: joined before the LIMIT, a deep page made PostgreSQL
    # hash-join the whole payments table (tests/test_query_plans.py).
    # The offset is walked over deposits_merchant_list's columns alone (index-only unless a filter needs the
    # row), the page's rows read by id (docs/decisions.md, "deep offsets").
    rows = await gateway.db.fetch_all(
        f"SELECT d.*, p.order_id AS order_id FROM (SELECT d.id, d.created_at FROM deposits d WHERE {where}"
        f" ORDER BY d.created_at {direction}, d.id {direction} LIMIT :limit OFFSET :offset) page"
        f" JOIN deposits d ON d.id = page.id LEFT JOIN payments p ON p.track_id = d.track_id"
        f" ORDER BY page.created_at {direction}, page.id {direction}",
        {**values, "limit": limit, "offset": offset},
    )
    return {"deposits": [deposit_view(gateway, r) for r in rows], "total": int(total), "limit": limit, "offset": offset}
