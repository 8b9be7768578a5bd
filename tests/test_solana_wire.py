"""``chains/solana/wire.py`` against the Solana SDK's own encoder (solders): byte for byte."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from solders import compute_budget
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from orbchain.chains.solana import wire


@settings(max_examples=50, deadline=None)
@given(lamports=st.integers(min_value=1, max_value=2**64 - 1), seed=st.binary(min_size=32, max_size=32),
       price=st.integers(min_value=0, max_value=2**64 - 1))
def test_signed_transfer_matches_the_sdk(lamports, seed, price):
    payer, recipient, blockhash = Keypair.from_seed(seed), Keypair().pubkey(), Hash.new_unique()
    ours = wire.sign(wire.transfer_message(str(payer.pubkey()), str(recipient), lamports, str(blockhash), price), seed)
    ixs = [compute_budget.set_compute_unit_limit(wire.TRANSFER_COMPUTE_UNITS),
           compute_budget.set_compute_unit_price(price),
           transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=recipient, lamports=lamports))]
    theirs = Transaction([payer], Message.new_with_blockhash(ixs, payer.pubkey(), blockhash), blockhash)
    assert base64.b64decode(ours.raw) == bytes(theirs)
    assert ours.signature == str(theirs.signatures[0])
    assert wire.address_of(seed) == str(payer.pubkey())
    assert wire.blockhash_of(ours.raw) == str(blockhash)


@pytest.mark.parametrize("value, encoded", [(0, b"\x00"), (0x7F, b"\x7f"), (0x80, b"\x80\x01"),
                                            (0x3FFF, b"\xff\x7f"), (0x4000, b"\x80\x80\x01"),
                                            (0xFFFF, b"\xff\xff\x03")])
def test_compact_u16(value, encoded):
    assert wire.shortvec(value) == encoded


def test_refuses_what_the_runtime_would():
    address = str(Keypair().pubkey())
    blockhash = str(Hash.new_unique())
    with pytest.raises(ValueError):
        wire.transfer_message(address, address, 1, blockhash, 0)
    with pytest.raises(ValueError):
        wire.transfer_message(address, str(Keypair().pubkey()), 0, blockhash, 0)
    with pytest.raises(ValueError):
        wire.transfer_message(address, "short", 1, blockhash, 0)
    with pytest.raises(ValueError):
        wire.transfer_message(address, str(Keypair().pubkey()), 1, blockhash, 2**64)
    with pytest.raises(ValueError):
        wire.shortvec(0x10000)
