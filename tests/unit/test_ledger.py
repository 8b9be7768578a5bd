"""The double-entry ledger (core/ledger/book.py) on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import random

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.types.errors import InsufficientBalance
from orbchain.core.ledger.book import (
    PLATFORM_FEES,
    LedgerOverdraft,
    Posting,
    ReferenceConflict,
    balance,
    check_ledger,
    credit_deposit,
    merchant_available,
    merchant_balances,
    payouts_in_flight,
    post,
    reverse,
    transfer,
    world,
)
from orbchain.core.contract.plugins import hookimpl

ETH_UNIT = 10**18


async def count(db, table: str) -> int:
    return int(await db.fetch_val(f"SELECT COUNT(*) FROM {table}"))


async def totals_per_coin(db) -> dict[str, int]:
    rows = await db.fetch_all("SELECT coin, balance FROM ledger_balances")
    out: dict[str, int] = {}
    for r in rows:
        out[r["coin"]] = out.get(r["coin"], 0) + db.to_int(r["balance"])
    return out


# -- accounts --------------------------------------------------------------------


def test_account_names_are_distinct_and_only_world_may_go_negative():
    names = [merchant_available("m1"), ledger.merchant_held("m1"), PLATFORM_FEES, payouts_in_flight("bitcoin"),
             ledger.chain_hot_wallet("bitcoin"), world("bitcoin")]
    assert len(set(names)) == len(names)
    assert [ledger.may_go_negative(n) for n in names] == [False] * 5 + [True]
    with pytest.raises(ValueError):
        merchant_available("a:b")
    with pytest.raises(ValueError):
        world("")


# -- posting -------------------------------------------------------------------------


async def test_credit_deposit_splits_the_fee(gateway):
    db = gateway.db
    txn = await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=100_000, fee=1_000,
                               reference="dep:1")
    assert not txn.replay and txn.kind == "deposit" and txn.merchant_id == "m1"
    assert await merchant_balances(db, "m1") == {"BTC": 99_000}
    assert await balance(db, PLATFORM_FEES, "BTC") == 1_000
    assert await balance(db, world("bitcoin"), "BTC") == -100_000
    await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=5, fee=0, reference="dep:2")
    assert await merchant_balances(db, "m1") == {"BTC": 99_005}
    assert (await ledger.find_transaction(db, "dep:2")).postings == (
        Posting(world("bitcoin"), "BTC", -5), Posting(merchant_available("m1"), "BTC", 5))
    assert (await check_ledger(db)).ok


async def test_posting_a_reference_again_changes_nothing(gateway):
    db = gateway.db
    first = await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=700, fee=7,
                                 reference="dep:1")
    again = await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=700, fee=7,
                                 reference="dep:1")
    assert again.replay and again.id == first.id and again.postings == first.postings
    assert await merchant_balances(db, "m1") == {"BTC": 693}
    assert await count(db, "ledger_transactions") == 1 and await count(db, "ledger_postings") == 3


async def test_a_reused_reference_with_other_postings_is_a_conflict(gateway):
    db = gateway.db
    await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=700, fee=7, reference="dep:1")
    with pytest.raises(ReferenceConflict):
        await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=800, fee=7, reference="dep:1")
    assert await merchant_balances(db, "m1") == {"BTC": 693}


async def test_twenty_concurrent_posts_of_one_reference_create_one(gateway):
    db = gateway.db
    results = await asyncio.gather(*[
        credit_deposit(db, merchant_id="m1", coin="ETH", chain="ethereum", amount=3 * ETH_UNIT, fee=0,
                       reference="dep:same")
        for _ in range(20)
    ])
    assert len({r.id for r in results}) == 1
    assert sum(not r.replay for r in results) == 1
    assert await count(db, "ledger_transactions") == 1
    assert await merchant_balances(db, "m1") == {"ETH": 3 * ETH_UNIT}
    assert (await check_ledger(db)).ok


@pytest.mark.parametrize("postings, why", [
    ([Posting("a", "BTC", 5), Posting("b", "BTC", -4)], "sum to zero"),
    ([Posting("a", "BTC", 5), Posting("b", "ETH", -5)], "sum to zero"),
    ([Posting("a", "BTC", 0), Posting("b", "BTC", 0)], "non-zero ints"),
    ([Posting("a", "BTC", 1.0), Posting("b", "BTC", -1.0)], "non-zero ints"),
    ([Posting("a", "BTC", True), Posting("b", "BTC", -1)], "non-zero ints"),
    ([Posting(world("bitcoin"), "BTC", 5)], "at least two"),
])
async def test_malformed_postings_are_programming_errors(gateway, postings, why):
    with pytest.raises(ValueError, match=why):
        await post(gateway.db, kind="test", reference="bad", postings=postings)
    assert await count(gateway.db, "ledger_transactions") == 0


async def test_an_overdraft_is_refused_and_writes_nothing(gateway):
    db = gateway.db
    await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=100, fee=0, reference="dep:1")
    with pytest.raises(InsufficientBalance) as info:
        await post(db, kind="payout", reference="out:1", postings=[
            Posting(merchant_available("m1"), "BTC", -101), Posting(world("bitcoin"), "BTC", 101)])
    assert isinstance(info.value, LedgerOverdraft) and info.value.account == merchant_available("m1")
    assert info.value.message == "insufficient balance" and info.value.code == "insufficient_balance"
    assert await ledger.find_transaction(db, "out:1") is None
    assert await count(db, "ledger_postings") == 2
    assert await merchant_balances(db, "m1") == {"BTC": 100}
    # An account that never moved is refused too, and gets no row.
    with pytest.raises(LedgerOverdraft):
        await transfer(db, from_account=merchant_available("m2"), to_account=merchant_available("m1"), coin="BTC",
                       amount=1, reference="t:1")
    assert await count(db, "ledger_balances") == 2


async def test_transfer_rejects_nonsense(gateway):
    for amount in (0, -5, 1.5):
        with pytest.raises(ValueError):
            await transfer(gateway.db, from_account="a", to_account="b", coin="BTC", amount=amount, reference="t")
    with pytest.raises(ValueError):
        await transfer(gateway.db, from_account="a", to_account="a", coin="BTC", amount=1, reference="t")


# -- inside a caller's transaction ------------------------------------------------------


async def test_a_post_rolls_back_with_its_callers_transaction(gateway):
    db = gateway.db
    await db.execute("INSERT INTO counters (name, value) VALUES ('payouts', 0)")
    with pytest.raises(RuntimeError, match="after post"):
        async with db.transaction():
            await db.execute("UPDATE counters SET value = 1 WHERE name = 'payouts'")
            await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=10, fee=1,
                                 reference="dep:1")
            raise RuntimeError("after post")
    assert await count(db, "ledger_transactions") == 0 and await count(db, "ledger_balances") == 0
    assert await db.fetch_val("SELECT value FROM counters WHERE name = 'payouts'") == 0
    async with db.transaction():
        await db.execute("UPDATE counters SET value = 2 WHERE name = 'payouts'")
        await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=10, fee=1, reference="dep:1")
    assert await merchant_balances(db, "m1") == {"BTC": 9}
    assert await db.fetch_val("SELECT value FROM counters WHERE name = 'payouts'") == 2


async def test_an_overdraft_inside_a_callers_transaction_rolls_back_only_the_post(gateway):
    db = gateway.db
    await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=10, fee=0, reference="dep:1")
    async with db.transaction():
        await db.execute("INSERT INTO counters (name, value) VALUES ('attempts', 1)")
        with pytest.raises(InsufficientBalance):
            await transfer(db, from_account=merchant_available("m1"), to_account=payouts_in_flight("bitcoin"),
                           coin="BTC", amount=11, reference="payout:1:reserve")
        # The savepoint is gone, the outer transaction still works.
        await transfer(db, from_account=merchant_available("m1"), to_account=payouts_in_flight("bitcoin"),
                       coin="BTC", amount=4, reference="payout:2:reserve")
    assert await db.fetch_val("SELECT value FROM counters WHERE name = 'attempts'") == 1
    assert await merchant_balances(db, "m1") == {"BTC": 6}
    assert await ledger.find_transaction(db, "payout:1:reserve") is None
    assert (await check_ledger(db)).ok


async def test_without_a_savepoint_an_overdraft_leaves_nothing_once_the_caller_rolls_back(gateway):
    db = gateway.db
    await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=10, fee=0, reference="dep:1")
    with pytest.raises(InsufficientBalance):
        async with db.transaction():
            await db.execute("INSERT INTO counters (name, value) VALUES ('attempts', 1)")
            await transfer(db, from_account=merchant_available("m1"), to_account=merchant_available("m2"),
                           coin="BTC", amount=11, reference="transfer:1", savepoint=False)
    assert await count(db, "counters") == 0 and await count(db, "ledger_transactions") == 1
    assert await merchant_balances(db, "m1") == {"BTC": 10} and await merchant_balances(db, "m2") == {}
    async with db.transaction():  # and the hot path itself: one transaction, the money moves
        moved = await transfer(db, from_account=merchant_available("m1"), to_account=merchant_available("m2"),
                               coin="BTC", amount=4, reference="transfer:2", savepoint=False)
    assert not moved.replay and await merchant_balances(db, "m2") == {"BTC": 4}
    async with db.transaction():  # a replay inside a transaction is found by the claiming insert
        again = await transfer(db, from_account=merchant_available("m1"), to_account=merchant_available("m2"),
                               coin="BTC", amount=4, reference="transfer:2", savepoint=False)
    assert again.replay and again.id == moved.id and await merchant_balances(db, "m2") == {"BTC": 4}
    assert (await check_ledger(db)).ok


# -- payouts and reversals ------------------------------------------------------------------


async def test_payout_moves_through_in_flight(gateway):
    db = gateway.db
    avail, flight = merchant_available("m1"), payouts_in_flight("ethereum")
    await credit_deposit(db, merchant_id="m1", coin="ETH", chain="ethereum", amount=10 * ETH_UNIT, fee=ETH_UNIT // 10,
                         reference="dep:1")
    for n in (1, 2):
        await transfer(db, from_account=avail, to_account=flight, coin="ETH", amount=2 * ETH_UNIT,
                       reference=f"payout:{n}:reserve", kind="payout_reserve")
    assert await balance(db, flight, "ETH") == 4 * ETH_UNIT
    await transfer(db, from_account=flight, to_account=world("ethereum"), coin="ETH", amount=2 * ETH_UNIT,
                   reference="payout:1:confirm", kind="payout_confirm", merchant_id="m1")
    await transfer(db, from_account=flight, to_account=avail, coin="ETH", amount=2 * ETH_UNIT,
                   reference="payout:2:fail", kind="payout_fail", merchant_id="m1")
    assert await merchant_balances(db, "m1") == {"ETH": 10 * ETH_UNIT - ETH_UNIT // 10 - 2 * ETH_UNIT}
    assert await ledger.balances(db, flight) == {}
    assert (await check_ledger(db)).ok


async def test_reversal_is_refused_by_default_once_the_money_is_spent(gateway):
    db = gateway.db
    await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=1000, fee=10, reference="dep:1")
    await transfer(db, from_account=merchant_available("m1"), to_account=world("bitcoin"), coin="BTC", amount=900,
                   reference="out:1")
    with pytest.raises(InsufficientBalance):
        await reverse(db, original_reference="dep:1", reference="dep:1:reorg")
    assert await merchant_balances(db, "m1") == {"BTC": 90}


async def test_a_reorg_reversal_with_allow_negative_always_lands_once(gateway):
    db = gateway.db
    await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=1000, fee=10, reference="dep:1")
    await transfer(db, from_account=merchant_available("m1"), to_account=world("bitcoin"), coin="BTC", amount=900,
                   reference="out:1")
    rev = await reverse(db, original_reference="dep:1", reference="dep:1:reorg", allow_negative=True)
    assert rev.kind == "reversal" and rev.merchant_id == "m1" and not rev.replay
    assert await merchant_balances(db, "m1") == {"BTC": -900}
    assert await balance(db, PLATFORM_FEES, "BTC") == 0
    # Once per original, whatever reference a caller picks.
    again = await reverse(db, original_reference="dep:1", reference="another", allow_negative=True)
    assert again.replay and again.id == rev.id
    assert await merchant_balances(db, "m1") == {"BTC": -900}
    # The negative merchant is what the operator must see.
    report = await check_ledger(db)
    assert not report.ok
    assert [p.kind for p in report.problems] == ["negative"]
    assert any(merchant_available("m1") in line for line in report.lines())
    # A later deposit still lands (credits are never refused) and pays the debt back.
    await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=500, fee=0, reference="dep:2")
    assert await merchant_balances(db, "m1") == {"BTC": -400}
    with pytest.raises(InsufficientBalance):
        await transfer(db, from_account=merchant_available("m1"), to_account=world("bitcoin"), coin="BTC", amount=1,
                       reference="out:2")
    await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=400, fee=0, reference="dep:3")
    assert await merchant_balances(db, "m1") == {} and (await check_ledger(db)).ok


async def test_reversing_an_unknown_reference_is_an_error(gateway):
    with pytest.raises(LookupError):
        await reverse(gateway.db, original_reference="nope", reference="r")


# -- large amounts ------------------------------------------------------------------------------


@pytest.mark.parametrize("amount", [2**64 + 1, 123_456_789 * ETH_UNIT + 1, 10**77 - 1, 10**77 + 12345])
async def test_amounts_up_to_78_digits_are_exact(gateway, amount):
    db = gateway.db
    fee = amount // 97
    await credit_deposit(db, merchant_id="m1", coin="ETH", chain="ethereum", amount=amount, fee=fee, reference="d")
    await transfer(db, from_account=merchant_available("m1"), to_account=merchant_available("m2"), coin="ETH",
                   amount=amount - fee - 1, reference="t")
    assert await merchant_balances(db, "m1") == {"ETH": 1}
    assert await merchant_balances(db, "m2") == {"ETH": amount - fee - 1}
    assert await balance(db, world("ethereum"), "ETH") == -amount
    assert (await ledger.find_transaction(db, "d")).postings[0].amount == -amount
    assert await totals_per_coin(db) == {"ETH": 0}
    assert (await check_ledger(db)).ok


# -- reconciliation -------------------------------------------------------------------------------


async def test_check_ledger_names_each_kind_of_damage(gateway):
    db = gateway.db
    await credit_deposit(db, merchant_id="m1", coin="BTC", chain="bitcoin", amount=2**70, fee=3, reference="d1")
    await credit_deposit(db, merchant_id="m2", coin="BTC", chain="bitcoin", amount=50, fee=0, reference="d2")
    assert (await check_ledger(db)).lines() == ["ledger OK: 4 balances, 2 transactions checked"]
    await db.execute("UPDATE ledger_balances SET balance = :b WHERE account = :a",
                     {"b": db.amount_param(2**70), "a": merchant_available("m1")})
    await db.execute("DELETE FROM ledger_balances WHERE account = :a", {"a": merchant_available("m2")})
    txn = await ledger.find_transaction(db, "d2")
    await db.execute(
        "INSERT INTO ledger_postings (transaction_id, account, coin, amount, created_at) VALUES (:t, 'x', 'BTC', :m, 0)",
        {"t": txn.id, "m": db.amount_param(-7)})
    report = await check_ledger(db)
    assert not report.ok
    found = {(p.kind, p.subject) for p in report.problems}
    assert found == {("balance_mismatch", merchant_available("m1")), ("balance_mismatch", merchant_available("m2")),
                     ("unbalanced", txn.id), ("balance_mismatch", "x"), ("negative", "x")}
    assert report.lines()[-1].startswith("ledger MISMATCH: 5 problem(s)")


# -- notification -------------------------------------------------------------------------------------


async def test_post_and_notify_fires_ledger_posted_once_after_commit(gateway):
    seen = []

    class Audit:
        @hookimpl
        def ledger_posted(self, gateway, transaction):
            seen.append(transaction)

    gateway.pm.register(Audit())
    kwargs = dict(kind="adjust", reference="adj:1", postings=[Posting(world("bitcoin"), "BTC", -5),
                                                                Posting(PLATFORM_FEES, "BTC", 5)])
    first = await ledger.post_and_notify(gateway, **kwargs)
    await ledger.post_and_notify(gateway, **kwargs)
    assert [t["id"] for t in seen] == [first.id]
    assert seen[0]["postings"][1] == {"account": PLATFORM_FEES, "coin": "BTC", "amount": 5}
    with pytest.raises(RuntimeError, match="inside a transaction"):
        async with gateway.db.transaction():
            await ledger.post_and_notify(gateway, **{**kwargs, "reference": "adj:2"})


# -- concurrency --------------------------------------------------------------------------------------


async def test_concurrent_spending_never_overdraws(gateway):
    """150 tasks race to spend and shuffle one merchant's money on both databases."""
    db = gateway.db
    rng = random.Random(7)
    merchants = ["m1", "m2", "m3", "m4"]
    await credit_deposit(db, merchant_id="m1", coin="ETH", chain="ethereum", amount=1000 * ETH_UNIT, fee=0,
                         reference="seed")
    outcomes = {"ok": 0, "refused": 0}

    async def one(n: int) -> None:
        src, dst = rng.sample(merchants, 2)
        to = world("ethereum") if n % 3 == 0 else merchant_available(dst)
        try:
            await transfer(db, from_account=merchant_available(src), to_account=to, coin="ETH",
                           amount=rng.randint(1, 40) * ETH_UNIT, reference=f"t:{n}")
            outcomes["ok"] += 1
        except InsufficientBalance:
            outcomes["refused"] += 1

    await asyncio.gather(*[one(n) for n in range(150)])
    assert outcomes["ok"] + outcomes["refused"] == 150 and outcomes["ok"] > 10
    for m in merchants:
        assert all(v >= 0 for v in (await merchant_balances(db, m)).values())
    assert await totals_per_coin(db) == {"ETH": 0}
    assert (await check_ledger(db)).ok
