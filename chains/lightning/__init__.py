"""Built-in plugin ``lightning``: the BTC_LN coin and the ``lightning`` address family.

It registers today only the coin (with its price id) and a validate-only
address family (a BOLT 11 invoice or a Lightning Address as a payout
destination). The node adapter that issues invoices (through
``payment_receive_target``, with a ``lightning:`` QR payload) and pays them
is built by a later issue; until then no chain serves BTC_LN and a payment in
it is refused with 503 (not configured).
"""

from __future__ import annotations

from ...core.keys import NETWORKS
from ...core.plugins import hookimpl
from .address import address_family
from .coins import COINS

PLUGIN_NAME = "lightning"


@hookimpl
def register_coins(registry) -> None:
    for coin in COINS:
        registry.add(coin)


@hookimpl
def register_address_families(registry) -> None:
    for network in NETWORKS:
        registry.add(address_family(network))
