"""Built-in feature plugin: a merchant's underpayment tolerance (issue 46 item 4).

A wallet that rounds, or takes its fee from the amount, leaves an invoice a few satoshis short: without a
tolerance it stays Paying and then expires, and the merchant refunds by hand what was nearly a sale. The
merchant sets a percentage and, per coin, an absolute amount; a payment whose credited deposits fall short by
no more than either is Paid (``decide_payment_covered``), and its shortfall stays readable from the fields
the API already has (``amount`` against its ``transactions``). Written as a third-party package would be:
its own table, a settings page, one decide hook called last so a venue that settles a payment itself
answers first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ...api import hookimpl
from . import dashboard
from .rule import covered_within_tolerance
from ...api import Gateway
from ...api.hooks import AssetRegistry, DashboardRegistry, MigrationRegistry

PLUGIN_NAME = "tolerance"
MIGRATIONS_PACKAGE = "orbchain.plugins.tolerance.migrations"


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("settings-nav", "Underpayment tolerance", "/app/tolerance", order=20, render=dashboard.page,
                 submit=dashboard.submit, scope="settings:manage", group="Payments")


@hookimpl(trylast=True)
async def decide_payment_covered(gateway: Gateway, payment: Mapping[str, Any], deposits: list[Mapping[str,
                                 Any]]) -> bool | None:
    return await covered_within_tolerance(gateway, payment, deposits)
