"""Payouts: validation, idempotent creation, the backlog breaker and the state machine.

SPEC 2.5, 3.3 and 4.3. A payout exists exactly when its money is reserved:
the request debits the merchant (available -> payouts in flight) and inserts
the row (stage ``queued``, status Confirming) in one transaction. The worker
(``core/payouts/worker.py``) then moves the row through its stages::

    queued -> signed -> broadcast -> confirmed   (in flight -> world)
          \\-> failed  (any stage)               (in flight -> merchant available)

Every move is a conditional update made by the worker holding the row's
claim (``claim_token``), and each final move settles the ledger, writes the
row and enqueues the webhook in one transaction, so nothing is settled twice
and no webhook announces a state that rolled back. Decisions (per-merchant
breaker, idempotency namespaces) are in ``docs/payouts.md``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Mapping

from ..ledger import book as ledger
from .binding import binding_key, payout_binding
from . import reserve_release
from .fee_waits import fee_wait_reason
from ..types.chains import Capability, ChainAdapter, PayoutOrder, PayoutSender, SignedPayout
from ..types.errors import (ApiError, Conflict, Forbidden, InvalidRequest, NotConfigured, NotFound, ServiceUnavailable,
                     ValidationError)
from ..events.outbox import enqueue_event
from ..types.views import PayoutView, payout_view_of
from ..keys import AddressError, AddressFamily
from ..ledger.accounts import NETWORK_FEES, merchant_available, payouts_in_flight, world
from ..money.amounts import AmountError
from ..money.coins import chain_for
from ..types.records import merchant_coins
from ..types.ids import new_track_id

from ..contract.gateway import PluginGateway as Gateway
from ..infra.kept_counts import KeptList

if TYPE_CHECKING:  # pragma: no cover
    from ..money.coins import Coin
    from ..infra.db import Database

CONFIRMING, CONFIRMED, FAILED = "Confirming", "Confirmed", "Failed"
QUEUED, SIGNED, BROADCAST = "queued", "signed", "broadcast"
# A payout a plugin holds for approval (``decide_payout_hold``): reserved, Confirming, never claimed by the worker.
HELD = "held"
# A payout the signer's policy refused (core/payouts/signing_gate.py): reserved, Confirming, never claimed, the reason
# in ``policy_hold``; the operator releases or cancels it (core/payouts/policy_holds.py).
POLICY_HELD = "policy_held"
# failure_reason values of the worker (plus "broadcast_rejected: <why>", "sign_rejected: <why>").
BROADCAST_TIMEOUT, DROPPED, REVERTED = "broadcast_timeout", "dropped", "reverted"
# SPEC 8: 500 or more payouts not yet final -> 503. Counted per merchant (docs/payouts.md).
BACKLOG_LIMIT = 500
PAYOUTS = KeptList("payouts")  # m0059: the dashboard list's total per merchant, kept by the database
# Idempotency namespaces: the same text used as an idempotency_key and as a
# batch or refund external_id names three different payouts.
KEY_NS, BATCH_NS, REFUND_NS = "key", "batch", "refund"

Row = Mapping[str, Any]


# -- which chain sends a coin -------------------------------------------------------------


@dataclass(frozen=True)
class PayoutRoute:
    """The coin, the chain adapter that serves it and the adapter's payout role."""

    coin: "Coin"
    chain: str
    network: str
    sender: PayoutSender
    family: AddressFamily  # validates destinations of ``coin`` on ``network``
    instant: bool = False  # the adapter declared INSTANT_PAYOUTS: the request drives the payout to its end


def sender_of(adapter: ChainAdapter) -> PayoutSender | None:
    """The adapter's payout role when it declared ``Capability.PAYOUTS``, else None."""
    return adapter.payout_role() if adapter.supports(Capability.PAYOUTS) else None


def payout_route(gateway: "Gateway", symbol: str) -> PayoutRoute:
    """Where payouts of ``symbol`` go; 503 "not configured" when no chain here can send it.

    The chain is the one deposits of the coin arrive on (``chain_for``: a
    real chain before a simulated one), so money leaves the way it came in.
    """
    coin = gateway.coins.get(symbol)
    if coin is None:
        raise ValidationError({"currency": f"unknown coin {symbol}"}, code="coin_not_supported")
    if not coin.payable:  # source-only coins are never paid out (SPEC 2.7): no deployment could
        raise InvalidRequest(f"{symbol} cannot be paid out", code="coin_not_supported")
    try:
        adapter = chain_for(gateway, symbol)
    except NotConfigured:
        adapter = None
    sender = sender_of(adapter) if adapter is not None else None
    if sender is None or adapter is None:
        raise NotConfigured("not configured", code="payouts_not_configured",
                            detail={"currency": f"{symbol} payouts are not configured on this deployment"})
    family = gateway.address_families.require(coin.address_family, adapter.network)
    return PayoutRoute(coin, adapter.name, adapter.network, sender, family,
                       instant=adapter.supports(Capability.INSTANT_PAYOUTS))


def fee_coin(gateway: "Gateway", coin: "Coin") -> str:
    """The coin a payout's network fee is paid in: the coin itself, or its chain's native coin for a token."""
    if coin.contract is None:
        return coin.symbol
    native = next((c for c in gateway.coins if c.chain == coin.chain and c.contract is None), None)
    return native.symbol if native is not None else coin.symbol


def check_destination(route: PayoutRoute, address: str) -> str:
    """The destination in canonical form; 400 invalid_address or burn_address."""
    try:
        return route.family.validate(address)
    except AddressError as exc:
        if exc.code == "burn_address":
            raise InvalidRequest("destination is a burn/null address", code="burn_address") from None
        raise InvalidRequest("invalid destination address", code="invalid_address") from None


def payout_units(coin: "Coin", amount: Any, field: str = "amount") -> int:
    """Base units of a payout amount: above 0, no finer than the coin, at least its min_payout."""
    try:
        units = coin.to_units(amount)
    except AmountError as exc:
        raise ValidationError({field: str(exc)}) from None
    if units < coin.min_payout_units:
        raise ValidationError({field: f"must be at least {coin.min_payout} {coin.symbol}"})
    return units


# -- creation -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PayoutRequest:
    """A validated payout, ready to reserve. ``idem_key`` is namespaced (``key:...``)."""

    route: PayoutRoute
    destination: str
    amount: int
    description: str | None = None
    callback_url: str | None = None
    idem_key: str | None = None
    request_hash: str | None = None
    external_id: str | None = None
    refund_of_payment_id: str | None = None
    key_id: str | None = None
    request_id: str | None = None
    requested_by: str | None = None  # "holder", "member:<id>" (a key's: its issuer's, key_id names it); None: a job
    # False: one leg of an exchange already under way (a swap's deposit to its venue), never held for approval
    holdable: bool = True
    hold_quote: Any = None  # decide_hold_quote's answer, read before the reserving transaction
    batch_id: str | None = None  # the batch request's id: its items may share one transaction (batches.py)


@dataclass(frozen=True)
class PayoutOutcome:
    """The payout, whether it was an idempotent replay, and the reserve posting to announce."""

    row: Row
    replay: bool
    posted: ledger.LedgerTransaction | None = None

    @property
    def held_for_approval(self) -> bool:
        """Reserved but kept from the worker until someone approves it (``decide_payout_hold``)."""
        return self.row["stage"] == HELD


def fingerprint(**fields: Any) -> str:
    """A stable hash of what a request asked for, to tell a replay from a reused key."""
    text = json.dumps({k: None if v is None else str(v) for k, v in fields.items()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def new_batch_id() -> str:
    """The id shared by the payouts of one batch request (``payouts.batch_id``)."""
    return "pb_" + secrets.token_hex(10)


def namespaced(namespace: str, key: str | None) -> str | None:
    return None if key is None else f"{namespace}:{key}"


async def find_by_key(gateway: "Gateway", merchant_id: str, idem_key: str) -> Row | None:
    return await gateway.db.fetch_one(
        "SELECT * FROM payouts WHERE merchant_id = :m AND idem_key = :k", {"m": merchant_id, "k": idem_key})


def replay_of(existing: Row, request: PayoutRequest) -> PayoutOutcome:
    if existing["request_hash"] != request.request_hash:
        namespace = (request.idem_key or "").split(":", 1)[0]
        field = "idempotency_key" if namespace == KEY_NS else "external_id"
        raise Conflict(f"{field} was already used for a different request", code=f"{field}_reused")
    return PayoutOutcome(existing, True)


async def create_payout(gateway: "Gateway", merchant_id: str, request: PayoutRequest) -> PayoutOutcome:
    """Reserve the money and queue the payout, once per idempotency key.

    Raises 400 insufficient_balance, 503 payout_backlog_too_large, 409 when
    the key names a different request. A replay writes nothing.
    """
    if request.idem_key:
        existing = await find_by_key(gateway, merchant_id, request.idem_key)
        if existing is not None:
            return replay_of(existing, request)
    route = request.route
    await route.sender.check_payout(PayoutOrder("", route.coin.symbol, request.destination, request.amount))
    request = await quoted_for_hold(gateway, merchant_id, request)
    async with gateway.db.transaction():
        outcome = await reserve_payout(gateway, merchant_id, request)
    if outcome.posted is not None:
        await ledger.notify_posted(gateway, outcome.posted)
    return outcome


async def locked_merchant(db: "Database", merchant_id: str, columns: str = "id") -> Row | None:
    """The merchant row, locked for the rest of the transaction: one money move per merchant at a time.

    NO KEY UPDATE, not UPDATE: no conflict with the FOR KEY SHARE that a
    foreign key to merchants takes (a webhook row inserted by a transaction
    that already holds ledger balance rows this one wants: that order
    deadlocked). SQLite's single writer already serialises.
    """
    lock = " FOR NO KEY UPDATE" if db.is_postgres else ""
    return await db.fetch_one(f"SELECT {columns} FROM merchants WHERE id = :m{lock}", {"m": merchant_id})


async def reserve_payout(gateway: "Gateway", merchant_id: str, request: PayoutRequest) -> PayoutOutcome:
    """``create_payout`` inside the caller's transaction (refunds add their own checks first).

    Locks the merchant row so the backlog count and the idempotency look-up
    are exact under concurrent requests; the balance itself is guarded by
    the ledger, which refuses any overdraft.
    """
    db = gateway.db
    merchant = await locked_merchant(db, merchant_id, "id, enabled, accepted_coins")
    if request.idem_key:
        existing = await find_by_key(gateway, merchant_id, request.idem_key)
        if existing is not None:
            return replay_of(existing, request)
    # Jobs (schedules, auto-withdraw) and refunds reach here without a request's auth check.
    if merchant is not None and not merchant["enabled"]:
        raise Forbidden("account disabled", code="merchant_disabled")
    if merchant is not None:
        await _require_accepted_or_held(gateway, merchant, request.route.coin.symbol)
    if await db.fetch_val("SELECT 1 FROM deposit_addresses WHERE address = :a AND merchant_id = :m LIMIT 1",
                          {"a": request.destination, "m": merchant_id}):
        # Paying yourself on-chain only comes back as a deposit, minus network and platform fees;
        # an auto-withdraw rule aimed at its own address would loop.
        raise InvalidRequest("destination is one of your own deposit addresses", code="self_transfer")
    queued = await db.fetch_val("SELECT COUNT(*) FROM payouts WHERE merchant_id = :m AND status = :s",
                                {"m": merchant_id, "s": CONFIRMING})
    if int(queued) >= BACKLOG_LIMIT:
        raise ServiceUnavailable("payout backlog too large", code="payout_backlog_too_large")
    now = gateway.now()
    route = request.route
    row = {
        "id": "po_" + secrets.token_hex(10), "track_id": new_track_id(), "merchant_id": merchant_id,
        "coin": route.coin.symbol, "chain": route.chain, "destination": request.destination,
        "amount": db.amount_param(request.amount), "status": CONFIRMING, "stage": QUEUED,
        "description": request.description, "callback_url": request.callback_url, "idem_key": request.idem_key,
        "request_hash": request.request_hash, "external_id": request.external_id,
        "refund_of_payment_id": request.refund_of_payment_id, "key_id": request.key_id,
        "request_id": request.request_id, "next_attempt_at": now, "created_at": now, "updated_at": now,
        "requested_by": request.requested_by, "batch_id": request.batch_id,
    }
    inserted = await db.fetch_val(
        f"INSERT INTO payouts ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})"
        " ON CONFLICT DO NOTHING RETURNING id", row)
    if inserted is None:  # pragma: no cover - the merchant lock makes this unreachable
        existing = await find_by_key(gateway, merchant_id, request.idem_key or "")
        assert existing is not None, "only an idempotency key conflicts"
        return replay_of(existing, request)
    binding = payout_binding(binding_key(gateway), payout_id=row["id"], merchant_id=merchant_id,
                             coin=route.coin.symbol, chain=route.chain, amount=request.amount,
                             destination=request.destination)
    posted = await ledger.transfer(
        db, from_account=merchant_available(merchant_id), to_account=payouts_in_flight(route.chain),
        coin=route.coin.symbol, amount=request.amount, reference=f"payout:{row['id']}:reserve",
        kind="payout_reserve", merchant_id=merchant_id, memo=binding)
    if request.holdable:
        await _hold_if_asked(gateway, await _row(gateway, row["id"]), request)
    return PayoutOutcome(await _row(gateway, row["id"]), False, posted)


async def quoted_for_hold(gateway: "Gateway", merchant_id: str, request: PayoutRequest) -> PayoutRequest:
    """``request`` with ``decide_hold_quote``'s answer: asked before the reserving transaction opens (a price read
    must not hold the merchant's lock). Callers that open their own transaction call it first."""
    if not request.holdable:
        return request
    quote = await gateway.hooks.decide_hold_quote(merchant_id=merchant_id, coin=request.route.coin.symbol)
    return replace(request, hold_quote=quote)


async def _hold_if_asked(gateway: "Gateway", row: Row, request: PayoutRequest) -> None:
    """``decide_payout_hold``: a plugin (the approval policy) may keep the reserved payout from the worker."""
    if await gateway.hooks.decide_payout_hold(payout=hook_record(gateway, row), requested_by=request.requested_by,
                                              quote=request.hold_quote, key_id=request.key_id):
        await gateway.db.execute("UPDATE payouts SET stage = :held WHERE id = :id", {"held": HELD, "id": row["id"]})


async def _require_accepted_or_held(gateway: "Gateway", merchant: Row, coin: str) -> None:
    """400 ``currency_not_accepted`` (SPEC 7) for a coin outside the merchant's accepted_coins that it
    holds nothing of, before the balance is looked at (it was ``insufficient_balance``, issue 29).

    A coin the merchant holds stays payable whether or not it is still accepted: money that came in
    before the coin was dropped, by a swap or by a transfer is never trapped (docs/decisions.md).
    """
    if coin in merchant_coins(merchant):
        return
    if await ledger.balance(gateway.db, merchant_available(merchant["id"]), coin) <= 0:
        raise InvalidRequest("currency not accepted by merchant", code="currency_not_accepted")


def _merged_details(row: Row, details: Mapping[str, Any] | None) -> str | None:
    """The stored details with what the chain reported at the end, one level deep (``lightning.preimage``)."""
    stored = json.loads(row["details"]) if row["details"] else {}
    for key, value in (details or {}).items():
        if isinstance(value, Mapping) and isinstance(stored.get(key), Mapping):
            stored[key] = {**stored[key], **value}
        else:
            stored[key] = value
    return json.dumps(stored, sort_keys=True) if stored else None


def item_error(exc: ApiError) -> str:
    """How a batch result names an error (SPEC 2.11's ``error``, SPEC 7's item codes): always a code.

    Its own code when it has one (``invalid_address``, ``insufficient_balance`` ...); a validation
    error without one names its first field, ``missing_<field>`` when the field was absent and
    ``invalid_<field>`` otherwise (``missing_external_id``, ``invalid_amount``), so a client branches
    on a token in the batch's shape instead of parsing a sentence.
    """
    if exc.code:
        return exc.code
    if isinstance(exc, ValidationError) and exc.detail:
        field, problem = next(iter(exc.detail.items()))
        return f"{'missing' if problem == 'is required' else 'invalid'}_{field}"
    return exc.type


# -- reads -------------------------------------------------------------------------------


async def _row(gateway: "Gateway", payout_id: str) -> Row:
    row = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout_id})
    assert row is not None, "called with the id of a payout just written"
    return row


async def get_payout(gateway: "Gateway", merchant_id: str, track_id: str) -> Row:
    """One payout; unknown and foreign ids are 404 alike."""
    row = await gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": track_id})
    if row is None or row["merchant_id"] != merchant_id:
        raise NotFound()
    return row


def _amount(gateway: "Gateway", row: Row) -> str:
    return gateway.coins.require(row["coin"]).format(gateway.db.to_int(row["amount"]))


def _public_tx_hash(row: Row) -> str | None:
    # SPEC 2.5: populated when Confirmed (the webhook's is null on failure).
    return row["tx_hash"] if row["status"] == CONFIRMED else None


def created_view(gateway: "Gateway", outcome: PayoutOutcome) -> dict[str, Any]:
    """Response data of POST /v1/payout (SPEC 4.3), ``idempotent: true`` on a replay."""
    view = payout_view(gateway, outcome.row)  # the same fields as GET, unset ones null (docs/decisions.md)
    if outcome.replay:
        view["idempotent"] = True
    return view


def payout_view(gateway: "Gateway", row: Row) -> dict[str, Any]:
    """SPEC 2.5: a payout as GET /v1/payout/:track_id shows it."""
    view = {
        "track_id": row["track_id"], "status": row["status"], "coin": row["coin"], "amount": _amount(gateway, row),
        "destination": row["destination"], "tx_hash": _public_tx_hash(row), "failure_reason": row["failure_reason"],
        "created_at": row["created_at"], "updated_at": row["updated_at"],
    }
    if row["refund_of_payment_id"]:
        view["refund_of_payment_id"] = row["refund_of_payment_id"]
    if row["stage"] == HELD:  # only ever with an approval policy on (docs/decisions.md)
        view["awaiting_approval"] = True
    return _with_details(view, row)


def _with_details(view: dict[str, Any], row: Row) -> dict[str, Any]:
    """Merge the sender's public details (a ``lightning`` block); they never replace a core field."""
    details = row["details"]
    if details:
        view.update({k: v for k, v in json.loads(details).items() if k not in view})
    return view


def webhook_body(gateway: "Gateway", row: Row) -> dict[str, Any]:
    """SPEC 6.4 payout webhook body."""
    body = {
        "type": "payout", "track_id": row["track_id"], "status": row["status"], "coin": row["coin"],
        "amount": _amount(gateway, row), "destination": row["destination"],
        "tx_hash": row["tx_hash"] if row["status"] == CONFIRMED else None,
        "failure_reason": row["failure_reason"] if row["status"] == FAILED else None,
    }
    if row["refund_of_payment_id"]:
        body["refund_of_payment_id"] = row["refund_of_payment_id"]
    return _with_details(body, row)


def hook_record(gateway: "Gateway", row: Row) -> PayoutView:
    """The ``payout_finished`` hook's payout: the documented ``PayoutView``, amount as an int."""
    return payout_view_of(gateway, row)


def dashboard_row(gateway: "Gateway", row: Row) -> dict[str, Any]:
    """A row of GET /dashboard/payouts; the dashboard shows statuses in upper case (SPEC 3.3)."""
    shown = {"id": row["id"], "trackId": row["track_id"], "coin": row["coin"], "destination": row["destination"],
             "amount": _amount(gateway, row), "status": row["status"].upper(), "txHash": _public_tx_hash(row)}
    if row["stage"] == HELD:  # only with an approval policy on (docs/decisions.md)
        shown["awaitingApproval"] = True
    if row["stage"] == POLICY_HELD:  # the signer's policy refused it; the operator decides (docs/payouts.md)
        shown["heldByPolicy"] = row["policy_hold"]
    if row["stage"] == QUEUED and row["status"] == CONFIRMING and (why := fee_wait_reason(row["last_error"])):
        shown["waitingForFees"] = why  # the fee is above the operator's ceiling (fee_waits.py)
    return shown


async def list_payouts(gateway: "Gateway", merchant_id: str, *, limit: int, offset: int) -> dict[str, Any]:
    """GET /dashboard/payouts: newest first; the exact total is kept by the database (m0059)."""
    db = gateway.db
    total = await PAYOUTS.total(db, merchant_id)
    rows = await db.fetch_all(
        "SELECT * FROM payouts WHERE merchant_id = :m ORDER BY created_at DESC, id DESC LIMIT :l OFFSET :o",
        {"m": merchant_id, "l": limit, "o": offset})
    return {"payouts": [dashboard_row(gateway, r) for r in rows], "total": int(total), "limit": limit,
            "offset": offset}


async def failure_reasons(gateway: "Gateway", merchant_id: str, payout_ids: list[str]) -> dict[str, str]:
    """Why each of the merchant's Failed payouts among ``payout_ids`` failed (the dashboard says it in words)."""
    if not payout_ids:
        return {}
    names = {f"i{n}": i for n, i in enumerate(payout_ids)}
    rows = await gateway.db.fetch_all(
        f"SELECT id, failure_reason FROM payouts WHERE merchant_id = :m AND status = :s"
        f" AND id IN ({', '.join(':' + k for k in names)})", {**names, "m": merchant_id, "s": FAILED})
    return {r["id"]: r["failure_reason"] or "" for r in rows}


async def recent_payouts(gateway: "Gateway", merchant_id: str, limit: int) -> list[dict[str, Any]]:
    """The payouts[] of GET /dashboard/transactions (id, coin, destination, amount, status)."""
    listed = await list_payouts(gateway, merchant_id, limit=limit, offset=0)
    keep = ("id", "coin", "destination", "amount", "status")
    return [{k: row[k] for k in keep} for row in listed["payouts"]]


# -- the state machine (driven by core/payouts/worker.py) -------------------------------------


async def claim_due(gateway: "Gateway", limit: int, lease_seconds: int) -> list[Row]:
    """Claim up to ``limit`` due payouts for ``lease_seconds``; returns them with their claim token.

    PostgreSQL: ``FOR UPDATE SKIP LOCKED``, so concurrent workers claim
    disjoint rows; the lease then keeps other workers away until this one
    finishes or dies (a crashed worker's payouts come back when it expires).
    """
    db = gateway.db
    now = gateway.now()
    token = secrets.token_hex(12)
    skip_locked = " FOR UPDATE SKIP LOCKED" if db.is_postgres else ""
    async with db.transaction():
        due = await db.fetch_all(
            "SELECT id FROM payouts WHERE status = :s AND stage NOT IN (:held, :policy_held)"
            " AND next_attempt_at <= :now AND (claimed_until IS NULL OR claimed_until <= :now)"
            f" ORDER BY next_attempt_at, created_at LIMIT :n{skip_locked}",
            {"s": CONFIRMING, "held": HELD, "policy_held": POLICY_HELD, "now": now, "n": limit})
        if not due:
            return []
        names = {f"i{n}": r["id"] for n, r in enumerate(due)}
        await db.execute(
            f"UPDATE payouts SET claimed_until = :until, claim_token = :tok"
            f" WHERE id IN ({', '.join(':' + k for k in names)})",
            {**names, "until": now + lease_seconds, "tok": token})
    return await db.fetch_all("SELECT * FROM payouts WHERE claim_token = :tok ORDER BY next_attempt_at, created_at",
                              {"tok": token})


async def claim_one(gateway: "Gateway", payout_id: str, lease_seconds: int) -> Row | None:
    """Claim one Confirming payout nobody holds (an instant payout, right after its request reserved it)."""
    now = gateway.now()
    async with gateway.db.transaction():
        return await gateway.db.fetch_one(
            "UPDATE payouts SET claimed_until = :until, claim_token = :tok WHERE id = :id AND status = :s"
            " AND stage NOT IN (:held, :policy_held) AND (claimed_until IS NULL OR claimed_until <= :now) RETURNING *",
            {"until": now + lease_seconds, "tok": secrets.token_hex(12), "id": payout_id, "s": CONFIRMING,
             "held": HELD, "policy_held": POLICY_HELD, "now": now})


async def release_claim(gateway: "Gateway", token: str) -> None:
    """Give back the claim ``token`` on the payouts it still holds: due again at once, for any worker.

    Called when a stop interrupted the worker holding it. Safe whatever
    stage it reached: every move is conditional on this claim, so nothing
    the interrupted worker did can land afterwards; a signed payout is sent
    again with the same stored bytes (never signed again), and a signature
    not stored yet was never broadcast.
    """
    await gateway.db.execute(
        "UPDATE payouts SET claimed_until = NULL, claim_token = NULL WHERE claim_token = :tok AND status = :s",
        {"tok": token, "s": CONFIRMING})


async def _advance(gateway: "Gateway", row: Row, *, stage: str, changes: Mapping[str, Any]) -> Row | None:
    """Apply ``changes`` if this worker still holds the claim and the row is still at ``stage``."""
    db = gateway.db
    values = {**changes, "updated_at": gateway.now()}
    assignments = ", ".join(f"{k} = :{k}" for k in values)
    async with db.transaction():
        return await db.fetch_one(
            f"UPDATE payouts SET {assignments} WHERE id = :w_id AND claim_token = :w_tok AND stage = :w_stage"
            " AND status = :w_status RETURNING *",
            {**values, "w_id": row["id"], "w_tok": row["claim_token"], "w_stage": stage, "w_status": CONFIRMING})


async def record_signed(gateway: "Gateway", row: Row, signed: SignedPayout) -> Row | None:
    """Store the signed transaction before anything is broadcast; None if the claim was lost."""
    return await _advance(gateway, row, stage=QUEUED, changes={
        "stage": SIGNED, "tx_hash": signed.tx_hash, "raw_tx": signed.raw,
        "network_fee": gateway.db.amount_param(int(signed.network_fee or 0)), "attempts": 0, "last_error": None,
        "details": json.dumps(dict(signed.details), sort_keys=True) if signed.details else None})


async def record_broadcast(gateway: "Gateway", row: Row) -> Row | None:
    return await _advance(gateway, row, stage=SIGNED, changes={
        "stage": BROADCAST, "attempts": 0, "last_error": None, "next_attempt_at": gateway.now()})


async def record_retry(gateway: "Gateway", row: Row, *, error: str, next_at: int, attempts: int | None = None) -> None:
    """A step failed transiently: remember why, release the claim, try again at ``next_at``."""
    changes: dict[str, Any] = {"last_error": error[:500], "next_attempt_at": next_at, "claimed_until": None,
                               "claim_token": None}
    if attempts is not None:
        changes["attempts"] = attempts
        changes["first_attempt_at"] = row["first_attempt_at"] or gateway.now()
    await _advance(gateway, row, stage=row["stage"], changes=changes)


async def record_progress(gateway: "Gateway", row: Row, *, confirmations: int, missing_since: int | None,
                          next_at: int, note: str | None = None) -> None:
    """A broadcast payout is still confirming (or briefly missing): look again at ``next_at``.

    ``note``: why a stuck payout waits (the sender cannot bump it now), kept in ``last_error``.
    """
    await _advance(gateway, row, stage=BROADCAST, changes={
        "confirmations": confirmations, "missing_since": missing_since, "next_attempt_at": next_at,
        "last_error": note[:500] if note else None, "claimed_until": None, "claim_token": None})


def _fee_paid(db: "Database", current: Row, status: str, failure_reason: str | None, network_fee: int | None) -> int:
    """The network fee the platform paid for a payout ending now.

    Mined (confirmed or reverted): the chain's figure, else the signed one.
    Dropped: only the fee of the sender's own closing transaction (passed in);
    the original was never mined. Any other failure paid nothing.
    """
    if status == CONFIRMED or failure_reason == REVERTED:
        return db.to_int(current["network_fee"]) if network_fee is None else network_fee
    if failure_reason == DROPPED:
        return network_fee or 0
    return 0


async def finish(gateway: "Gateway", row: Row, *, status: str, failure_reason: str | None = None,
                 confirmations: int | None = None, network_fee: int | None = None,
                 details: Mapping[str, Any] | None = None, mined: SignedPayout | None = None) -> Row | None:
    """Make the payout final: settle the ledger, write the row, enqueue the webhook; one transaction.

    ``mined``: a fee replacement of the stored transaction was mined; its txid and bytes become the row's.

    Confirmed: in flight -> world. Failed: in flight -> merchant available
    (the re-credit), of what the LEDGER reserved and only if it did
    (``reserve_release.give_back``): a row nobody reserved ends Failed with
    no credit, webhook or ``payout_finished``, and ``last_error`` says why
    ("nothing re-credited: no_reservation"). A transaction that was mined (confirmed or reverted) also books its network
    fee: platform network fees -> world, the fee the chain reports as paid
    (``network_fee``) or else the signed one; a dropped one books the fee of
    the transaction that closed it (``network_fee``). Returns the final row,
    or None when this worker no longer holds the claim.
    """
    if status not in (CONFIRMED, FAILED):
        raise ValueError(f"not a final payout status: {status}")
    db = gateway.db
    async with db.transaction():
        current = await db.fetch_one(f"SELECT * FROM payouts WHERE id = :id{db.for_update}", {"id": row["id"]})
        if current is None or current["status"] != CONFIRMING or current["claim_token"] != row["claim_token"]:
            return None
        merchant_id, chain, coin = current["merchant_id"], current["chain"], current["coin"]
        amount = db.to_int(current["amount"])
        release = None
        posted: ledger.LedgerTransaction | None
        last_error = None if status == CONFIRMED else current["last_error"]  # a wait's note is over once paid
        if status == CONFIRMED:
            posted = await ledger.transfer(
                db, from_account=payouts_in_flight(chain), to_account=world(chain), coin=coin, amount=amount,
                reference=f"payout:{current['id']}:confirm", kind="payout_confirm", merchant_id=merchant_id)
        else:
            release = await reserve_release.give_back(gateway, current)
            posted = release.posted
            if posted is None:  # the chain's reason stays the failure's; why nothing came back is the last word
                last_error = f"{reserve_release.NOTHING_GIVEN_BACK}: {release.problem}"
        fee = _fee_paid(db, current, status, failure_reason, network_fee)
        fee_posted = None
        if fee:
            fee_posted = await ledger.transfer(
                db, from_account=NETWORK_FEES, to_account=world(chain),
                coin=fee_coin(gateway, gateway.coins.require(coin)), amount=fee,
                reference=f"payout:{current['id']}:network_fee", kind="network_fee", merchant_id=merchant_id)
        now = gateway.now()
        merged = _merged_details(current, details)
        final = await db.fetch_one(
            "UPDATE payouts SET status = :s, stage = :stage, failure_reason = :reason, confirmations = :conf,"
            " finished_at = :now, updated_at = :now, claimed_until = NULL, claim_token = NULL, details = :details,"
            " tx_hash = :tx, raw_tx = :raw, last_error = :error WHERE id = :id RETURNING *",
            {"s": status, "stage": status.lower(), "reason": failure_reason[:500] if failure_reason else None,
             "conf": current["confirmations"] if confirmations is None else confirmations, "now": now,
             "id": current["id"], "details": merged, "tx": mined.tx_hash if mined else current["tx_hash"],
             "raw": mined.raw if mined else current["raw_tx"], "error": last_error})
        assert final is not None, "the payout row is locked by this transaction"
        kind = "confirmed" if status == CONFIRMED else "failed"
        if posted is not None:  # a row the ledger never reserved is nobody's payout: no webhook (policy_holds.py)
            await enqueue_event(gateway, merchant_id=merchant_id, event_type=f"payout.{kind}",
                                body=webhook_body(gateway, final), logical_key=f"payout.{kind}:{final['track_id']}",
                                url=final["callback_url"], request_id=final["request_id"])
    for transaction in (posted, fee_posted):
        if transaction is not None:
            await ledger.notify_posted(gateway, transaction)
    if release is not None:
        await reserve_release.report(gateway, final, release, failure_reason)
    if posted is not None:
        await gateway.hooks.payout_finished(payout=hook_record(gateway, final))
    return final


async def fail_held(db: Any, payout_id: str, *, held_stage: str, reason: str, now: int) -> Row | None:
    """Move a payout still Confirming at ``held_stage`` (an approval's or the signer's policy hold) to Failed
    with ``reason``, one conditional UPDATE; the row, or None when it was no longer held. The caller gives
    the reserve back in the same transaction."""
    return await db.fetch_one(
        "UPDATE payouts SET status = :failed, stage = :stage, failure_reason = :reason, finished_at = :now,"
        " updated_at = :now WHERE id = :id AND status = :s AND stage = :held RETURNING *",
        {"failed": FAILED, "stage": FAILED.lower(), "reason": reason, "now": now, "id": payout_id,
         "s": CONFIRMING, "held": held_stage})
