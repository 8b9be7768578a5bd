"""Built-in feature plugin: revenue splits on white-label payments (SPEC 2.10, 7, 8).

A white-label payment may carry ``splits``: up to 10 entries of basis points
summing to exactly 10000, each to another merchant's balance
(``recipient_merchant_id``) or paid out to an address (``recipient_address``).
The plugin uses only the contract: ``register_payment_fields`` for the field
(and its exclusion of ``settlement_coin``), ``filter_credit_postings`` to cut each
credited deposit's net into shares inside the crediting transaction,
``deposit_credited`` / a job to turn address shares into payouts through
``request_payout``, ``deposit_reversed`` for reorgs, ``payments_pruning`` to drop
the entries of an unpaid payment the core deletes.
"""

from __future__ import annotations

from ...api import delete_rows_naming, hookimpl
from . import openapi
from .credit import split_postings
from .entries import FIELD, parse, store
from .release import JOB_NAME, JOB_SECONDS, mark_reversed, release_deposit, release_pending
from .routes import routes
from ...api import Credit, DepositView, Gateway, Posting
from ...api.hooks import JobRegistry, MigrationRegistry, OperationRegistry, PaymentFieldRegistry, RouteRegistry

PLUGIN_NAME = "splits"
MIGRATIONS_PACKAGE = "orbchain.plugins.splits.migrations"
EXCLUDES = {"settlement_coin": "splits_settlement_coin_exclusive"}

__all__ = ["PLUGIN_NAME", "release_pending"]


@hookimpl
def register_migrations(registry: MigrationRegistry) -> None:
    registry.add_package(PLUGIN_NAME, MIGRATIONS_PACKAGE)


@hookimpl
def register_payment_fields(registry: PaymentFieldRegistry) -> None:
    registry.add(FIELD, parse, store, excludes=EXCLUDES)


@hookimpl
async def filter_credit_postings(gateway: Gateway, credit: Credit, postings: list[Posting]) -> list[Posting] | None:
    return await split_postings(gateway, credit, postings)


@hookimpl
async def deposit_credited(gateway: Gateway, deposit: DepositView) -> None:
    await release_deposit(gateway, deposit.id)


@hookimpl
async def deposit_reversed(gateway: Gateway, deposit: DepositView) -> None:
    await mark_reversed(gateway, deposit.id)


@hookimpl
async def payments_pruning(gateway: Gateway, track_ids: list[str]) -> None:
    # Never paid (no deposit), so no ``splits_payouts`` row names them: only their entries are left.
    await delete_rows_naming(gateway, "splits_entries", "track_id", track_ids)


@hookimpl
def register_jobs(registry: JobRegistry) -> None:
    registry.add(JOB_NAME, release_pending, seconds=JOB_SECONDS)


@hookimpl
def register_routes(registry: RouteRegistry) -> None:
    registry.add(routes)


@hookimpl
def register_openapi(registry: OperationRegistry) -> None:
    openapi.register(registry)
