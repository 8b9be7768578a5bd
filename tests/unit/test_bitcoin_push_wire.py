"""The bitcoin family's push, without sockets: P2P framing and payloads, ZMQ frames, and the push settings.

The same code talks to a real litecoind in tests/test_bitcoin_push.py.
"""

from __future__ import annotations

import struct

import pytest

from orbchain.api import Capability, ChainUnavailable, ConfigError
from orbchain.chains.bitcoin import BitcoinAdapter
from orbchain.chains.bitcoin import p2p_wire as wire
from orbchain.chains.bitcoin import zmq_feed
from orbchain.chains.bitcoin.settings import read_settings
from orbchain.core.infra.config import load_config

REGTEST = wire.MAGIC[("LTC", "regtest")]
HASH = bytes(range(32))


def inv(*types: int) -> bytes:
    return wire.varint(len(types)) + b"".join(struct.pack("<I", t) + HASH for t in types)


# -- P2P framing ----------------------------------------------------------------------------------


def test_a_framed_message_reads_back():
    message = wire.frame(REGTEST, "ping", b"12345678")
    header = wire.parse_header(REGTEST, message[:24])
    assert (header.command, header.length) == ("ping", 8)
    wire.check_payload(header, message[24:])


def test_magic_differs_per_coin_on_mainnet_and_the_forks_share_regtest():
    assert len({wire.MAGIC[(coin, "mainnet")] for coin in ("BTC", "LTC", "DOGE")}) == 3
    assert len({wire.MAGIC[(coin, "testnet")] for coin in ("BTC", "LTC", "DOGE")}) == 3
    assert {wire.MAGIC[(coin, "regtest")] for coin in ("BTC", "LTC", "DOGE")} == {bytes.fromhex("fabfb5da")}


@pytest.mark.parametrize("header, error", [
    (wire.frame(wire.MAGIC[("LTC", "mainnet")], "ping", b"x" * 8)[:24], "wrong network magic"),
    (REGTEST + b"pi\0ng\0\0\0\0\0\0\0" + struct.pack("<I", 0) + bytes(4), "malformed command"),
    (REGTEST + b"\x01bad\0\0\0\0\0\0\0\0" + struct.pack("<I", 0) + bytes(4), "malformed command"),
    (REGTEST + bytes(12) + struct.pack("<I", 0) + bytes(4), "malformed command"),
    (REGTEST + b"inv".ljust(12, b"\0") + struct.pack("<I", wire.MAX_PAYLOAD + 1) + bytes(4), "exceeds"),
    (REGTEST[:3], "short"),
])
def test_bad_headers_are_refused(header, error):
    with pytest.raises(wire.WireError, match=error):
        wire.parse_header(REGTEST, header)


def test_a_wrong_checksum_is_refused():
    message = wire.frame(REGTEST, "inv", inv(wire.MSG_TX))
    header = wire.parse_header(REGTEST, message[:24])
    with pytest.raises(wire.WireError, match="checksum"):
        wire.check_payload(header, message[24:-1] + b"\0")


def test_our_version_is_one_a_node_accepts():
    payload = wire.version_payload("127.0.0.1", 19444, nonce=7, timestamp=1_700_000_000, user_agent="/t/")
    assert wire.peer_version(payload) == wire.PROTOCOL_VERSION
    assert payload[-1:] == b"\x01"  # relay: announce transactions to us
    assert payload[20 + 26 - 6:20 + 26] == bytes([127, 0, 0, 1]) + struct.pack(">H", 19444)


def test_an_old_or_truncated_version_is_refused():
    old = struct.pack("<iQq", 209, 0, 0) + bytes(26)
    with pytest.raises(wire.WireError, match="below"):
        wire.peer_version(old)
    with pytest.raises(wire.WireError, match="truncated"):
        wire.peer_version(struct.pack("<i", wire.PROTOCOL_VERSION))


@pytest.mark.parametrize("types, kinds", [
    ((wire.MSG_TX,), {"tx"}),
    ((wire.MSG_WTX,), {"tx"}),
    ((wire.MSG_TX | 1 << 30,), {"tx"}),  # MSG_WITNESS_TX
    ((wire.MSG_BLOCK | 1 << 30 | 1 << 29,), {"block"}),  # Litecoin's MWEB block
    ((wire.MSG_BLOCK, wire.MSG_TX, wire.MSG_TX), {"tx", "block"}),
    ((wire.MSG_CMPCT_BLOCK,), {"block"}),
    ((99,), set()),
    ((), set()),
])
def test_inventory_kinds(types, kinds):
    assert wire.inventory_kinds(inv(*types)) == kinds


@pytest.mark.parametrize("payload, error", [
    (inv(wire.MSG_TX)[:-1], "truncated"),
    (inv(wire.MSG_TX) + b"\0", "trailing"),
    (b"\xfe" + struct.pack("<I", wire.MAX_INV + 1), "exceed"),
    (b"\xfd", "truncated"),
])
def test_malformed_inventories_are_refused(payload, error):
    with pytest.raises(wire.WireError, match=error):
        wire.inventory_kinds(payload)


def test_headers_count_and_bound():
    assert wire.header_count(wire.varint(2) + (bytes(80) + b"\0") * 2) == 2
    assert wire.header_count(b"\0") == 0
    with pytest.raises(wire.WireError, match="exceed"):
        wire.header_count(wire.varint(wire.MAX_HEADERS + 1))


@pytest.mark.parametrize("n", [0, 0xFC, 0xFD, 0xFFFF, 0x10000, 0xFFFFFFFF, 0x100000000])
def test_varint_round_trip(n):
    assert wire.Reader(wire.varint(n), "x").varint() == n


# -- ZMQ frames -----------------------------------------------------------------------------------


def seq(n: int) -> bytes:
    return struct.pack("<I", n)


def test_zmq_notifications_parse():
    assert zmq_feed.parse([b"rawtx", b"\x02" * 100, seq(7)]) == ("rawtx", 7)
    assert zmq_feed.parse([b"hashblock", HASH, seq(0)]) == ("hashblock", 0)


@pytest.mark.parametrize("frames, error", [
    ([b"rawtx", b"\x02" * 100], "2 frames"),
    ([b"hashtx", HASH, seq(0)], "unexpected topic"),
    ([b"hashblock", HASH[:31], seq(0)], "32"),
    ([b"rawtx", b"", seq(0)], "0 bytes"),
    ([b"rawtx", b"\x02", b"\0\0\0"], "sequence of 3 bytes"),
])
def test_malformed_zmq_notifications_end_the_stream(frames, error):
    with pytest.raises(ChainUnavailable, match=error):
        zmq_feed.parse(frames)


def test_sequence_gaps_are_counted_per_topic_and_wrap():
    sequences = zmq_feed.Sequences()
    assert [sequences.gap("rawtx", n) for n in (5, 6, 9)] == [0, 0, 2]
    assert sequences.gap("hashblock", 100) == 0  # each topic counts on its own
    assert sequences.gap("rawtx", 9) == 2**32 - 1  # a repeat: the publisher restarted or reordered
    sequences.last["hashblock"] = 2**32 - 1
    assert sequences.gap("hashblock", 0) == 0


# -- settings -------------------------------------------------------------------------------------


GOOD = {"rpc_url": "http://127.0.0.1:19443", "rpc_user": "u", "rpc_password": "p", "network": "regtest"}


def settings(**extra):
    config = load_config(None, environ={}).with_overrides(plugin={"bitcoin": {"LTC": {**GOOD, **extra}}})
    return read_settings(config)["LTC"]


def test_push_is_declared_only_when_a_stream_is_configured():
    assert not settings().push
    assert Capability.PUSH not in BitcoinAdapter(None, settings()).capabilities  # type: ignore[arg-type]
    p2p = settings(p2p="127.0.0.1:19444")
    assert p2p.p2p == ("127.0.0.1", 19444) and Capability.PUSH in BitcoinAdapter(None, p2p).capabilities  # type: ignore[arg-type]
    assert settings(p2p="[::1]:19444").p2p == ("::1", 19444)
    zmq = settings(zmq_hashblock="tcp://127.0.0.1:28332")
    assert zmq.push and zmq.zmq == {"hashblock": "tcp://127.0.0.1:28332"}
    assert settings(zmq_rawtx="ipc:///run/litecoind/zmq.sock").zmq == {"rawtx": "ipc:///run/litecoind/zmq.sock"}


@pytest.mark.parametrize("extra, key", [
    ({"p2p": "127.0.0.1"}, "p2p"),
    ({"p2p": "127.0.0.1:0"}, "p2p"),
    ({"p2p": "127.0.0.1:70000"}, "p2p"),
    ({"p2p": ":19444"}, "p2p"),
    ({"p2p": 19444}, "p2p"),
    ({"zmq_rawtx": "http://127.0.0.1:28332"}, "zmq_rawtx"),
    ({"zmq_hashblock": "tcp://127.0.0.1"}, "zmq_hashblock"),
    ({"zmq_hashblock": "tcp://127.0.0.1:99999"}, "zmq_hashblock"),
    ({"zmq_rawtx": ""}, "zmq_rawtx"),
])
def test_bad_push_settings_are_named(extra, key):
    with pytest.raises(ConfigError, match=f"plugin\\.bitcoin\\.LTC\\.{key}'"):
        settings(**extra)
