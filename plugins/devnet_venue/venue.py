"""The devnet's simulated exchange: rates from the coins' development prices, knobs for every outcome.

It takes the source coin from the books itself (``funded=True``), so with
the devnet chain a swap completes in ``make run`` with nothing else running.
Tests turn the knobs on the instance (``venues_of(gateway)["devnet"].knobs``,
``venues_of`` from ``orbchain.plugins.swaps.venue_registry``): a rate per
pair, the venue fee, a delay before an order finishes, a short delivery, and
failures (unavailable, refused at creation, failed exchange).

Orders live in this process's memory, keyed by the gateway's swap id, so
``create_swap`` is idempotent and a retried call returns the same order; a
restarted process forgets them (the gateway then sees "unknown order" and
refunds the swap), which is fine for a development venue.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from decimal import ROUND_DOWN, ROUND_UP, Decimal
from typing import Callable

from ...api import Coin, CoinRegistry
from ..swaps.venues import (
    EXCHANGING, FAILED, FINISHED, REFUNDED, SwapVenue, VenueOrder, VenueQuote, VenueRefused, VenueStatus,
    VenueUnavailable, WAITING,
)

QUOTE_SECONDS = 600


@dataclass
class Knobs:
    """What a test (or ``[plugin.devnet_venue]``) sets. Rates are target coin units per source coin unit."""

    rates: dict[str, Decimal] = field(default_factory=dict)  # "BTC/ETH" -> Decimal
    fee_bps: int = 50
    delay_seconds: int = 0
    short_bps: int = 0          # delivers this much less than it promised at creation
    promise_short_bps: int = 0  # promises (VenueOrder.to_amount) this much less than the quote
    min_usd: Decimal = Decimal("1")
    unavailable: bool = False   # every call raises VenueUnavailable (a timeout)
    refuse_create: bool = False  # create_swap raises VenueRefused
    fail_exchange: bool = False  # orders end FAILED (the source waits for a refund)


@dataclass
class _Order:
    swap_id: str
    quote: VenueQuote
    promised: int
    created_at: int
    status: VenueStatus


def _hash(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()


class DevnetVenue(SwapVenue):
    name = "devnet"

    def __init__(self, coins: CoinRegistry, clock: Callable[[], int], knobs: Knobs | None = None) -> None:
        self.coins = coins
        self.clock = clock
        self.knobs = knobs or Knobs()
        self.orders: dict[str, _Order] = {}
        self.create_calls = 0

    # -- pricing ---------------------------------------------------------------------------

    def _priced(self, symbol: str) -> Coin | None:
        coin = self.coins.get(symbol)
        return coin if coin is not None and coin.dev_price_usd else None

    def supports(self, from_coin: str, to_coin: str) -> bool:
        source, target = self._priced(from_coin), self._priced(to_coin)
        return source is not None and target is not None and from_coin != to_coin and target.payable

    def rate(self, from_coin: str, to_coin: str) -> Decimal:
        """Target coin units per source coin unit, before the fee."""
        override = self.knobs.rates.get(f"{from_coin}/{to_coin}")
        if override is not None:
            return Decimal(override)
        source, target = self._priced(from_coin), self._priced(to_coin)
        assert source is not None and target is not None and source.dev_price_usd and target.dev_price_usd
        return Decimal(source.dev_price_usd) / Decimal(target.dev_price_usd)

    def _check(self) -> None:
        if self.knobs.unavailable:
            raise VenueUnavailable("devnet venue unavailable (simulated timeout)")

    async def quote(self, from_coin: str, to_coin: str, from_amount: int) -> VenueQuote:
        self._check()
        if not self.supports(from_coin, to_coin):
            raise VenueRefused(f"pair {from_coin}/{to_coin} not offered")
        source, target = self.coins.require(from_coin), self.coins.require(to_coin)
        gross = Decimal(from_amount) / (Decimal(10) ** source.decimals) * self.rate(from_coin, to_coin)
        net = gross * (Decimal(10000 - self.knobs.fee_bps) / Decimal(10000))
        to_amount = int((net * (Decimal(10) ** target.decimals)).to_integral_value(ROUND_DOWN))
        min_units = self.knobs.min_usd / Decimal(source.dev_price_usd or "1") * (Decimal(10) ** source.decimals)
        return VenueQuote(self.name, from_coin, to_coin, from_amount, to_amount,
                          int(min_units.to_integral_value(ROUND_UP)), self.clock() + QUOTE_SECONDS, floating=True)

    # -- orders ----------------------------------------------------------------------------

    async def create_swap(self, swap_id: str, quote: VenueQuote, *, payout_address: str | None,
                          refund_address: str | None) -> VenueOrder:
        self._check()
        if swap_id in self.orders:
            return self._as_order(self.orders[swap_id])
        self.create_calls += 1
        if self.knobs.refuse_create:
            raise VenueRefused("devnet venue refused the order (simulated)")
        if quote.from_amount < quote.min_from_amount:
            raise VenueRefused("amount below the venue minimum")
        fresh = await self.quote(quote.from_coin, quote.to_coin, quote.from_amount)
        promised = fresh.to_amount * (10000 - self.knobs.promise_short_bps) // 10000
        order = _Order(swap_id, fresh, promised, self.clock(),
                       VenueStatus(WAITING, payin_hash=_hash("payin", swap_id)))
        self.orders[swap_id] = order
        return self._as_order(order)

    def _as_order(self, order: _Order) -> VenueOrder:
        return VenueOrder(f"dv_{_hash('order', order.swap_id)[:16]}", f"devnet-venue:{order.swap_id}",
                          order.quote.from_amount, order.promised, funded=True)

    def _order(self, swap_id: str) -> _Order:
        order = self.orders.get(swap_id)
        if order is None:
            raise VenueRefused("unknown order")
        return order

    async def status(self, swap_id: str, venue_ref: str) -> VenueStatus:
        self._check()
        order = self._order(swap_id)
        if order.status.state in (WAITING, EXCHANGING) and self.clock() >= order.created_at + self.knobs.delay_seconds:
            if self.knobs.fail_exchange:
                order.status = replace(order.status, state=FAILED, reason="exchange failed (simulated)")
            else:
                delivered = order.promised * (10000 - self.knobs.short_bps) // 10000
                order.status = replace(order.status, state=FINISHED, actual_to_amount=delivered,
                                       payout_hash=_hash("payout", swap_id))
        elif order.status.state == WAITING:
            order.status = replace(order.status, state=EXCHANGING)
        return order.status

    async def refund(self, swap_id: str, venue_ref: str, refund_address: str | None) -> VenueStatus:
        self._check()
        order = self._order(swap_id)
        if order.status.state == FINISHED:
            raise VenueRefused("order already finished")
        if order.status.state != REFUNDED:
            order.status = replace(order.status, state=REFUNDED, refund_hash=_hash("refund", swap_id))
        return order.status
