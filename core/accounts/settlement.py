"""Whether a merchant may take a coin that settles only via a swap: the core asks, a plugin decides.

A coin that settles only via a swap is never held (``Coin.settles_only_via_swap``); it is
accepted only when some plugin converts it into another coin for the
merchant. The core does not know which plugin that is or where it keeps
the merchant's choice: it asks ``decide_settlement_coin`` (the ``swaps``
plugin answers the account's ``default_settlement_coin``). No answer, or
the coin itself, means nobody converts it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..contract.gateway import PluginGateway as Gateway

if TYPE_CHECKING:  # pragma: no cover
    from ..money.coins import Coin


def settles(gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin") -> bool:
    """True unless ``coin`` settles only via a swap and no plugin converts it into another coin for ``merchant``."""
    if not coin.settles_only_via_swap:
        return True
    # Declared sync (its callers cannot await): an ``async def`` answer is refused naming the plugin, not taken for yes.
    return gateway.hooks.decide_settlement_coin(merchant=merchant, coin=coin) not in (None, "", coin.symbol)
