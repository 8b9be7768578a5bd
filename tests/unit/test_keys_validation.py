"""Payout destination validation per family, and the burn-address list.

Sources: BIP-173/BIP-350 "Test vectors" (segwit addresses), EIP-55, the Monero
addresses of monero-python's tests/address.py (mainnet and testnet standard,
subaddress and integrated, with their public keys and payment id) and of its
tests/data/stagenet-subaddrs.json (stagenet).
"""

import pytest

from orbchain.chains.bitcoin.doge import validate_doge
from orbchain.chains.bitcoin.segwit import validate_btc, validate_ltc
from orbchain.chains.evm.address import validate_evm
from orbchain.chains.lightning.address import validate_lightning_address
from orbchain.chains.monero.address import decode_xmr, validate_xmr
from orbchain.chains.solana.address import validate_solana
from orbchain.chains.tron.address import validate_tron
from orbchain.core.keys import AddressError
from orbchain.core.keys.base58check import b58check_encode
from orbchain.core.keys.bip32 import ExtendedKey
from tests.families import builtin_families, get_family, validate_address

BURN_ADDRESSES = {family.name: family.burn_addresses for family in builtin_families().families("mainnet")}


def invalid(fn, *args, detail=None):
    with pytest.raises(AddressError) as err:
        fn(*args)
    assert err.value.code == "invalid_address"
    assert str(err.value) == "invalid destination address"
    if detail:
        assert detail in err.value.detail, err.value.detail
    return err.value


def burn(fn, *args):
    with pytest.raises(AddressError) as err:
        fn(*args)
    assert err.value.code == "burn_address"
    assert str(err.value) == "destination is a burn/null address"
    return err.value


# ---------------------------------------------------------------- BTC / LTC

@pytest.mark.parametrize("address,network", [
    ("BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4", "mainnet"),  # BIP-173/350 P2WPKH
    ("tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7", "testnet"),  # P2WSH
    ("tb1qqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesrxh6hy", "testnet"),
    ("tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c", "testnet"),  # taproot
    ("bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0", "mainnet"),  # taproot
    ("bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu", "mainnet"),  # BIP-84
])
def test_btc_valid(address, network):
    assert validate_btc(address, network) == address.lower()
    assert validate_btc("  " + address + "\n", network) == address.lower()


@pytest.mark.parametrize("address,detail", [
    # BIP-350 invalid vectors
    ("tc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq5zuyut", "prefix"),
    ("bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd", "Bech32m"),
    ("tb1z0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqglt7rf", ""),
    ("BC1S0XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ54WELL", "Bech32m"),
    ("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh", "Bech32"),
    ("tb1q0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq24jc47", ""),
    ("bc1p38j9r5y49hruaue7wxjce0updqjuyyx0kh56v8s25huc6995vvpql3jow4", "character"),
    ("BC130XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ7ZWS8R", "witness version"),
    ("bc1pw5dgrnzv", "length"),
    ("bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v8n0nx0muaewav253zgeav", ""),
    ("BC1QR508D6QEJXTDG4Y5R3ZARVARYV98GJ9P", "20 (P2WPKH) or 32"),
    ("tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq47Zagq", "mixed"),
    ("bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v07qwwzcrf", "padding"),
    ("tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vpggkg4j", "padding"),
    ("bc1gmk9yu", ""),
    # valid bech32m per BIP-350 but not a destination the gateway pays:
    ("bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kt5nd6y", "taproot"),
    ("BC1SW50QGDZ25J", "unsupported witness version"),
    ("bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs", "unsupported witness version"),
    # legacy formats are not accepted for BTC payouts
    ("1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2", "legacy"),
    ("3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", "legacy"),
    ("", "empty"),
    ("bc1q" + "q" * 130, "longer than 128"),
])
def test_btc_invalid(address, detail):
    network = "testnet" if address.lower().startswith("tb1") else "mainnet"
    invalid(validate_btc, address, network, detail=detail)


def test_btc_network_mismatch_detail():
    err = invalid(validate_btc, "tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7", "mainnet")
    assert "btc testnet" in err.detail and "bc1" in err.detail
    invalid(validate_btc, "bcrt1qgtr7wzmq4awfwf8q0wvfu4dkj52kr97w659n4m", "testnet")
    assert validate_btc("bcrt1qgtr7wzmq4awfwf8q0wvfu4dkj52kr97w659n4m", "regtest")


def test_ltc():
    assert validate_ltc("ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh") == "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh"
    assert validate_ltc("rltc1qgtr7wzmq4awfwf8q0wvfu4dkj52kr97wyel6z9", "regtest")
    err = invalid(validate_ltc, "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu")
    assert "btc mainnet" in err.detail
    invalid(validate_ltc, "LUWPbpM43E2p7ZSh8cyTBEkvpHmr3cB8Ez")  # legacy LTC not accepted


# --------------------------------------------------------------------- DOGE

def test_doge():
    assert validate_doge("DBus3bamQjgJULBJtYXpEzDWQRwF5iwxgC") == "DBus3bamQjgJULBJtYXpEzDWQRwF5iwxgC"
    p2sh = b58check_encode(b"\x16" + bytes(range(1, 21)))
    assert p2sh[0] in "9A" and validate_doge(p2sh) == p2sh
    testnet = b58check_encode(b"\x71" + bytes(range(1, 21)))
    assert validate_doge(testnet, "testnet") == testnet
    err = invalid(validate_doge, testnet, "mainnet", detail="network byte 0x71")
    assert "testnet" in err.detail
    invalid(validate_doge, "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2", detail="network byte 0x00")
    invalid(validate_doge, "DBus3bamQjgJULBJtYXpEzDWQRwF5iwxgD", detail="checksum")
    invalid(validate_doge, "DBus3bamQjgJULBJtYXpEzDWQRwF5iwxg0", detail="Base58")
    invalid(validate_doge, "DBus3bamQjgJULBJtYXpEzDWQRwF5iwxgCCC", detail="bytes")


# ---------------------------------------------------------------------- EVM

def test_evm_rules():
    assert validate_evm("0x9858effd232b4033e47d90003d41ec34ecaeda94") == "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
    invalid(validate_evm, "9858EfFD232B4033E47d90003D41EC34EcaEda94", detail="0x")
    invalid(validate_evm, "0X9858EfFD232B4033E47d90003D41EC34EcaEda94", detail="0x")
    invalid(validate_evm, "0x9858EfFD232B4033E47d90003D41EC34EcaEda9", detail="39")
    invalid(validate_evm, "0x9858EfFD232B4033E47d90003D41EC34EcaEda9g", detail="non-hex")
    invalid(validate_evm, "0x9858EfFD232B4033E47d90003D41EC34EcaEdA94", detail="EIP-55")
    # the same for every EVM network and the family wrapper
    assert validate_address("evm", "0x9858effd232b4033e47d90003d41ec34ecaeda94", "testnet").startswith("0x9858Ef")


# --------------------------------------------------------------------- Tron

def test_tron_rules():
    assert validate_tron("TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH") == "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"
    invalid(validate_tron, "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdh", detail="checksum")
    invalid(validate_tron, "418840E6C55B9ADA326D211D818C34A994AECED808", detail="start with T")
    invalid(validate_tron, "DBus3bamQjgJULBJtYXpEzDWQRwF5iwxgC", detail="start with T")
    # Base58Check that starts with T but has another version byte / length
    other = b58check_encode(b"\x42" + bytes(range(1, 21)))
    if other.startswith("T"):
        invalid(validate_tron, other, detail="0x42")
    longer = b58check_encode(b"\x41" + bytes(range(1, 22)))
    invalid(validate_tron, longer)


# ------------------------------------------------------------------- Solana

def test_solana_rules():
    ok = "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk"
    assert validate_solana(ok) == ok
    assert validate_solana("So11111111111111111111111111111111111111112")  # wrapped SOL mint
    invalid(validate_solana, ok[:-1] + "0", detail="Base58")
    invalid(validate_solana, ok[:30], detail="30 characters")
    invalid(validate_solana, ok + "kk", detail="46 characters")
    invalid(validate_solana, "111hESeAKvZiMSKaE2YiLjzPPu4sKTtsT3kQw9PQjt9D", detail="33 bytes")
    invalid(validate_solana, "0x9858EfFD232B4033E47d90003D41EC34EcaEda94")


# ------------------------------------------------------------------- Monero

XMR_MAINNET = {
    "standard": "43aeKax1ts4BoEbSyzKVbbDRmc8nsnpZLUpQBYvhUxs3KVrodnaFaBEQMDp69u4VaiEG3LSQXA6M61mXPrztCLuh7PFUAmd",
    "integrated": "4DHKLPmWW8aBoEbSyzKVbbDRmc8nsnpZLUpQBYvhUxs3KVrodnaFaBEQMDp69u4VaiEG3LSQXA6M61mXPrztCLuhAR6GpL18QNwE8h3TuF",
    "subaddress": "83bK2pMxCQXdRyd6W1haNWYRsF6Qb3iGa8gxKEynm9U7cYoXrMHFwRrFFuxRSgnLtGe7LM8SmrPY6L3TVBa3UV3YLuVJ7Rw",
}
XMR_TESTNET = {
    "standard": "9vgV48wWAPTWik5QSUSoGYicdvvsbSNHrT9Arsx1XBTz6VrWPSgfmnUKSPZDMyX4Ms8R9TkhB4uFqK9s5LUBbV6YQN2Q9ag",
    "integrated": "A6PA4wkzmeyWik5QSUSoGYicdvvsbSNHrT9Arsx1XBTz6VrWPSgfmnUKSPZDMyX4Ms8R9TkhB4uFqK9s5LUBbV6YbfyqvDecDn3E7cvp9b",
    "subaddress": "BbBjyYoYNNwFfL8RRVRTMiZUofBLpjRxdNnd5E4LyGcAK5CEsnL3gmE5QkrDRta7RPficGHcFdR6rUwWcjnwZVvCE3tLxhJ",
}
XMR_STAGENET = {
    "standard": "52jzuBBUMty3xPL3JsQxGP74LDuV6E1LS8Zda1PbdqQjGzFmH6N9ep9McbFKMALujVT9S5mKpbEgC5VPhfoAiVj8LdAqbp6",
    "subaddress": "7AeQwvrLtPeYoXVPRkEu8oEL7N9wnqHjYKwSvTf6YKbHgYmw6AJMsjggzVLo21egMK9qcoV1mxCTfP4FbaGb7JEMDfpLetk",
}


def test_monero_mainnet_decoding():
    std = decode_xmr(XMR_MAINNET["standard"])
    assert (std.network, std.kind) == ("mainnet", "standard")
    assert std.spend_key == "33a7ceb933b793408d49e82c0a34664a4be7117243cb77a64ef280b866d8aa6e"
    assert std.view_key == "96f70d63d9d3558b97a5dd200a170b4f45b3177a274aa90496ea683896ff6438"
    integrated = decode_xmr(XMR_MAINNET["integrated"])
    assert (integrated.kind, integrated.payment_id) == ("integrated", "4a6f686e47616c74")
    assert (integrated.spend_key, integrated.view_key) == (std.spend_key, std.view_key)
    assert decode_xmr(XMR_MAINNET["subaddress"]).kind == "subaddress"


@pytest.mark.parametrize("table,network,gateway_network", [
    (XMR_MAINNET, "mainnet", "mainnet"),
    (XMR_TESTNET, "testnet", "testnet"),
    (XMR_STAGENET, "stagenet", "testnet"),
])
def test_monero_network_bytes(table, network, gateway_network):
    for kind, address in table.items():
        decoded = decode_xmr(address)
        assert (decoded.network, decoded.kind) == (network, kind)
        assert validate_xmr(address, gateway_network) == address
    other = "mainnet" if gateway_network == "testnet" else "testnet"
    for address in table.values():
        invalid(validate_xmr, address, other, detail="not valid on")


def test_monero_regtest_uses_mainnet_bytes():
    assert validate_xmr(XMR_MAINNET["standard"], "regtest")


def test_monero_invalid():
    # monero-python's invalid examples: one changed letter breaks the checksum
    invalid(validate_xmr, "43aeKax1ts4boEbSyzKVbbDRmc8nsnpZLUpQBYvhUxs3KVrodnaFaBEQMDp69u4VaiEG3LSQXA6M61mXPrztCLuh7PFUAmd", detail="checksum")
    invalid(validate_xmr, "4DHKLpmWW8aBoEbSyzKVbbDRmc8nsnpZLUpQBYvhUxs3KVrodnaFaBEQMDp69u4VaiEG3LSQXA6M61mXPrztCLuhAR6GpL18QNwE8h3TuF")
    invalid(validate_xmr, XMR_MAINNET["standard"][:-1], detail="characters")
    invalid(validate_xmr, XMR_MAINNET["standard"][:-1] + "0", detail="Base58")
    # an over-full 11-character block
    invalid(validate_xmr, "zzzzzzzzzzz" + XMR_MAINNET["standard"][11:], detail="overflows")


def test_monero_base58_round_trip():
    from orbchain.chains.monero.address import monero_b58decode, monero_b58encode

    for address in (*XMR_MAINNET.values(), *XMR_TESTNET.values()):
        assert monero_b58encode(monero_b58decode(address)) == address
    for size in range(0, 20):
        data = bytes(range(size))
        assert monero_b58decode(monero_b58encode(data)) == data


# ---------------------------------------------------------- Lightning Address

@pytest.mark.parametrize("address,normalized", [
    ("satoshi@bitcoin.org", "satoshi@bitcoin.org"),
    ("Alice.Smith+tips@Wallet.Example.COM", "alice.smith+tips@wallet.example.com"),
    ("a_b-c@sub-domain.example.io", "a_b-c@sub-domain.example.io"),
    ("lightning:bob@ln.tips", "bob@ln.tips"),
])
def test_lightning_address_valid(address, normalized):
    assert validate_lightning_address(address) == normalized
    assert get_family("lightning").validate(address) == normalized


@pytest.mark.parametrize("address", [
    "satoshi@localhost", "satoshi@127.0.0.1", "sa toshi@bitcoin.org", "satoshi@@bitcoin.org",
    "satoshi@bitcoin..org", "satoshi@-bitcoin.org", "sat/oshi@bitcoin.org", "@bitcoin.org",
    "satoshi@", "satoshi@bit_coin.org", "sätoshi@bitcoin.org",
])
def test_lightning_address_invalid(address):
    invalid(validate_lightning_address, address)


# ------------------------------------------------------------------- burn list

@pytest.mark.parametrize("family,address", [
    (family, address) for family, addresses in BURN_ADDRESSES.items() for address in sorted(addresses)
])
def test_every_listed_burn_address_is_refused(family, address):
    err = burn(validate_address, family, address)
    assert err.detail


@pytest.mark.parametrize("family,address", [
    ("evm", "0x0000000000000000000000000000000000000000"),
    ("evm", "0x000000000000000000000000000000000000dead"),
    ("evm", "0x000000000000000000000000000000000000DEAD"),
    ("tron", "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb"),
    ("btc", "1BitcoinEaterAddressDontSendf59kuE"),
    ("btc", "BC1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ9E75RS"),
    ("btc", "bc1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqthqst8"),  # zero P2WSH
    ("ltc", "ltc1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqp9ysmq"),
    ("solana", "11111111111111111111111111111111"),
    ("solana", "1nc1nerator11111111111111111111111111111111"),
    ("doge", "D596YFweJQuHY1BbjazZYmAbt8jJPbKehC"),
    ("doge", "9rSGfPZLcyCGzY4uYEL1fkzJr6fkicS2rs"),  # P2SH of the zero hash
])
def test_burn_addresses(family, address):
    burn(validate_address, family, address)


def test_burn_list_entries_are_what_they_claim():
    # The documented literals are the formats' encodings of all-zero payloads.
    assert b58check_encode(b"\x41" + bytes(20)) == "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb"
    assert b58check_encode(b"\x1e" + bytes(20)) == "D596YFweJQuHY1BbjazZYmAbt8jJPbKehC"
    assert b58check_encode(b"\x00" + bytes(20)) == "1111111111111111111114oLvT2"


def test_error_shape():
    err = invalid(validate_btc, "nonsense")
    assert isinstance(err, ValueError) and err.detail and "nonsense" not in err.detail
    assert "invalid_address" in repr(err)


@pytest.mark.parametrize("bad", [None, 42, b"bc1q", ["bc1q"], "bc1q\x00", "bc1q é", "x" * 10_000])
@pytest.mark.parametrize("family", ["btc", "ltc", "doge", "evm", "tron", "solana", "xmr", "lightning"])
def test_garbage_is_invalid_address(family, bad):
    invalid(validate_address, family, bad)


def test_extended_keys_are_not_addresses():
    xpub = ExtendedKey.from_seed(bytes(16)).to_xpub()
    for family in ("btc", "doge", "tron", "solana"):
        invalid(validate_address, family, xpub)
