"""What an account-model chain holds, for the custody check: shared by the EVM and Tron plugins.

Why: both hold each coin at addresses (the hot wallet, each credited deposit address, the operator's cold
ones) and both add back what their mined, still-booked payouts took; only how a balance is read and how a
mined payout is judged differ, so each plugin passes those in and keeps its own RPC.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence

from ..api import CustodyPlace, Holding

Pairs = Sequence[tuple[str, str]]  # (coin, address)
Balances = Callable[[Any, Pairs, set[str]], Awaitable[Mapping[str, int]]]


async def account_holdings(adapter: Any, *, hot: str, deposit_pairs: Pairs, cold: Iterable[str],
                           balances: Balances, in_flight: Mapping[str, int]) -> list[Holding]:
    """Per coin: the hot wallet, the deposit addresses and the cold ones as the node says, plus what mined
    payouts still booked in flight took. ``balances`` adds a coin it could not read to its ``silent`` set:
    that coin is left out (the check says "unavailable"), never reported as zero."""
    cold = list(cold)
    silent: set[str] = set()
    hot_totals = await balances(adapter, [(coin, hot) for coin in adapter.coins], silent)
    deposit_totals = await balances(adapter, deposit_pairs, silent)
    cold_totals = await balances(adapter, [(coin, address) for address in cold for coin in adapter.coins], silent)
    addresses = len({address for _, address in deposit_pairs})
    holdings = []
    for coin in (c for c in adapter.coins if c not in silent):
        holdings += [Holding(coin, CustodyPlace.HOT_WALLET, hot_totals[coin], 1),
                     Holding(coin, CustodyPlace.DEPOSIT_ADDRESSES, deposit_totals[coin], addresses)]
        if in_flight[coin]:
            holdings.append(Holding(coin, CustodyPlace.PAYOUTS_IN_FLIGHT, in_flight[coin], node_checked=False))
        if cold:
            holdings.append(Holding(coin, CustodyPlace.COLD, cold_totals[coin], len(cold)))
    return holdings
