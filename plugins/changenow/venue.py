"""ChangeNOW (API v2) as a swap venue: the contract of ``orbchain.plugins.swaps.venues`` over its HTTP API.

Endpoints used (ChangeNOW API v2, docs/decisions.md names the doc version):

* ``GET /v2/exchange/min-amount`` and ``GET /v2/exchange/estimated-amount``
  (query ``fromCurrency``, ``toCurrency``, ``fromNetwork``, ``toNetwork``,
  ``fromAmount``, ``flow``, ``type=direct``; ``useRateId=true`` for the
  fixed-rate flow) -> ``minAmount``; ``toAmount``, ``validUntil``, ``rateId``;
* ``POST /v2/exchange`` (JSON body of the same names plus ``address``,
  ``refundAddress``, ``rateId``) -> ``id``, ``payinAddress``, ``fromAmount``, ``toAmount``;
* ``GET /v2/exchange/by-id?id=`` -> ``status``, ``amountTo``, ``payinHash``,
  ``payoutHash``, ``refundHash``;
* ``POST /v2/exchange/refund`` (``id``, ``address``) -> ``result``.

Every request carries the ``x-changenow-api-key`` header. Amounts cross the
wire as decimal numbers: they are read exactly (``parse_float=Decimal``)
and converted to base units, rounding what ChangeNOW promises down. The
API has no idempotency key, so the exchange opened for a swap id is kept in
``changenow_orders`` and a repeated ``create_swap`` answers from there. A
crash between ChangeNOW's answer and that insert leaves one unfunded
exchange at ChangeNOW, which expires: the gateway only pays the deposit of
the order it recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_DOWN, ROUND_UP, Decimal, InvalidOperation
from typing import Any, Callable, Mapping

import aiohttp

from ...api import CoinRegistry, Database
from ..swaps.venues import (
    EXCHANGING, EXPIRED, FAILED, FINISHED, REFUNDED, SwapVenue, VenueOrder, VenueQuote, VenueRefused, VenueStatus,
    VenueUnavailable, WAITING,
)
from .settings import ChangeNowSettings

# ChangeNOW's transaction statuses -> the contract's states.
STATES = {
    "new": WAITING, "waiting": WAITING, "confirming": EXCHANGING, "exchanging": EXCHANGING,
    "sending": EXCHANGING, "verifying": EXCHANGING, "finished": FINISHED, "failed": FAILED,
    "refunded": REFUNDED, "expired": EXPIRED,
}
DEFAULT_QUOTE_SECONDS = 600


@dataclass(frozen=True)
class _Call:
    method: str
    path: str
    params: Mapping[str, str] | None = None
    body: Mapping[str, Any] | None = None


class ChangeNowVenue(SwapVenue):
    name = "changenow"
    needs_deposit = True  # ChangeNOW converts only what reaches its payinAddress on-chain

    def __init__(self, settings: ChangeNowSettings, coins: CoinRegistry, db: Database,
                 clock: Callable[[], int]) -> None:
        self.settings = settings
        self.coins = coins
        self.db = db
        self.clock = clock
        self._http: aiohttp.ClientSession | None = None

    # -- wire ------------------------------------------------------------------------------

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.settings.timeout_seconds))
        return self._http

    async def _call(self, call: _Call) -> Any:
        headers = {"x-changenow-api-key": self.settings.api_key or ""}
        try:
            async with self._session().request(call.method, self.settings.base_url + call.path, params=call.params,
                                               json=call.body, headers=headers, allow_redirects=False) as response:
                text = await response.text()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise VenueUnavailable(f"ChangeNOW unreachable: {type(exc).__name__}") from None
        try:
            data = json.loads(text, parse_float=Decimal) if text else None
        except ValueError:
            data = None
        if status == 429 or status >= 500:
            raise VenueUnavailable(f"ChangeNOW answered {status}")
        if status >= 400:
            message = data.get("message") or data.get("error") if isinstance(data, dict) else None
            raise VenueRefused(str(message or f"ChangeNOW refused the request ({status})")[:200])
        if not isinstance(data, dict):
            raise VenueUnavailable("ChangeNOW answered something that is not a JSON object")
        return data

    def _ticker(self, symbol: str) -> tuple[str, str]:
        ticker = self.settings.tickers.get(symbol)
        if ticker is None:
            raise VenueRefused(f"{symbol} is not mapped to a ChangeNOW currency")
        return ticker

    def _pair(self, from_coin: str, to_coin: str) -> dict[str, str]:
        (fc, fn), (tc, tn) = self._ticker(from_coin), self._ticker(to_coin)
        return {"fromCurrency": fc, "toCurrency": tc, "fromNetwork": fn, "toNetwork": tn, "flow": self.settings.flow}

    def _decimal_text(self, symbol: str, units: int) -> str:
        return self.coins.require(symbol).format(units)

    def _units(self, symbol: str, value: Any, rounding: str = ROUND_DOWN) -> int:
        """Base units of a decimal the API sent; VenueUnavailable for nonsense (never guess an amount)."""
        coin = self.coins.require(symbol)
        try:
            amount = Decimal(str(value)) if not isinstance(value, Decimal) else value
        except (InvalidOperation, ValueError):
            amount = Decimal("NaN")
        if isinstance(value, bool) or not amount.is_finite() or amount < 0:
            raise VenueUnavailable(f"ChangeNOW sent an amount that is not a number: {value!r}")
        return int((amount * (Decimal(10) ** coin.decimals)).to_integral_value(rounding))

    def _until(self, value: Any) -> int:
        if isinstance(value, str) and value:
            try:
                return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
            except ValueError:
                pass
        return self.clock() + DEFAULT_QUOTE_SECONDS

    # -- the contract ----------------------------------------------------------------------

    def supports(self, from_coin: str, to_coin: str) -> bool:
        target = self.coins.get(to_coin)
        return (from_coin != to_coin and from_coin in self.settings.tickers and to_coin in self.settings.tickers
                and target is not None and target.payable)

    async def quote(self, from_coin: str, to_coin: str, from_amount: int) -> VenueQuote:
        pair = self._pair(from_coin, to_coin)
        minimum = await self._call(_Call("GET", "/v2/exchange/min-amount", pair))
        params = {**pair, "fromAmount": self._decimal_text(from_coin, from_amount), "type": "direct"}
        if self.settings.flow == "fixed-rate":
            params["useRateId"] = "true"
        estimate = await self._call(_Call("GET", "/v2/exchange/estimated-amount", params))
        if estimate.get("toAmount") is None:
            raise VenueRefused(str(estimate.get("warningMessage") or "no estimate for this amount"))
        return VenueQuote(
            self.name, from_coin, to_coin, from_amount, self._units(to_coin, estimate["toAmount"]),
            self._units(from_coin, minimum.get("minAmount", 0), ROUND_UP), self._until(estimate.get("validUntil")),
            floating=self.settings.flow != "fixed-rate", rate_id=estimate.get("rateId") or None)

    async def create_swap(self, swap_id: str, quote: VenueQuote, *, payout_address: str | None,
                          refund_address: str | None) -> VenueOrder:
        known = await self.db.fetch_one("SELECT * FROM changenow_orders WHERE swap_id = :s", {"s": swap_id})
        if known is not None:
            return VenueOrder(known["exchange_id"], known["payin_address"], self.db.to_int(known["from_amount"]),
                              self.db.to_int(known["to_amount"]))
        if not payout_address:
            raise VenueRefused(f"no payout address for {quote.to_coin} ([plugin.swaps.payout_addresses])")
        body: dict[str, Any] = {**self._pair(quote.from_coin, quote.to_coin),
                                "fromAmount": self._decimal_text(quote.from_coin, quote.from_amount),
                                "address": payout_address, "type": "direct"}
        if refund_address:
            body["refundAddress"] = refund_address
        if self.settings.flow == "fixed-rate" and quote.rate_id:
            body["rateId"] = quote.rate_id
        created = await self._call(_Call("POST", "/v2/exchange", body=body))
        exchange_id, payin = created.get("id"), created.get("payinAddress")
        if not isinstance(exchange_id, str) or not exchange_id or not isinstance(payin, str) or not payin:
            raise VenueUnavailable("ChangeNOW's exchange has no id or payinAddress")
        deposit = self._units(quote.from_coin, created.get("fromAmount", body["fromAmount"]), ROUND_UP)
        to_amount = self._units(quote.to_coin, created.get("toAmount", 0))
        await self.db.execute(
            "INSERT INTO changenow_orders (swap_id, exchange_id, payin_address, from_amount, to_amount, created_at)"
            " VALUES (:s, :e, :p, :f, :t, :now) ON CONFLICT DO NOTHING",
            {"s": swap_id, "e": exchange_id, "p": payin, "f": self.db.amount_param(deposit),
             "t": self.db.amount_param(to_amount), "now": self.clock()})
        return await self.create_swap(swap_id, quote, payout_address=payout_address, refund_address=refund_address)

    async def status(self, swap_id: str, venue_ref: str) -> VenueStatus:
        data = await self._call(_Call("GET", "/v2/exchange/by-id", {"id": venue_ref}))
        state = STATES.get(str(data.get("status", "")).lower())
        if state is None:
            raise VenueUnavailable(f"ChangeNOW status {data.get('status')!r} is not one we know")
        actual = None
        if state == FINISHED:
            to_coin = self._coin_of(data.get("toCurrency"), data.get("toNetwork"))
            actual = self._units(to_coin, data.get("amountTo"))
        return VenueStatus(state, actual, _text(data.get("payinHash")), _text(data.get("payoutHash")),
                           _text(data.get("refundHash")), None if state != FAILED else "failed at ChangeNOW")

    def _coin_of(self, currency: Any, network: Any) -> str:
        for symbol, ticker in self.settings.tickers.items():
            if ticker == (str(currency).lower(), str(network).lower()):
                return symbol
        raise VenueUnavailable(f"ChangeNOW delivered {currency}/{network}, which no coin here maps to")

    async def refund(self, swap_id: str, venue_ref: str, refund_address: str | None) -> VenueStatus:
        current = await self.status(swap_id, venue_ref)
        if current.state in (REFUNDED, FINISHED, EXPIRED):
            return current
        if current.state == WAITING:
            return current  # nothing was received: an unfunded exchange simply expires
        if not refund_address:
            raise VenueRefused("no refund address configured ([plugin.swaps.refund_addresses])")
        await self._call(_Call("POST", "/v2/exchange/refund", body={"id": venue_ref, "address": refund_address}))
        return await self.status(swap_id, venue_ref)

    async def close(self) -> None:
        if self._http is not None and not self._http.closed:
            await self._http.close()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
