"""Built-in feature plugin ``approvals``: payouts and transfers that need a second person (issue 36, second half).

An account's policy (``/app/approvals``) sets, per coin, a threshold in US
dollars and daily limits per person and per API key. A payout past them is
held by the core's ``decide_payout_hold`` hook at the one place every payout
is reserved: its money stays reserved, the worker leaves it alone, and it is
sent only when someone other than its requester with ``payout:approve``
approves it with a TOTP code. A payout made with an API key is requested by
the person who created or last rotated the key (issue 42), so they cannot
approve it either. Rejected or expired, it fails and the money comes back.
Internal transfers are held the same way (``decide_transfer_hold``).
No policy: nothing changes. See docs/teams.md, "Approvals".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ...api import hookimpl
from . import holds, openapi, page
from .routes import routes
from ...api import Gateway, PayoutView
from ...api.hooks import (
    AssetRegistry, DashboardRegistry, JobRegistry, MigrationRegistry, OperationRegistry, RouteRegistry,
    ScopeRegistry,
)

PLUGIN_NAME = "approvals"
MIGRATIONS_PACKAGE = "orbchain.plugins.approvals.migrations"
EXPIRY_JOB, EXPIRY_SECONDS = "approvals.expire", 60


async def expire_job(gateway) -> None:
    await holds.expire_due(gateway)


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_scopes(registry: ScopeRegistry) -> None:
    registry.add(page.SCOPE, "Approve or reject payouts held by the approval policy.", members_only=True)


@hookimpl
def register_routes(registry: RouteRegistry) -> None:
    registry.add(routes)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    openapi.register(registry)


@hookimpl
def register_jobs(registry: JobRegistry) -> None:
    registry.add(EXPIRY_JOB, expire_job, seconds=EXPIRY_SECONDS)


@hookimpl
def register_templates(registry: AssetRegistry) -> None:
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry: DashboardRegistry) -> None:
    registry.add("header-nav", "Approvals", page.PAGE_PATH, order=65, render=page.render, submit=page.submit,
                 scope=page.SCOPE, notices=page.NOTICES, group="Money")


@hookimpl
async def decide_payout_hold_notice(gateway: Gateway, merchant_id: str, coin: str, amount: int,
                                    requested_by: str | None) -> str | None:
    return await holds.review_notice(gateway, merchant_id, coin, amount, requested_by)


@hookimpl
async def decide_hold_quote(gateway: Gateway, merchant_id: str, coin: str) -> Any:
    return await holds.quote(gateway, merchant_id, coin)


@hookimpl
async def decide_payout_hold(gateway: Gateway, payout: PayoutView, requested_by: str | None, quote: Any,
                             key_id: str | None) -> bool | None:
    subject = holds.Subject(holds.PAYOUT, payout.id, payout.track_id, payout.merchant_id, payout.coin, payout.amount,
                            payout.destination)
    return await holds.decide(gateway, subject, requested_by, quote, key_id)


@hookimpl
async def check_payout_signing(gateway: Gateway, payout: PayoutView) -> None:
    await holds.check_signing(gateway, payout)


@hookimpl
async def decide_transfer_hold(gateway: Gateway, transfer: Mapping[str, Any], requested_by: str | None, quote: Any,
                               key_id: str | None) -> bool | None:
    subject = holds.Subject(holds.TRANSFER, transfer["id"], transfer["id"], transfer["merchant_id"],
                            transfer["coin"], transfer["amount"], transfer["to_account_id"])
    return await holds.decide(gateway, subject, requested_by, quote, key_id)
