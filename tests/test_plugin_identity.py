"""Plugins say who they are (issue 30): ``orbchain plugins``, the Orbchain versions a plugin supports, and a
chain that needs configuration staying off until the operator gives it some.

``acme_orbchain`` is installed the way pip would (a module plus dist-info with an ``orbchain`` entry
point), so its distribution and version are read exactly as for a real package. ``NodeChain`` is a
chain plugin registered by the test whose node is never there: before this rule, installing it made
``/ready`` answer 503 (and the repo's own OpenAPI journey fail).
"""

from __future__ import annotations

import json
import logging
import sys
import textwrap

import pytest

from orbchain import __version__
from orbchain.core.cli import commands as cli
from orbchain.core.types.chains import BlockRef, ChainAdapter
from orbchain.core.money.coins import Coin
from orbchain.core.infra.config import checked_block, load_config
from orbchain.core.startup import build_gateway
from orbchain.core.keys import NETWORKS, SECP256K1, AddressFamily, DerivationScheme, coin_type_for
from orbchain.core.contract.plugin_identity import check_declarations
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.core.health.readiness import watched_chains
from orbchain.core.contract.registries import StartupError
from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY

from .support import install_entry_point_package

ACME = textwrap.dedent('''
    """A throwaway third-party plugin that declares itself (test only)."""
    from orbchain.core.infra.config import checked_block
    from orbchain.core.contract.plugins import hookimpl

    {declarations}

    @hookimpl
    def check_config(gateway):
        checked_block(gateway.config, "acme", ("rpc_url",))

    @hookimpl
    def gateway_started(gateway):
        pass
''')
NEEDS_CONFIG = "ORBCHAIN_NEEDS_CONFIG = True"


@pytest.fixture
def install_acme(tmp_path, monkeypatch):
    """``install_acme(declarations)``: ``acme_orbchain`` 1.0 on ``sys.path`` with those module lines."""
    def install(*declarations: str) -> None:
        site = tmp_path / "site"
        install_entry_point_package(site, "acme_orbchain", "acme",
                                    {"__init__.py": ACME.format(declarations="\n".join(declarations))})
        monkeypatch.syspath_prepend(str(site))

    yield install
    sys.modules.pop("acme_orbchain", None)


@pytest.fixture
def config_file(tmp_path, monkeypatch):
    """``config_file(extra_toml)``: an orbchain.toml (development, SQLite in tmp_path); its path."""
    for name in ("ORBCHAIN_CONFIG", "ORBCHAIN_DATABASE_URL", "ORBCHAIN_DATA_DIR", "ORBCHAIN_ENVIRONMENT"):
        monkeypatch.delenv(name, raising=False)

    def write(extra: str = "") -> str:
        path = tmp_path / "orbchain.toml"
        path.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "development"\n\n'
                        f'[database]\nurl = "sqlite+aiosqlite:///{tmp_path / "var" / "orbchain.db"}"\n\n{extra}')
        return str(path)

    return write


def _config(tmp_path, **sections):
    base = load_config(None, environ={}).with_overrides(server={"data_dir": str(tmp_path)})
    return base.with_overrides(**sections) if sections else base


# -- orbchain plugins -------------------------------------------------------------------------------


def test_plugins_shows_distribution_version_status_and_hooks(install_acme, config_file, capsys):
    install_acme('ORBCHAIN_REQUIRES = ">=0.1,<99"', NEEDS_CONFIG)
    path = config_file('[plugins]\nblocked = ["changenow"]\n')
    assert cli.main(["--config", path, "plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["PLUGIN", "DISTRIBUTION", "STATUS"]
    rows = {line.split()[0]: line for line in lines[1:] if not line.startswith(" ")}
    assert rows["acme"].split() == ["acme", "acme-orbchain", "1.0", "off", "until", "configured:", "write",
                                    "[plugin.acme]"]
    assert rows["bitcoin"].split() == ["bitcoin", "orbchain", __version__, "active"]
    assert rows["changenow"].split() == ["changenow", "orbchain", __version__, "blocked"]
    acme = lines.index(rows["acme"])
    assert [line.strip() for line in lines[acme + 1:acme + 3]] == [
        "supports Orbchain >=0.1,<99", "hooks: check_config, gateway_started"]

    assert cli.main(["--config", path, "plugins", "--json"]) == 0
    listed = {entry["name"]: entry for entry in json.loads(capsys.readouterr().out)}
    assert listed["acme"] == {"name": "acme", "distribution": "acme-orbchain", "version": "1.0",
                              "requires_orbchain": ">=0.1,<99", "needs_config": True,
                              "status": "off until configured", "hooks": ["check_config", "gateway_started"]}
    assert listed["changenow"]["status"] == "blocked" and listed["changenow"]["hooks"] == []
    assert "register_chains" in listed["bitcoin"]["hooks"] and listed["bitcoin"]["requires_orbchain"] is None

    # Configured, it is active.
    path = config_file('[plugin.acme]\nrpc_url = "http://127.0.0.1:9"\n')
    assert cli.main(["--config", path, "plugins", "--json"]) == 0
    assert {e["name"]: e for e in json.loads(capsys.readouterr().out)}["acme"]["status"] == "active"


# -- the Orbchain versions a plugin supports --------------------------------------------------------


def test_a_plugin_made_for_another_orbchain_stops_the_start_naming_it(install_acme, config_file, tmp_path, capsys):
    install_acme('ORBCHAIN_REQUIRES = ">=99"')
    with pytest.raises(StartupError) as refused:
        build_gateway(_config(tmp_path))
    message = str(refused.value)
    assert "plugin 'acme' supports Orbchain >=99" in message and f"this is Orbchain {__version__}" in message
    assert '[plugins] blocked = ["acme"]' in message

    assert cli.main(["--config", config_file(), "plugins"]) == 2  # the same refusal, one line, no traceback
    assert capsys.readouterr().err.strip() == f"orbchain: {message}"

    gateway = build_gateway(_config(tmp_path, plugins={"blocked": ["acme"]}))  # blocked, the rest starts
    assert gateway.pm.get_plugin("acme") is None


class Declares:
    def __init__(self, name: str, **attributes: object) -> None:
        self.PLUGIN_NAME = name
        for key, value in attributes.items():
            setattr(self, key, value)

    @hookimpl
    def gateway_started(self):
        pass


def test_bad_declarations_are_refused_together(tmp_path):
    pm = get_plugin_manager([Declares("soon", ORBCHAIN_REQUIRES="next year"),
                             Declares("mute", ORBCHAIN_NEEDS_CONFIG=True),
                             Declares("fine", ORBCHAIN_REQUIRES=">=0.1")], load_entrypoints=False)
    with pytest.raises(StartupError) as refused:
        build_gateway(_config(tmp_path), pm)
    problems = str(refused.value).split("; ")
    assert problems == [
        "plugin 'soon': ORBCHAIN_REQUIRES = 'next year' is not a version specifier (PEP 440, e.g. '>=0.9,<2')",
        "plugin 'mute' sets ORBCHAIN_NEEDS_CONFIG but implements no check_config hook to read its"
        " [plugin.mute] block",
    ]


def test_a_prerelease_of_orbchain_counts_as_its_version():
    pm = get_plugin_manager([Declares("fine", ORBCHAIN_REQUIRES=">=1.0,<3")], load_entrypoints=False)
    check_declarations(pm, running="2.0.0rc1")
    with pytest.raises(StartupError, match="this is Orbchain 3.0.0rc1"):
        check_declarations(pm, running="3.0.0rc1")


# -- a chain that needs configuration stays off until it has some ---------------------------------


class UnreachableNode(ChainAdapter):
    name = "nodchain"
    coins = ("NOD",)

    async def tip(self) -> BlockRef:
        raise ConnectionRefusedError("no node at the configured URL")

    async def block(self, height):
        raise ConnectionRefusedError("no node at the configured URL")


class NodeChain:
    """A third-party chain whose adapter talks to a node the operator names in ``[plugin.nodechain]``."""

    PLUGIN_NAME = "nodechain"
    ORBCHAIN_NEEDS_CONFIG = True

    @hookimpl
    def check_config(self, gateway):
        checked_block(gateway.config, self.PLUGIN_NAME, ("rpc_url",))

    @hookimpl
    def register_coins(self, registry):
        registry.add(Coin("NOD", "Nod", "nodchain", 8, 1, "1", "nod", price_id="nod", dev_price_usd="1"))

    @hookimpl
    def register_address_families(self, registry):
        for network in NETWORKS:
            registry.add(AddressFamily("nod", network, "Nod account", lambda address, network: address,
                                       DerivationScheme(SECP256K1, 44, coin_type_for(77001, network)),
                                       lambda public_key: "nod1" + public_key.hex()))

    @hookimpl
    def register_chains(self, registry):
        registry.add(UnreachableNode())


TOKEN = "plugin-identity-metrics-token"


async def _ready(client) -> tuple[int, dict]:
    response = await client.get("/ready", headers={"Authorization": f"Bearer {TOKEN}"})
    return response.status, await response.json()


async def _scan_all(gateway) -> None:
    for adapter in watched_chains(gateway):
        await scan_chain(gateway, adapter)


async def test_an_unconfigured_node_chain_stays_off_and_the_gateway_stays_ready(make_client, make_config, caplog):
    caplog.set_level(logging.INFO, logger="orbchain.core.contract.plugin_identity")
    client = await make_client(make_config(scheduler={"enabled": False}, metrics={"token": TOKEN}),
                               get_plugin_manager([NodeChain()]))
    gateway = client.app[GATEWAY]
    assert "nodchain" not in gateway.chains
    assert [r.getMessage() for r in caplog.records if "nodechain" in r.getMessage()] == [
        "plugin nodechain is off until configured: its chains need a [plugin.nodechain] block (or"
        " ORBCHAIN_PLUGIN__NODECHAIN__* variables); its coins stay registered"]
    assert gateway.chains["devnet"].serves("NOD")  # development: the devnet simulates its coin
    await _scan_all(gateway)
    status, body = await _ready(client)
    assert status == 200 and [c["chain"] for c in body["chains"]] == ["devnet"], body


async def test_configured_the_node_chain_is_on_and_ready_waits_for_its_node(make_client, make_config):
    config = make_config(scheduler={"enabled": False}, metrics={"token": TOKEN}, readiness={"node_timeout_seconds": 1},
                         plugin={"nodechain": {"rpc_url": "http://127.0.0.1:9"}})
    client = await make_client(config, get_plugin_manager([NodeChain()]))
    gateway = client.app[GATEWAY]
    assert isinstance(gateway.chains.get("nodchain"), UnreachableNode)
    await scan_chain(gateway, gateway.chains["devnet"])  # the node chain cannot scan: no node
    status, body = await _ready(client)
    node = next(c for c in body["chains"] if c["chain"] == "nodchain")
    assert status == 503 and node["reachable"] is False and node["error"] == "ConnectionRefusedError", body


def test_outside_development_an_unconfigured_node_chain_is_off_with_a_warning(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="orbchain.core.contract.plugin_identity")
    gateway = build_gateway(_config(tmp_path, server={"environment": "production"}),
                            get_plugin_manager([NodeChain()]))
    assert "nodchain" not in gateway.chains and "devnet" not in gateway.chains
    assert "NOD" in gateway.coins  # registered, served by no chain: payments in it answer 503 as for any such coin
    warned = [r for r in caplog.records if "nodechain" in r.getMessage()]
    assert [r.levelno for r in warned] == [logging.WARNING]
    configured = build_gateway(_config(tmp_path, server={"environment": "production"},
                                       plugin={"nodechain": {"rpc_url": "http://127.0.0.1:9"}}),
                               get_plugin_manager([NodeChain()]))
    assert "nodchain" in configured.chains
