"""Property test: random money movements against a simple in-memory model, on both databases.

Hypothesis draws sequences of deposits, payouts to the world, transfers
between merchants, reversals, reused references and operations that must
fail (overdrafts, and a caller's transaction that raises after posting).
After every sequence the database must agree with the model exactly, no
coin may have been created or lost, and ``check_ledger`` must pass.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from orbchain.core.ledger import book as ledger
from orbchain.core.types.errors import InsufficientBalance
from orbchain.core.ledger.book import Posting, ReferenceConflict, may_go_negative, merchant_available, world

CHAINS = {"BTC": "bitcoin", "ETH": "ethereum"}
MERCHANTS = ["m0", "m1", "m2"]
# Few enough references that some collide (a conflict); amounts up to 18-decimal, >2**64 sizes.
refs = st.integers(0, 40).map(lambda n: f"ref:{n}")
coins = st.sampled_from(sorted(CHAINS))
amounts = st.one_of(st.integers(1, 1000), st.integers(2**64, 10**30))
merchants = st.sampled_from(MERCHANTS)

deposit = st.tuples(st.just("deposit"), refs, merchants, coins, amounts, st.integers(0, 100))
# Spending is a percentage of the model's current balance, so most spends can
# succeed and those above 100% must be refused.
spend_pct = st.one_of(st.integers(1, 100), st.integers(101, 150))
picks = st.integers(0, 20)  # which funded (merchant, coin) spends
payout = st.tuples(st.just("payout"), refs, picks, spend_pct)
move = st.tuples(st.just("transfer"), refs, picks, merchants, spend_pct)
reversal = st.tuples(st.just("reverse"), st.integers(0, 20))
repeat = st.tuples(st.just("repeat"), st.integers(0, 30))
money_op = st.one_of(deposit, payout, move)
doomed = st.tuples(st.just("rollback"), money_op)
operations = st.lists(st.one_of(deposit, deposit, deposit, payout, payout, move, move, reversal, repeat, doomed),
                      max_size=40)


class Boom(Exception):
    """Raised inside a caller's transaction after a successful post."""


@dataclass
class Model:
    """What the ledger should contain, computed the obvious way."""

    balances: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    posted: dict[str, tuple[str, tuple]] = field(default_factory=dict)
    issued: list[tuple] = field(default_factory=list)
    deposits: list[str] = field(default_factory=list)
    reversed: set[str] = field(default_factory=set)

    def outcome(self, ref: str, kind: str, postings: list[Posting]) -> str:
        content = (kind, tuple(sorted((p.account, p.coin, p.amount) for p in postings)))
        if ref in self.posted:
            return "replay" if self.posted[ref] == content else "conflict"
        net: dict[tuple[str, str], int] = defaultdict(int)
        for p in postings:
            net[(p.account, p.coin)] += p.amount
        for key, delta in net.items():
            if delta < 0 and self.balances[key] + delta < 0 and not may_go_negative(key[0]):
                return "overdraft"
        return "ok"

    def apply(self, ref: str, kind: str, postings: list[Posting]) -> None:
        self.posted[ref] = (kind, tuple(sorted((p.account, p.coin, p.amount) for p in postings)))
        for p in postings:
            self.balances[(p.account, p.coin)] += p.amount


def resolve(op: tuple, model: Model) -> tuple:
    """Pick a funded source and turn the spend percentage into an amount (at least 1)."""
    if op[0] not in ("payout", "transfer") or isinstance(op[2], str):
        return op  # not a spend, or already concrete (a repeat)
    funded = sorted(k for k, v in model.balances.items() if v > 0 and k[0].endswith(":available"))
    account, coin = funded[op[2] % len(funded)] if funded else (merchant_available(MERCHANTS[op[2] % 3]), "BTC")
    src = account.split(":")[1]
    amount = max(1, model.balances[(account, coin)] * op[-1] // 100)
    if op[0] == "payout":
        return ("payout", op[1], src, coin, amount)
    return ("transfer", op[1], src, op[3], coin, amount)


def plan(op: tuple) -> tuple[str, str, list[Posting]]:
    """The (reference, kind, postings) that an operation asks the ledger for."""
    if op[0] == "deposit":
        _, ref, m, coin, amount, fee_pct = op
        fee = amount * fee_pct // 100
        postings = [Posting(world(CHAINS[coin]), coin, -amount)]
        postings += [Posting(merchant_available(m), coin, amount - fee)] if amount - fee else []
        postings += [Posting(ledger.PLATFORM_FEES, coin, fee)] if fee else []
        return ref, "deposit", postings
    if op[0] == "payout":
        _, ref, m, coin, amount = op
        return ref, "transfer", [Posting(merchant_available(m), coin, -amount), Posting(world(CHAINS[coin]), coin, amount)]
    _, ref, src, dst, coin, amount = op
    return ref, "transfer", [Posting(merchant_available(src), coin, -amount), Posting(merchant_available(dst), coin, amount)]


async def run(db, op: tuple) -> None:
    if op[0] == "deposit":
        _, ref, m, coin, amount, fee_pct = op
        await ledger.credit_deposit(db, merchant_id=m, coin=coin, chain=CHAINS[coin], amount=amount,
                                    fee=amount * fee_pct // 100, reference=ref)
    elif op[0] == "payout":
        _, ref, m, coin, amount = op
        await ledger.transfer(db, from_account=merchant_available(m), to_account=world(CHAINS[coin]), coin=coin,
                              amount=amount, reference=ref)
    else:
        _, ref, src, dst, coin, amount = op
        await ledger.transfer(db, from_account=merchant_available(src), to_account=merchant_available(dst),
                              coin=coin, amount=amount, reference=ref)


async def step(db, model: Model, op: tuple, n: int) -> None:
    if op[0] == "reverse":
        if not model.deposits:
            return
        original = model.deposits[op[1] % len(model.deposits)]
        kind, lines = model.posted[original]
        negated = [Posting(a, c, -x) for a, c, x in lines]
        expected = "replay" if original in model.reversed else model.outcome(f"rev:{n}", "reversal", negated)
        event(f"reverse: {expected}")
        try:
            txn = await ledger.reverse(db, original_reference=original, reference=f"rev:{n}")
        except InsufficientBalance:
            assert expected == "overdraft"
            return
        assert txn.replay == (expected == "replay"), expected
        if expected == "ok":
            model.apply(f"rev:{n}", "reversal", negated)
            model.reversed.add(original)
        return
    if op[0] == "repeat":
        if not model.issued:
            return
        op = model.issued[op[1] % len(model.issued)]
    if op[0] == "rollback":
        event("rollback")
        inner = resolve(op[1], model)
        if inner[0] == "transfer" and inner[2] == inner[3]:
            return  # a transfer to oneself is a ValueError, tested elsewhere
        try:
            async with db.transaction():
                await run(db, inner)
                raise Boom()
        except (Boom, InsufficientBalance, ReferenceConflict):
            return  # whatever happened inside, the model does not change
    op = resolve(op, model)
    if op[0] == "transfer" and op[2] == op[3]:
        return
    model.issued.append(op)
    ref, kind, postings = plan(op)
    expected = model.outcome(ref, kind, postings)
    event(f"{op[0]}: {expected}")
    try:
        await run(db, op)
    except InsufficientBalance:
        assert expected == "overdraft", expected
        return
    except ReferenceConflict:
        assert expected == "conflict", expected
        return
    assert expected in ("ok", "replay"), expected
    if expected == "ok":
        model.apply(ref, kind, postings)
        if kind == "deposit":
            model.deposits.append(ref)


async def reset(db) -> None:
    async with db.transaction():
        for table in ("ledger_postings", "ledger_balances", "ledger_transactions"):
            await db.execute(f"DELETE FROM {table}")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
async def test_random_sequences_agree_with_the_model(gateway, ops):
    db = gateway.db
    await reset(db)
    model = Model()
    for n, op in enumerate(ops):
        await step(db, model, op, n)

    rows = await db.fetch_all("SELECT account, coin, balance FROM ledger_balances")
    stored = {(r["account"], r["coin"]): db.to_int(r["balance"]) for r in rows}
    assert {k: v for k, v in stored.items() if v} == {k: v for k, v in model.balances.items() if v}
    totals: dict[str, int] = defaultdict(int)
    for (account, coin), value in stored.items():
        totals[coin] += value
        assert value >= 0 or may_go_negative(account), (account, coin, value)
    assert all(total == 0 for total in totals.values()), dict(totals)
    report = await ledger.check_ledger(db)
    assert report.ok, report.lines()
    assert report.transactions_checked == len(model.posted)
