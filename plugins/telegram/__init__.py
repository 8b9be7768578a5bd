"""Built-in feature plugin ``telegram``: the messaging mini-app (SPEC 4.13, 5.4, 8).

A bot (Telegram Bot API; polling job or webhook, ``settings.py``) answers
/start with a link token and records who the chat is; the signed-in
account holder binds the chat on a confirmation page naming it, with the
password or a TOTP code (``linking.py``, ``dashboard.py``: the Telegram tab
of the dashboard's settings, which also lists and unlinks the chat); the
linked chat gets notifications (``notify.py``); the mini-app page
(``/tgapp``) opens a session from Telegram's signed init data
(``initdata.py``, ``session.py``) and shows balances, payments, receive
addresses and prices, and sends payouts, transfers and swaps with a TOTP
code every time (``wallet.py``). Written as a third-party package would be:
hooks only, its own tables, core data through ``orbchain.api``.
See docs/telegram.md.
"""

from __future__ import annotations

from pathlib import Path

from ...api import hookimpl
from . import bot, dashboard, linking, notify, openapi
from .routes_app import routes as app_routes
from .routes_link import routes as link_routes
from .settings import PLUGIN_NAME, settings_of
from ...api import Gateway, PaymentView, PayoutView
from ...api.hooks import (
    AssetRegistry, DashboardRegistry, JobRegistry, MigrationRegistry, OperationRegistry, RouteRegistry,
)

HERE = Path(__file__).resolve().parent
MIGRATIONS_PACKAGE = "orbchain.plugins.telegram.migrations"
PRUNE_SECONDS = 3600

__all__ = ["PLUGIN_NAME"]


@hookimpl
def check_config(gateway: Gateway) -> None:
    settings_of(gateway)


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_routes(registry: RouteRegistry) -> None:
    registry.add(link_routes)
    registry.add(app_routes)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    openapi.register(registry)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=HERE / "templates", static=HERE / "static")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("settings-nav", "Telegram", linking.PAGE_PATH, order=60, render=dashboard.page,
                 submit=dashboard.submit, scope="account:credentials", group="Business")


@hookimpl
def register_jobs(registry: JobRegistry, gateway: Gateway) -> None:
    settings = settings_of(gateway)
    if not settings.enabled:
        return
    if settings.mode == "polling":
        registry.add(bot.POLL_JOB, bot.poll_updates, seconds=settings.poll_interval_seconds)
    registry.add(bot.DELIVER_JOB, bot.deliver_messages, seconds=settings.poll_interval_seconds)
    registry.add(bot.PRUNE_JOB, bot.prune, seconds=PRUNE_SECONDS)


@hookimpl
async def gateway_started(gateway: Gateway) -> None:
    linking.offer(gateway)
    await bot.register_webhook(gateway)


@hookimpl
async def gateway_stopping(gateway: Gateway) -> None:
    await bot.close(gateway)


@hookimpl
async def payment_paid(gateway: Gateway, payment: PaymentView) -> None:
    await notify.payment_paid(gateway, payment)


@hookimpl
async def payout_finished(gateway: Gateway, payout: PayoutView) -> None:
    await notify.payout_finished(gateway, payout)
