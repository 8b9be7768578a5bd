"""Built-in feature plugin: a merchant's speed policy, confirmations scaled by value (issue 46 item 4).

One confirmation is plenty for a coffee and too few for a car. The merchant sets, per coin, value tiers
("up to 0.1 LTC: 1 confirmation, up to 2 LTC: 3"); a deposit needs the confirmations of the first tier its
value fits in (the deposit, or its payment's whole amount when larger), and above every tier the merchant's
usual setting. The core never goes below the coin's safe floor (``Coin.confirmations``), and the page refuses
a tier below it. Written as a third-party package would be: its own table, a settings page and one decide
hook, ``decide_deposit_confirmations``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ...api import Gateway, hookimpl
from ...api.hooks import AssetRegistry, DashboardRegistry, MigrationRegistry
from . import dashboard
from .rule import required_confirmations

PLUGIN_NAME = "speed"
MIGRATIONS_PACKAGE = "orbchain.plugins.speed.migrations"


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("settings-nav", "Confirmation speed", "/app/speed", order=21, render=dashboard.page,
                 submit=dashboard.submit, scope="settings:manage", group="Payments")


@hookimpl
async def decide_deposit_confirmations(gateway: Gateway, merchant_id: str, coin: str, amount: int,
                                       payment: Mapping[str, Any] | None) -> int | None:
    return await required_confirmations(gateway, merchant_id, coin, amount, payment)
