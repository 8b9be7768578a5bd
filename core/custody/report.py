"""The value objects of a custody check, and how a report reads.

Why apart from the check: the CLI, the job, the store and /metrics all read
a report; none of them needs to know how the figures were gathered.

Per coin, two comparisons (docs/operations.md, "Custody check"):

* **owed**: what the gateway owes (merchants' available and held balances,
  payouts in flight, other plugins' accounts such as swap venues, and the
  platform's own net take, fees earned minus network fees paid, when
  positive) against what the nodes show it holds. Less is a *shortfall*
  (loud: exit 1, ERROR, metric, payouts may pause); more is a *surplus*
  (the operator's own float, reported at INFO).
* **books**: what the ledger's custody accounts (``world:<chain>`` and its
  ``:hot_wallet``/``:deposit_addresses`` sub-accounts, negated: value that
  came in and did not leave) say the chain holds, against the same node
  figures. Unequal means a movement the books never saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..types.chains import CustodyPlace, Holding

OK, SURPLUS, SHORTFALL = "ok", "surplus", "shortfall"
UNSUPPORTED, UNAVAILABLE = "unsupported", "unavailable"
CHECKED = (OK, SURPLUS, SHORTFALL)
# What a payout can spend now: the hot wallet and, on a UTXO chain, the deposit outputs it signs from directly.
SPENDABLE_PLACES = (CustodyPlace.HOT_WALLET, CustodyPlace.DEPOSIT_ADDRESSES)


@dataclass(frozen=True)
class Owed:
    """What the ledger says the gateway owes of one coin, by kind, in base units."""

    merchants_available: int = 0
    merchants_held: int = 0
    payouts_in_flight: int = 0
    platform_fees: int = 0
    network_fees: int = 0  # an expense: zero or negative
    other: int = 0  # plugins' own accounts (swap venues, transfer holds, ...)

    @property
    def platform_net(self) -> int:
        return self.platform_fees + self.network_fees

    @property
    def total(self) -> int:
        """Owed to others, plus the platform's net take only when it is positive (its own money,
        never a debt to itself): network fees beyond the fees earned come out of merchants' cover."""
        return (self.merchants_available + self.merchants_held + self.payouts_in_flight + self.other
                + max(0, self.platform_net))


@dataclass(frozen=True)
class CoinCustody:
    """One coin's result: ``status`` is ok, surplus, shortfall, unsupported or unavailable."""

    coin: str
    status: str
    owed: Owed
    books: int  # what the ledger's custody (world) accounts say the chains hold
    chains: tuple[str, ...] = ()
    holdings: tuple[Holding, ...] = ()
    error: str | None = None

    @property
    def held(self) -> int | None:
        """What the nodes show, None when they could not say (never zero for "unknown")."""
        return sum(h.amount for h in self.holdings) if self.status in CHECKED else None

    @property
    def hot(self) -> int | None:
        """What the node says a payout can spend now (neither cold nor in flight); None when not checked."""
        if self.status not in CHECKED:
            return None
        return sum(h.amount for h in self.holdings if h.place in SPENDABLE_PLACES and h.node_checked)

    @property
    def difference(self) -> int | None:
        """held - owed: negative is a shortfall; None when not checked."""
        held = self.held
        return None if held is None else held - self.owed.total

    @property
    def books_difference(self) -> int | None:
        held = self.held
        return None if held is None else held - self.books

    @property
    def shortfall(self) -> int:
        return max(0, -(self.difference or 0))


@dataclass(frozen=True)
class CustodyReport:
    checked_at: int
    coins: tuple[CoinCustody, ...] = field(default_factory=tuple)

    @property
    def shortfalls(self) -> tuple[CoinCustody, ...]:
        return tuple(c for c in self.coins if c.status == SHORTFALL)

    @property
    def unavailable(self) -> tuple[CoinCustody, ...]:
        return tuple(c for c in self.coins if c.status == UNAVAILABLE)

    @property
    def ok(self) -> bool:
        return not self.shortfalls and not self.unavailable

    def by_coin(self) -> Mapping[str, CoinCustody]:
        return {c.coin: c for c in self.coins}

    def lines(self, fmt: Callable[[str, int], str]) -> list[str]:
        """The report as an operator reads it; ``fmt(coin, units)`` renders an amount."""
        out: list[str] = []
        for c in self.coins:
            chains = ",".join(c.chains) or "-"
            if c.status == UNSUPPORTED:
                out.append(f"{c.coin} [{chains}]: not supported by its chain adapter"
                           f" (owed {fmt(c.coin, c.owed.total)})")
                continue
            if c.status == UNAVAILABLE:
                out.append(f"{c.coin} [{chains}]: UNAVAILABLE, the node could not say: {c.error}")
                continue
            held, diff, books_diff = c.held or 0, c.difference or 0, c.books_difference or 0
            word = {OK: "ok", SURPLUS: "surplus", SHORTFALL: "SHORTFALL"}[c.status]
            out.append(f"{c.coin} [{chains}]: {word} {fmt(c.coin, diff)}: held {fmt(c.coin, held)},"
                       f" owed {fmt(c.coin, c.owed.total)}; books {fmt(c.coin, c.books)}"
                       f" (node - books {fmt(c.coin, books_diff)})")
            for h in c.holdings:
                source = "node" if h.node_checked else "books"
                out.append(f"  {h.place}: {fmt(c.coin, h.amount)} ({h.count} asked, {source})")
            o = c.owed
            out.append(f"  owed: merchants {fmt(c.coin, o.merchants_available)} available"
                       f" + {fmt(c.coin, o.merchants_held)} held, payouts in flight {fmt(c.coin, o.payouts_in_flight)},"
                       f" platform fees {fmt(c.coin, o.platform_fees)}, network fees {fmt(c.coin, o.network_fees)},"
                       f" other {fmt(c.coin, o.other)}")
        short = ", ".join(f"{c.coin} {fmt(c.coin, c.shortfall)}" for c in self.shortfalls)
        if short:
            out.append(f"custody SHORTFALL: {short}")
        elif self.unavailable:
            out.append("custody UNPROVEN: " + ", ".join(c.coin for c in self.unavailable) + " could not be checked")
        else:
            out.append(f"custody OK: {sum(c.status in CHECKED for c in self.coins)} coin(s) checked")
        return out


def seen_twice(first: CustodyReport, second: CustodyReport) -> CustodyReport:
    """``second``, except that a coin short in only one of the two looks keeps its other result.

    Why: the ledger and the nodes are read one after the other, so a deposit
    credited or a payout settled in between can look like a shortfall for
    one read; money really gone is short in both. The check looks again only
    when the first look found a shortfall.
    """
    before = first.by_coin()
    coins = []
    for coin in second.coins:
        earlier = before.get(coin.coin)
        if earlier is not None and (coin.status == SHORTFALL) != (earlier.status == SHORTFALL):
            coins.append(earlier if coin.status == SHORTFALL else coin)
        else:
            coins.append(coin)
    return CustodyReport(second.checked_at, tuple(coins))
