"""The core's own periodic jobs, registered before the plugins' ones.

Webhook delivery, one scan per chain adapter (adapters only report; the
core scans), payment expiry, the payout worker, pruning old lockout rows,
revocations of expired dashboard tokens and unpaid invoices past their
retention, folding the payment count deltas the lists' totals read
(``payments.fold_counts``), booking the sweeps a signer recorded
(``ledger.book_sweeps``: the signer writes no ledger), the periodic ledger check whose result /metrics
reports, and the custody check that proves the books against the nodes (``custody.check``).
These modules name the gateway only for type checking, so they import at the
top without a cycle (tests/test_layering.py keeps it that way).
"""

from __future__ import annotations

from .accounts import jwt_revocation
from .payments import counts as payment_counts, pruning as payment_pruning
from .types.chains import Capability
from .accounts.lockout import prune
from .health.metrics_db import ledger_check_job
from .custody.run import JOB_NAME as CUSTODY_JOB, custody_check_job
from .payments.status import expire_payments
from .payouts.worker import JOB_NAME as PAYOUT_JOB, TICK_SECONDS as PAYOUT_TICK, process_job
from .watching.scanner import scan_job, scan_job_name
from .events.webhooks import deliver_due
from .events import retention as webhooks_retention
from .events.delivery_wake import JOB as DELIVERY_JOB
from .events.operator import JOB_NAME as OPERATOR_JOB, TICK_SECONDS as OPERATOR_TICK, deliver_operator_events
from .events.operator import operator_webhook_on
from .health.node_refusals import announce_refused_nodes
from .ledger.sweep_bookings import JOB_NAME as SWEEP_BOOKING_JOB, TICK_SECONDS as SWEEP_BOOKING_TICK, book_sweeps_job
from .contract.gateway import PluginGateway as Gateway

EXPIRY_SECONDS = 15
LOCKOUT_PRUNE_SECONDS = 3600


async def expire_payments_job(gateway: "Gateway") -> None:
    await expire_payments(gateway)


async def prune_lockouts_job(gateway: "Gateway") -> None:
    await prune(gateway.db, gateway.now())


def register_core_jobs(gateway: "Gateway") -> None:
    gateway.jobs.current_plugin = "core"
    gateway.jobs.add(DELIVERY_JOB, deliver_due, seconds=gateway.config.webhooks.tick_seconds)
    gateway.jobs.add("payments.expire", expire_payments_job, seconds=EXPIRY_SECONDS)
    gateway.jobs.add(PAYOUT_JOB, process_job, seconds=PAYOUT_TICK)
    gateway.jobs.add("auth.prune_lockouts", prune_lockouts_job, seconds=LOCKOUT_PRUNE_SECONDS)
    gateway.jobs.add(jwt_revocation.PRUNE_JOB, jwt_revocation.prune, seconds=jwt_revocation.PRUNE_SECONDS)
    gateway.jobs.add(payment_pruning.JOB_NAME, payment_pruning.prune_job, seconds=payment_pruning.TICK_SECONDS)
    gateway.jobs.add(payment_counts.JOB_NAME, payment_counts.fold_job, seconds=payment_counts.TICK_SECONDS)
    gateway.jobs.add(SWEEP_BOOKING_JOB, book_sweeps_job, seconds=SWEEP_BOOKING_TICK)
    if gateway.config.webhooks.retention_days:
        gateway.jobs.add(webhooks_retention.JOB_NAME, webhooks_retention.prune_job,
                         seconds=webhooks_retention.TICK_SECONDS)
    if gateway.config.metrics.ledger_check_seconds:
        gateway.jobs.add("ledger.check", ledger_check_job, seconds=gateway.config.metrics.ledger_check_seconds)
    if operator_webhook_on(gateway):
        gateway.jobs.add(OPERATOR_JOB, deliver_operator_events, seconds=OPERATOR_TICK)
        announce_refused_nodes(gateway)
    if gateway.config.custody.check_seconds:
        gateway.jobs.add(CUSTODY_JOB, custody_check_job, seconds=gateway.config.custody.check_seconds)
    for adapter in (a for a in gateway.chains if a.supports(Capability.DEPOSITS)):
        gateway.jobs.add(scan_job_name(adapter.name), scan_job(adapter), seconds=adapter.scan_seconds)
