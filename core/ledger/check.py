"""Reconciliation: prove the ledger's books balance (``orbchain ledger check``).

For every (account, coin) the cached balance must equal the sum of its
postings, every transaction must sum to zero per coin, and no account except
the outside world may be negative. Sums are Python ints on SQLite (its SUM
rounds through float) and NUMERIC on PostgreSQL.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..infra.db import Database
from .accounts import may_go_negative

_PAGE = 5000


@dataclass(frozen=True)
class LedgerProblem:
    """One finding of :func:`check_ledger`: kind is balance_mismatch, unbalanced or negative."""

    kind: str
    subject: str
    coin: str
    detail: str

    def line(self) -> str:
        return f"{self.kind}: {self.subject} {self.coin}: {self.detail}"


@dataclass(frozen=True)
class LedgerReport:
    balances_checked: int
    transactions_checked: int
    problems: tuple[LedgerProblem, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        summary = f"{self.balances_checked} balances, {self.transactions_checked} transactions checked"
        if self.ok:
            return [f"ledger OK: {summary}"]
        return [p.line() for p in self.problems] + [f"ledger MISMATCH: {len(self.problems)} problem(s); {summary}"]


async def check_ledger(db: Database) -> LedgerReport:
    """Prove cached balance == sum of postings for every (account, coin), that every
    transaction sums to zero per coin, and that no non-world account is negative.

    Reads one consistent snapshot (a REPEATABLE READ transaction on
    PostgreSQL, the writer lock on SQLite), so live traffic causes no false alarms.
    """
    top_level = not db.in_transaction
    async with db.transaction():
        if db.is_postgres and top_level:
            await db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        rows = await db.fetch_all("SELECT account, coin, balance FROM ledger_balances")
        cached = {(r["account"], r["coin"]): Database.to_int(r["balance"]) for r in rows}
        if db.is_postgres:
            summed, unbalanced = await _sums_in_numeric(db)
        else:
            summed, unbalanced = await _sums_in_python(db)
        transactions = int(await db.fetch_val("SELECT COUNT(*) FROM ledger_transactions"))
    problems = [LedgerProblem("unbalanced", txn, coin, f"postings sum to {total}") for txn, coin, total in unbalanced]
    for account, coin in sorted(set(cached) | set(summed)):
        have, want = cached.get((account, coin), 0), summed.get((account, coin), 0)
        if have != want:
            problems.append(LedgerProblem("balance_mismatch", account, coin, f"cached {have}, postings sum to {want}"))
        if want < 0 and not may_go_negative(account):
            problems.append(LedgerProblem("negative", account, coin, f"balance {want} is below zero"))
    return LedgerReport(len(set(cached) | set(summed)), transactions, tuple(problems))


async def _sums_in_numeric(db: Database) -> tuple[dict[tuple[str, str], int], list[tuple[str, str, int]]]:
    rows = await db.fetch_all("SELECT account, coin, SUM(amount) AS total FROM ledger_postings GROUP BY account, coin")
    summed = {(r["account"], r["coin"]): Database.to_int(r["total"]) for r in rows}
    bad = await db.fetch_all(
        "SELECT transaction_id, coin, SUM(amount) AS total FROM ledger_postings"
        " GROUP BY transaction_id, coin HAVING SUM(amount) <> 0 ORDER BY transaction_id, coin"
    )
    return summed, [(r["transaction_id"], r["coin"], Database.to_int(r["total"])) for r in bad]


async def _sums_in_python(db: Database) -> tuple[dict[tuple[str, str], int], list[tuple[str, str, int]]]:
    # SQLite's SUM would round through float; stream the postings, grouped by
    # transaction, and add them as Python ints.
    summed: dict[tuple[str, str], int] = defaultdict(int)
    unbalanced: list[tuple[str, str, int]] = []
    current = ""
    per_coin: defaultdict[str, int] = defaultdict(int)
    last_txn, last_id = "", 0
    while True:
        rows = await db.fetch_all(
            "SELECT id, transaction_id, account, coin, amount FROM ledger_postings"
            " WHERE transaction_id > :t OR (transaction_id = :t AND id > :i)"
            " ORDER BY transaction_id, id LIMIT :n",
            {"t": last_txn, "i": last_id, "n": _PAGE},
        )
        for r in rows:
            if r["transaction_id"] != current:
                unbalanced += [(current, c, s) for c, s in sorted(per_coin.items()) if s]
                current, per_coin = r["transaction_id"], defaultdict(int)
            amount = Database.to_int(r["amount"])
            summed[(r["account"], r["coin"])] += amount
            per_coin[r["coin"]] += amount
        if len(rows) < _PAGE:
            break
        last_txn, last_id = rows[-1]["transaction_id"], rows[-1]["id"]
    unbalanced += [(current, c, s) for c, s in sorted(per_coin.items()) if s]
    return dict(summed), unbalanced
