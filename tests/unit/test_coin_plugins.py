"""The chain plugins' coin data: owners, flags, price ids, contract overrides (issue 12)."""

from __future__ import annotations

import pytest

from orbchain.core.infra.config import ConfigError, load_config
from orbchain.core.startup import build_gateway

TETHER_TEST = "0x1111111111111111111111111111111111111111"
EVM_BLOCK = {"rpc_url": "http://127.0.0.1:1", "chain_id": 5}


def _gateway(tmp_path, **plugin):
    config = load_config(None, environ={}).with_overrides(server={"data_dir": str(tmp_path)}, plugin=plugin)
    return build_gateway(config)


def test_each_coin_belongs_to_its_chain_plugin(tmp_path):
    coins = _gateway(tmp_path).coins
    owners = {symbol: coins.owner(symbol) for symbol in coins.names()}
    assert {owners[s] for s in ("BTC", "LTC", "DOGE")} == {"bitcoin"}
    assert {owners[s] for s in ("ETH", "USDT_ERC20", "BNB", "USDC_POL")} == {"evm"}
    assert {owners[s] for s in ("TRX", "USDT_TRC20", "USDC_TRC20")} == {"tron"}
    assert (owners["SOL"], owners["XMR"], owners["BTC_LN"]) == ("solana", "monero", "lightning")


def test_flags_replace_the_symbol_rules(tmp_path):
    coins = _gateway(tmp_path).coins
    assert coins.default_accepted() == ["BTC", "LTC", "ETH", "USDT_ERC20", "USDT_TRC20", "SOL"]  # SPEC 4.8
    source_only = [c.symbol for c in coins if not c.receive_address]
    assert source_only == ["XMR"] and coins.require("XMR").settles_only_via_swap
    assert [c.symbol for c in coins if c.settles_only_via_swap] == ["XMR"]
    assert all(c.price_id and c.dev_price_usd for c in coins)
    assert coins.require("USDT_TRC20").price_id == "tether" and coins.require("BTC_LN").price_id == "bitcoin"


def test_contract_overrides_live_with_the_owning_plugin(tmp_path):
    gateway = _gateway(tmp_path, evm={"ethereum": {**EVM_BLOCK, "contracts": {"USDT_ERC20": TETHER_TEST}}},
                       tron={"contracts": {"USDT_TRC20": "TXYZ"}})
    assert gateway.coins.require("USDT_ERC20").contract == TETHER_TEST
    assert gateway.coins.require("USDT_TRC20").contract == "TXYZ"
    assert gateway.coins.require("USDT_BEP20").contract == "0x55d398326f99059fF775485246999027B3197955"


@pytest.mark.parametrize("plugin, key", [
    ({"evm": {"ethereum": {**EVM_BLOCK, "contracts": {"USDT_BEP20": TETHER_TEST}}}},
     "plugin.evm.ethereum.contracts.USDT_BEP20"),  # a token of another chain
    ({"evm": {"ethereum": {**EVM_BLOCK, "contracts": {"ETH": TETHER_TEST}}}}, "plugin.evm.ethereum.contracts.ETH"),
    ({"evm": {"ethereum": {**EVM_BLOCK, "contracts": ["x"]}}}, "plugin.evm.ethereum.contracts"),
    ({"tron": {"contracts": {"TRX": "T1"}}}, "plugin.tron.contracts.TRX"),
    ({"tron": {"contract": {}}}, "plugin.tron.contract"),
    ({"coin_table": {"contracts": {"USDT_ERC20": TETHER_TEST}}}, "plugin.coin_table"),
])
def test_bad_contract_overrides_stop_startup_naming_the_key(tmp_path, plugin, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        _gateway(tmp_path, **plugin)
