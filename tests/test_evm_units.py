"""The EVM plugin's pure parts: config, token logs and calldata, hex quantities, registration."""

from __future__ import annotations

import pytest

from orbchain.chains.evm.rpc import quantity
from orbchain.chains.evm.settings import read_settings
from orbchain.chains.evm.tokens import (
    TRANSFER_TOPIC,
    balance_of_calldata,
    decode_transfer,
    decode_uint,
    transfer_calldata,
)
from orbchain.core.types.chains import ChainUnavailable
from orbchain.core.infra.config import ConfigError
from orbchain.core.startup import build_gateway
from orbchain.core.contract.plugins import get_plugin_manager

from .anvil import abi_call_data, balance_of_data

ADDRESS = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


@pytest.mark.parametrize("owner", [ADDRESS, ADDRESS.lower(), "0x" + "00" * 20, "0x" + "ff" * 20])
def test_calldata_is_the_abi_encoding(owner):
    """The product's encoders against eth_abi's (the tests' balances are read with eth_abi's, not the product's).

    Break caught: a wrong selector, padding or byte order in balance_of_calldata or transfer_calldata.
    """
    assert balance_of_calldata(owner).lower() == balance_of_data(owner).lower()
    for amount in (0, 1, 5_000_000, 2**256 - 1):
        assert transfer_calldata(owner, amount).lower() == abi_call_data("transfer", ["address", "uint256"],
                                                                         [owner, amount]).lower()


def test_transfer_topic_and_selectors_are_the_standard_ones():
    assert TRANSFER_TOPIC == "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
    calldata = transfer_calldata(ADDRESS, 5_000_000)
    assert calldata.startswith("0xa9059cbb000000000000000000000000" + ADDRESS[2:].lower())
    assert int(calldata[-64:], 16) == 5_000_000 and len(calldata) == 2 + 8 + 128
    assert balance_of_calldata(ADDRESS).startswith("0x70a08231")
    assert decode_uint("0x" + format(2**255, "064x")) == 2**255
    with pytest.raises(ValueError):
        transfer_calldata(ADDRESS, -1)


def _log(**changes):
    log = {"address": "0xAbC0000000000000000000000000000000000001", "logIndex": "0x7",
           "transactionHash": "0x" + "AB" * 32, "data": "0x" + format(10**30, "064x"),
           "topics": [TRANSFER_TOPIC, "0x" + "0" * 24 + "11" * 20, "0x" + "0" * 24 + ADDRESS[2:].lower()]}
    log.update(changes)
    return log


def test_decode_transfer_reads_exact_values_and_checksums_the_recipient():
    decoded = decode_transfer(_log())
    assert decoded.recipient == ADDRESS and decoded.value == 10**30 and decoded.log_index == 7
    assert decoded.contract == "0xabc0000000000000000000000000000000000001"
    assert decoded.tx_hash == "0x" + "ab" * 32


@pytest.mark.parametrize("changes", [
    {"topics": [TRANSFER_TOPIC, "0x" + "0" * 64]},  # too few topics
    {"topics": [TRANSFER_TOPIC, "0x" + "0" * 64, "0x" + "0" * 64, "0x" + "0" * 64]},  # ERC-721 shape
    {"data": "0x"},
    {"removed": True},
    {"topics": ["0x" + "12" * 32, "0x" + "0" * 64, "0x" + "0" * 64]},  # another event
    {"topics": [TRANSFER_TOPIC, "0x" + "0" * 64, "0x" + "ff" * 32]},  # not an address word
])
def test_decode_transfer_refuses_other_shapes(changes):
    assert decode_transfer(_log(**changes)) is None


def test_quantities_are_hex_ints_and_nothing_else():
    assert quantity("0x0") == 0 and quantity("0xde0b6b3a7640000") == 10**18
    for bad in ("12", 12, None, "0x", "0xzz"):
        with pytest.raises(ChainUnavailable):
            quantity(bad)


@pytest.mark.parametrize("block, message", [
    ({"ethereum": {"chain_id": 1}}, "plugin.evm.ethereum.rpc_url' is required"),
    ({"ethereum": {"rpc_url": "http://n", "chain_id": "1"}}, "plugin.evm.ethereum.chain_id' must be an integer"),
    ({"ethereum": {"rpc_url": "ftp://n", "chain_id": 1}}, "plugin.evm.ethereum.rpc_url' must be an http(s) URL"),
    ({"ethereum": {"rpc_url": "http://n", "chain_id": 1, "colour": 1}}, "unknown config key 'plugin.evm.ethereum.colour'"),
    ({"ethereum": {"rpc_url": "http://n", "chain_id": 1, "payout_confirmations": 0}},
     "plugin.evm.ethereum.payout_confirmations' must be an integer >= 1"),
    ({"ethereum": "http://n"}, "'plugin.evm.ethereum' must be a table"),
    ({"ethereum": {"rpc_url": "http://n", "chain_id": 1, "ws_url": "http://n"}},
     "plugin.evm.ethereum.ws_url' must be a ws(s):// URL"),
])
def test_config_errors_name_the_key(block, message):
    with pytest.raises(ConfigError) as excinfo:
        read_settings(block)
    assert message in str(excinfo.value)


def test_defaults():
    settings = read_settings({"bsc": {"rpc_url": "https://bsc.example", "chain_id": 56}})["bsc"]
    assert settings.payout_confirmations == 1 and settings.sweep and settings.start_height is None
    assert settings.ws_url is None  # never guessed from rpc_url (docs/evm.md, "Push")


def test_chains_register_only_with_a_block(make_config):
    gateway = build_gateway(make_config(), get_plugin_manager(blocked=["devnet"]))
    assert not any(a.name in ("ethereum", "bsc", "polygon") for a in gateway.chains)
    config = make_config(plugin={"evm": {"bsc": {"rpc_url": "http://127.0.0.1:1", "chain_id": 56},
                                         "polygon": {"rpc_url": "http://127.0.0.1:1", "chain_id": 137}}})
    gateway = build_gateway(config, get_plugin_manager(blocked=["devnet"]))
    bsc, polygon = gateway.chains.get("bsc"), gateway.chains.get("polygon")
    assert bsc.coins == ("BNB", "USDC_BEP20", "USDT_BEP20") and bsc.network == "mainnet"
    assert polygon.coins == ("POL", "USDC_POL", "USDT_POL") and "ethereum" not in gateway.chains
    assert {"evm.bsc.sweep", "evm.polygon.sweep", "chain.bsc.scan"} <= set(gateway.jobs.names())


def test_an_unknown_chain_is_a_config_error(make_config):
    config = make_config(plugin={"evm": {"avalanche": {"rpc_url": "http://127.0.0.1:1", "chain_id": 43114}}})
    with pytest.raises(ConfigError, match="plugin.evm.avalanche"):
        build_gateway(config, get_plugin_manager(blocked=["devnet"]))


def test_hot_wallet_command_prints_the_address_to_fund(make_config, capsys):
    from orbchain.chains.evm.cli import cmd_hot_wallet
    from orbchain.chains.evm.keys import hot_wallet_address

    config = make_config(plugin={"evm": {"polygon": {"rpc_url": "http://127.0.0.1:9", "chain_id": 137,
                                                     "timeout_seconds": 1}}})
    gateway = build_gateway(config, get_plugin_manager(blocked=["devnet"]))
    assert cmd_hot_wallet(None, gateway) == 0
    out = capsys.readouterr().out
    assert hot_wallet_address(gateway) in out and "polygon: node unavailable" in out
    assert hot_wallet_address(gateway).startswith("0x")
