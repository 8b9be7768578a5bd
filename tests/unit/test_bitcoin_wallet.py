"""Coin selection, fee sizes, signing shapes and the plugin's config blocks (no node needed)."""

from __future__ import annotations

import pytest
from coincurve import PublicKey

from orbchain.chains.bitcoin.settings import read_settings
from orbchain.chains.bitcoin.transactions import (
    Outpoint, Output, Spend, estimate_vsize, legacy_sighash, p2pkh_script, script_for_address, script_for_key,
    sign_transaction,
)
from orbchain.chains.bitcoin.wallet import InsufficientFunds, WalletOutput, fee_for, select_outputs
from orbchain.core.infra.config import ConfigError, load_config
from orbchain.core.keys import SeedKeyStore
from orbchain.core.keys.hashing import hash160
from tests.families import get_family

KEY = bytes.fromhex("11" * 32)
DEST = script_for_address("ltc", "regtest", "rltc1q0ymavqheqw5ktk9k6l43an3njhcym8kh8ku23d")


def outputs(*amounts: int) -> list[WalletOutput]:
    return [WalletOutput(f"{i:064x}", 0, a, 1, i) for i, a in enumerate(amounts)]


def select(candidates, amount, rate=10_000, change_min=10_000):
    return select_outputs(candidates, amount, rate_sat_per_kvb=rate, kind="p2wpkh", destination_script=DEST,
                          change_script=DEST, change_min=change_min)


def test_largest_first_with_change():
    chosen = select(outputs(50_000, 2_000_000, 300_000), 1_000_000)
    assert [o.amount for o in chosen.inputs] == [2_000_000]
    assert chosen.fee == fee_for(estimate_vsize(["p2wpkh"], [DEST, DEST]), 10_000)
    assert chosen.change == 2_000_000 - 1_000_000 - chosen.fee


def test_small_remainder_goes_to_the_fee():
    fee_alone = fee_for(estimate_vsize(["p2wpkh"], [DEST]), 10_000)
    chosen = select(outputs(1_000_000 + fee_alone + 5_000), 1_000_000)
    assert chosen.change == 0 and chosen.fee == fee_alone + 5_000


def test_several_inputs_and_uneconomic_outputs_are_skipped():
    chosen = select(outputs(600_000, 600_000, 500), 1_100_000)
    assert [o.amount for o in chosen.inputs] == [600_000, 600_000]
    with pytest.raises(InsufficientFunds):
        select(outputs(600_000, 500), 1_000_000)


def test_estimate_is_an_upper_bound_of_the_signed_size():
    spends = [Spend(Outpoint("ab" * 32, i), 100_000, "p2wpkh", KEY) for i in range(3)]
    outs = [Output(50_000, DEST), Output(10_000, DEST)]
    signed = sign_transaction(spends, outs)
    assert 0 <= estimate_vsize(["p2wpkh"] * 3, [DEST, DEST]) - signed.vsize <= 3
    legacy = [Spend(Outpoint("cd" * 32, 0), 100_000, "p2pkh", KEY)]
    doge = get_family("doge", "mainnet").derive(SeedKeyStore(bytes(32)), 0, 0).address
    assert doge.startswith("D")
    doge_dest = script_for_address("doge", "mainnet", doge)
    signed = sign_transaction(legacy, [Output(50_000, doge_dest)])
    assert 0 <= estimate_vsize(["p2pkh"], [doge_dest]) - signed.vsize <= 2


def test_legacy_p2pkh_signature_verifies_against_the_legacy_sighash():
    spend = Spend(Outpoint("cd" * 32, 1), 5_000_000_000, "p2pkh", KEY)
    outs = [Output(4_000_000_000, p2pkh_script(bytes(20)))]
    raw = sign_transaction([spend], outs).raw
    # version(4) count(1) outpoint(36) script length(1) then push(sig) push(pubkey)
    script_len = raw[41]
    script = raw[42:42 + script_len]
    sig = script[1:1 + script[0]]
    pubkey = script[2 + script[0]:]
    assert sig[-1] == 1 and pubkey == spend.public_key
    digest = legacy_sighash([spend], outs, 0)
    assert PublicKey(pubkey).verify(sig[:-1], digest, hasher=None)
    assert script_for_key("p2pkh", pubkey) == p2pkh_script(hash160(pubkey))


def test_destination_scripts():
    assert script_for_address("btc", "mainnet", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4").hex() == \
        "0014751e76e8199196d454941c45d1b3a323f1433bd6"
    taproot = "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297"
    assert script_for_address("btc", "mainnet", taproot).hex().startswith("5120")


# -- config ---------------------------------------------------------------------------------------


def config(**blocks):
    return load_config(None, environ={}).with_overrides(plugin={"bitcoin": blocks})


GOOD = {"rpc_url": "http://127.0.0.1:19443", "rpc_user": "u", "rpc_password": "p", "network": "regtest"}


def test_one_block_per_coin_and_defaults():
    settings = read_settings(config(LTC=GOOD))
    assert list(settings) == ["LTC"]
    ltc = settings["LTC"]
    assert (ltc.spec.chain, ltc.network, ltc.fee_fallback_sat_per_vbyte, ltc.payout_confirmations) == \
        ("litecoin", "regtest", 10, 1)
    assert ltc.batch_window_seconds == 0  # payouts of separate requests are not held for a batch unless asked
    assert read_settings(config(LTC={**GOOD, "batch_window_seconds": 60}))["LTC"].batch_window_seconds == 60
    assert "p" not in repr(ltc).replace("http", "")  # no password in repr
    assert (ltc.consolidate_min_outputs, ltc.consolidate_max_fee_percent, ltc.consolidate_seconds) == (0, 1, 600)
    assert read_settings(config()) == {}


@pytest.mark.parametrize("block, key", [
    ({**GOOD, "rpc_urll": "x"}, "plugin.bitcoin.LTC.rpc_urll"),
    ({**GOOD, "network": "main"}, "plugin.bitcoin.LTC.network"),
    ({**GOOD, "fee_fallback_sat_per_vbyte": 2.5}, "plugin.bitcoin.LTC.fee_fallback_sat_per_vbyte"),
    ({**GOOD, "payout_confirmations": 0}, "plugin.bitcoin.LTC.payout_confirmations"),
    ({**GOOD, "batch_window_seconds": -1}, "plugin.bitcoin.LTC.batch_window_seconds"),
    ({k: v for k, v in GOOD.items() if k != "rpc_url"}, "plugin.bitcoin.LTC.rpc_url"),
    ({**GOOD, "rpc_cookie_file": "/x/.cookie"}, "plugin.bitcoin.LTC.rpc_cookie_file"),
    ({**GOOD, "consolidate_min_outputs": 1}, "plugin.bitcoin.LTC.consolidate_min_outputs"),
    ({**GOOD, "consolidate_max_fee_percent": 0}, "plugin.bitcoin.LTC.consolidate_max_fee_percent"),
    ({**GOOD, "consolidate_max_fee_percent": 101}, "plugin.bitcoin.LTC.consolidate_max_fee_percent"),
    ({**GOOD, "consolidate_max_fee_percent": "1"}, "plugin.bitcoin.LTC.consolidate_max_fee_percent"),
])
def test_bad_keys_are_named(block, key):
    with pytest.raises(ConfigError, match=key.replace(".", "\\.")):
        read_settings(config(LTC=block))


def test_unknown_coin_block_is_named():
    with pytest.raises(ConfigError, match="plugin\\.bitcoin\\.XRP"):
        read_settings(config(XRP=GOOD))


def test_consolidation_leaves_dust_and_outputs_too_dear_for_now_and_takes_the_smallest_first():
    """Spending an input costs 1,000 here: at most 1,000 is dust, above 1 % of the value waits, the rest goes."""
    from orbchain.chains.bitcoin.consolidation import sort_outputs
    from orbchain.chains.bitcoin.wallet import MAX_INPUTS

    found = sort_outputs(outputs(1_000, 999, 50_000, 100_000, 99_999, 300_000, 200_000), 1_000, 1)
    assert [o.amount for o in found.dust] == [999, 1_000]  # worth no more than their fee: never moved at a loss
    assert [o.amount for o in found.later] == [50_000, 99_999]  # worth it, but above the operator's share today
    assert [o.amount for o in found.chosen] == [100_000, 200_000, 300_000]
    many = sort_outputs(outputs(*range(200_000, 200_000 + MAX_INPUTS + 3)), 1_000, 1)
    assert len(many.chosen) == MAX_INPUTS and many.chosen[0].amount == 200_000  # the smallest first
