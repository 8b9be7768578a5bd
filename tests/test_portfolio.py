"""Portfolio (plugins/portfolio, SPEC 2.16, 4.7), on both databases.

Prices come from a controllable source swapped into the gateway's price
service; time moves through ``gateway.clock``.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from orbchain import api as services
from orbchain.core.types.errors import NotFound
from orbchain.core.money.prices import PriceService, Quote
from orbchain.plugins.portfolio.valuation import coin_line, portfolio

from .support import api
from .test_payouts import fund, payout_env

PATH = "/dashboard/portfolio"
T0 = 1_900_000_000


class FakeSource:
    name = "fake"

    def __init__(self, table):
        self.table = {k: Decimal(v) for k, v in table.items()}
        self.fail = False
        self.calls = 0

    async def fetch(self, symbols):
        self.calls += 1
        if self.fail:
            raise ConnectionError("feed down")
        return {s: self.table[s] for s in symbols if s in self.table}


def set_clock(gateway, at):
    gateway.clock = lambda: at


@pytest.fixture
async def env(make_client, make_config):
    client, merchant, devnet = await payout_env(make_client, make_config)
    await fund(client, merchant, devnet)  # 0.0099 BTC available
    gateway = devnet.gateway
    source = FakeSource({"BTC": "61234.567", "ETH": "3000.005", "USDT_TRC20": "1.0001"})
    gateway.services["prices"] = PriceService(source, gateway.coins.names(), lambda: gateway.clock())
    start = gateway.now()  # frozen here; the JWT stays valid for 24 h of this clock
    set_clock(gateway, start)
    return client, merchant, gateway, source, start


async def get(client, merchant):
    status, body = await api(client, "GET", PATH, merchant.jwt)
    assert status == 200, body
    assert set(body["data"]) == {"portfolio"}  # SPEC 4.7: response data portfolio (2.16)
    return body["data"]["portfolio"]


def by_coin(data):
    return {line["coin"]: line for line in data["per_coin"]}


async def test_every_accepted_coin_listed_with_exact_usd(env):
    client, merchant, gateway, _, _ = env
    data = await get(client, merchant)
    record = await services.merchant_record(gateway, merchant.merchant_id)
    assert data["account_id"] == record.account_id
    assert [line["coin"] for line in data["per_coin"]] == list(record.accepted_coins)
    lines = by_coin(data)
    # 0.0099 x 61234.567 = 606.2222133 -> 606.22
    assert lines["BTC"] == {"coin": "BTC", "amount": "0.0099", "spot_usd": "61234.567", "change_24h_pct": None,
                            "value_usd": "606.22", "stale": False}
    assert lines["ETH"]["amount"] == "0" and lines["ETH"]["value_usd"] == "0.00"  # zero balance still listed
    assert lines["ETH"]["spot_usd"] == "3000.005"
    assert lines["USDT_TRC20"]["spot_usd"] == "1.0001"
    unpriced = [line for line in data["per_coin"] if line["coin"] not in ("BTC", "ETH", "USDT_TRC20")]
    assert unpriced and all(line["spot_usd"] is None and line["value_usd"] is None for line in unpriced)
    assert data["total_usd"] == "606.22"


async def test_stale_within_ten_minutes_then_dropped(env):
    client, merchant, gateway, source, t0 = env
    assert by_coin(await get(client, merchant))["BTC"]["stale"] is False
    source.fail = True
    set_clock(gateway, t0 + 60)  # the cache expires; the refetch fails; the old quote is exactly 60 s old
    line = by_coin(await get(client, merchant))["BTC"]
    assert line["stale"] is False and line["value_usd"] == "606.22"
    set_clock(gateway, t0 + 61)
    data = await get(client, merchant)
    assert by_coin(data)["BTC"] == {**by_coin(data)["BTC"], "spot_usd": "61234.567", "value_usd": "606.22",
                                    "stale": True}
    assert data["total_usd"] == "606.22"
    set_clock(gateway, t0 + 600)
    assert by_coin(await get(client, merchant))["BTC"]["stale"] is True
    set_clock(gateway, t0 + 601)
    data = await get(client, merchant)
    assert by_coin(data)["BTC"]["spot_usd"] is None and by_coin(data)["BTC"]["value_usd"] is None
    assert by_coin(data)["BTC"]["stale"] is False and by_coin(data)["BTC"]["amount"] == "0.0099"
    assert data["total_usd"] == "0.00"
    source.fail = False  # the feed recovers: fresh again
    set_clock(gateway, t0 + 700)
    line = by_coin(await get(client, merchant))["BTC"]
    assert line["stale"] is False and line["value_usd"] == "606.22"
    assert source.calls == 4  # a failed fetch is cached for 60 s too: no hammering a down feed


async def test_failing_source_from_the_start(env):
    client, merchant, _, source, _ = env
    source.fail = True
    data = await get(client, merchant)
    assert data["total_usd"] == "0.00"
    assert all(line["spot_usd"] is None and line["value_usd"] is None for line in data["per_coin"])
    assert by_coin(data)["BTC"]["amount"] == "0.0099"


async def test_requires_a_dashboard_session(env):
    client, merchant, _, _, _ = env
    status, body = await api(client, "GET", PATH, None)
    assert status == 401 and body["error"]["code"] == "unauthorized", body
    status, body = await api(client, "GET", PATH, merchant.merchant_key)
    assert status == 401, body  # an API key is not a dashboard session


async def test_follows_accepted_coins_setting(env):
    client, merchant, _, _, _ = env
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt,
                             json={"accepted_coins": ["SOL", "BTC"]})
    assert status == 200, body
    data = await get(client, merchant)
    assert [line["coin"] for line in data["per_coin"]] == ["SOL", "BTC"]


async def test_merchant_record_service(env):
    _, merchant, gateway, _, _ = env
    record = await services.merchant_record(gateway, merchant.merchant_id)
    assert record.merchant_id == merchant.merchant_id and record.accepted_coins
    with pytest.raises(NotFound):
        await services.merchant_record(gateway, "m_nope")


# -- the money rules, without a server --------------------------------------------------------------


class _Coin:
    def __init__(self, symbol, decimals):
        self.symbol, self.decimals = symbol, decimals

    def format(self, units):
        return format(Decimal(units).scaleb(-self.decimals).normalize(), "f")


def test_rounds_half_up_to_cents():
    line, cents = coin_line(_Coin("X", 8), 1, Quote(Decimal("500000"), T0), T0)  # exactly 0.005 USD
    assert line["value_usd"] == "0.01" and cents == Decimal("0.01")
    line, _ = coin_line(_Coin("X", 8), 1, Quote(Decimal("499999"), T0), T0)  # 0.00499999
    assert line["value_usd"] == "0.00"


def test_value_is_exact_beyond_28_digits():
    units, price = 123_456_789_012_345_678_901_234, Decimal("3412.123456789")  # 123456.789... ETH
    line, _ = coin_line(_Coin("ETH", 18), units, Quote(price, T0), T0)
    scaled = units * 3412123456789  # value in units of 1e-27 USD, exact integer
    cents, rest = divmod(scaled, 10**25)
    expected = cents + (1 if rest * 2 >= 10**25 else 0)
    assert line["value_usd"] == f"{expected // 100}.{expected % 100:02d}"
    assert isinstance(line["value_usd"], str)


def test_total_is_the_sum_of_the_shown_values():
    coin = _Coin("X", 2)
    quotes = {"X": Quote(Decimal("0.335"), T0)}
    data = portfolio("acc", [(coin, 100), (coin, 100)], quotes, T0)  # 1.00 x 0.335 = 0.335 -> 0.34 each
    assert [line["value_usd"] for line in data["per_coin"]] == ["0.34", "0.34"] and data["total_usd"] == "0.68"


async def test_price_service_keeps_last_good_quote_through_an_outage():
    now = [100.0]
    source = FakeSource({"BTC": "10"})
    service = PriceService(source, ["BTC", "ETH"], lambda: now[0])
    assert await service.quotes() == {"BTC": Quote(Decimal("10"), 100.0)}
    source.fail = True
    now[0] = 200.0
    assert await service.quotes() == {"BTC": Quote(Decimal("10"), 100.0)}
    assert await service.prices() == {"BTC": Decimal(0), "ETH": Decimal(0)}  # prices() keeps its meaning
