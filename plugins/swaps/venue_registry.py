"""Where the swaps plugin keeps a gateway's venues: its own state in ``gateway.services``.

The venues are collected once per gateway, while it is built (the plugin's
``register_jobs``, so a venue added twice stops the start), from the
``register_swap_venues`` hook this plugin declares. Everything that needs a
venue asks :func:`venues_of`; the core holds no venue. They are closed at
``gateway_stopping``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from . import hookspecs
from .venues import SwapVenueRegistry

from ...api import ServiceKey

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

SERVICE_NAME = ServiceKey("swaps.venues", SwapVenueRegistry)


def collect_venues(gateway: "Gateway") -> SwapVenueRegistry:
    """Ask every venue plugin for its venues and keep them on the gateway (replacing any earlier set)."""
    venues = gateway.hooks.collect_declared(hookspecs.register_swap_venues, registry=SwapVenueRegistry())
    gateway.services[SERVICE_NAME] = venues
    return venues


def venues_of(gateway: "Gateway") -> SwapVenueRegistry:
    """The gateway's venues (collected on first use for a gateway not built by ``build_gateway``)."""
    venues = gateway.services.get(SERVICE_NAME)
    return venues if venues is not None else collect_venues(gateway)


async def close_venues(gateway: "Gateway") -> None:
    """Call every venue's ``close`` once, at shutdown; a failing one is logged and the others still close."""
    venues = gateway.services.get(SERVICE_NAME)
    for venue in venues or ():
        try:
            await venue.close()
        except Exception:  # one venue must not keep the others open
            log.exception("closing swap venue %s failed", venue.name)
