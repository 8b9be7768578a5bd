"""BIP-39 mnemonic -> seed, validation errors, and raw hex seeds.

Vectors: BIP-39, section "Test vectors" (the Trezor reference vectors, all with
passphrase "TREZOR"), stored in tests/keys_vectors/bip39_trezor.json.
"""

import hashlib
import json
import pathlib

import pytest

from orbchain.core.keys import (
    ExtendedKey,
    MnemonicError,
    SeedError,
    entropy_to_mnemonic,
    mnemonic_to_seed,
    normalize_mnemonic,
    seed_from_hex,
    seed_from_secret,
)
from orbchain.core.keys.wordlist_en import ENGLISH_SHA256, WORDS

VECTORS = json.loads(
    (pathlib.Path(__file__).parents[1] / "keys_vectors" / "bip39_trezor.json").read_text()
)
ABANDON = " ".join(["abandon"] * 11 + ["about"])


def test_wordlist_is_the_bip39_english_list():
    # bip-0039/english.txt: 2048 sorted words; SHA-256 of the file pinned.
    assert len(WORDS) == 2048 and list(WORDS) == sorted(WORDS)
    assert hashlib.sha256(("\n".join(WORDS) + "\n").encode()).hexdigest() == ENGLISH_SHA256
    assert WORDS[0] == "abandon" and WORDS[-1] == "zoo"


@pytest.mark.parametrize("entropy,mnemonic,seed,xprv", VECTORS["english"])
def test_trezor_vectors(entropy, mnemonic, seed, xprv):
    # BIP-39 "Test vectors": entropy -> mnemonic -> seed (passphrase TREZOR) -> BIP-32 root
    assert entropy_to_mnemonic(bytes.fromhex(entropy)) == mnemonic
    got = mnemonic_to_seed(mnemonic, "TREZOR")
    assert got.hex() == seed
    assert ExtendedKey.from_seed(got).to_xprv() == xprv


def test_abandon_about_trezor_seed():
    # BIP-39 test vector #1: "abandon x11 about" + "TREZOR"
    assert mnemonic_to_seed(ABANDON, "TREZOR").hex() == (
        "c55257c360c07c72029aebc1b53c05ed0362ada38ead3e3e9efa3708e53495531f09a698"
        "7599d18264c1e1c92f2cf141630c7a3c4ab7c81b2f001698e7463b04"
    )


def test_empty_passphrase_seed():
    # The seed every BIP-44/84 reference address of "abandon ... about" starts from.
    assert mnemonic_to_seed(ABANDON).hex() == (
        "5eb00bbddcf069084889a8ab9155568165f5c453ccb85e70811aaed6f6da5fc19a5ac40b"
        "389cd370d086206dec8aa6c43daea6690f20ad3d8d48b2d2ce9e38e4"
    )


def test_normalization_case_whitespace_nfkd():
    messy = "  ABANDON\tabandon abandon abandon abandon abandon\nabandon abandon abandon abandon abandon About "
    assert normalize_mnemonic(messy) == ABANDON
    assert mnemonic_to_seed(messy, "TREZOR") == mnemonic_to_seed(ABANDON, "TREZOR")
    # Passphrases are NFKD-normalized: composed and decomposed forms give one seed.
    assert mnemonic_to_seed(ABANDON, "caf\u00e9") == mnemonic_to_seed(ABANDON, "cafe\u0301")


def test_unknown_word_names_position_not_word():
    words = ABANDON.split()
    words[4] = "bitcoinz"
    with pytest.raises(MnemonicError) as err:
        mnemonic_to_seed(" ".join(words))
    assert "#5" in str(err.value)
    assert "bitcoinz" not in str(err.value) and "abandon" not in str(err.value)


def test_wrong_word_count():
    with pytest.raises(MnemonicError, match="has 11"):
        mnemonic_to_seed(" ".join(["abandon"] * 11))


def test_bad_checksum_never_echoes_words():
    # The Trezor test suite's failed-checksum example.
    bad = "bless cloud wheel regular tiny venue bird web grief security dignity zoo"
    with pytest.raises(MnemonicError) as err:
        mnemonic_to_seed(bad)
    assert "checksum" in str(err.value)
    for word in bad.split():
        assert word not in str(err.value)


def test_swapped_words_fail_checksum():
    words = VECTORS["english"][1][1].split()
    words[0], words[1] = words[1], words[0]
    with pytest.raises(MnemonicError):
        normalize_mnemonic(" ".join(words))


@pytest.mark.parametrize("bad", [None, 12, b"abandon"])
def test_non_text_mnemonic(bad):
    with pytest.raises(MnemonicError):
        mnemonic_to_seed(bad)


def test_seed_from_hex():
    assert seed_from_hex("000102030405060708090a0b0c0d0e0f") == bytes(range(16))
    assert seed_from_hex(" 0x000102030405060708090A0B0C0D0E0F\n") == bytes(range(16))
    for bad in ["", "0x", "abc", "zz" * 16, "00" * 15, "00" * 65]:
        with pytest.raises(SeedError):
            seed_from_hex(bad)


def test_seed_from_secret_detects_hex_or_mnemonic():
    assert seed_from_secret("000102030405060708090a0b0c0d0e0f\n") == bytes(range(16))
    assert seed_from_secret(ABANDON + "\n", "TREZOR") == mnemonic_to_seed(ABANDON, "TREZOR")
    with pytest.raises(SeedError, match="passphrase"):
        seed_from_secret("000102030405060708090a0b0c0d0e0f", "TREZOR")


def test_entropy_length_checked():
    with pytest.raises(MnemonicError):
        entropy_to_mnemonic(b"\0" * 15)
