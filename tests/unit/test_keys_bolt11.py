"""BOLT 11 invoice decoding and Lightning destinations.

Vectors: BOLT #11 "Examples" and "Examples of Invalid Invoices" (all signed
with priv_key e126f68f...b734, payee 03e7156a...dd9ad, timestamp 1496314658).
Invoices for networks the spec has no example for (regtest, signet) and for the
``n`` field are built here with that same key.
"""

import hashlib

import bech32
import pytest
from coincurve import PrivateKey

from orbchain.chains.lightning.address import validate_lightning
from orbchain.chains.lightning.bolt11 import Bolt11Invoice, decode_bolt11
from orbchain.core.keys import AddressError
from tests.families import get_family

SPEC_KEY = PrivateKey(bytes.fromhex("e126f68f7eafcc8b74f54d269fe206be715000f94dac067d1c04a8ca3b2db734"))
PAYEE = "03e7156ae33b0a208d0744199163177e909e80176e55d97a2f221ede0f934dd9ad"
HASH_0102 = "0001020304050607080900010203040506070809000102030405060708090102"
TS = 1496314658

DONATION = "lnbc1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpl2pkx2ctnv5sxxmmwwd5kgetjypeh2ursdae8g6twvus8g6rfwvs8qun0dfjkxaq8rkx3yf5tcsyz3d73gafnh3cax9rn449d9p5uxz9ezhhypd0elx87sjle52x86fux2ypatgddc6k63n7erqz25le42c4u4ecky03ylcqca784w"
COFFEE = "lnbc2500u1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpuaztrnwngzn3kdzw5hydlzf03qdgm2hdq27cqv3agm2awhz5se903vruatfhq77w3ls4evs3ch9zw97j25emudupq63nyw24cg27h2rspfj9srp"
NONSENSE = "lnbc2500u1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpquwpc4curk03c9wlrswe78q4eyqc7d8d0xqzpuyk0sg5g70me25alkluzd2x62aysf2pyy8edtjeevuv4p2d5p76r4zkmneet7uvyakky2zr4cusd45tftc9c5fh0nnqpnl2jfll544esqchsrny"
HASHED = "lnbc20m1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqhp58yjmdan79s6qqdhdzgynm4zwqd5d7xmw5fk98klysy043l2ahrqscc6gd6ql3jrc5yzme8v4ntcewwz5cnw92tz0pc8qcuufvq7khhr8wpald05e92xw006sq94mg8v2ndf4sefvf9sygkshp5zfem29trqq2yxxz7"
TESTNET = "lntb20m1pvjluezhp58yjmdan79s6qqdhdzgynm4zwqd5d7xmw5fk98klysy043l2ahrqspp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqfpp3x9et2e20v6pu37c5d9vax37wxq72un98kmzzhznpurw9sgl2v0nklu2g4d0keph5t7tj9tcqd8rexnd07ux4uv2cjvcqwaxgj7v4uwn5wmypjd5n69z2xm3xgksg28nwht7f6zspwp3f9t"
ROUTED = "lnbc20m1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqhp58yjmdan79s6qqdhdzgynm4zwqd5d7xmw5fk98klysy043l2ahrqsfpp3qjmp7lwpagxun9pygexvgpjdc4jdj85fr9yq20q82gphp2nflc7jtzrcazrra7wwgzxqc8u7754cdlpfrmccae92qgzqvzq2ps8pqqqqqqpqqqqq9qqqvpeuqafqxu92d8lr6fvg0r5gv0heeeqgcrqlnm6jhphu9y00rrhy4grqszsvpcgpy9qqqqqqgqqqqq7qqzqj9n4evl6mr5aj9f58zp6fyjzup6ywn3x6sk8akg5v4tgn2q8g4fhx05wf6juaxu9760yp46454gpg5mtzgerlzezqcqvjnhjh8z3g2qqdhhwkj"
PICO = "lnbc9678785340p1pwmna7lpp5gc3xfm08u9qy06djf8dfflhugl6p7lgza6dsjxq454gxhj9t7a0sd8dgfkx7cmtwd68yetpd5s9xar0wfjn5gpc8qhrsdfq24f5ggrxdaezqsnvda3kkum5wfjkzmfqf3jkgem9wgsyuctwdus9xgrcyqcjcgpzgfskx6eqf9hzqnteypzxz7fzypfhg6trddjhygrcyqezcgpzfysywmm5ypxxjemgw3hxjmn8yptk7untd9hxwg3q2d6xjcmtv4ezq7pqxgsxzmnyyqcjqmt0wfjjq6t5v4khxxqyjw5qcqp2rzjq0gxwkzc8w6323m55m4jyxcjwmy7stt9hwkwe2qxmy8zpsgg7jcuwz87fcqqeuqqqyqqqqlgqqqqn3qq9qn07ytgrxxzad9hc4xt3mawjjt8znfv8xzscs7007v9gh9j569lencxa8xeujzkxs0uamak9aln6ez02uunw6rd2ht2sqe4hz8thcdagpleym0j"
SECRET = "lnbc25m1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5vdhkven9v5sxyetpdeessp5zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zygs9q5sqqqqqqqqqqqqqqqpqsq67gye39hfg3zd8rgc80k32tvy9xk2xunwm5lzexnvpx6fd77en8qaq424dxgt56cag2dpt359k3ssyhetktkpqh24jqnjyw6uqd08sgptq44qu"
IGNORED = "lnbc25m1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5vdhkven9v5sxyetpdeessp5zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zygs9q5sqqqqqqqqqqqqqqqpqsq2qrqqqfppnqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqppnqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqpp4qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqhpnqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqhp4qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqspnqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqsp4qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqnp5qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqnpkqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq2jxxfsnucm4jf4zwtznpaxphce606fvhvje5x7d4gw7n73994hgs7nteqvenq8a4ml8aqtchv5d9pf7l558889hp4yyrqv6a7zpq9fgpskqhza"

CAKE = (
    "One piece of chocolate cake, one icecream cone, one pickle, one slice of swiss cheese, "
    "one slice of salami, one lollypop, one piece of cherry pie, one sausage, one cupcake, "
    "and one slice of watermelon"
)


def test_donation_without_amount():
    # BOLT 11 Examples: "Please make a donation of any amount ..."
    inv = decode_bolt11(DONATION)
    assert isinstance(inv, Bolt11Invoice)
    assert inv.network == "mainnet" and inv.amount_msat is None
    assert inv.timestamp == TS and inv.expiry == 3600 and inv.expires_at == TS + 3600
    assert inv.payment_hash == HASH_0102
    assert inv.description == "Please consider supporting this project"
    assert inv.description_hash is None
    assert inv.payee == PAYEE
    assert inv.min_final_cltv_expiry == 18


def test_2500u_with_description():
    # "Please send $3 for a cup of coffee to the same peer, within one minute"
    inv = decode_bolt11(COFFEE)
    assert inv.amount_msat == 250_000_000  # 2500 micro-BTC = 250,000 sat
    assert inv.description == "1 cup coffee" and inv.expiry == 60
    assert inv.payment_hash == HASH_0102 and inv.payee == PAYEE
    assert not inv.is_expired(TS + 59) and inv.is_expired(TS + 60)


def test_utf8_description():
    inv = decode_bolt11(NONSENSE)
    assert inv.description == "ナンセンス 1杯" and inv.amount_msat == 250_000_000


def test_20m_with_description_hash():
    # "Now send $24 for an entire list of things (hashed)"
    inv = decode_bolt11(HASHED)
    assert inv.amount_msat == 2_000_000_000 and inv.description is None
    assert inv.description_hash == hashlib.sha256(CAKE.encode()).hexdigest()
    assert inv.payment_hash == HASH_0102 and inv.payee == PAYEE


def test_testnet_with_fallback():
    # "The same, on testnet, with a fallback address mk2QpYatsKicvFVuTAQLBryyccRXMUaGHP"
    inv = decode_bolt11(TESTNET)
    assert inv.network == "testnet" and inv.amount_msat == 2_000_000_000
    assert inv.payment_hash == HASH_0102 and inv.expiry == 3600 and inv.payee == PAYEE


def test_route_hints_are_skipped():
    inv = decode_bolt11(ROUTED)
    assert inv.amount_msat == 2_000_000_000 and inv.payee == PAYEE


def test_pico_amount_expiry_and_cltv():
    # "Please send 0.00967878534 BTC ... amount in pico-BTC"
    inv = decode_bolt11(PICO)
    assert inv.amount_msat == 967_878_534
    assert inv.timestamp == 1572468703 and inv.expiry == 604800
    assert inv.min_final_cltv_expiry == 10
    assert inv.payment_hash == "462264ede7e14047e9b249da94fefc47f41f7d02ee9b091815a5506bc8abf75f"
    assert inv.description.startswith("Blockstream Store: 88.85 USD")


def test_payment_secret_features_upper_case_and_ignored_fields():
    inv = decode_bolt11(SECRET)
    assert inv.amount_msat == 2_500_000_000 and inv.description == "coffee beans"
    assert inv.payment_secret == "11" * 32
    assert inv.features == (1 << 99) | (1 << 15) | (1 << 9)
    assert decode_bolt11(SECRET.upper()) == inv
    # "Same, but including fields which must be ignored"
    ignored = decode_bolt11(IGNORED)
    assert (ignored.payment_hash, ignored.payment_secret, ignored.payee) == (
        inv.payment_hash, inv.payment_secret, PAYEE)


@pytest.mark.parametrize("invoice,detail", [
    # BOLT 11 "Examples of Invalid Invoices"
    ("lnbc2500u1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpquwpc4curk03c9wlrswe78q4eyqc7d8d0xqzpuyk0sg5g70me25alkluzd2x62aysf2pyy8edtjeevuv4p2d5p76r4zkmneet7uvyakky2zr4cusd45tftc9c5fh0nnqpnl2jfll544esqchsrnt", "checksum"),
    ("pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpquwpc4curk03c9wlrswe78q4eyqc7d8d0xqzpuyk0sg5g70me25alkluzd2x62aysf2pyy8edtjeevuv4p2d5p76r4zkmneet7uvyakky2zr4cusd45tftc9c5fh0nnqpnl2jfll544esqchsrny", "separator"),
    ("LNBC2500u1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpquwpc4curk03c9wlrswe78q4eyqc7d8d0xqzpuyk0sg5g70me25alkluzd2x62aysf2pyy8edtjeevuv4p2d5p76r4zkmneet7uvyakky2zr4cusd45tftc9c5fh0nnqpnl2jfll544esqchsrny", "mixed"),
    ("lnbc2500u1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpuaxtrnwngzn3kdzw5hydlzf03qdgm2hdq27cqv3agm2awhz5se903vruatfhq77w3ls4evs3ch9zw97j25emudupq63nyw24cg27h2rspk28uwq", "signature"),
    ("lnbc1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpl2pkx2ctnv5sxxmmwwd5kgetjypeh2ursdae8g6na6hlh", "short"),
    ("lnbc2500x1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpujr6jxr9gq9pv6g46y7d20jfkegkg4gljz2ea2a3m9lmvvr95tq2s0kvu70u3axgelz3kyvtp2ywwt0y8hkx2869zq5dll9nelr83zzqqpgl2zg", "multiplier"),
    ("lnbc2500000001p1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpu7hqtk93pkf7sw55rdv4k9z2vj050rxdr6za9ekfs3nlt5lr89jqpdmxsmlj9urqumg0h9wzpqecw7th56tdms40p2ny9q4ddvjsedzcplva53s", "millisatoshi"),
])
def test_invalid_invoices(invoice, detail):
    with pytest.raises(AddressError) as err:
        decode_bolt11(invoice)
    assert err.value.code == "invalid_address"
    assert detail in err.value.detail, err.value.detail


# --------------------------------------------------- invoices built for tests

def _words(data: bytes) -> list[int]:
    return bech32.convertbits(data, 8, 5, True)


def _field(tag: int, words: list[int]) -> list[int]:
    return [tag, len(words) >> 5, len(words) & 31] + words


def _int_words(value: int, count: int) -> list[int]:
    return [(value >> (5 * (count - 1 - i))) & 31 for i in range(count)]


def make_invoice(hrp: str, fields: list[int], key: PrivateKey = SPEC_KEY, ts: int = TS) -> str:
    body = _int_words(ts, 7) + fields
    digest = hashlib.sha256(hrp.encode() + bytes(bech32.convertbits(body, 5, 8, True))).digest()
    sig = key.sign_recoverable(digest, hasher=None)
    return bech32.bech32_encode(hrp, body + _words(sig))


P_FIELD = _field(1, _words(bytes.fromhex(HASH_0102)))
D_FIELD = _field(13, _words(b"test"))


def test_builder_reproduces_spec_example():
    # Same fields, key and timestamp as the spec's coffee example -> same payee/hash.
    built = make_invoice("lnbc2500u", P_FIELD + _field(13, _words(b"1 cup coffee")) + _field(6, _int_words(60, 2)))
    inv = decode_bolt11(built)
    assert (inv.amount_msat, inv.expiry, inv.payee) == (250_000_000, 60, PAYEE)


@pytest.mark.parametrize("hrp,network,msat", [
    ("lnbcrt", "regtest", None),
    ("lnbcrt10u", "regtest", 1_000_000),
    ("lntbs", "signet", None),
    ("lntbs5n", "signet", 500),
    ("lnbc1", "mainnet", 100_000_000_000),
    ("lnbc10p", "mainnet", 1),
])
def test_networks_and_amounts(hrp, network, msat):
    inv = decode_bolt11(make_invoice(hrp, P_FIELD + D_FIELD))
    assert (inv.network, inv.amount_msat) == (network, msat)


@pytest.mark.parametrize("hrp", ["lnbc01m", "lnbc0", "lnbcm", "lnbc1.5m", "lnxx10u", "lnbc10k", "bc10u", "lnbc99999999999999999999"])
def test_bad_hrp(hrp):
    with pytest.raises(AddressError):
        decode_bolt11(make_invoice(hrp, P_FIELD + D_FIELD))


def test_n_field_checked():
    own = _field(19, _words(SPEC_KEY.public_key.format()))
    assert decode_bolt11(make_invoice("lnbc", P_FIELD + D_FIELD + own)).payee == PAYEE
    other = _field(19, _words(PrivateKey(b"\1" * 32).public_key.format()))
    with pytest.raises(AddressError) as err:
        decode_bolt11(make_invoice("lnbc", P_FIELD + D_FIELD + other))
    assert "payee" in err.value.detail


def test_missing_payment_hash_and_bad_fields():
    with pytest.raises(AddressError) as err:
        decode_bolt11(make_invoice("lnbc", D_FIELD))
    assert "payment hash" in err.value.detail
    with pytest.raises(AddressError):  # description that is not UTF-8
        decode_bolt11(make_invoice("lnbc", P_FIELD + _field(13, _words(b"\xff\xfe"))))
    with pytest.raises(AddressError):  # a field whose length runs into the signature
        decode_bolt11(make_invoice("lnbc", P_FIELD + [13, 31, 31]))


def test_high_s_signature_rejected():
    from coincurve.utils import GROUP_ORDER_INT

    good = make_invoice("lnbc", P_FIELD + D_FIELD)
    hrp, data = bech32.bech32_decode(good)
    sig = bytes(bech32.convertbits(data[-104:], 5, 8, False))
    s = int.from_bytes(sig[32:64], "big")
    flipped = sig[:32] + (GROUP_ORDER_INT - s).to_bytes(32, "big") + bytes([sig[64] ^ 1])
    bad = bech32.bech32_encode(hrp, data[:-104] + _words(flipped))
    with pytest.raises(AddressError) as err:
        decode_bolt11(bad)
    assert "high-S" in err.value.detail


def test_lightning_destination_per_network():
    assert validate_lightning(COFFEE, "mainnet") == COFFEE
    assert validate_lightning("lightning:" + COFFEE.upper(), "mainnet") == COFFEE
    assert validate_lightning(TESTNET, "testnet") == TESTNET
    regtest = make_invoice("lnbcrt", P_FIELD + D_FIELD)
    assert validate_lightning(regtest, "regtest") == regtest
    for invoice, network in ((COFFEE, "testnet"), (TESTNET, "mainnet"), (regtest, "mainnet")):
        with pytest.raises(AddressError) as err:
            validate_lightning(invoice, network)
        assert "not valid on" in err.value.detail
    assert get_family("lightning").validate("Tips@Example.com") == "tips@example.com"
    assert get_family("lightning", "testnet").validate(TESTNET) == TESTNET


def test_n_field_verifies_even_with_a_wrong_recovery_id():
    # With an n field the signature is verified against it, not recovered.
    own = _field(19, _words(SPEC_KEY.public_key.format()))
    good = make_invoice("lnbc", P_FIELD + D_FIELD + own)
    hrp, data = bech32.bech32_decode(good)
    sig = bytes(bech32.convertbits(data[-104:], 5, 8, False))
    other_recid = sig[:64] + bytes([sig[64] ^ 1])
    relabeled = bech32.bech32_encode(hrp, data[:-104] + _words(other_recid))
    assert decode_bolt11(relabeled).payee == PAYEE
    # a bit flip in the signed data fails verification
    tampered = make_invoice("lnbc", P_FIELD + D_FIELD + own)
    hrp, data = bech32.bech32_decode(tampered)
    data = data[:10] + [data[10] ^ 1] + data[11:]
    with pytest.raises(AddressError):
        decode_bolt11(bech32.bech32_encode(hrp, data))
