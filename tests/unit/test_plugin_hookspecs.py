"""Hooks a plugin declares for its own dependants (``register_hookspecs``, docs/plugins.md).

The ``swaps`` plugin declares ``register_swap_venues`` and the ``lightning``
plugin ``register_lightning_backends``; the core names neither. A dependant
(``@hookimpl(optionalhook=True)``) loads without its provider, pluggy checks
its implementation against the declared hook whichever of the two registered
first, and what the hook collects lives in the provider's own state.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from pluggy import PluginValidationError

from orbchain.chains.lightning import hookspecs as lightning_hookspecs
from orbchain.chains.lightning.devnet import DevnetLightningBackend
from orbchain.chains.lightning.receive import lightning_chain
from orbchain.core.contract import hookspecs as core_hookspecs
from orbchain.core.infra.config import load_config
from orbchain.core.infra.db import Database
from orbchain.core.gateway import Gateway
from orbchain.core.startup import build_gateway
from orbchain.core.contract.hookspecs import hookspec
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.core.contract.registries import StartupError
from orbchain.plugins import devnet_venue, swaps
from orbchain.plugins.devnet_venue import DevnetVenue
from orbchain.plugins.swaps import hookspecs as swaps_hookspecs
from orbchain.plugins.swaps.service import venue_account
from orbchain.plugins.swaps.venue_registry import SERVICE_NAME, venues_of

DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
DECLARED = {"swaps": swaps_hookspecs, "lightning": lightning_hookspecs}


def _specs(module: object) -> list[str]:
    return [name for name, func in inspect.getmembers(module, inspect.isfunction) if hasattr(func, "orbchain_spec")]


def test_the_core_declares_neither_hook_and_each_plugin_declares_its_own():
    assert _specs(swaps_hookspecs) == ["register_swap_venues"]
    assert _specs(lightning_hookspecs) == ["register_lightning_backends"]
    for module in DECLARED.values():
        assert not set(_specs(module)) & set(_specs(core_hookspecs))
    pm = get_plugin_manager()
    assert pm.hook.register_swap_venues.spec.namespace is swaps_hookspecs
    assert pm.hook.register_lightning_backends.spec.namespace is lightning_hookspecs


def test_each_declared_hook_is_documented_with_its_plugin_and_signature():
    text = DOCS.read_text(encoding="utf-8")
    for plugin, module in DECLARED.items():
        for name in _specs(module):
            func = getattr(module, name)
            assert (func.__doc__ or "").strip(), name
            params = ", ".join(inspect.signature(func).parameters)
            assert f"#### From `{plugin}`: `{name}({params})`" in text, name
    # The core hook reference (``#### `name(``) must not list them: the core does not declare them.
    assert not {"register_swap_venues", "register_lightning_backends"} & set(
        re.findall(r"^#### `(\w+)\(", text, flags=re.MULTILINE))


def test_venue_plugins_load_and_stay_idle_without_the_swaps_plugin():
    pm = get_plugin_manager(blocked=["swaps"])
    assert pm.get_plugin("changenow") is not None and pm.get_plugin("devnet_venue") is not None
    assert not pm.hook.register_swap_venues.has_spec()
    gateway = build_gateway(load_config(None, environ={}), pm)
    assert SERVICE_NAME not in gateway.services


def _bare_gateway(pm) -> Gateway:
    config = load_config(None, environ={})
    return Gateway(config=config, pm=pm, db=Database(config.database_url))


@pytest.mark.parametrize("venue_first", [True, False])
def test_venues_reach_the_swaps_plugins_state_whichever_registered_first(venue_first):
    plugins = [("devnet_venue", devnet_venue), ("swaps", swaps)]
    pm = get_plugin_manager(plugins if venue_first else plugins[::-1], load_entrypoints=False)
    gateway = _bare_gateway(pm)
    assert venues_of(gateway).names() == ["devnet"]  # collected on first use, then kept
    assert gateway.services[SERVICE_NAME] is venues_of(gateway)
    assert not hasattr(gateway, "venues")


def test_a_venue_registered_before_the_swaps_plugin_is_checked_when_the_hook_is_declared():
    class Wrong:
        @hookimpl(optionalhook=True)
        def register_swap_venues(self, registry, gateway, surplus):
            raise AssertionError("never called")

    with pytest.raises(PluginValidationError, match="surplus"):
        get_plugin_manager([("wrong", Wrong()), ("swaps", swaps)], load_entrypoints=False)
    with pytest.raises(PluginValidationError, match="surplus"):  # and after it, at registration
        get_plugin_manager([("swaps", swaps), ("wrong", Wrong())], load_entrypoints=False)


def test_a_hook_declared_twice_stops_the_start():
    class Copycat:
        @hookimpl
        def register_hookspecs(self, registry):
            registry.add(swaps_hookspecs)

    with pytest.raises(StartupError, match="register_swap_venues"):
        get_plugin_manager([("copycat", Copycat())])


def test_a_third_party_plugin_declares_a_hook_for_its_dependants():
    class Specs:
        @hookspec
        def register_widgets(self, registry):
            """Contribute widgets."""

    class Provider:
        @hookimpl
        def register_hookspecs(self, registry):
            registry.add(Specs)

    class Dependant:
        @hookimpl(optionalhook=True)
        def register_widgets(self, registry):
            registry.append("cog")

    pm = get_plugin_manager([("dependant", Dependant()), ("provider", Provider())], load_entrypoints=False)
    widgets: list[str] = []
    pm.hook.register_widgets(registry=widgets)
    assert widgets == ["cog"]
    alone = get_plugin_manager([("dependant", Dependant())], load_entrypoints=False)  # no provider: loads, idle
    assert not alone.hook.register_widgets.has_spec()


async def test_the_swaps_plugin_closes_every_venue_at_gateway_stopping(caplog):
    class Closable(DevnetVenue):
        def __init__(self, gateway, name: str, fail: bool = False) -> None:
            super().__init__(gateway.coins, gateway.now)
            self.name, self.fail, self.closed = name, fail, False

        async def close(self) -> None:
            self.closed = True
            if self.fail:
                raise RuntimeError("boom")

    class Venues:
        @hookimpl
        def register_swap_venues(self, registry, gateway):
            registry.add(Closable(gateway, "broken", fail=True))
            registry.add(Closable(gateway, "fine"))

    gateway = build_gateway(load_config(None, environ={}), get_plugin_manager([("venues", Venues())]))
    venues = venues_of(gateway)
    await swaps.gateway_stopping(gateway)
    assert venues["broken"].closed and venues["fine"].closed
    assert "closing swap venue broken failed" in caplog.text


def test_the_venue_account_is_the_swaps_plugins_own_and_checked():
    assert venue_account("devnet") == "swap:devnet"
    for bad in ("", "a:b"):
        with pytest.raises(ValueError):
            venue_account(bad)


def test_a_lightning_backend_plugin_is_offered_to_the_lightning_plugin_and_loads_without_it():
    class Mine:
        @hookimpl(optionalhook=True)
        def register_lightning_backends(self, registry, gateway):
            registry.add("mine", lambda settings: DevnetLightningBackend(settings, gateway.db, gateway.now))

    config = load_config(None, environ={}).with_overrides(plugin={"lightning": {"backend": "mine"}})
    gateway = build_gateway(config, get_plugin_manager([("mine", Mine())]))
    chain = lightning_chain(gateway)
    assert chain is not None and isinstance(chain.backend, DevnetLightningBackend)
    alone = get_plugin_manager([("mine", Mine())], blocked=["lightning"])
    assert alone.get_plugin("mine") is not None and not alone.hook.register_lightning_backends.has_spec()
