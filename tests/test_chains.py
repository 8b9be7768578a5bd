"""The chain-adapter contract (core/types/chains.py): declared capabilities, and ``close`` at shutdown."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbchain import cli
from orbchain.core import gateway as gateway_module
from orbchain.core.types.chains import (
    Block, BlockRef, Capability, ChainAdapter, PayoutOrder, PayoutSender, PayoutStatus, SignedPayout,
    check_capabilities,
)
from orbchain.core.types.errors import NotConfigured
from orbchain.core.startup import build_gateway
from orbchain.core.payouts.service import payout_route
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.core.contract.registries import StartupError
from orbchain.core.watching.scanner import scan_chain


class Sender(PayoutSender):
    async def sign_payout(self, order: PayoutOrder) -> SignedPayout:
        return SignedPayout("aa" * 32, "00")

    async def broadcast(self, signed: SignedPayout) -> None:
        return None

    async def payout_status(self, signed: SignedPayout) -> PayoutStatus:
        return PayoutStatus(found=True)


class QuietChain(ChainAdapter, Sender):
    """Implements every method, declares only what each test says; records what the core calls."""

    name = "quiet"
    coins = ("BTC",)
    start_height = 0

    def __init__(self, capabilities: frozenset[Capability] = frozenset({Capability.DEPOSITS}), log=None) -> None:
        self.capabilities = capabilities
        self.calls: list[str] = log if log is not None else []

    async def tip(self) -> BlockRef:
        return BlockRef(0, "00" * 32)

    async def block(self, height: int) -> Block:
        return Block(0, "00" * 32, "ff" * 32)

    async def mempool(self):
        self.calls.append("mempool")
        return ()

    async def close(self) -> None:
        self.calls.append("close")


class ChainPlugin:
    def __init__(self, adapter: ChainAdapter, log: list[str]) -> None:
        self.adapter, self.log = adapter, log

    @hookimpl
    def register_chains(self, registry):
        registry.add(self.adapter)

    @hookimpl
    def gateway_stopping(self):
        self.log.append("gateway_stopping")


def plugin_manager(adapter: ChainAdapter, log: list[str], blocked: tuple[str, ...] = ()):
    return get_plugin_manager([("quiet", ChainPlugin(adapter, log))], blocked=blocked)


# -- capabilities ---------------------------------------------------------------------------------


def test_the_core_asks_the_declaration_not_the_class(config):
    # The devnet is blocked: only the adapter under test serves BTC.
    undeclared = build_gateway(config, plugin_manager(QuietChain(), [], blocked=("devnet",)))
    with pytest.raises(NotConfigured):
        payout_route(undeclared, "BTC")  # it implements PayoutSender, but did not declare PAYOUTS
    both = frozenset({Capability.DEPOSITS, Capability.PAYOUTS})
    declared = build_gateway(config, plugin_manager(QuietChain(both), [], blocked=("devnet",)))
    route = payout_route(declared, "BTC")
    assert route.chain == "quiet" and route.sender is declared.chains.get("quiet")


async def test_the_scanner_calls_mempool_only_when_declared(gateway):
    plain, watching = QuietChain(), QuietChain(frozenset({Capability.DEPOSITS, Capability.MEMPOOL}))
    await scan_chain(gateway, plain)
    await scan_chain(gateway, watching)
    assert plain.calls == [] and watching.calls == ["mempool"]


def test_a_scan_job_only_for_adapters_that_watch_deposits(config):
    payouts_only = build_gateway(config, plugin_manager(QuietChain(frozenset({Capability.PAYOUTS})), []))
    watching = build_gateway(config, plugin_manager(QuietChain(), []))
    assert "chain.quiet.scan" not in [job.name for job in payouts_only.jobs]
    assert "chain.quiet.scan" in [job.name for job in watching.jobs]


@pytest.mark.parametrize("capabilities, message", [
    ({Capability.DEPOSITS}, "frozenset of Capability"),
    (frozenset({"payouts"}), "frozenset of Capability"),
])
def test_a_declaration_of_the_wrong_type_is_refused(capabilities, message):
    with pytest.raises(ValueError, match=message):
        check_capabilities(QuietChain(capabilities))


def test_a_declaration_the_adapter_does_not_back_stops_the_start(config):
    class NoSender(ChainAdapter):
        name = "nosender"
        coins = ("BTC",)
        capabilities = frozenset({Capability.PAYOUTS})

        async def tip(self):
            raise AssertionError

        async def block(self, height):
            raise AssertionError

    class NoMempool(NoSender):
        name = "nomempool"
        capabilities = frozenset({Capability.MEMPOOL})

    with pytest.raises(StartupError, match="'nosender' declares PAYOUTS but payout_role"):
        build_gateway(config, plugin_manager(NoSender(), []))
    class NoHistory(NoSender):
        name = "nohistory"
        capabilities = frozenset({Capability.DEPOSITS, Capability.HISTORY})

    with pytest.raises(ValueError, match="'nomempool' declares MEMPOOL but does not implement mempool"):
        check_capabilities(NoMempool())
    with pytest.raises(ValueError, match="'nohistory' declares HISTORY but does not implement address_history"):
        check_capabilities(NoHistory())

    class NoCustody(NoSender):
        name = "nocustody"
        capabilities = frozenset({Capability.DEPOSITS, Capability.CUSTODY})

    with pytest.raises(ValueError, match="'nocustody' declares CUSTODY but does not implement custody_holdings"):
        check_capabilities(NoCustody())

    class SendsWithoutSigning(NoSender):
        name = "sendsonly"
        capabilities = frozenset({Capability.DEPOSITS, Capability.SIGNER_SENDS})

    with pytest.raises(ValueError, match="'sendsonly' declares SIGNER_SENDS without REMOTE_SIGNING"):
        check_capabilities(SendsWithoutSigning())


def test_built_in_adapters_declare_what_they_do(config):
    from orbchain.chains.bitcoin.adapter import BitcoinAdapter
    from orbchain.chains.devnet.adapter import DevnetAdapter
    from orbchain.chains.evm.adapter import EvmAdapter

    assert BitcoinAdapter.capabilities == {Capability.DEPOSITS, Capability.MEMPOOL, Capability.PAYOUTS,
                                           Capability.CUSTODY, Capability.REMOTE_SIGNING, Capability.BATCH_PAYOUTS}
    assert build_gateway(config).chains.get("lightning").capabilities == {
        Capability.PAYOUTS, Capability.INSTANT_PAYOUTS, Capability.REMOTE_SIGNING, Capability.SIGNER_SENDS}
    devnet = build_gateway(config).chains.get("devnet")
    assert isinstance(devnet, DevnetAdapter)
    assert devnet.capabilities == {Capability.DEPOSITS, Capability.MEMPOOL, Capability.PAYOUTS,
                                   Capability.PUSH, Capability.CUSTODY, Capability.REMOTE_SIGNING}
    evm_config = config.with_overrides(plugin={"evm": {
        "ethereum": {"rpc_url": "http://127.0.0.1:9", "chain_id": 1, "sweep": True},
        "polygon": {"rpc_url": "http://127.0.0.1:9", "chain_id": 137, "sweep": False}}})
    evm = [a for a in build_gateway(evm_config).chains if isinstance(a, EvmAdapter)]
    declared = {a.name: a.capabilities for a in evm}
    assert declared["ethereum"] == {Capability.DEPOSITS, Capability.PAYOUTS, Capability.SWEEPS, Capability.CUSTODY,
                                    Capability.REMOTE_SIGNING}
    assert declared["polygon"] == {Capability.DEPOSITS, Capability.PAYOUTS, Capability.CUSTODY,
                                   Capability.REMOTE_SIGNING}
    others = build_gateway(config.with_overrides(plugin={"tron": {"url": "http://127.0.0.1:9"},
                                                          "solana": {"rpc_url": "http://127.0.0.1:9"}})).chains
    assert others.get("tron").capabilities == {Capability.DEPOSITS, Capability.PAYOUTS, Capability.SWEEPS,
                                               Capability.CUSTODY, Capability.REMOTE_SIGNING}
    assert others.get("solana").capabilities == {Capability.DEPOSITS, Capability.PAYOUTS, Capability.SWEEPS,
                                                 Capability.HISTORY, Capability.CUSTODY, Capability.REMOTE_SIGNING}


# -- close at shutdown ----------------------------------------------------------------------------


async def test_the_web_app_closes_every_adapter_once_after_gateway_stopping(make_client, make_config):
    log: list[str] = []
    client = await make_client(make_config(scheduler={"enabled": False}), plugin_manager(QuietChain(log=log), log))
    assert (await client.get("/v1/common/currencies")).status == 200
    assert "close" not in log
    await client.close()
    assert log == ["gateway_stopping", "close"]


def test_a_cli_command_closes_the_adapters_it_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in ("ORBCHAIN_CONFIG", "ORBCHAIN_DATABASE_URL", "ORBCHAIN_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "orbchain.toml"
    path.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "development"\n\n'
                    f'[database]\nurl = "sqlite+aiosqlite:///{tmp_path / "var" / "orbchain.db"}"\n')
    log: list[str] = []
    monkeypatch.setattr(gateway_module, "get_plugin_manager", lambda blocked=(): plugin_manager(QuietChain(log=log), []))
    for argv in (["migrate"], ["ledger", "check"], ["config", "check"], ["plugins"]):
        log.clear()
        assert cli.main(["--config", str(path), *argv]) == 0
        assert log == ["close"], argv
