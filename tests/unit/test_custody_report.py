"""The custody check's one rule (core/custody/check.py ``judge``, report.py ``Owed``), without a node."""

from __future__ import annotations

from orbchain.core.types.chains import CustodyPlace, Holding
from orbchain.core.custody.check import classify, world_chain
from orbchain.core.custody.report import OK, SHORTFALL, SURPLUS, CustodyReport, Owed, seen_twice
from orbchain.core.custody.check import judge


def held(amount: int) -> list[Holding]:
    return [Holding("LTC", CustodyPlace.DEPOSIT_ADDRESSES, amount, 1)]


def test_accounts_are_sorted_into_what_is_owed_and_what_the_books_hold():
    assert classify("merchant:m1:available") == "merchants_available"
    assert classify("merchant:m1:held") == "merchants_held"
    assert classify("payouts:litecoin:in_flight") == "payouts_in_flight"
    assert classify("platform:fees") == "platform_fees" and classify("platform:network_fees") == "network_fees"
    assert classify("swap:devnet") == "other" and classify("world:litecoin:hot_wallet") == "world"
    assert world_chain("world:litecoin") == world_chain("world:litecoin:deposit_addresses") == "litecoin"


def test_network_fees_beyond_the_fees_earned_are_owed_to_merchants_not_netted_away():
    covered = Owed(merchants_available=69_000_000, platform_fees=1_000_000, network_fees=-400)
    assert covered.total == 69_999_600  # the platform's positive net take is counted
    overspent = Owed(merchants_available=69_000_000, platform_fees=100, network_fees=-400)
    assert overspent.total == 69_000_000  # never below what merchants are owed
    assert judge("LTC", overspent, 68_999_700, ("litecoin",), held(68_999_700)).shortfall == 300


def test_a_shortfall_is_exact_and_a_surplus_is_no_alarm():
    owed = Owed(merchants_available=99_000_000, platform_fees=1_000_000)
    assert judge("LTC", owed, 10**8, ("litecoin",), held(10**8)).status == OK
    short = judge("LTC", owed, 10**8, ("litecoin",), held(10**8 - 12_345))
    assert (short.status, short.shortfall, short.difference, short.books_difference) == (SHORTFALL, 12_345, -12_345,
                                                                                          -12_345)
    extra = judge("LTC", owed, 10**8, ("litecoin",), held(10**8 + 5))
    assert extra.status == SURPLUS and extra.shortfall == 0
    report = CustodyReport(0, (short, ))
    assert not report.ok and report.lines(lambda coin, units: str(units))[-1] == "custody SHORTFALL: LTC 12345"
    assert CustodyReport(0, (extra,)).lines(lambda coin, units: str(units))[-1] == "custody OK: 1 coin(s) checked"


def test_a_shortfall_counts_only_when_both_looks_see_it():
    owed = Owed(merchants_available=10**8)
    short, covered = (judge("LTC", owed, 10**8, ("litecoin",), held(10**8 - 7)),
                      judge("LTC", owed, 10**8, ("litecoin",), held(10**8)))
    assert seen_twice(CustodyReport(1, (short,)), CustodyReport(2, (covered,))).shortfalls == ()
    assert seen_twice(CustodyReport(1, (covered,)), CustodyReport(2, (short,))).shortfalls == ()
    again = judge("LTC", owed, 10**8, ("litecoin",), held(10**8 - 9))
    assert seen_twice(CustodyReport(1, (short,)), CustodyReport(2, (again,))).shortfalls == (again,)
