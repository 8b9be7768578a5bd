"""The monero plugin's config block and its reading of wallet answers, without a node (chains/monero)."""

from __future__ import annotations

import pytest

from orbchain.chains import monero
from orbchain.chains.monero.adapter import MoneroAdapter
from orbchain.chains.monero.settings import read_settings
from orbchain.core.types.chains import Capability, ChainUnavailable, check_capabilities
from orbchain.core.infra.config import ConfigError
from orbchain.core.startup import build_gateway

GOOD = {"daemon_url": "http://127.0.0.1:18081", "wallet_rpc_url": "http://127.0.0.1:18083", "network": "regtest"}


def settings(make_config, **block):
    return read_settings(make_config(plugin={"monero": block}))


def test_no_block_means_no_adapter(make_config):
    assert read_settings(make_config()) is None


def test_a_good_block(make_config):
    found = settings(make_config, **GOOD, account_index=2, wallet_rpc_user="u", wallet_rpc_password="s3cr3t-pw")
    assert found.network == "regtest" and found.account_index == 2 and found.scan_seconds == 5.0
    assert "s3cr3t-pw" not in repr(found)


def test_push_only_with_the_publisher(make_config):
    assert not MoneroAdapter(settings(make_config, **GOOD)).supports(Capability.PUSH)
    pushing = MoneroAdapter(settings(make_config, **GOOD, zmq_pub_url="tcp://127.0.0.1:18084"))
    assert pushing.supports(Capability.PUSH) and pushing.scan_seconds == 5.0  # the poll stays the safety net
    check_capabilities(pushing)


@pytest.mark.parametrize("block, named", [
    ({**GOOD, "surprise": 1}, "plugin.monero.surprise"),
    ({k: v for k, v in GOOD.items() if k != "daemon_url"}, "plugin.monero.daemon_url"),
    ({**GOOD, "wallet_rpc_url": "ftp://x"}, "plugin.monero.wallet_rpc_url"),
    ({**GOOD, "network": "stagenet"}, "plugin.monero.network"),
    ({**GOOD, "wallet_rpc_user": "u"}, "plugin.monero.wallet_rpc_user"),
    ({**GOOD, "account_index": -1}, "account_index"),
    ({**GOOD, "zmq_pub_url": "http://127.0.0.1:18084"}, "plugin.monero.zmq_pub_url"),
    ({**GOOD, "zmq_pub_url": "tcp://127.0.0.1"}, "plugin.monero.zmq_pub_url"),
])
def test_bad_blocks_name_the_key(make_config, block, named):
    with pytest.raises(ConfigError) as info:
        settings(make_config, **block)
    assert named in str(info.value)


def test_wallet_entries_become_transfers_only_when_usable(make_config):
    adapter = MoneroAdapter(settings(make_config, **GOOD))
    entry = {"txid": "ab" * 32, "address": "8xyz", "amount": 5, "unlock_time": 0,
             "subaddr_index": {"major": 0, "minor": 3}}
    [transfer] = adapter._transfers([entry])
    assert (transfer.tx_hash, transfer.output_index, transfer.address, transfer.coin, transfer.amount) == (
        "ab" * 32, 3, "8xyz", "XMR", 5)
    assert adapter._transfers([{**entry, "unlock_time": 10_000}]) == []  # time-locked: never credited
    assert adapter._transfers([{**entry, "subaddr_index": {"major": 1, "minor": 3}}]) == []  # another account
    with pytest.raises(ChainUnavailable):
        adapter._transfers([{**entry, "amount": 1.5}])


def test_the_qr_of_an_xmr_payment_is_a_monero_uri(make_config):
    gateway = build_gateway(make_config())
    xmr, btc = gateway.coins.require("XMR"), gateway.coins.require("BTC")
    payment = {"address": "8abc", "pay_amount": "1.5"}
    assert monero.decide_qr_payload(payment, xmr) == "monero:8abc?tx_amount=1.5"
    assert monero.decide_qr_payload({"address": "8abc", "pay_amount": None}, xmr) == "monero:8abc"
    assert monero.decide_qr_payload(payment, btc) is None
