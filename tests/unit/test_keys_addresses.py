"""Address encodings from public keys, against published reference addresses.

Sources, cited per test:
- BIP-84 "Test vectors" (mnemonic "abandon x11 about", no passphrase).
- BIP-44 reference addresses of the same mnemonic as published by wallets
  (Ethereum m/44'/60'/0'/0/0, Tron m/44'/195'/0'/0/0 as in the Ledger Tron app
  test, Dogecoin m/44'/3'/0'/0/0 as Ledger Live shows it, Solana
  m/44'/501'/0'/0' as Phantom/Solflare show it, Litecoin BIP-84 m/84'/2'/0'/0/0).
- EIP-55 "Test Cases".
- Tron key/address pairs: trezor-firmware core/tests/test_apps.tron.address.py
  (private key -> address, data from the Binance JS SDK), private key 1, and the
  hex/Base58 example of the Tron developer docs ("Address" page).
- Dogecoin: hash160 -> D address pair published on privatekeys.pw (used by
  BroomCabinet tests) and the pubkey -> address vector of Tangem's blockchain SDK.
"""

import base58
import pytest
from coincurve import PrivateKey

from orbchain.chains.bitcoin.doge import doge_p2pkh_address
from orbchain.chains.bitcoin.segwit import p2wpkh_address
from orbchain.chains.evm.address import evm_address
from orbchain.chains.solana.address import solana_address
from orbchain.chains.tron.address import tron_address
from orbchain.core.keys import ExtendedKey, SeedKeyStore, mnemonic_to_seed
from orbchain.core.keys.base58check import b58check_encode
from orbchain.core.keys.hashing import hash160
from tests.families import get_family

ABANDON = " ".join(["abandon"] * 11 + ["about"])


@pytest.fixture(scope="module")
def store():
    return SeedKeyStore.from_mnemonic(ABANDON)


def _wif_secret(wif: str) -> bytes:
    raw = base58.b58decode_check(wif)
    assert raw[0] == 0x80 and len(raw) == 34 and raw[-1] == 1  # compressed mainnet WIF
    return raw[1:33]


# BIP-84 "Test vectors"
BIP84_ROOT_ZPRV = "zprvAWgYBBk7JR8Gjrh4UJQ2uJdG1r3WNRRfURiABBE3RvMXYSrRJL62XuezvGdPvG6GFBZduosCc1YP5wixPox7zhZLfiUm8aunE96BBa4Kei5"
BIP84_ACCOUNT_ZPRV = "zprvAdG4iTXWBoARxkkzNpNh8r6Qag3irQB8PzEMkAFeTRXxHpbF9z4QgEvBRmfvqWvGp42t42nvgGpNgYSJA9iefm1yYNZKEm7z6qUWCroSQnE"
BIP84_ACCOUNT_ZPUB = "zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs"
BIP84_ADDRESSES = [
    # (index, change, WIF private key, public key, address)
    (0, False, "KyZpNDKnfs94vbrwhJneDi77V6jF64PWPF8x5cdJb8ifgg2DUc9d",
     "0330d54fd0dd420a6e5f8d3624f5f3482cae350f79d5f0753bf5beef9c2d91af3c",
     "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"),
    (1, False, "Kxpf5b8p3qX56DKEe5NqWbNUP9MnqoRFzZwHRtsFqhzuvUJsYZCy",
     "03e775fd51f0dfb8cd865d9ff1cca2a158cf651fe997fdc9fee9c1d3b5e995ea77",
     "bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g"),
    (0, True, "KxuoxufJL5csa1Wieb2kp29VNdn92Us8CoaUG3aGtPtcF3AzeXvF",
     "03025324888e429ab8e3dbaf1f7802648b9cd01e9b418485c5fa4c1b9b5700e1a6",
     "bc1q8c6fshw2dlwun7ekn9qwf37cu2rn755upcp6el"),
]


def test_bip84_root_and_account_keys(store):
    root = ExtendedKey.from_seed(mnemonic_to_seed(ABANDON))
    assert root.to_xprv("zprv") == BIP84_ROOT_ZPRV
    account = root.derive("m/84'/0'/0'")
    assert account.to_xprv("zprv") == BIP84_ACCOUNT_ZPRV
    assert account.to_xpub("zpub") == BIP84_ACCOUNT_ZPUB
    assert store.account_xpub(get_family("btc"), 0) == BIP84_ACCOUNT_ZPUB


@pytest.mark.parametrize("index,change,wif,pubkey,address", BIP84_ADDRESSES)
def test_bip84_addresses(store, index, change, wif, pubkey, address):
    btc = get_family("btc")
    derived = btc.derive(store, 0, index, change=change)
    assert derived.address == address
    assert derived.public_key.hex() == pubkey
    assert derived.path == f"m/84'/0'/0'/{int(change)}/{index}"
    assert store.private_key_for(btc, 0, index, change=change) == _wif_secret(wif)
    assert p2wpkh_address(bytes.fromhex(pubkey), "bc") == address


@pytest.mark.parametrize("family,address,path", [
    ("evm", "0x9858EfFD232B4033E47d90003D41EC34EcaEda94", "m/44'/60'/0'/0/0"),
    ("tron", "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH", "m/44'/195'/0'/0/0"),
    ("doge", "DBus3bamQjgJULBJtYXpEzDWQRwF5iwxgC", "m/44'/3'/0'/0/0"),
    ("solana", "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk", "m/44'/501'/0'/0'"),
    ("ltc", "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh", "m/84'/2'/0'/0/0"),
])
def test_reference_addresses_of_abandon_mnemonic(store, family, address, path):
    derived = get_family(family).derive(store, 0, 0)
    assert (derived.address, derived.path) == (address, path)
    # and the validator accepts what the deriver produced
    assert get_family(family).validate(derived.address) == address


def test_solana_private_key_is_the_signing_seed(store):
    from nacl.signing import SigningKey

    sol = get_family("solana")
    seed = store.private_key_for(sol, 0, 0)
    assert len(seed) == 32
    assert solana_address(bytes(SigningKey(seed).verify_key)) == "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk"


def test_evm_private_key_matches_address(store):
    evm = get_family("evm")
    secret = store.private_key_for(evm, 0, 0)
    assert evm_address(PrivateKey(secret).public_key.format()) == "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"


# EIP-55 "Test Cases": all caps, all lower, normal
EIP55 = [
    "0x52908400098527886E0F7030069857D2E4169EE7",
    "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
    "0xde709f2102306220921060314715629080e2fb77",
    "0x27b1fdb04752bbc536007a920d24acb045561c26",
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
]


@pytest.mark.parametrize("address", EIP55)
def test_eip55_examples(address):
    evm = get_family("evm")
    assert evm.validate(address) == address
    assert evm.validate(address.lower()) == address
    assert evm.validate("0x" + address[2:].upper()) == address


@pytest.mark.parametrize("address", EIP55[4:])
def test_eip55_wrong_mixed_case_rejected(address):
    from orbchain.core.keys import AddressError

    body = address[2:]
    i = next(i for i, c in enumerate(body) if c.isalpha())
    flipped = "0x" + body[:i] + body[i].swapcase() + body[i + 1:]
    with pytest.raises(AddressError) as err:
        get_family("evm").validate(flipped)
    assert err.value.code == "invalid_address" and "EIP-55" in err.value.detail


@pytest.mark.parametrize("secret_hex,address", [
    # trezor-firmware test_apps.tron.address (source: Binance JavaScript SDK)
    ("8d596057e510b14cbb9bf24f88803a6d6dbd138dd303a62b175b9e6cc0f3f941", "TY72iA3SBtrds3QLYsS7LwYfkzXwAXCRWT"),
    # private key 1: hex 417e5f4552091a69125d5dfcb7b8c2659029395bdf
    ("00" * 31 + "01", "TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC"),
])
def test_tron_key_address_pairs(secret_hex, address):
    pub = PrivateKey(bytes.fromhex(secret_hex)).public_key
    assert tron_address(pub.format()) == address
    assert tron_address(pub.format(compressed=False)) == address
    assert get_family("tron").validate(address) == address


@pytest.mark.parametrize("hex41,address", [
    ("418840E6C55B9ADA326D211D818C34A994AECED808", "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL"),  # Tron docs
    ("411a6ac17c82ad141ebc524a9ffc94965848f35279", "TCNtTa1rveKkovHR2ebABu4K66U6ocUCZX"),
    ("412eb90f8356345c903d9f85e58d1b8177890adfb6", "TEEFn7rQqx4Xc3GL1Bx27A155xAj7w5W7a"),
])
def test_tron_hex_to_base58(hex41, address):
    assert b58check_encode(bytes.fromhex(hex41)) == address
    assert get_family("tron").validate(address) == address


def test_doge_encodings():
    # privatekeys.pw: DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L <-> hash160 830a74...3259
    assert b58check_encode(b"\x1e" + bytes.fromhex("830a7420e63d76244ff7cbd1c248e94c14463259")) == (
        "DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L"
    )
    # Tangem blockchain SDK DogecoinAddressTest: P2PKH of this (uncompressed) public key
    pub = bytes.fromhex(
        "04BE37CD5251C8999EDBBFC759D800EB41E4DCB718289601EB15819404E1B2F2ED90FE50C2A481D06EC790D1EF6184974EB655ABAE4BE56A6D1C9E1A17B1EFDF02"
    )
    assert b58check_encode(b"\x1e" + hash160(pub)) == "DRgF4iLXRhnYeQEV9kHmkvvnz128uCFZXL"
    doge = get_family("doge")
    for address in ("DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L", "DRgF4iLXRhnYeQEV9kHmkvvnz128uCFZXL"):
        assert doge.validate(address) == address
    # deposit addresses use the compressed key
    from coincurve import PublicKey

    compressed = PublicKey(pub).format()
    assert doge_p2pkh_address(compressed).startswith("D")
    assert doge_p2pkh_address(compressed, "testnet").startswith("n")


def test_encoders_reject_wrong_key_sizes():
    with pytest.raises(ValueError):
        p2wpkh_address(b"\2" * 32, "bc")
    with pytest.raises(ValueError):
        solana_address(b"\0" * 33)
    with pytest.raises(ValueError):
        evm_address(b"\5" * 33)


def test_fast_encoders_agree_with_the_libraries():
    # p2wpkh_address and eip55 are derivation fast paths; bech32 and eth-utils are the reference.
    import os

    import bech32
    from eth_utils import to_checksum_address

    from orbchain.chains.bitcoin.segwit import _polymod
    from orbchain.chains.evm.address import eip55

    for i in range(300):
        pub = PrivateKey(hashlib_sha256(i)).public_key.format()
        for hrp in ("bc", "tb", "bcrt", "ltc", "tltc", "rltc"):
            assert p2wpkh_address(pub, hrp) == bech32.encode(hrp, 0, hash160(pub))
        account = os.urandom(20)
        assert eip55(account) == to_checksum_address(account)
        words = [b % 32 for b in os.urandom(60)]
        assert _polymod(words) == bech32.bech32_polymod(words)


def hashlib_sha256(i: int) -> bytes:
    import hashlib

    return hashlib.sha256(i.to_bytes(4, "big")).digest()
