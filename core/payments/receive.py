"""Where a payer sends a payment's coin, and what the hosted page's QR encodes.

Why: receiving is not always "a derived address watched by a scanner". A
plugin may supply a payment's receive target (a node's invoice, a venue's
deposit address, a subaddress) through ``decide_receive_target``, and each
chain plugin says how its coin's QR payload is written through
``decide_qr_payload``. The core only falls back: an address derived from
the seed, and a QR that holds the bare address. Which coins have no address
to receive at is data on the coin (``Coin.receive_address``), never a symbol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..types.errors import InvalidRequest
from ..types.receive import ReceiveTarget  # moved to the ground floor; the name stays importable here

from ..contract.gateway import PluginGateway as Gateway

if TYPE_CHECKING:  # pragma: no cover
    from ..money.coins import Coin


def receive_unsupported_code(coin: "Coin") -> str:
    return f"{coin.symbol.lower()}_receive_unsupported"


def require_receive_address(coin: "Coin") -> None:
    """400 ``<symbol>_receive_unsupported`` for a coin with no address to receive at."""
    if not coin.receive_address:
        raise InvalidRequest(f"{coin.symbol} has no standing receive address", code=receive_unsupported_code(coin))


async def plugin_receive_target(
    gateway: "Gateway", payment: Mapping[str, Any], coin: "Coin"
) -> ReceiveTarget | None:
    """The first plugin's receive target for ``payment``, or None (the core derives one).

    Every implementation is awaited before the next is asked (pluggy's own
    first-result call alone would stop at the first coroutine object, which
    is never None, so a second async plugin such as Lightning after Monero
    would never be asked); the call goes through pluggy's wrappers and tracing.
    """
    result = await gateway.hooks.decide_receive_target(payment=payment, coin=coin)
    if result is not None and not isinstance(result, ReceiveTarget):
        raise TypeError(f"decide_receive_target returned {type(result).__name__}, not a ReceiveTarget")
    return result


def qr_payload(gateway: "Gateway", view: Mapping[str, Any], coin: "Coin") -> str | None:
    """What the QR of an open payment encodes: a plugin's URI, else the bare address."""
    payload = gateway.hooks.decide_qr_payload(payment=view, coin=coin)
    return payload if isinstance(payload, str) and payload else view.get("address")
