"""Built-in plugin ``solana``: the SOL coin, the ``solana`` address family, its QR.

It registers today only the coin (with its price id), the address family
(SLIP-10 ed25519 m/44'/501'/A'/I' and validation) and the hosted page's QR
payload (a Solana Pay transfer request, ``solana:<address>?amount=<SOL>``);
the chain adapter that watches and pays on Solana is built by a later issue,
and until then no chain serves SOL outside the devnet.
"""

from __future__ import annotations

from ...core.keys import NETWORKS
from ...core.plugins import hookimpl
from .address import address_family
from .coins import COINS

PLUGIN_NAME = "solana"
SYMBOLS = frozenset(coin.symbol for coin in COINS)


@hookimpl
def register_coins(registry) -> None:
    for coin in COINS:
        registry.add(coin)


@hookimpl
def register_address_families(registry) -> None:
    for network in NETWORKS:
        registry.add(address_family(network))


@hookimpl
def payment_qr_payload(payment, coin):
    """Solana Pay: the amount is in SOL (decimal), which the payment view already shows."""
    if coin.symbol not in SYMBOLS or not payment.get("address"):
        return None
    amount = payment.get("pay_amount")
    return f"solana:{payment['address']}" + (f"?amount={amount}" if amount else "")
