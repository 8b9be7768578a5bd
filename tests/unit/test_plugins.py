"""The plugin manager factory and the registries' conflict rules."""

from __future__ import annotations

import re

import pytest
from aiohttp import web

from orbchain.core.money.coins import Coin
from orbchain.core.infra.config import ConfigError, load_config
from orbchain.core.startup import build_gateway
from orbchain.core.keys import NETWORKS, AddressFamily
from orbchain.core.contract.hooks import Hooks
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl, plugin_names
from orbchain.core.contract.registries import StartupError
from orbchain.web.app import create_app


def _xyz_family(network, name="xyz"):
    return AddressFamily(name, network, "Xyz (validate only)", lambda address, network: str(address))


class ExtraCoin:
    PLUGIN_NAME = "extra_coin"

    @hookimpl
    def register_coins(self, registry):
        registry.add(Coin("XYZ", "Xyz", "xyzchain", 8, 3, "1", "xyz"))

    @hookimpl
    def register_address_families(self, registry):
        for network in NETWORKS:
            registry.add(_xyz_family(network))


class ClashingCoin:
    PLUGIN_NAME = "clashing_coin"

    @hookimpl
    def register_coins(self, registry):
        registry.add(Coin("BTC", "Fake Bitcoin", "bitcoin", 8, 1, "1", "btc"))


def _config(tmp_path, **sections):
    base = load_config(None, environ={}).with_overrides(server={"data_dir": str(tmp_path)})
    return base.with_overrides(**sections) if sections else base


def test_builtins_load_through_entry_points():
    names = plugin_names(get_plugin_manager())
    assert {"bitcoin", "evm", "tron", "solana", "monero", "lightning", "devnet", "prices"} <= set(names)
    assert "coin_table" not in names


def test_explicit_plugin_list_without_entry_points(tmp_path):
    pm = get_plugin_manager([ExtraCoin()], load_entrypoints=False)
    gateway = build_gateway(_config(tmp_path), pm)
    assert gateway.coins.names() == ["XYZ"]


def test_blocked_plugin_is_not_registered(tmp_path):
    pm = get_plugin_manager(blocked=["prices"])
    assert "prices" not in plugin_names(pm)
    gateway = build_gateway(_config(tmp_path), pm)
    assert len(gateway.price_sources) == 0


def test_blocked_list_comes_from_config(tmp_path):
    config = _config(tmp_path, plugins={"blocked": ["bitcoin"]})
    gateway = build_gateway(config)
    assert "BTC" not in gateway.coins and "ETH" in gateway.coins
    assert gateway.address_families.find("btc") is None


def test_duplicate_coin_names_both_plugins(tmp_path):
    pm = get_plugin_manager([ClashingCoin()])
    with pytest.raises(StartupError) as info:
        build_gateway(_config(tmp_path), pm)
    assert "'bitcoin'" in str(info.value) and "clashing_coin" in str(info.value)


def test_coin_of_an_unregistered_family_stops_startup_naming_coin_and_family(tmp_path):
    class Orphan:
        PLUGIN_NAME = "orphan"

        @hookimpl
        def register_coins(self, registry):
            registry.add(Coin("ORPH", "Orphan", "orphchain", 8, 3, "1", "orphanfamily"))

    with pytest.raises(StartupError) as info:
        build_gateway(_config(tmp_path), get_plugin_manager([Orphan()]))
    assert "'ORPH'" in str(info.value) and "'orphanfamily'" in str(info.value) and "orphan" in str(info.value)


@pytest.mark.parametrize("field, value", [("min_payment", "0.000000001"), ("min_payment", "abc"),
                                          ("max_amount", "-1")])
def test_a_coin_with_a_bad_bound_stops_startup_naming_it(tmp_path, field, value):
    """``min_payment`` (issue 42 item 8) and ``max_amount`` are read once at registration: a value the coin cannot
    hold stops the start, naming the coin, the plugin and the field."""
    class Bounded:
        PLUGIN_NAME = "bounded"

        @hookimpl
        def register_coins(self, registry):
            registry.add(Coin("BND", "Bounded", "bndchain", 8, 3, "1", "xyz", **{field: value}))

    with pytest.raises(StartupError) as info:
        build_gateway(_config(tmp_path), get_plugin_manager([Bounded()], load_entrypoints=False))
    assert "'BND'" in str(info.value) and "'bounded'" in str(info.value) and f"bad {field}" in str(info.value)


def test_the_smallest_payment_is_one_base_unit_unless_a_plugin_says_more():
    assert Coin("ONE", "One", "onechain", 8, 3, "1", "xyz").min_payment_units == 1
    assert Coin("DST", "Dust", "dustchain", 8, 3, "1", "xyz", min_payment="0.00001").min_payment_units == 1000


def test_address_family_rules_at_startup(tmp_path):
    class Partial:
        PLUGIN_NAME = "partial"

        @hookimpl
        def register_address_families(self, registry):
            registry.add(_xyz_family("mainnet"))

    with pytest.raises(StartupError, match="'xyz'.*testnet, regtest"):
        build_gateway(_config(tmp_path), get_plugin_manager([Partial()]))

    class Clash:
        PLUGIN_NAME = "clash"

        @hookimpl
        def register_address_families(self, registry):
            registry.add(_xyz_family("mainnet", name="btc"))

    with pytest.raises(StartupError) as info:
        build_gateway(_config(tmp_path), get_plugin_manager([Clash()]))
    assert "'bitcoin'" in str(info.value) and "'clash'" in str(info.value)


def test_duplicate_route_names_both_plugins(tmp_path):
    class Routes:
        def __init__(self, name):
            self.PLUGIN_NAME = name

        @hookimpl
        def register_routes(self, registry):
            table = web.RouteTableDef()

            @table.get("/x/same")
            async def same(request):
                return web.Response()

            registry.add(table)

    pm = get_plugin_manager([("one", Routes("one")), ("two", Routes("two"))], load_entrypoints=False)
    with pytest.raises(StartupError) as info:
        create_app(_config(tmp_path), pm)
    assert "'one'" in str(info.value) and "'two'" in str(info.value)


def test_duplicate_job_names_fail(tmp_path):
    class Jobs:
        @hookimpl
        def register_jobs(self, registry):
            registry.add("same.job", lambda gw: None, seconds=5)

    pm = get_plugin_manager([("a", Jobs()), ("b", Jobs())], load_entrypoints=False)
    with pytest.raises(StartupError, match="same.job"):
        build_gateway(_config(tmp_path), pm)


def test_misspelled_hook_fails_at_factory():
    class Typo:
        @hookimpl
        def register_coin(self, registry):  # missing "s"
            pass

    with pytest.raises(Exception, match="register_coin"):
        get_plugin_manager([Typo()], load_entrypoints=False)


def test_plugin_config_errors_stop_the_start(tmp_path):
    with pytest.raises(ConfigError, match="plugin.prices.sourse"):
        build_gateway(_config(tmp_path, plugin={"prices": {"sourse": "static"}}))
    with pytest.raises(ConfigError, match="plugin.prices.source"):
        build_gateway(_config(tmp_path, plugin={"prices": {"source": "oracle"}}))


async def test_event_hooks_await_async_impls_and_isolate_failures(caplog):
    seen = []

    class Broken:
        @hookimpl
        def payment_paid(self, payment):
            raise RuntimeError("boom")

    class AsyncListener:
        @hookimpl
        async def payment_paid(self, gateway, payment):
            seen.append((gateway, payment["track_id"]))

    pm = get_plugin_manager([("broken", Broken()), ("listener", AsyncListener())], load_entrypoints=False)
    await Hooks(pm, "gw").payment_paid(payment={"track_id": "T1"})
    assert seen == [("gw", "T1")]
    assert "broken" in caplog.text and "payment_paid" in caplog.text


@pytest.mark.parametrize("hook, name, expected", [
    ("register_scopes", "Links:Create", "malformed scope 'Links:Create' (expected 'resource:action', lower case)"),
    ("register_scopes", "links", "malformed scope 'links'"),
    ("register_event_kinds", "paid", "malformed event kind 'paid' (expected dotted lower case"),
])
def test_a_malformed_scope_or_event_kind_stops_startup(hook, name, expected):
    class Sloppy:
        PLUGIN_NAME = "sloppy"

    setattr(Sloppy, hook, hookimpl(lambda self, registry: registry.add(name, "oops")))
    config = load_config(None, environ={})
    with pytest.raises(StartupError, match=re.escape(f"plugin 'sloppy' registered a {expected}")):
        build_gateway(config, get_plugin_manager([Sloppy()], load_entrypoints=False))
