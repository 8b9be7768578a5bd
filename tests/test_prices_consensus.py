"""Issue 46 item 5: prices that cannot be spoofed quietly.

Three local servers speak the real wire formats of CoinGecko (``/simple/price``, ``/exchange_rates``),
Coinbase (``/v2/exchange-rates``) and Kraken (``/0/public/Ticker``). The gateway prices a fiat payment from
the median of the sources that agree; a lying source is set aside; too few agreeing answers make fiat-priced
creation answer 503 naming the reason; a price older than the bound is not used; production refuses the
static development table.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from orbchain.core.infra.config import ConfigError
from orbchain.core.startup import build_gateway
from orbchain.plugins.prices import ConsensusPriceSource, KrakenPriceSource
from orbchain.plugins.prices.consensus import median
from orbchain.plugins.prices.settings import read_settings
from orbchain.testing.api import api, signup
from orbchain.web.keys import GATEWAY

NOW = 1_800_000_000


class Exchanges:
    """The three APIs on one local server; each source's BTC price and health set per test."""

    def __init__(self) -> None:
        self.btc = {"coingecko": Decimal("60000"), "coinbase": Decimal("60100"), "kraken": Decimal("59950")}
        self.down: set[str] = set()
        self.coingecko_updated_at = NOW
        self.kraken_pairs_asked: list[str] = []

    def _gone(self, name: str) -> web.Response | None:
        return web.json_response({"error": "down"}, status=502) if name in self.down else None

    async def simple_price(self, request: web.Request) -> web.Response:
        if gone := self._gone("coingecko"):
            return gone
        body: dict[str, Any] = {"bitcoin": {"usd": str(self.btc["coingecko"])}}
        if request.query.get("include_last_updated_at") == "true":
            body["bitcoin"]["last_updated_at"] = self.coingecko_updated_at
        return web.Response(text=str(body).replace("'", '"'), content_type="application/json")

    async def coingecko_rates(self, request: web.Request) -> web.Response:
        if gone := self._gone("coingecko"):
            return gone
        return web.json_response({"rates": {"usd": {"value": 60000}, "eur": {"value": 54000}}})

    async def coinbase_rates(self, request: web.Request) -> web.Response:
        if gone := self._gone("coinbase"):
            return gone
        assert request.query["currency"] == "USD"
        per_usd = Decimal(1) / self.btc["coinbase"]
        return web.json_response({"data": {"currency": "USD", "rates": {"BTC": str(per_usd), "EUR": "0.9"}}})

    async def kraken_ticker(self, request: web.Request) -> web.Response:
        if gone := self._gone("kraken"):
            return gone
        pairs = request.query["pair"].split(",")
        self.kraken_pairs_asked.append(request.query["pair"])
        known = {"XBTUSD": ("XXBTZUSD", self.btc["kraken"]), "ETHUSD": ("XETHZUSD", Decimal("3000"))}
        if any(pair not in known for pair in pairs):
            return web.json_response({"error": ["EQuery:Unknown asset pair"]})
        result = {known[p][0]: {"c": [str(known[p][1]), "0.1"], "a": ["1", "1", "1"]} for p in pairs}
        return web.json_response({"error": [], "result": result})

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/cg/simple/price", self.simple_price)
        app.router.add_get("/cg/exchange_rates", self.coingecko_rates)
        app.router.add_get("/cb/v2/exchange-rates", self.coinbase_rates)
        app.router.add_get("/kr/0/public/Ticker", self.kraken_ticker)
        return app


@pytest.fixture
async def exchanges():
    fake = Exchanges()
    async with TestServer(fake.app()) as server:
        fake.base = str(server.make_url("")).rstrip("/")
        yield fake


def prices_block(fake: Exchanges, **extra: Any) -> dict[str, Any]:
    return {"sources": ["coingecko", "coinbase", "kraken"], "url": f"{fake.base}/cg",
            "coinbase": {"url": f"{fake.base}/cb"}, "kraken": {"url": f"{fake.base}/kr"}, **extra}


async def fiat_payment(client: Any, merchant: Any, usd: str = "600") -> tuple[int, Any]:
    return await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                     json={"currency": "BTC", "amount_fiat": usd, "fiat_currency": "USD"})


def clock_at(client: Any) -> None:
    client.app[GATEWAY].clock = lambda: float(NOW)


async def test_a_fiat_payment_is_priced_at_the_median_of_three_sources(make_client, make_config, exchanges):
    client = await make_client(make_config(plugin={"prices": prices_block(exchanges)}))
    clock_at(client)
    merchant = await signup(client)
    status, body = await fiat_payment(client, merchant)
    assert status == 200, body
    assert body["data"]["pay_amount"] == "0.01", body  # 600 USD at the median 60000, not 60100 or 59950
    status, body = await api(client, "GET", "/v1/common/prices", {})
    assert status == 200 and Decimal(str(body["data"]["BTC"])) == Decimal("60000")


async def test_a_source_far_from_the_median_is_set_aside(make_client, make_config, exchanges, caplog):
    exchanges.btc["kraken"] = Decimal("66000")  # 10 % above the others: a stale or spoofed feed
    client = await make_client(make_config(plugin={"prices": prices_block(exchanges)}))
    clock_at(client)
    merchant = await signup(client)
    with caplog.at_level(logging.WARNING):
        status, body = await fiat_payment(client, merchant, usd="600.5")
    assert status == 200, body
    assert body["data"]["pay_amount"] == "0.01", body  # 600.5 USD at the median of the two left, 60050
    assert any("kraken set aside for BTC" in record.getMessage() for record in caplog.records)


async def test_sources_that_disagree_refuse_fiat_pricing_with_the_reason(make_client, make_config, exchanges):
    exchanges.btc["coinbase"] = Decimal("66000")
    block = prices_block(exchanges, sources=["coingecko", "coinbase"], max_deviation_percent="2")
    client = await make_client(make_config(plugin={"prices": block}))
    clock_at(client)
    merchant = await signup(client)
    status, body = await fiat_payment(client, merchant)
    assert status == 503, body
    assert "disagree on BTC by more than 2%" in body["message"] and "coinbase 66000" in body["message"], body
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01"})
    assert status == 200, body  # a payment priced in the coin itself needs no price
    _, listed = await api(client, "GET", "/v1/payment", merchant.merchant_key)
    assert listed["data"]["total"] == 1  # the refused one left nothing behind


async def test_too_few_answers_refuse_fiat_pricing(make_client, make_config, exchanges):
    exchanges.down = {"coinbase", "kraken"}
    client = await make_client(make_config(plugin={"prices": prices_block(exchanges)}))
    clock_at(client)
    merchant = await signup(client)
    status, body = await fiat_payment(client, merchant)
    assert status == 503 and "1 of 3 price sources gave a BTC price, 2 must agree" in body["message"], body


async def test_a_price_older_than_the_bound_is_not_used(make_client, make_config, exchanges):
    exchanges.coingecko_updated_at = NOW - 301
    block = prices_block(exchanges, sources=["coingecko"], max_age_seconds=300)
    client = await make_client(make_config(plugin={"prices": block}))
    now = [float(NOW)]
    client.app[GATEWAY].clock = lambda: now[0]
    merchant = await signup(client)
    status, body = await fiat_payment(client, merchant)
    assert status == 503 and "the coingecko price of BTC is 301 s old (at most 300 s)" in body["message"], body
    now[0] += 60  # the next fetch, once the cache (at most max_age_seconds) has lapsed
    exchanges.coingecko_updated_at = int(now[0]) - 299
    status, body = await fiat_payment(client, merchant)
    assert status == 200 and body["data"]["pay_amount"] == "0.01", body


async def test_kraken_legacy_pair_names_and_an_unlisted_pair_are_read(exchanges):
    source = KrakenPriceSource(f"{exchanges.base}/kr")
    prices = await source.fetch(["BTC", "ETH", "USDT_ERC20"])
    assert prices == {"BTC": Decimal("59950"), "ETH": Decimal("3000")}
    assert exchanges.kraken_pairs_asked[0] == "ETHUSD,USDTUSD,XBTUSD"  # one request first, then singly
    assert sorted(exchanges.kraken_pairs_asked[1:]) == ["ETHUSD", "USDTUSD", "XBTUSD"]


def test_the_median_and_the_agreement_rule():
    assert median([Decimal(3), Decimal(1), Decimal(2)]) == 2
    assert median([Decimal("1"), Decimal("2")]) == Decimal("1.5")
    consensus = ConsensusPriceSource([], min_sources=2, max_deviation_percent=Decimal(2))
    assert consensus._agree("BTC", {"a": Decimal(100), "b": Decimal(103)}, 2) == Decimal("101.5")  # 1.5 % each
    assert consensus._agree("BTC", {"a": Decimal(100), "b": Decimal(105)}, 2) is None
    assert "disagree on BTC" in consensus.unpriced["BTC"]


def test_production_refuses_the_static_table(make_config):
    with pytest.raises(ConfigError, match="static development prices cannot price real payments in production"):
        build_gateway(make_config(server={"environment": "production"}, plugin={"prices": {"source": "static"}}))
    with pytest.raises(ConfigError, match="plugin.prices.sources"):
        read_settings({"sources": ["coingecko", "static"]}, development=False)
    assert read_settings({}, development=False).sources == ()  # nothing priced rather than priced wrong
    assert read_settings({}, development=True).sources == ("static",)
    for block, problem in (({"sources": []}, "non-empty list"), ({"source": "a", "sources": ["a"]}, "set one"),
                           ({"sources": ["a", "b"], "min_sources": 3}, "only 2 sources"),
                           ({"max_deviation_percent": 2.5}, "decimal string"), ({"kraken": {"pair": 1}}, "takes only")):
        with pytest.raises(ConfigError, match=problem):
            read_settings(block, development=True)
