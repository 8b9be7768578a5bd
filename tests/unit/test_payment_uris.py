"""Payment URIs of the chain plugins (chains/payment_uri.py) against the specs' own examples."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from orbchain.api import Coin
from orbchain.chains import bitcoin, evm, solana, tron
from orbchain.chains.bitcoin.coins import COINS as BITCOIN_COINS
from orbchain.chains.evm.coins import COINS as EVM_COINS
from orbchain.chains.solana.coins import COINS as SOLANA_COINS
from orbchain.chains.tron.coins import COINS as TRON_COINS
from orbchain.web.live_state import safe_return_url

COINS = {coin.symbol: coin for coin in (*BITCOIN_COINS, *EVM_COINS, *SOLANA_COINS, *TRON_COINS)}
# A Solana SPL token as an operator's coin table could add one: Solana Pay's USDC example mint.
USDC_SPL = Coin("USDC_SPL", "USD Coin (Solana)", "solana", 6, 32, "1", COINS["SOL"].address_family,
                contract="EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v")


def gateway_with_evm(chains: dict) -> SimpleNamespace:
    blocks = {name: {"rpc_url": "http://127.0.0.1:8545", "chain_id": chain_id} for name, chain_id in chains.items()}
    return SimpleNamespace(config=SimpleNamespace(plugin_config=lambda name: blocks if name == "evm" else {}))


@pytest.mark.parametrize("symbol, address, amount, uri", [
    # BIP-21's example; the view's "20.30000000" is written as the coin's plain decimal.
    ("BTC", "175tWpb8K1S7NmH4Zx6rewF9WQrcZv245W", "20.30000000", "bitcoin:175tWpb8K1S7NmH4Zx6rewF9WQrcZv245W?amount=20.3"),
    ("LTC", "LQ3B36Yv2rBTxdgAdYpU2UcEZsaNwXeATk", "0.00000001",
     "litecoin:LQ3B36Yv2rBTxdgAdYpU2UcEZsaNwXeATk?amount=0.00000001"),
    ("DOGE", "DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L", "1000", "dogecoin:DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L?amount=1000"),
    ("BTC", "175tWpb8K1S7NmH4Zx6rewF9WQrcZv245W", None, "bitcoin:175tWpb8K1S7NmH4Zx6rewF9WQrcZv245W"),
])
def test_bip21(symbol, address, amount, uri):
    assert bitcoin.decide_qr_payload({"address": address, "pay_amount": amount}, COINS[symbol]) == uri


def test_solana_pay_native_and_spl_token():
    recipient = "mvines9iiHiQTysrwkJjGf2gb9Ex9jXJX8ns3qwf2kN"  # the Solana Pay spec's examples
    assert solana.decide_qr_payload({"address": recipient, "pay_amount": "1"}, COINS["SOL"]) == \
        f"solana:{recipient}?amount=1"
    assert solana.decide_qr_payload({"address": recipient, "pay_amount": "0.010000"}, USDC_SPL) == \
        f"solana:{recipient}?amount=0.01&spl-token=EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
    assert solana.decide_qr_payload({"address": recipient, "pay_amount": "0.000000001"}, COINS["SOL"]) == \
        f"solana:{recipient}?amount=0.000000001"  # one lamport: no exponent, the leading zero kept


def test_eip681_native_and_token():
    gateway = gateway_with_evm({"ethereum": 1, "bsc": 56})
    # EIP-681's examples, with the chain id and the amount as an integer of base units.
    assert evm.decide_qr_payload(gateway, {"address": "0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359",
                                           "pay_amount": "2.014"}, COINS["ETH"]) == \
        "ethereum:0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359@1?value=2014000000000000000"
    to = "0x8e23ee67d1332ad560396262c48ffbb01f93d052"
    assert evm.decide_qr_payload(gateway, {"address": to, "pay_amount": "25.5"}, COINS["USDT_ERC20"]) == \
        f"ethereum:0xdAC17F958D2ee523a2206206994597C13D831ec7@1/transfer?address={to}&uint256=25500000"
    assert evm.decide_qr_payload(gateway, {"address": to, "pay_amount": "0.1"}, COINS["BNB"]) == \
        f"ethereum:{to}@56?value=100000000000000000"
    assert evm.decide_qr_payload(gateway, {"address": to, "pay_amount": None}, COINS["ETH"]) == f"ethereum:{to}@1"


def test_eip681_names_a_chain_id_always():
    """A chain with no block (the devnet serves its coins) takes its published id, a block's id wins; a chain with
    no known id keeps the bare address, not a URI a wallet could pay on another chain (issue 49 item 1)."""
    gateway = gateway_with_evm({"ethereum": 5})
    payment = {"address": "0xab", "pay_amount": "1"}
    assert evm.decide_qr_payload(gateway, payment, COINS["POL"]) == "ethereum:0xab@137?value=1000000000000000000"
    assert evm.decide_qr_payload(gateway, payment, COINS["ETH"]) == "ethereum:0xab@5?value=1000000000000000000"
    assert evm.decide_qr_payload(gateway, payment, replace(COINS["POL"], chain="zkfoo")) is None
    assert evm.decide_qr_payload(gateway, payment, COINS["BTC"]) is None


def test_tron_native_and_trc20_token():
    """A TRC-20 token names its contract (``token=``) beside the amount in token units (issue 49: no bare address)."""
    address = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8"
    assert tron.decide_qr_payload({"address": address, "pay_amount": "12.500000"}, COINS["TRX"]) == \
        f"tron:{address}?amount=12.5"
    assert tron.decide_qr_payload({"address": address, "pay_amount": "30.000000"}, COINS["USDT_TRC20"]) == \
        f"tron:{address}?amount=30&token=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
    assert tron.decide_qr_payload({"address": address, "pay_amount": None}, COINS["USDC_TRC20"]) == \
        f"tron:{address}?token=TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8"
    assert tron.decide_qr_payload({"address": address, "pay_amount": "1"}, COINS["ETH"]) is None
    assert tron.decide_qr_payload({"address": address, "pay_amount": "1"}, COINS["BTC"]) is None


def test_no_address_no_uri():
    assert bitcoin.decide_qr_payload({"address": None, "pay_amount": "1"}, COINS["BTC"]) is None
    assert tron.decide_qr_payload({"address": "", "pay_amount": "1"}, COINS["TRX"]) is None


@pytest.mark.parametrize("url, safe", [
    ("https://shop.example/thanks?o=1", True),
    ("http://shop.example", True),
    ("HTTPS://shop.example/x", True),
    ("javascript:alert(1)", False),
    ("JavaScript:alert(1)", False),
    (" javascript:alert(1)", False),
    ("java\tscript:alert(1)", False),
    ("data:text/html,<script>alert(1)</script>", False),
    ("//shop.example/x", False),
    ("/relative", False),
    ("https://", False),
    ("https://[::1", False),
    (None, False),
    (42, False),
])
def test_return_url_is_http_or_nothing(url, safe):
    assert safe_return_url(url) == (url if safe else None)
