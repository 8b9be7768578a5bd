"""Internal transfers: an instant, zero-fee move between two merchants' balances.

A transfer is one ledger transaction (sender available -> recipient
available), its ``transfers`` row and its two outbox events
(``transfer.sent`` to the sender, ``transfer.received`` to the recipient),
all committed in one database transaction: the recipient can spend the
money the moment the request returns, and no webhook ever announces a
transfer that rolled back. Delivery happens later; a failed webhook never
undoes a transfer (SPEC 6.1).

Guarantees callers may rely on:

* The sender never goes below zero, also under concurrent requests on
  either database: the ledger refuses the overdraft under its row lock.
* A request with an ``idempotency_key`` the sender already used returns the
  first transfer (``idempotent=True``) and moves nothing; the same key with
  a different recipient, coin or amount is a 409. Concurrent twins create
  one transfer (the unique key is claimed before any balance is touched).
* With 2FA on, every new transfer needs a fresh TOTP code of whoever sends
  it (``second_factor``: a team member's own). A replay needs none: it
  moves no money and only repeats what this caller already did. The code is
  spent in its own transaction, apart from the money's, so the merchant
  row's FOR UPDATE never joins the transfer's locks (no deadlock between
  two opposite transfers of 2FA accounts).
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from typing import Any, Mapping

from ..ledger import book as ledger
from ..accounts.merchants import ACCOUNT_ID_BODY_LENGTH, ACCOUNT_ID_PREFIX, BASE58_ALPHABET
from ..accounts.second_factor import verify_acting
from ..infra.db import Database, Row
from ..infra.kept_counts import KeptList
from ..types.errors import Conflict, InsufficientBalance, InvalidRequest, NotFound
from ..events.outbox import OutboxEvent, enqueue_events
from ..ledger.accounts import merchant_held
from ..events.key_destination import key_destination
from ..accounts.lockout import DASHBOARD_CHANNEL
from ..contract.gateway import PluginGateway as Gateway

LEDGER_KIND = "transfer"
HELD = "held"  # transfers.status while an approval policy holds it (decide_transfer_hold)
API, DASHBOARD = "api", "dashboard"  # ``transfers.source``: which door the request came through
# m0059: the history's total, kept by the database per sender, and per recipient and status (NULL: not held).
SENT = KeptList("transfers_sent")
RECEIVED = KeptList("transfers_received", ("status",))
ACCOUNT_ID = re.compile(rf"^{re.escape(ACCOUNT_ID_PREFIX)}-[{BASE58_ALPHABET}]{{{ACCOUNT_ID_BODY_LENGTH}}}$")


def new_transfer_id() -> str:
    """Sortable by creation (nanosecond clock, then random), so the history's
    tie-break within one second is still newest first."""
    return f"trf_{time.time_ns():016x}{secrets.token_hex(6)}"


def ledger_reference(transfer_id: str) -> str:
    return f"transfer:{transfer_id}"


def is_account_id(value: Any) -> bool:
    """True for a well-formed public account id (``ORB-`` and 20 base58 characters)."""
    return isinstance(value, str) and ACCOUNT_ID.match(value) is not None


@dataclass(frozen=True)
class TransferRequest:
    """A validated transfer request; ``amount`` is in base units of ``coin``."""

    to_account_id: str
    coin: str
    amount: int
    idempotency_key: str | None = None
    totp_code: Any = None
    source: str = API
    key_id: str | None = None
    request_id: str | None = None
    # False when the caller knows the key has no webhook URL of its own (keys
    # never change theirs), so nothing is read to find out.
    key_has_webhook: bool = True
    # Whose TOTP lockout a wrong code counts against (core/accounts/lockout.py ``totp_policy``).
    totp_channel: str = DASHBOARD_CHANNEL
    # The team member sending (their own code is asked), None: the holder or one of their keys.
    member_id: str | None = None
    requested_by: str | None = None  # "holder", "member:<id>" (a key's: its issuer's); None: a plugin


@dataclass(frozen=True)
class TransferResult:
    row: Row
    idempotent: bool


# -- sending ----------------------------------------------------------------------------------


async def send_transfer(gateway: "Gateway", sender_id: str, request: TransferRequest) -> TransferResult:
    """Move ``request.amount`` from the sender to the recipient, at most once per idempotency key.

    Raises 400 ``self_transfer_forbidden``, ``recipient_not_found``,
    ``recipient_disabled``, ``insufficient_balance``; 401 "invalid TOTP
    code"; 409 ``idempotency_key_reused``.
    """
    if not isinstance(request.amount, int) or isinstance(request.amount, bool) or request.amount <= 0:
        raise ValueError("transfer amount must be a positive int in base units")
    db = gateway.db
    parties = await _parties(db, sender_id, request.to_account_id, request.coin)
    sender = parties.sender
    if sender is None:
        raise NotFound()
    if request.idempotency_key:
        existing = await _by_idempotency_key(db, sender_id, request.idempotency_key)
        if existing is not None:
            return TransferResult(_same_request(db, existing, request), True)
    recipient = _recipient(sender, parties.recipient, request.to_account_id)
    # A cheap early answer that does not use up the caller's TOTP code; the
    # ledger checks again under its row lock, which is what counts.
    if parties.available < request.amount:
        # A twin with the same key may have committed since the look-up above and
        # spent the balance: then this request is its replay, not a refusal.
        twin = await _by_idempotency_key(db, sender_id, request.idempotency_key) if request.idempotency_key else None
        if twin is not None:
            return TransferResult(_same_request(db, twin, request), True)
        raise InsufficientBalance()
    await verify_acting(gateway, sender_id, request.member_id, request.totp_code, channel=request.totp_channel,
                        holder=sender)
    quote = await gateway.hooks.decide_hold_quote(merchant_id=sender_id, coin=request.coin)
    row, posted = await _commit(gateway, sender, recipient, request, quote)
    if posted is None:  # a concurrent twin with the same key committed first
        return TransferResult(_same_request(db, row, request), True)
    await ledger.notify_posted(gateway, posted)
    return TransferResult(row, False)


@dataclass(frozen=True)
class _Parties:
    sender: Row | None
    recipient: Row | None  # the merchant behind ``to_account_id`` (the sender's own row for a self-transfer)
    available: int  # the sender's available balance in the coin, as it was a moment ago


_AVAILABLE = "transfer_sender_available"  # the extra column of ``_parties``' rows, taken off before use


async def _parties(db: Database, sender_id: str, to_account_id: str, coin: str) -> _Parties:
    """Both merchant rows and the sender's balance in one round trip (they were three, each its own statement).

    What each answers is exactly what its own look-up did: the sender by
    id, the recipient by public account id, the balance the ledger's cache holds.
    """
    # The guard of find_by_account_id, which this read replaces.
    wanted = to_account_id if isinstance(to_account_id, str) and len(to_account_id) <= 64 else None
    rows = await db.fetch_all(
        f"SELECT *, {ledger.balance_subquery('acct', 'coin')} AS {_AVAILABLE} FROM merchants"
        " WHERE id = :s OR account_id = :a",
        {"s": sender_id, "a": wanted, "acct": ledger.merchant_available(sender_id), "coin": coin},
    )
    sender = recipient = None
    available = 0
    for found in rows:
        row = {k: v for k, v in found.items() if k != _AVAILABLE}
        if row["id"] == sender_id:
            sender, available = row, Database.to_int(found[_AVAILABLE])
        if wanted is not None and row["account_id"] == wanted:
            recipient = row
    return _Parties(sender, recipient, available)


def _recipient(sender: Row, recipient: Row | None, to_account_id: str) -> Row:
    if to_account_id == sender["account_id"]:
        raise InvalidRequest("cannot transfer to your own account", code="self_transfer_forbidden")
    if recipient is None:
        raise InvalidRequest("recipient not found", code="recipient_not_found")
    if not recipient["enabled"]:
        raise InvalidRequest("recipient account is disabled", code="recipient_disabled")
    return recipient


async def _commit(
    gateway: "Gateway", sender: Row, recipient: Row, request: TransferRequest, quote: Any = None
) -> tuple[Row, ledger.LedgerTransaction | None]:
    """Row, ledger transaction and both outbox events in one transaction.

    Returns ``(existing_row, None)`` when another request holding the same
    idempotency key committed first. The row is inserted first: on
    PostgreSQL a twin then waits on the unique key before it has locked
    any balance, and sees the winner's row once that commits.
    """
    db = gateway.db
    row: dict[str, Any] = {
        "id": new_transfer_id(), "from_merchant_id": sender["id"], "to_merchant_id": recipient["id"],
        "from_account_id": sender["account_id"], "to_account_id": recipient["account_id"],
        "coin": request.coin, "amount": request.amount, "idempotency_key": request.idempotency_key,
        "source": request.source, "key_id": request.key_id, "request_id": request.request_id,
        "created_at": gateway.now(), "requested_by": request.requested_by,
    }
    async with db.transaction():
        claimed = await db.fetch_val(
            "INSERT INTO transfers (id, from_merchant_id, to_merchant_id, from_account_id, to_account_id, coin,"
            " amount, idempotency_key, source, key_id, request_id, created_at, requested_by)"
            " VALUES (:id, :from_merchant_id, :to_merchant_id, :from_account_id, :to_account_id, :coin, :amount,"
            " :idempotency_key, :source, :key_id, :request_id, :created_at, :requested_by)"
            " ON CONFLICT DO NOTHING RETURNING id",
            {**row, "amount": db.amount_param(request.amount)},
        )
        if claimed is None:
            existing = await _by_idempotency_key(db, sender["id"], request.idempotency_key or "")
            if existing is None:  # pragma: no cover - only an idempotency key can conflict
                raise RuntimeError(f"transfer {row['id']} conflicted without an idempotency key")
            return existing, None
        if await gateway.hooks.decide_transfer_hold(transfer=hold_view(row), requested_by=request.requested_by,
                                                    quote=quote, key_id=request.key_id):
            return await _hold(gateway, row)
        # The events first, the money last: the two balance rows are locked from the ledger's write to the
        # commit, and 1,000 transfers among 100 merchants queue on them, so nothing else runs in between.
        # They commit or roll back together all the same.
        await enqueue_webhooks(gateway, row, request, {sender["id"]: sender, recipient["id"]: recipient})
        # No savepoint: any error here (an overdraft above all) rolls this whole transaction back.
        posted = await ledger.transfer(
            db, from_account=ledger.merchant_available(sender["id"]),
            to_account=ledger.merchant_available(recipient["id"]), coin=request.coin, amount=request.amount,
            reference=ledger_reference(row["id"]), kind=LEDGER_KIND, merchant_id=sender["id"],
            memo=f"{row['from_account_id']} -> {row['to_account_id']}", savepoint=False,
        )
    return row, posted


def hold_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """What ``decide_transfer_hold`` sees: id, merchant_id (the sender), to_account_id, coin, amount (base units)."""
    return {"id": row["id"], "merchant_id": row["from_merchant_id"], "to_account_id": row["to_account_id"],
            "coin": row["coin"], "amount": Database.to_int(row["amount"])}


async def _hold(gateway: "Gateway", row: dict[str, Any]) -> tuple[Row, ledger.LedgerTransaction]:
    """Held for approval: the sender's money moves to its held account (spent once), nothing is announced."""
    db = gateway.db
    posted = await ledger.transfer(
        db, from_account=ledger.merchant_available(row["from_merchant_id"]),
        to_account=merchant_held(row["from_merchant_id"]), coin=row["coin"], amount=Database.to_int(row["amount"]),
        reference=ledger_reference(row["id"]) + ":hold", kind=LEDGER_KIND, merchant_id=row["from_merchant_id"],
        savepoint=False)
    await db.execute("UPDATE transfers SET status = :s WHERE id = :id", {"s": HELD, "id": row["id"]})
    return {**row, "status": HELD}, posted


async def enqueue_webhooks(
    gateway: "Gateway", row: Mapping[str, Any], request: TransferRequest, merchants: Mapping[str, Row]
) -> None:
    """Both sides' events in one batch: a few statements inside the money transaction, not ten.

    The two merchant rows were read by this request a moment ago; their
    webhook settings are not read again.
    """
    body = webhook_body(gateway, row)
    url, secret = None, None
    if request.key_has_webhook:
        url, secret = await key_destination(gateway.db, row["from_merchant_id"], request.key_id)
    await enqueue_events(gateway, [
        OutboxEvent(row["from_merchant_id"], "transfer.sent", body, f"transfer.sent:{row['id']}", url=url,
                    secret=secret, request_id=request.request_id),
        OutboxEvent(row["to_merchant_id"], "transfer.received", body, f"transfer.received:{row['id']}",
                    request_id=request.request_id),
    ], merchants=merchants)


async def _by_idempotency_key(db: Database, sender_id: str, key: str) -> Row | None:
    row = await db.fetch_one(
        "SELECT * FROM transfers WHERE from_merchant_id = :m AND idempotency_key = :k", {"m": sender_id, "k": key}
    )
    return None if row is None else {**row, "amount": Database.to_int(row["amount"])}


def _same_request(db: Database, existing: Row, request: TransferRequest) -> Row:
    """The earlier transfer, if ``request`` asks for the same thing; else 409."""
    same = (existing["to_account_id"], existing["coin"], Database.to_int(existing["amount"])) == (
        request.to_account_id, request.coin, request.amount)
    if not same:
        raise Conflict("idempotency_key was already used for a different transfer", code="idempotency_key_reused")
    return existing


# -- shapes -------------------------------------------------------------------------------------


def _amount(gateway: "Gateway", coin: str, units: Any) -> str:
    units = Database.to_int(units)
    known = gateway.coins.get(coin)
    return known.format(units) if known is not None else str(units)


def transfer_view(gateway: "Gateway", row: Mapping[str, Any], idempotent: bool = False) -> dict[str, Any]:
    """The API response (SPEC 2.12); ``idempotent: true`` only on a replay."""
    view: dict[str, Any] = {
        "transfer_id": row["id"], "to_account_id": row["to_account_id"], "coin": row["coin"],
        "amount": _amount(gateway, row["coin"], row["amount"]), "created_at": int(row["created_at"]),
    }
    if idempotent:
        view["idempotent"] = True
    return _with_hold(view, row)


def _with_hold(view: dict[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """An approval policy's extension: ``awaiting_approval`` while held, ``failure_reason`` if it never moved."""
    status = row.get("status")
    if status == HELD:
        view["awaiting_approval"] = True
    elif status is not None:
        view["failure_reason"] = status
    return view


def webhook_body(gateway: "Gateway", row: Mapping[str, Any]) -> dict[str, Any]:
    """SPEC 6.4; the outbox adds event_id, event_type, event_timestamp (and request_id)."""
    return {
        "type": "transfer", "transfer_id": row["id"], "from_account_id": row["from_account_id"],
        "to_account_id": row["to_account_id"], "coin": row["coin"],
        "amount": _amount(gateway, row["coin"], row["amount"]), "created_at": int(row["created_at"]),
    }


def history_view(gateway: "Gateway", row: Mapping[str, Any], merchant_id: str) -> dict[str, Any]:
    """One row of ``GET /dashboard/transfers``, seen from ``merchant_id``'s side."""
    return _with_hold({
        "transfer_id": row["id"], "direction": "sent" if row["from_merchant_id"] == merchant_id else "received",
        "from_account_id": row["from_account_id"], "to_account_id": row["to_account_id"], "coin": row["coin"],
        "amount": _amount(gateway, row["coin"], row["amount"]), "created_at": int(row["created_at"]),
    }, row)


# -- history ------------------------------------------------------------------------------------


async def list_transfers(gateway: "Gateway", merchant_id: str, *, limit: int, offset: int) -> dict[str, Any]:
    """Transfers the merchant sent or received, newest first (SPEC 4.12); a recipient never sees a held one.
    The exact total is the kept counts' (m0059) of those sent and those received not held, in one statement."""
    db = gateway.db
    # Each side through its own index, newest first and no further than the page reaches, then merged: the
    # OR of both read the whole table (a sequential scan, tests/test_query_plans.py). A transfer to oneself
    # is refused, but were there one it would be listed once (the received side leaves it out).
    newest = "ORDER BY created_at DESC, id DESC"
    rows = await db.fetch_all(
        f"SELECT * FROM (SELECT * FROM transfers WHERE from_merchant_id = :m {newest} LIMIT :reach) AS sent"
        f" UNION ALL SELECT * FROM (SELECT * FROM transfers WHERE to_merchant_id = :m AND status IS NULL"
        f" AND from_merchant_id <> :m {newest} LIMIT :reach) AS received {newest} LIMIT :limit OFFSET :offset",
        {"m": merchant_id, "reach": limit + offset, "limit": limit, "offset": offset},
    )
    sent, sent_values = SENT.summed(merchant_id, {})
    received, received_values = RECEIVED.summed(merchant_id, {"status": ""}, tag="_to")  # '': NULL, not held
    total = await db.fetch_val(f"SELECT {sent} + {received}", {**sent_values, **received_values})
    return {"transfers": [history_view(gateway, r, merchant_id) for r in rows], "total": int(total),
            "limit": limit, "offset": offset}
