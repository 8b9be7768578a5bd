"""The double-entry ledger: the only code that changes a balance.

Every balance change is one ledger transaction whose postings sum to zero
per coin, written together with the cached ``ledger_balances`` rows in one
database transaction. So money is never created or lost, a crash leaves
either all of a change or none of it, and ``check_ledger`` can prove the
cache equals the postings at any time.

Guarantees callers may rely on:

* ``post`` is idempotent by ``reference``: a second call (also concurrently,
  also from another process) returns the first transaction with
  ``replay=True`` and writes nothing. Choose references from the event that
  moves the money (``deposit:<chain>:<txid>:<vout>``, ``payout:<id>:reserve``).
* No account except ``world:<chain>`` goes below zero; a posting that would
  raises :class:`LedgerOverdraft` (an ``InsufficientBalance``) and nothing is
  written. The one exception is ``reverse(..., allow_negative=True)``.
* Inside a caller's ``db.transaction()`` a post is a savepoint, so a payment
  or payout state change and its money movement commit together.
* ``post`` takes the database, not the gateway, and fires no hook: a hook
  run before the caller's commit could announce money that then rolls back.
  Call :func:`notify_posted` after your commit, or use :func:`post_and_notify`
  when the post is the whole transaction.

Amounts are Python ints; SQLite stores them as text and never adds them
(its arithmetic is 64-bit or float), PostgreSQL as NUMERIC(78,0).
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Collection, Iterable, Sequence

from ..infra.db import Database
from ..types.errors import InsufficientBalance
from ..types.postings import Posting  # moved to the ground floor; importable here too
from .accounts import (
    PLATFORM_FEES,
    chain_hot_wallet,
    may_go_negative,
    merchant_available,
    merchant_held,
    merchant_of,
    payouts_in_flight,
    world,
)
from ..contract.gateway import PluginGateway as Gateway

__all__ = [
    "PLATFORM_FEES", "chain_hot_wallet", "merchant_available", "merchant_held", "payouts_in_flight",
    "world", "may_go_negative", "Posting", "LedgerTransaction", "LedgerOverdraft",
    "ReferenceConflict", "post", "post_and_notify", "notify_posted", "credit_deposit", "transfer",
    "reverse", "find_transaction", "balance", "balances", "merchant_balances", "check_ledger",
    "LedgerProblem", "LedgerReport",
]


@dataclass(frozen=True)
class LedgerTransaction:
    """A committed ledger transaction; ``replay`` is True when ``post`` found it already there."""

    id: str
    kind: str
    reference: str
    merchant_id: str | None
    memo: str | None
    created_at: int
    postings: tuple[Posting, ...]
    reverses: str | None = None
    replay: bool = False

    def as_event(self) -> dict[str, Any]:
        """The ``transaction`` argument of the ``ledger_posted`` hook."""
        return {
            "id": self.id, "kind": self.kind, "reference": self.reference, "merchant_id": self.merchant_id,
            "memo": self.memo, "created_at": self.created_at, "reverses": self.reverses,
            "postings": [{"account": p.account, "coin": p.coin, "amount": p.amount} for p in self.postings],
        }


class LedgerOverdraft(InsufficientBalance):
    """A posting would take a non-negative account below zero; nothing was written.

    The API message stays the spec's "insufficient balance"; the account
    details are for logs and callers, never for the client.
    """

    def __init__(self, account: str, coin: str, balance: int, change: int) -> None:
        super().__init__()
        self.account, self.coin, self.balance, self.change = account, coin, balance, change

    def __str__(self) -> str:
        return f"insufficient balance: {self.account} {self.coin} has {self.balance}, posting {self.change}"


class ReferenceConflict(ValueError):
    """A reference was reused for different postings: two operations chose the same key."""


# -- posting -------------------------------------------------------------------------


async def post(
    db: Database,
    *,
    kind: str,
    reference: str,
    postings: Sequence[Posting],
    merchant_id: str | None = None,
    memo: str | None = None,
    created_at: int | None = None,
) -> LedgerTransaction:
    """Record one balanced transaction and update the cached balances, once per ``reference``.

    Raises ValueError for unbalanced or malformed postings (a programming
    error), :class:`LedgerOverdraft` when a non-world account would go
    negative, :class:`ReferenceConflict` when ``reference`` already names
    different postings.
    """
    return await _post(db, kind=kind, reference=reference, postings=postings, merchant_id=merchant_id,
                       memo=memo, created_at=created_at)


def _savepoint_or_caller(db: Database, savepoint: bool) -> Any:
    """The post's own (nested) transaction, or none when the caller's will roll back on any error."""
    if not savepoint and db.in_transaction:
        return contextlib.nullcontext()
    return db.transaction()


async def _post(
    db: Database,
    *,
    kind: str,
    reference: str,
    postings: Sequence[Posting],
    merchant_id: str | None,
    memo: str | None,
    created_at: int | None,
    reverses: str | None = None,
    allow_negative: Collection[str] = (),
    savepoint: bool = True,
) -> LedgerTransaction:
    entries = _validated(kind, reference, postings)
    # One connection for the lookup and the write (a no-op inside a caller's
    # transaction): each fresh SQLite connection costs far more than a query.
    async with db.connection():
        # Replays skip the write transaction (and SQLite's writer lock) entirely.
        # Inside a caller's transaction that lock is already held, and the
        # claiming insert below finds a replay just as well, one statement
        # fewer on the common path (a new reference).
        if not db.in_transaction:
            existing = await find_transaction(db, reference)
            if existing is not None:
                return _replayed(existing, kind, entries)
        now = int(time.time()) if created_at is None else created_at
        txn_id = "ltx_" + secrets.token_hex(12)
        async with _savepoint_or_caller(db, savepoint):
            # Claiming the reference first serialises duplicates on PostgreSQL: a
            # concurrent twin waits here, before it has locked any balance row.
            claimed = await db.fetch_one(
                "INSERT INTO ledger_transactions (id, kind, reference, merchant_id, memo, created_at, reverses)"
                " VALUES (:id, :kind, :ref, :mid, :memo, :t, :rev) ON CONFLICT DO NOTHING RETURNING id",
                {"id": txn_id, "kind": kind, "ref": reference, "mid": merchant_id, "memo": memo, "t": now,
                 "rev": reverses},
            )
            if claimed is None:
                existing = await find_transaction(db, reference)
                if existing is None and reverses is not None:
                    existing = await _find_reversal(db, reverses)
                if existing is None:  # pragma: no cover - the conflicting row is visible after the wait
                    raise RuntimeError(f"ledger reference {reference!r} conflicted but is not visible")
                return _replayed(existing, kind, entries)
            await _insert_postings(db, txn_id, entries, now)
            await _apply_balances(db, _net(entries), set(allow_negative), now)
    return LedgerTransaction(txn_id, kind, reference, merchant_id, memo, now, entries, reverses, False)


def _validated(kind: str, reference: str, postings: Sequence[Posting]) -> tuple[Posting, ...]:
    if not kind or not reference:
        raise ValueError("a ledger transaction needs a kind and a reference")
    entries = tuple(postings)
    if len(entries) < 2:
        raise ValueError("a ledger transaction needs at least two postings")
    per_coin: dict[str, int] = defaultdict(int)
    for p in entries:
        if not isinstance(p, Posting):
            raise ValueError(f"not a Posting: {p!r}")
        if not isinstance(p.amount, int) or isinstance(p.amount, bool) or p.amount == 0:
            raise ValueError(f"posting amounts are non-zero ints in base units: {p!r}")
        if not p.account or not p.coin:
            raise ValueError(f"posting needs an account and a coin: {p!r}")
        per_coin[p.coin] += p.amount
    unbalanced = {coin: total for coin, total in per_coin.items() if total != 0}
    if unbalanced:
        raise ValueError(f"postings do not sum to zero per coin: {unbalanced}")
    return entries


def _net(entries: Iterable[Posting]) -> dict[tuple[str, str], int]:
    """Net change per (account, coin), in the one order every writer locks rows in."""
    net: dict[tuple[str, str], int] = defaultdict(int)
    for p in entries:
        net[(p.account, p.coin)] += p.amount
    return {key: net[key] for key in sorted(net) if net[key] != 0}


def _replayed(existing: LedgerTransaction, kind: str, entries: tuple[Posting, ...]) -> LedgerTransaction:
    def key(p: Posting) -> tuple[str, str, int]:
        return (p.account, p.coin, p.amount)

    if existing.kind != kind or sorted(map(key, existing.postings)) != sorted(map(key, entries)):
        raise ReferenceConflict(f"ledger reference {existing.reference!r} already records different postings")
    return LedgerTransaction(existing.id, existing.kind, existing.reference, existing.merchant_id, existing.memo,
                             existing.created_at, existing.postings, existing.reverses, True)


async def _insert_postings(db: Database, txn_id: str, entries: tuple[Posting, ...], now: int) -> None:
    rows, values = [], {"tx": txn_id, "t": now}
    for i, p in enumerate(entries):
        rows.append(f"(:tx, :a{i}, :c{i}, :m{i}, :t)")
        values.update({f"a{i}": p.account, f"c{i}": p.coin, f"m{i}": db.amount_param(p.amount)})
    await db.execute(
        "INSERT INTO ledger_postings (transaction_id, account, coin, amount, created_at) VALUES " + ", ".join(rows),
        values,
    )


async def _apply_balances(db: Database, net: dict[tuple[str, str], int], allowed: set[str], now: int) -> None:
    """Add ``net`` to the cached balances, refusing any overdraft.

    PostgreSQL: one upsert adds the deltas in NUMERIC; it inserts or locks the
    rows in ``net``'s sorted order, so two posts touching the same accounts
    always wait in the same order and cannot deadlock. SQLite: writers are
    already serialised, so read, add in Python, write back.
    """
    if not net:
        return
    keys = list(net)
    values: dict[str, Any] = {"t": now}
    rows = []
    if db.is_postgres:
        for i, (account, coin) in enumerate(keys):
            rows.append(f"(:a{i}, :c{i}, :d{i}, :t)")
            values.update({f"a{i}": account, f"c{i}": coin, f"d{i}": db.amount_param(net[(account, coin)])})
        result = await db.fetch_all(
            "INSERT INTO ledger_balances (account, coin, balance, updated_at) VALUES " + ", ".join(rows)
            + " ON CONFLICT (account, coin) DO UPDATE SET balance = ledger_balances.balance + EXCLUDED.balance,"
            " updated_at = EXCLUDED.updated_at RETURNING account, coin, balance",
            values,
        )
        after = {(r["account"], r["coin"]): Database.to_int(r["balance"]) for r in result}
        _refuse_overdraft(net, after, allowed)
        return
    before = await _cached(db, keys)
    after = {key: before.get(key, 0) + delta for key, delta in net.items()}
    _refuse_overdraft(net, after, allowed)
    for i, (account, coin) in enumerate(keys):
        rows.append(f"(:a{i}, :c{i}, :b{i}, :t)")
        values.update({f"a{i}": account, f"c{i}": coin, f"b{i}": db.amount_param(after[(account, coin)])})
    await db.execute(
        "INSERT INTO ledger_balances (account, coin, balance, updated_at) VALUES " + ", ".join(rows)
        + " ON CONFLICT (account, coin) DO UPDATE SET balance = excluded.balance, updated_at = excluded.updated_at",
        values,
    )


def _refuse_overdraft(net: dict[tuple[str, str], int], after: dict[tuple[str, str], int], allowed: set[str]) -> None:
    # Only a debit is refused: a credit to an account a reversal left negative must still land.
    for (account, coin), delta in net.items():
        new = after[(account, coin)]
        if delta < 0 and new < 0 and not may_go_negative(account) and account not in allowed:
            raise LedgerOverdraft(account, coin, new - delta, delta)


async def _cached(db: Database, keys: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
    accounts = sorted({a for a, _ in keys})
    names = ", ".join(f":a{i}" for i in range(len(accounts)))
    rows = await db.fetch_all(
        f"SELECT account, coin, balance FROM ledger_balances WHERE account IN ({names})",
        {f"a{i}": a for i, a in enumerate(accounts)},
    )
    return {(r["account"], r["coin"]): Database.to_int(r["balance"]) for r in rows}


# -- notification ----------------------------------------------------------------------


async def notify_posted(gateway: "Gateway", transaction: LedgerTransaction) -> None:
    """Fire ``ledger_posted``; call it after the transaction that posted has committed."""
    await gateway.hooks.ledger_posted(transaction=transaction.as_event())


async def post_and_notify(gateway: "Gateway", **kwargs: Any) -> LedgerTransaction:
    """``post`` in its own transaction, then ``ledger_posted`` once (not for a replay).

    Refuses to run inside a caller's transaction, where "committed" would not
    be true yet: there, use ``post`` and ``notify_posted`` after the commit.
    """
    if gateway.db.in_transaction:
        raise RuntimeError("post_and_notify inside a transaction: use post() and notify_posted() after commit")
    transaction = await post(gateway.db, **kwargs)
    if not transaction.replay:
        await notify_posted(gateway, transaction)
    return transaction


# -- operations the gateway uses ----------------------------------------------------------


async def credit_deposit(
    db: Database, *, merchant_id: str, coin: str, chain: str, amount: int, fee: int, reference: str,
    memo: str | None = None,
) -> LedgerTransaction:
    """A confirmed deposit: ``amount`` from the chain, ``fee`` of it to the platform."""
    if not isinstance(amount, int) or amount <= 0:
        raise ValueError("deposit amount must be a positive int")
    if not isinstance(fee, int) or not 0 <= fee <= amount:
        raise ValueError("deposit fee must be an int between 0 and the amount")
    postings = [Posting(world(chain), coin, -amount)]
    if amount - fee:
        postings.append(Posting(merchant_available(merchant_id), coin, amount - fee))
    if fee:
        postings.append(Posting(PLATFORM_FEES, coin, fee))
    return await post(db, kind="deposit", reference=reference, postings=postings, merchant_id=merchant_id, memo=memo)


async def transfer(
    db: Database, *, from_account: str, to_account: str, coin: str, amount: int, reference: str,
    kind: str = "transfer", merchant_id: str | None = None, memo: str | None = None, savepoint: bool = True,
) -> LedgerTransaction:
    """Move ``amount`` of ``coin`` between two accounts (payout reserve/confirm/fail, internal transfers).

    ``savepoint=False`` (inside a caller's transaction only) saves the
    SAVEPOINT/RELEASE round trips of a hot path. Only for a caller whose
    transaction rolls back whenever this raises: an overdraft is found on
    PostgreSQL after the balance rows were written, and without the
    savepoint nothing else undoes them.
    """
    if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
        raise ValueError("transfer amount must be a positive int")
    if from_account == to_account:
        raise ValueError("transfer to the same account")
    if merchant_id is None:
        merchant_id = merchant_of(from_account) or merchant_of(to_account)
    postings = [Posting(from_account, coin, -amount), Posting(to_account, coin, amount)]
    return await _post(db, kind=kind, reference=reference, postings=postings, merchant_id=merchant_id, memo=memo,
                       created_at=None, savepoint=savepoint)


async def reverse(
    db: Database, *, original_reference: str, reference: str, allow_negative: bool = False,
    memo: str | None = None,
) -> LedgerTransaction:
    """Post the exact negation of an earlier transaction, at most once per original.

    Used when a credited deposit leaves the chain in a reorganisation. By
    default it is refused like any posting if the merchant already spent the
    money; with ``allow_negative=True`` (a reorg: the money is gone whatever
    we say) it always lands, and the accounts it drives negative show up in
    ``check_ledger`` until new credits cover them. A second reversal of the
    same original, even under another reference, returns the first.
    """
    original = await find_transaction(db, original_reference)
    if original is None:
        raise LookupError(f"no ledger transaction with reference {original_reference!r}")
    negated = [Posting(p.account, p.coin, -p.amount) for p in original.postings]
    return await _post(
        db, kind="reversal", reference=reference, postings=negated, merchant_id=original.merchant_id,
        memo=memo or f"reverses {original_reference}", created_at=None, reverses=original.id,
        allow_negative={p.account for p in negated} if allow_negative else (),
    )


# -- reads --------------------------------------------------------------------------------

_TXN_SELECT = (
    "SELECT t.id, t.kind, t.reference, t.merchant_id, t.memo, t.created_at, t.reverses,"
    " p.account, p.coin, p.amount FROM ledger_transactions t"
    " LEFT JOIN ledger_postings p ON p.transaction_id = t.id"
)


async def find_transaction(db: Database, reference: str) -> LedgerTransaction | None:
    """The transaction recorded under ``reference``, or None."""
    return _assemble(await db.fetch_all(_TXN_SELECT + " WHERE t.reference = :r ORDER BY p.id", {"r": reference}))


async def transactions_between(db: Database, start: int, end: int, kinds: Sequence[str],
                               limit: int) -> list[LedgerTransaction]:
    """Transactions of ``kinds`` created in [start, end), oldest first, at most ``limit``."""
    names = {f"k{i}": kind for i, kind in enumerate(sorted(set(kinds)))}
    if not names:
        return []
    rows = await db.fetch_all(
        _TXN_SELECT + " WHERE t.id IN (SELECT id FROM ledger_transactions WHERE created_at >= :start"
        f" AND created_at < :end AND kind IN ({', '.join(':' + n for n in names)})"
        " ORDER BY created_at, id LIMIT :limit) ORDER BY t.created_at, t.id, p.id",
        {"start": int(start), "end": int(end), "limit": int(limit), **names})
    grouped: dict[str, list[Any]] = {}
    for row in rows:
        grouped.setdefault(row["id"], []).append(row)
    return [txn for txn in (_assemble(group) for group in grouped.values()) if txn is not None]


async def _find_reversal(db: Database, original_id: str) -> LedgerTransaction | None:
    return _assemble(await db.fetch_all(_TXN_SELECT + " WHERE t.reverses = :o ORDER BY p.id", {"o": original_id}))


def _assemble(rows: list[Any]) -> LedgerTransaction | None:
    if not rows:
        return None
    head = rows[0]
    postings = tuple(Posting(r["account"], r["coin"], Database.to_int(r["amount"])) for r in rows if r["account"])
    return LedgerTransaction(head["id"], head["kind"], head["reference"], head["merchant_id"], head["memo"],
                             int(head["created_at"]), postings, head["reverses"], False)


async def balance(db: Database, account: str, coin: str) -> int:
    """The cached balance of one account in one coin (0 when it never moved)."""
    value = await db.fetch_val(
        "SELECT balance FROM ledger_balances WHERE account = :a AND coin = :c", {"a": account, "c": coin}
    )
    return Database.to_int(value)


def balance_subquery(account_param: str, coin_param: str) -> str:
    """``balance``'s read as a scalar subquery (NULL when it never moved), for a caller that reads it with its
    own rows in one round trip (a transfer's parties and the sender's balance)."""
    return f"(SELECT balance FROM ledger_balances WHERE account = :{account_param} AND coin = :{coin_param})"


async def balances(db: Database, account: str) -> dict[str, int]:
    """Every non-zero balance of ``account`` by coin (negative only after a forced reversal)."""
    rows = await db.fetch_all("SELECT coin, balance FROM ledger_balances WHERE account = :a", {"a": account})
    found = {r["coin"]: Database.to_int(r["balance"]) for r in rows}
    return {coin: found[coin] for coin in sorted(found) if found[coin] != 0}


async def merchant_balances(db: Database, merchant_id: str) -> dict[str, int]:
    """The merchant's available balances (SPEC 4.6), non-zero only."""
    return await balances(db, merchant_available(merchant_id))


# Reconciliation lives in ledger_check.py; re-exported for callers of the ledger API.
from .check import LedgerProblem, LedgerReport, check_ledger  # noqa: E402
