"""The hook the ``swaps`` plugin offers exchange plugins: swap venues.

Declared by the plugin itself (``register_hookspecs``), so the core names no
venue. A venue plugin implements it with ``@hookimpl(optionalhook=True)``
and still loads when the ``swaps`` plugin is blocked. See docs/plugins.md
and docs/swaps.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...api import hookspec

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ...api import Gateway
    from .venues import SwapVenueRegistry


@hookspec
def register_swap_venues(registry: "SwapVenueRegistry", gateway: "Gateway") -> None:
    """Contribute swap venues (exchanges that convert one coin into another).

    Called once while the gateway is built, after ``register_coins``. Call
    ``registry.add(venue)`` with an ``orbchain.plugins.swaps.venues.SwapVenue``:
    ``supports``, ``quote``, ``create_swap``, ``status`` and ``refund``, amounts
    in base units, every call idempotent by the gateway's swap id. A name
    added twice stops startup naming both plugins. The swaps plugin finds
    them with ``orbchain.plugins.swaps.venue_registry.venues_of(gateway)``.
    Return nothing.
    """
