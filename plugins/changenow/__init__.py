"""Built-in plugin ``changenow``: the ChangeNOW instant exchange (API v2) as a swap venue.

Registered through ``register_swap_venues`` (the hook the ``swaps`` plugin
declares) when ``[plugin.changenow] api_key`` is set; see ``settings.py`` for the block and ``venue.py`` for
the wire format. ChangeNOW converts XMR too, so XMR swap-in can use it.
"""

from __future__ import annotations

from ...api import hookimpl
from .settings import PLUGIN_NAME, read_settings
from .venue import ChangeNowVenue
from ...api import Gateway
from ...api.hooks import MigrationRegistry

MIGRATIONS_PACKAGE = "orbchain.plugins.changenow.migrations"

__all__ = ["PLUGIN_NAME", "ChangeNowVenue"]


@hookimpl
def check_config(gateway: Gateway) -> None:
    read_settings(gateway.config)


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl(optionalhook=True)  # declared by the swaps plugin: without it, no venue is asked for
def register_swap_venues(registry, gateway: Gateway) -> None:
    settings = read_settings(gateway.config)
    if settings.api_key:
        registry.add(ChangeNowVenue(settings, gateway.coins, gateway.db, gateway.now))
