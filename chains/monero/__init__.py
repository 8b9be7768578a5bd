"""Built-in plugin ``monero``: the XMR coin (source-only) and the ``xmr`` address family.

It registers today only the coin (with its price id) and a validate-only
address family (Monero addresses are checked as refund destinations and swap
inputs); receiving XMR (per-payment subaddresses through
``payment_receive_target``) and the swap into the settlement coin are built
by a later issue. Until then a payment in XMR is refused with 400
``xmr_receive_unsupported``, which follows from the coin's data
(``receive_address=False``).
"""

from __future__ import annotations

from ...core.keys import NETWORKS
from ...core.plugins import hookimpl
from .address import address_family
from .coins import COINS

PLUGIN_NAME = "monero"


@hookimpl
def register_coins(registry) -> None:
    for coin in COINS:
        registry.add(coin)


@hookimpl
def register_address_families(registry) -> None:
    for network in NETWORKS:
        registry.add(address_family(network))
