"""The tron plugin's pieces on their own: protobuf bytes against Tron's generated classes, settings, fee info."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbchain.chains.tron.settings import read_settings
from orbchain.chains.tron.signer import mined_info
from orbchain.chains.tron.transactions import RefBlock, raw_data, transfer, trigger
from orbchain.core.infra.config import ConfigError

from ..tron_support import tron_protos  # noqa: F401 - the fixture

ids = st.binary(min_size=20, max_size=20).map(lambda b: b"\x41" + b)


@settings(max_examples=60, deadline=None)
@given(owner=ids, to=ids, amount=st.integers(1, 2**63 - 1), number=st.integers(0, 2**40),
       block=st.binary(min_size=32, max_size=32), expiration=st.integers(1, 2**50), fee_limit=st.integers(0, 2**40),
       data=st.binary(max_size=100), token=st.booleans())
def test_raw_data_is_what_tron_classes_serialize(tron_protos, owner, to, amount, number, block, expiration,  # noqa: F811
                                                 fee_limit, data, token):
    pb = tron_protos
    ref = RefBlock(number, block.hex(), 0)
    call = trigger(owner, to, data) if token else transfer(owner, to, amount)
    ours = raw_data(call, ref, expiration_ms=expiration, timestamp_ms=expiration - 1, fee_limit=fee_limit)
    raw = pb.Transaction.raw(ref_block_bytes=number.to_bytes(8, "big")[6:8], ref_block_hash=block[8:16],
                             expiration=expiration, timestamp=expiration - 1, fee_limit=fee_limit)
    contract = raw.contract.add()
    if token:
        contract.type = pb.Transaction.Contract.TriggerSmartContract
        contract.parameter.Pack(pb.TriggerSmartContract(owner_address=owner, contract_address=to, data=data))
    else:
        contract.type = pb.Transaction.Contract.TransferContract
        contract.parameter.Pack(pb.TransferContract(owner_address=owner, to_address=to, amount=amount))
    assert ours == raw.SerializeToString(deterministic=True)
    assert hashlib.sha256(ours).digest() == hashlib.sha256(raw.SerializeToString(deterministic=True)).digest()


@pytest.mark.parametrize("block, message", [
    ({"url": "ftp://node"}, "plugin.tron.url"),
    ({"urll": "http://x"}, "unknown config key 'plugin.tron.urll'"),
    ({"network": "shasta"}, "plugin.tron.network"),
    ({"expiration_seconds": 90_000}, "plugin.tron.expiration_seconds"),
    ({"expiration_seconds": 3600, "drop_after_seconds": 3600}, "plugin.tron.drop_after_seconds"),
    ({"fee_limit_sun": 0}, "plugin.tron.fee_limit_sun"),
    ({"api_key": ""}, "plugin.tron.api_key"),
    ({"contracts": {"TRX": "T..."}}, "plugin.tron.contracts.TRX"),
])
def test_bad_settings_name_the_key(block, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        read_settings(block)


@pytest.mark.parametrize("network", ["mainnet", "testnet"])
def test_the_scan_follows_tron_blocks_on_every_network(network):
    """No push on Tron: the poll is the only way in, one scan per 3 s block (docs/tron.md)."""
    assert read_settings({"url": "http://node", "network": network}).scan_seconds == 3.0
    assert read_settings({"url": "http://node", "network": network, "scan_seconds": 6}).scan_seconds == 6.0


def test_settings_hide_the_endpoint():
    settings = read_settings({"url": "https://secret-provider.example/key123", "api_key": "k"})
    assert "key123" not in repr(settings) and "k'" not in repr(settings)


def test_mined_info_splits_activation_from_bandwidth_and_energy():
    created = mined_info({"blockNumber": 10, "fee": 1_100_000, "receipt": {"net_fee": 100_000}}, 12)
    assert created is not None and (created.confirmations, created.fee, created.activation_fee) == (3, 1_100_000,
                                                                                                   1_100_000)
    call = mined_info({"blockNumber": 10, "fee": 500, "receipt": {"energy_fee": 500, "result": "SUCCESS"}}, 10)
    assert call is not None and call.succeeded and call.activation_fee == 0
    failed = mined_info({"blockNumber": 10, "fee": 9, "result": "FAILED", "receipt": {"energy_fee": 9,
                                                                                     "result": "REVERT"}}, 10)
    assert failed is not None and not failed.succeeded
    assert mined_info({}, 10) is None


def test_the_stand_ins_free_bandwidth_fades_over_a_day_like_java_tron():
    from ..tron_node import WINDOW_SLOTS, window_usage

    assert WINDOW_SLOTS == 28_800  # 24 h of 3-second slots
    assert window_usage(0, 345, 10, 10) == 345
    assert window_usage(345, 0, 10, 10) == 345  # same slot: nothing recovered
    assert window_usage(345, 0, 10, 11) == 345  # a third of a per-slot unit rounds back up
    assert window_usage(345, 0, 10, 12) == 344  # then it fades ...
    assert window_usage(345, 0, 0, WINDOW_SLOTS // 2) == 172  # ... linearly: half of it after 12 h
    assert window_usage(345, 0, 0, WINDOW_SLOTS - 1) == 0
    assert window_usage(345, 200, 0, WINDOW_SLOTS) == 200  # a day later only the new use counts
    assert window_usage(300, 300, 5, 5) == 600  # spent the same slot: it adds up


@settings(max_examples=60, deadline=None)
@given(contract=st.binary(min_size=20, max_size=20))
def test_a_log_contract_is_its_20_bytes_in_either_spelling(contract):
    from orbchain.chains.tron.adapter import log_contract

    assert log_contract(contract.hex()) == contract.hex()
    assert log_contract("41" + contract.hex()) == contract.hex()
    assert log_contract("0x" + contract.hex().upper()) == contract.hex()
    assert log_contract((b"\x41" + contract[1:]).hex()) == (b"\x41" + contract[1:]).hex()
