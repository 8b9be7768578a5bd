"""BIP-32 secp256k1 derivation and xpub/xprv serialization.

Vectors: BIP-32, section "Test Vectors", test vectors 1, 2 and 3 (ext pub and
ext prv at every chain listed). Invalid-key cases follow the rules BIP-32's
"Serialization format" section imposes (built here by re-encoding valid keys).
"""

import pickle

import base58
import pytest

from orbchain.core.keys import DerivationError, ExtendedKey, format_path, parse_path
from orbchain.core.keys.hashing import double_sha256

# (seed hex, [(chain, ext pub, ext prv), ...])
BIP32_VECTORS = [
    (  # Test vector 1
        "000102030405060708090a0b0c0d0e0f",
        [
            ("m",
             "xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8",
             "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"),
            ("m/0'",
             "xpub68Gmy5EdvgibQVfPdqkBBCHxA5htiqg55crXYuXoQRKfDBFA1WEjWgP6LHhwBZeNK1VTsfTFUHCdrfp1bgwQ9xv5ski8PX9rL2dZXvgGDnw",
             "xprv9uHRZZhk6KAJC1avXpDAp4MDc3sQKNxDiPvvkX8Br5ngLNv1TxvUxt4cV1rGL5hj6KCesnDYUhd7oWgT11eZG7XnxHrnYeSvkzY7d2bhkJ7"),
            ("m/0'/1",
             "xpub6ASuArnXKPbfEwhqN6e3mwBcDTgzisQN1wXN9BJcM47sSikHjJf3UFHKkNAWbWMiGj7Wf5uMash7SyYq527Hqck2AxYysAA7xmALppuCkwQ",
             "xprv9wTYmMFdV23N2TdNG573QoEsfRrWKQgWeibmLntzniatZvR9BmLnvSxqu53Kw1UmYPxLgboyZQaXwTCg8MSY3H2EU4pWcQDnRnrVA1xe8fs"),
            ("m/0'/1/2'",
             "xpub6D4BDPcP2GT577Vvch3R8wDkScZWzQzMMUm3PWbmWvVJrZwQY4VUNgqFJPMM3No2dFDFGTsxxpG5uJh7n7epu4trkrX7x7DogT5Uv6fcLW5",
             "xprv9z4pot5VBttmtdRTWfWQmoH1taj2axGVzFqSb8C9xaxKymcFzXBDptWmT7FwuEzG3ryjH4ktypQSAewRiNMjANTtpgP4mLTj34bhnZX7UiM"),
            ("m/0'/1/2'/2",
             "xpub6FHa3pjLCk84BayeJxFW2SP4XRrFd1JYnxeLeU8EqN3vDfZmbqBqaGJAyiLjTAwm6ZLRQUMv1ZACTj37sR62cfN7fe5JnJ7dh8zL4fiyLHV",
             "xprvA2JDeKCSNNZky6uBCviVfJSKyQ1mDYahRjijr5idH2WwLsEd4Hsb2Tyh8RfQMuPh7f7RtyzTtdrbdqqsunu5Mm3wDvUAKRHSC34sJ7in334"),
            ("m/0'/1/2'/2/1000000000",
             "xpub6H1LXWLaKsWFhvm6RVpEL9P4KfRZSW7abD2ttkWP3SSQvnyA8FSVqNTEcYFgJS2UaFcxupHiYkro49S8yGasTvXEYBVPamhGW6cFJodrTHy",
             "xprvA41z7zogVVwxVSgdKUHDy1SKmdb533PjDz7J6N6mV6uS3ze1ai8FHa8kmHScGpWmj4WggLyQjgPie1rFSruoUihUZREPSL39UNdE3BBDu76"),
        ],
    ),
    (  # Test vector 2
        "fffcf9f6f3f0edeae7e4e1dedbd8d5d2cfccc9c6c3c0bdbab7b4b1aeaba8a5a29f9c999693908d8a8784817e7b7875726f6c696663605d5a5754514e4b484542",
        [
            ("m",
             "xpub661MyMwAqRbcFW31YEwpkMuc5THy2PSt5bDMsktWQcFF8syAmRUapSCGu8ED9W6oDMSgv6Zz8idoc4a6mr8BDzTJY47LJhkJ8UB7WEGuduB",
             "xprv9s21ZrQH143K31xYSDQpPDxsXRTUcvj2iNHm5NUtrGiGG5e2DtALGdso3pGz6ssrdK4PFmM8NSpSBHNqPqm55Qn3LqFtT2emdEXVYsCzC2U"),
            ("m/0",
             "xpub69H7F5d8KSRgmmdJg2KhpAK8SR3DjMwAdkxj3ZuxV27CprR9LgpeyGmXUbC6wb7ERfvrnKZjXoUmmDznezpbZb7ap6r1D3tgFxHmwMkQTPH",
             "xprv9vHkqa6EV4sPZHYqZznhT2NPtPCjKuDKGY38FBWLvgaDx45zo9WQRUT3dKYnjwih2yJD9mkrocEZXo1ex8G81dwSM1fwqWpWkeS3v86pgKt"),
            ("m/0/2147483647'",
             "xpub6ASAVgeehLbnwdqV6UKMHVzgqAG8Gr6riv3Fxxpj8ksbH9ebxaEyBLZ85ySDhKiLDBrQSARLq1uNRts8RuJiHjaDMBU4Zn9h8LZNnBC5y4a",
             "xprv9wSp6B7kry3Vj9m1zSnLvN3xH8RdsPP1Mh7fAaR7aRLcQMKTR2vidYEeEg2mUCTAwCd6vnxVrcjfy2kRgVsFawNzmjuHc2YmYRmagcEPdU9"),
            ("m/0/2147483647'/1",
             "xpub6DF8uhdarytz3FWdA8TvFSvvAh8dP3283MY7p2V4SeE2wyWmG5mg5EwVvmdMVCQcoNJxGoWaU9DCWh89LojfZ537wTfunKau47EL2dhHKon",
             "xprv9zFnWC6h2cLgpmSA46vutJzBcfJ8yaJGg8cX1e5StJh45BBciYTRXSd25UEPVuesF9yog62tGAQtHjXajPPdbRCHuWS6T8XA2ECKADdw4Ef"),
            ("m/0/2147483647'/1/2147483646'",
             "xpub6ERApfZwUNrhLCkDtcHTcxd75RbzS1ed54G1LkBUHQVHQKqhMkhgbmJbZRkrgZw4koxb5JaHWkY4ALHY2grBGRjaDMzQLcgJvLJuZZvRcEL",
             "xprvA1RpRA33e1JQ7ifknakTFpgNXPmW2YvmhqLQYMmrj4xJXXWYpDPS3xz7iAxn8L39njGVyuoseXzU6rcxFLJ8HFsTjSyQbLYnMpCqE2VbFWc"),
            ("m/0/2147483647'/1/2147483646'/2",
             "xpub6FnCn6nSzZAw5Tw7cgR9bi15UV96gLZhjDstkXXxvCLsUXBGXPdSnLFbdpq8p9HmGsApME5hQTZ3emM2rnY5agb9rXpVGyy3bdW6EEgAtqt",
             "xprvA2nrNbFZABcdryreWet9Ea4LvTJcGsqrMzxHx98MMrotbir7yrKCEXw7nadnHM8Dq38EGfSh6dqA9QWTyefMLEcBYJUuekgW4BYPJcr9E7j"),
        ],
    ),
    (  # Test vector 3 (retention of leading zeros)
        "4b381541583be4423346c643850da4b320e46a87ae3d2a4e6da11eba819cd4acba45d239319ac14f863b8d5ab5a0d0c64d2e8a1e7d1457df2e5a3c51c73235be",
        [
            ("m",
             "xpub661MyMwAqRbcEZVB4dScxMAdx6d4nFc9nvyvH3v4gJL378CSRZiYmhRoP7mBy6gSPSCYk6SzXPTf3ND1cZAceL7SfJ1Z3GC8vBgp2epUt13",
             "xprv9s21ZrQH143K25QhxbucbDDuQ4naNntJRi4KUfWT7xo4EKsHt2QJDu7KXp1A3u7Bi1j8ph3EGsZ9Xvz9dGuVrtHHs7pXeTzjuxBrCmmhgC6"),
            ("m/0'",
             "xpub68NZiKmJWnxxS6aaHmn81bvJeTESw724CRDs6HbuccFQN9Ku14VQrADWgqbhhTHBaohPX4CjNLf9fq9MYo6oDaPPLPxSb7gwQN3ih19Zm4Y",
             "xprv9uPDJpEQgRQfDcW7BkF7eTya6RPxXeJCqCJGHuCJ4GiRVLzkTXBAJMu2qaMWPrS7AANYqdq6vcBcBUdJCVVFceUvJFjaPdGZ2y9WACViL4L"),
        ],
    ),
]

CASES = [(seed, chain, xpub, xprv) for seed, chains in BIP32_VECTORS for chain, xpub, xprv in chains]


@pytest.mark.parametrize("seed,chain,xpub,xprv", CASES)
def test_bip32_vectors(seed, chain, xpub, xprv):
    node = ExtendedKey.from_seed(bytes.fromhex(seed)).derive(chain)
    assert node.to_xprv() == xprv
    assert node.to_xpub() == xpub


@pytest.mark.parametrize("seed,chain,xpub,xprv", CASES)
def test_parse_round_trip(seed, chain, xpub, xprv):
    private = ExtendedKey.parse(xprv)
    public = ExtendedKey.parse(xpub)
    assert private.is_private and not public.is_private
    assert private.to_xprv() == xprv and private.to_xpub() == xpub
    assert public.to_xpub() == xpub
    assert public.public_key == private.public_key


def test_public_derivation_matches_private():
    # CKDpub on the xpub of m/0'/1/2' gives the same xpub as CKDpriv (vector 1).
    seed, chains = BIP32_VECTORS[0]
    xpub_2h = ExtendedKey.parse(chains[3][1])
    assert xpub_2h.derive([2]).to_xpub() == chains[4][1]
    assert xpub_2h.derive([2, 1000000000]).to_xpub() == chains[5][1]
    assert xpub_2h.public_child_key(2) == ExtendedKey.parse(chains[4][1]).public_key


def test_hardened_child_of_public_key_refused():
    xpub = ExtendedKey.parse(BIP32_VECTORS[0][1][0][1])
    with pytest.raises(DerivationError, match="hardened"):
        xpub.child(0x80000000)
    with pytest.raises(DerivationError):
        xpub.private_key  # noqa: B018


def test_absolute_path_needs_master():
    node = ExtendedKey.from_seed(bytes(16)).derive("m/1'")
    with pytest.raises(DerivationError):
        node.derive("m/0")
    assert node.derive("0").depth == 2


@pytest.mark.parametrize("path,expected", [
    ("m", ()),
    ("m/84'/0'/5'/0/7", (84 | 1 << 31, 1 << 31, 5 | 1 << 31, 0, 7)),
    ("m/44h/60H/0'/0/0", (44 | 1 << 31, 60 | 1 << 31, 1 << 31, 0, 0)),
    ("0/1", (0, 1)),
])
def test_parse_path(path, expected):
    assert parse_path(path) == expected


@pytest.mark.parametrize("bad", ["m/", "m//1", "m/-1", "m/2147483648", "m/1''", "x/1", "m/01", "m/a"])
def test_parse_path_rejects(bad):
    with pytest.raises(DerivationError):
        parse_path(bad)


def test_format_path_round_trip():
    assert format_path(parse_path("m/84'/0'/5'/0/7")) == "m/84'/0'/5'/0/7"


def _reencode(xkey: str, mutate) -> str:
    raw = bytearray(base58.b58decode_check(xkey))
    mutate(raw)
    raw = bytes(raw)
    return base58.b58encode(raw + double_sha256(raw)[:4]).decode()


MASTER = BIP32_VECTORS[0][1][0]
CHILD = BIP32_VECTORS[0][1][1]


@pytest.mark.parametrize("make", [
    # pubkey version with a private-key payload (0x00 prefix)
    lambda: _reencode(MASTER[2], lambda r: r.__setitem__(slice(0, 4), bytes.fromhex("0488B21E"))),
    # private version with a public-key payload
    lambda: _reencode(MASTER[1], lambda r: r.__setitem__(slice(0, 4), bytes.fromhex("0488ADE4"))),
    # invalid pubkey prefix 04 / 01
    lambda: _reencode(MASTER[1], lambda r: r.__setitem__(45, 4)),
    lambda: _reencode(MASTER[1], lambda r: r.__setitem__(45, 1)),
    # public key not on the curve (x = 2^256 - 1 is above the field size)
    lambda: _reencode(MASTER[1], lambda r: r.__setitem__(slice(46, 78), b"\xff" * 32)),
    # private key 0 and private key >= n
    lambda: _reencode(MASTER[2], lambda r: r.__setitem__(slice(46, 78), bytes(32))),
    lambda: _reencode(MASTER[2], lambda r: r.__setitem__(slice(46, 78), b"\xff" * 32)),
    # depth 0 with a parent fingerprint / with a child number
    lambda: _reencode(MASTER[1], lambda r: r.__setitem__(slice(5, 9), b"\1\2\3\4")),
    lambda: _reencode(MASTER[1], lambda r: r.__setitem__(slice(9, 13), b"\0\0\0\1")),
    # unknown version bytes
    lambda: _reencode(MASTER[1], lambda r: r.__setitem__(slice(0, 4), b"\xde\xad\xbe\xef")),
    # bad checksum, wrong length, garbage
    lambda: CHILD[1][:-1] + ("1" if CHILD[1][-1] != "1" else "2"),
    lambda: base58.b58encode_check(base58.b58decode_check(MASTER[1])[:77]).decode(),
    lambda: "xpub-not-base58",
    lambda: "",
])
def test_invalid_extended_keys(make):
    with pytest.raises(DerivationError):
        ExtendedKey.parse(make())


def test_version_names_for_segwit_exports():
    node = ExtendedKey.from_seed(bytes(range(16))).derive("m/84'/0'/0'")
    zpub = node.to_xpub("zpub")
    assert zpub.startswith("zpub")
    assert node.to_xprv("zprv").startswith("zprv")
    parsed = ExtendedKey.parse(zpub)
    assert parsed.version == "zpub" and parsed.public_key == node.public_key
    assert node.to_xpub("vpub").startswith("vpub")
    assert node.to_xpub("tpub").startswith("tpub")


def test_repr_and_pickle_hide_secrets():
    node = ExtendedKey.from_seed(bytes.fromhex(BIP32_VECTORS[0][0]))
    text = repr(node)
    assert node.private_key.hex() not in text and "xprv" not in text
    with pytest.raises(TypeError):
        pickle.dumps(node)


def test_bad_seed_length():
    with pytest.raises(DerivationError):
        ExtendedKey.from_seed(b"\0" * 15)
    with pytest.raises(DerivationError):
        ExtendedKey.from_seed(b"\0" * 65)
