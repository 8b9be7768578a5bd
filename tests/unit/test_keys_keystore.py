"""The merchant derivation scheme, seed and watch-only key stores, the family registry."""

import dataclasses
import pickle

import pytest

from orbchain.core.keys import (
    NETWORKS,
    DerivationError,
    SeedKeyStore,
    UnknownFamilyError,
    WatchOnlyError,
    WatchOnlyKeyStore,
)
from tests.families import builtin_families, families, get_family

FAMILY_NAMES = ("btc", "ltc", "doge", "evm", "tron", "solana", "xmr", "lightning")

ABANDON = " ".join(["abandon"] * 11 + ["about"])
DERIVABLE = ("btc", "ltc", "doge", "evm", "tron", "solana")
SECP = ("btc", "ltc", "doge", "evm", "tron")


@pytest.fixture(scope="module")
def store():
    return SeedKeyStore.from_mnemonic(ABANDON)


@pytest.mark.parametrize("name", DERIVABLE)
def test_merchant_accounts_never_collide(store, name):
    family = get_family(name)
    seen = {}
    for account in (0, 1, 2, 17, 2**31 - 1):
        for index in range(25):
            address = family.derive(store, account, index).address
            assert address not in seen, f"{address} for {(account, index)} and {seen[address]}"
            seen[address] = (account, index)


@pytest.mark.parametrize("name", DERIVABLE)
def test_same_account_index_is_stable(store, name):
    family = get_family(name)
    other = SeedKeyStore.from_mnemonic(ABANDON)  # a fresh process, empty caches
    for account, index in ((0, 0), (5, 7), (123456, 2**31 - 1)):
        assert family.derive(store, account, index) == family.derive(other, account, index)


@pytest.mark.parametrize("name,prefixes", [
    ("btc", {"mainnet": "bc1q", "testnet": "tb1q", "regtest": "bcrt1q"}),
    ("ltc", {"mainnet": "ltc1q", "testnet": "tltc1q", "regtest": "rltc1q"}),
    ("doge", {"mainnet": "D", "testnet": "n", "regtest": ("m", "n")}),
    ("evm", {"mainnet": "0x", "testnet": "0x", "regtest": "0x"}),
    ("tron", {"mainnet": "T", "testnet": "T", "regtest": "T"}),
])
def test_network_prefixes(store, name, prefixes):
    for network, prefix in prefixes.items():
        family = get_family(name, network)
        for index in range(5):
            derived = family.derive(store, 3, index)
            assert derived.address.startswith(prefix), (network, derived.address)
            assert family.validate(derived.address) == derived.address


def test_paths_and_coin_types(store):
    expected = {
        ("btc", "mainnet"): "m/84'/0'/5'/0/7",
        ("btc", "regtest"): "m/84'/1'/5'/0/7",
        ("ltc", "mainnet"): "m/84'/2'/5'/0/7",
        ("ltc", "testnet"): "m/84'/1'/5'/0/7",
        ("doge", "mainnet"): "m/44'/3'/5'/0/7",
        ("evm", "mainnet"): "m/44'/60'/5'/0/7",
        ("evm", "testnet"): "m/44'/1'/5'/0/7",
        ("tron", "mainnet"): "m/44'/195'/5'/0/7",
        ("solana", "mainnet"): "m/44'/501'/5'/7'",
        ("solana", "regtest"): "m/44'/501'/5'/7'",
    }
    for (name, network), path in expected.items():
        assert get_family(name, network).derive(store, 5, 7).path == path
    assert get_family("btc").derive(store, 5, 7, change=True).path == "m/84'/0'/5'/1/7"
    assert get_family("doge").derive(store, 5, 7, change=True).path == "m/44'/3'/5'/1/7"


def test_regtest_and_mainnet_differ(store):
    main = get_family("btc").derive(store, 0, 0).address
    reg = get_family("btc", "regtest").derive(store, 0, 0).address
    assert main.startswith("bc1q") and reg.startswith("bcrt1q") and main[4:] != reg[6:]


@pytest.mark.parametrize("name", ("evm", "tron", "solana"))
def test_change_branch_only_for_utxo(store, name):
    with pytest.raises(DerivationError, match="change"):
        get_family(name).derive(store, 0, 0, change=True)


@pytest.mark.parametrize("bad", [-1, 2**31, True, "1", 1.0, None])
def test_account_and_index_ranges(store, bad):
    btc = get_family("btc")
    with pytest.raises(DerivationError):
        btc.derive(store, bad, 0)
    with pytest.raises(DerivationError):
        btc.derive(store, 0, bad)
    with pytest.raises(DerivationError):
        store.private_key_for(get_family("solana"), 0, bad)


def test_equal_but_wrong_typed_numbers_never_hit_the_cache():
    # 1.0 and True hash like 1: they must be refused even once account 1 is cached.
    fresh = SeedKeyStore.from_mnemonic(ABANDON)
    btc = get_family("btc")
    btc.derive(fresh, 1, 1)
    fresh.account_xpub(btc, 1)
    for bad in (1.0, True):
        with pytest.raises(DerivationError):
            btc.derive(fresh, bad, 1)
        with pytest.raises(DerivationError):
            btc.derive(fresh, 1, bad)
        with pytest.raises(DerivationError):
            fresh.account_xpub(btc, bad)
        with pytest.raises(DerivationError):
            btc.path(bad, 1)


@pytest.mark.parametrize("name", ("xmr", "lightning"))
def test_validate_only_families_do_not_derive(store, name):
    family = get_family(name)
    assert not family.derivable
    with pytest.raises(DerivationError):
        family.derive(store, 0, 0)


def _watch_store(store, network="mainnet", accounts=(0, 9)):
    xpubs = {
        (name, account): store.account_xpub(get_family(name, network), account)
        for name in SECP
        for account in accounts
    }
    return WatchOnlyKeyStore(xpubs, network=network, families=builtin_families())


@pytest.mark.parametrize("network", NETWORKS)
def test_watch_only_matches_seed_store(store, network):
    watch = _watch_store(store, network)
    for name in SECP:
        family = get_family(name, network)
        for account in (0, 9):
            for index in (0, 1, 2, 1000, 2**31 - 1):
                assert family.derive(watch, account, index) == family.derive(store, account, index)
            if name in ("btc", "ltc", "doge"):
                assert family.derive(watch, account, 4, change=True) == family.derive(
                    store, account, 4, change=True
                )


def test_watch_only_refuses_private_keys_and_solana(store):
    watch = _watch_store(store)
    with pytest.raises(WatchOnlyError):
        watch.private_key_for(get_family("btc"), 0, 0)
    with pytest.raises(WatchOnlyError, match="ed25519"):
        get_family("solana").derive(watch, 0, 0)
    with pytest.raises(WatchOnlyError):
        store.account_xpub(get_family("solana"), 0)
    with pytest.raises(WatchOnlyError):
        watch.add_account_xpub("solana", 0, store.account_xpub(get_family("evm"), 0))


def test_watch_only_unknown_account(store):
    watch = _watch_store(store)
    with pytest.raises(WatchOnlyError, match="no account xpub"):
        get_family("btc").derive(watch, 1, 0)


def test_watch_only_rejects_bad_xpubs(store):
    watch = WatchOnlyKeyStore(families=builtin_families())
    btc = get_family("btc")
    account_node = store._account_node(btc.scheme, 0)
    with pytest.raises(WatchOnlyError, match="PRIVATE"):
        watch.add_account_xpub("btc", 0, account_node.to_xprv("zprv"))
    # an xpub of another account, or of the wrong depth
    with pytest.raises(WatchOnlyError, match="account-level"):
        watch.add_account_xpub("btc", 1, store.account_xpub(btc, 0))
    with pytest.raises(WatchOnlyError, match="account-level"):
        watch.add_account_xpub("btc", 0, account_node.child(0).to_xpub("zpub"))
    # testnet versions on mainnet, mainnet versions for a UTXO family on regtest
    with pytest.raises(WatchOnlyError, match="testnet"):
        watch.add_account_xpub("btc", 0, account_node.to_xpub("vpub"))
    with pytest.raises(WatchOnlyError, match="mainnet"):
        WatchOnlyKeyStore({("btc", 0): account_node.to_xpub("zpub")}, network="regtest", families=builtin_families())
    with pytest.raises(UnknownFamilyError):
        watch.add_account_xpub("bogus", 0, store.account_xpub(btc, 0))
    with pytest.raises(DerivationError):
        watch.add_account_xpub("btc", 0, "zpub-garbage")
    # a family name needs a registry; an AddressFamily object does not
    with pytest.raises(DerivationError, match="registry"):
        WatchOnlyKeyStore().add_account_xpub("btc", 0, store.account_xpub(btc, 0))
    bare = WatchOnlyKeyStore()
    bare.add_account_xpub(btc, 0, store.account_xpub(btc, 0))
    assert btc.derive(bare, 0, 3) == btc.derive(store, 0, 3)


def test_watch_only_other_network_refused(store):
    watch = _watch_store(store, "mainnet")
    with pytest.raises(WatchOnlyError, match="mainnet"):
        get_family("evm", "testnet").derive(watch, 0, 0)


def test_seed_store_secrets_hidden(store):
    assert "secret hidden" in repr(store)
    with pytest.raises(TypeError):
        pickle.dumps(store)
    assert store.master_fingerprint == "73c5da0a"  # BIP-32 fingerprint of "abandon ... about"
    assert "73c5da0a" not in repr(store)


def test_seed_store_constructors():
    a = SeedKeyStore.from_secret(ABANDON)
    b = SeedKeyStore.from_hex(
        "5eb00bbddcf069084889a8ab9155568165f5c453ccb85e70811aaed6f6da5fc19a5ac40b"
        "389cd370d086206dec8aa6c43daea6690f20ad3d8d48b2d2ce9e38e4"
    )
    btc = get_family("btc")
    assert btc.derive(a, 0, 0) == btc.derive(b, 0, 0)
    with pytest.raises(ValueError):
        SeedKeyStore(b"short")


def test_registry():
    assert sorted(f.name for f in families()) == sorted(FAMILY_NAMES)
    for network in NETWORKS:
        for name in FAMILY_NAMES:
            family = get_family(name, network)
            assert (family.name, family.network) == (name, network)
    with pytest.raises(UnknownFamilyError):
        get_family("dash")
    with pytest.raises(UnknownFamilyError):
        get_family("btc", "signet")
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_family("btc").name = "ltc"  # type: ignore[misc]
    # The registry hands out the one registered family object, not a fresh copy each time.
    assert get_family("btc") is get_family("btc") and get_family("btc") != get_family("ltc")
    assert {f.name for f in families() if f.watch_only_capable} == set(SECP)
