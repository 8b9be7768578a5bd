"""Prices: the static source, a CoinGecko-format HTTP source on a local server, the 60 s cache."""

from __future__ import annotations

from decimal import Decimal

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from orbchain.core.infra.config import ConfigError
from orbchain.core.startup import build_gateway
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.core.money.prices import PriceService
from orbchain.plugins.prices import CoinGeckoPriceSource, StaticPriceSource
from orbchain.web.keys import GATEWAY


IDS = {"BTC": "bitcoin", "ETH": "ethereum", "USDT_TRC20": "tether", "XMR": "monero"}


class FakeCoinGecko:
    """Speaks the real /simple/price wire format."""

    def __init__(self):
        self.calls = 0
        self.fail = False
        self.queries = []

    async def simple_price(self, request):
        self.calls += 1
        self.queries.append(dict(request.query))
        if self.fail:
            return web.json_response({"status": {"error_code": 429}}, status=429)
        ids = request.query["ids"].split(",")
        table = {"bitcoin": {"usd": 97123.45}, "ethereum": {"usd": 3412.1}, "tether": {"usd": 1.0001}}
        return web.json_response({i: table[i] for i in ids if i in table})

    def app(self):
        app = web.Application()
        app.router.add_get("/api/v3/simple/price", self.simple_price)
        return app


async def test_static_source_is_offline_and_overridable():
    source = StaticPriceSource({"BTC": "60000", "ETH": "3000"}, {"BTC": "1.5"})
    prices = await source.fetch(["BTC", "ETH", "NOPE"])
    assert prices == {"BTC": Decimal("1.5"), "ETH": Decimal("3000")}


async def test_coingecko_source_reads_numbers_exactly():
    fake = FakeCoinGecko()
    async with TestServer(fake.app()) as server:
        source = CoinGeckoPriceSource(IDS, str(server.make_url("/api/v3")))
        prices = await source.fetch(["BTC", "ETH", "USDT_TRC20", "XMR"])
    assert prices == {"BTC": Decimal("97123.45"), "ETH": Decimal("3412.1"), "USDT_TRC20": Decimal("1.0001")}
    assert fake.queries[0]["vs_currencies"] == "usd"
    assert set(fake.queries[0]["ids"].split(",")) == {"bitcoin", "ethereum", "tether", "monero"}


async def test_service_caches_for_60_seconds_and_reports_failures_as_zero():
    fake = FakeCoinGecko()
    now = [1000.0]
    async with TestServer(fake.app()) as server:
        service = PriceService(CoinGeckoPriceSource(IDS, str(server.make_url("/api/v3"))), ["BTC", "XMR"], lambda: now[0])
        assert await service.prices() == {"BTC": Decimal("97123.45"), "XMR": Decimal(0)}
        now[0] += 59
        await service.prices()
        assert fake.calls == 1
        now[0] += 1
        fake.fail = True
        assert await service.prices() == {"BTC": Decimal(0), "XMR": Decimal(0)}
        assert fake.calls == 2


async def test_prices_endpoint_with_the_http_source(make_client, make_config):
    fake = FakeCoinGecko()
    async with TestServer(fake.app()) as server:
        cfg = make_config(plugin={"prices": {"source": "coingecko", "url": str(server.make_url("/api/v3"))}})
        client = await make_client(cfg)
        response = await client.get("/v1/common/prices")
        text = await response.text()
        assert response.status == 200
        assert '"BTC":97123.45' in text and '"SOL":0' in text
        await client.get("/v1/common/prices")
        assert fake.calls == 1


async def test_prices_not_configured_when_the_plugin_is_blocked(make_client, make_config):
    client = await make_client(make_config(plugins={"blocked": ["prices"]}))
    response = await client.get("/v1/common/prices")
    assert response.status == 503
    assert (await response.json())["message"] == "not configured"
    assert GATEWAY in client.app


class OracleSource:
    """A third-party plugin's price source, chosen by name in [plugin.prices]."""

    name = "oracle"

    async def fetch(self, symbols):
        return {symbol: Decimal("2") for symbol in symbols}


class OraclePlugin:
    @hookimpl
    def register_price_sources(self, registry):
        registry.add(OracleSource())


async def test_a_plugins_price_source_can_be_chosen(make_client, make_config):
    cfg = make_config(plugin={"prices": {"source": "oracle"}})
    client = await make_client(cfg, get_plugin_manager([("oracle", OraclePlugin())]))
    response = await client.get("/v1/common/prices")
    assert response.status == 200
    assert '"BTC":2' in await response.text()


def test_an_unknown_price_source_stops_startup(make_config):
    with pytest.raises(ConfigError, match="no price source 'nope' .registered: coinbase, coingecko, kraken, static"):
        build_gateway(make_config(plugin={"prices": {"source": "nope"}}))
