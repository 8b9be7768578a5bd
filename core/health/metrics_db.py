"""Metrics that are facts of the database, read when Prometheus scrapes.

Webhook queue depth, payouts by state and the payout backlog, and the last
``ledger check`` are the same whichever process answers the scrape, so they
are read from the database then (a handful of indexed counts) instead of
being tracked in each process. They are rendered through a collector of
metric families, never through ``Gauge`` objects, so multiprocess mode
writes nothing for them to its shared files.

The latest custody check per coin (``core/custody``) is read the same way,
and so are the payouts waiting for fees below the ceiling (``payouts/fee_waits.py``).
``record_ledger_check`` stores each check's result (the ``ledger.check`` job
and ``orbchain ledger check`` both call it); ``ledger_check_job`` is the job.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..events.outbox import PENDING
from ..ledger.check import LedgerReport, check_ledger
from ..custody.hot_wallet import hot_wallet_limits
from ..custody.store import last_check_at, latest_by_coin
from ..payouts.fee_waits import FEE_WAITING
from ..payouts.pauses import paused_coins
from ..payouts.service import CONFIRMING, QUEUED

from ..contract.gateway import PluginGateway as Gateway

if TYPE_CHECKING:  # pragma: no cover
    from ..infra.db import Database

log = logging.getLogger(__name__)

# Check results kept; the metrics read only the newest.
KEEP_CHECKS = 100
PAYOUT_BACKLOG_STATUS = "Confirming"


@dataclass(frozen=True)
class DatabaseFacts:
    """What one scrape read from the database."""

    webhook_pending: int = 0
    webhook_oldest_pending_age: int | None = None
    payouts_by_status: dict[str, int] = field(default_factory=dict)
    payout_backlog_by_stage: dict[str, int] = field(default_factory=dict)
    payout_oldest_backlog_age: int | None = None
    ledger_check_ok: bool | None = None
    ledger_check_problems: int = 0
    ledger_check_age: int | None = None
    # Latest custody check per coin: shortfall in base units (0 when covered), payouts paused or not.
    custody_shortfall: dict[str, int] = field(default_factory=dict)
    custody_paused: dict[str, bool] = field(default_factory=dict)
    custody_last_check_at: int | None = None
    # Queued payouts held back because the network fee is above the operator's ceiling (payouts/fee_waits.py).
    payouts_waiting_for_fees: dict[str, int] = field(default_factory=dict)
    # Per coin with a configured floor: 1 when the latest check saw its spendable hot balance below it.
    hot_wallet_below_floor: dict[str, int] = field(default_factory=dict)
    # Operator events (core/events/operator.py) by (type, status): holds, sweeps to cold, shortfalls and
    # recoveries, nodes refused; "failed" ones never reached the operator's webhook.
    operator_events: dict[tuple[str, str], int] = field(default_factory=dict)
    # Sweeps a signer recorded (core/ledger/sweep_bookings.py): "due" not booked yet, "refused" never booked.
    sweep_bookings: dict[str, int] = field(default_factory=dict)


async def read_facts(gateway: "Gateway") -> DatabaseFacts:
    db, now = gateway.db, gateway.now()
    pending = await db.fetch_one(
        "SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM webhook_events WHERE status = :p", {"p": PENDING})
    by_status = await db.fetch_all("SELECT status, COUNT(*) AS n FROM payouts GROUP BY status")
    backlog = await db.fetch_all(
        "SELECT stage, COUNT(*) AS n, MIN(created_at) AS oldest FROM payouts WHERE status = :s GROUP BY stage",
        {"s": PAYOUT_BACKLOG_STATUS})
    check = await db.fetch_one(
        "SELECT checked_at, ok, problems FROM ledger_checks ORDER BY checked_at DESC, id DESC LIMIT 1")
    custody = await latest_by_coin(db)
    paused = await paused_coins(db)
    waiting = await db.fetch_all(
        "SELECT coin, COUNT(*) AS n FROM payouts WHERE status = :s AND stage = :q AND last_error LIKE :w"
        " GROUP BY coin", {"s": CONFIRMING, "q": QUEUED, "w": f"{FEE_WAITING}%"})
    checked = [c for c in custody if c["difference"] is not None]
    floors = {coin: limit.floor for coin, limit in hot_wallet_limits(gateway).items() if limit.floor is not None}
    hot = {c["coin"]: c["hot"] for c in custody if c["hot"] is not None}
    oldest_backlog = min((int(r["oldest"]) for r in backlog), default=None)
    operator = await db.fetch_all("SELECT event_type, status, COUNT(*) AS n FROM operator_events"
                                  " GROUP BY event_type, status")
    bookings = await db.fetch_one(
        "SELECT COUNT(CASE WHEN booked_at IS NULL AND refused IS NULL THEN 1 END) AS due,"
        " COUNT(refused) AS refused FROM sweep_bookings")
    return DatabaseFacts(
        webhook_pending=int(pending["n"]) if pending else 0,
        webhook_oldest_pending_age=None if not pending or pending["oldest"] is None else now - int(pending["oldest"]),
        payouts_by_status={r["status"]: int(r["n"]) for r in by_status},
        payout_backlog_by_stage={r["stage"]: int(r["n"]) for r in backlog},
        payout_oldest_backlog_age=None if oldest_backlog is None else now - oldest_backlog,
        ledger_check_ok=None if check is None else bool(check["ok"]),
        ledger_check_problems=0 if check is None else int(check["problems"]),
        ledger_check_age=None if check is None else now - int(check["checked_at"]),
        custody_shortfall={c["coin"]: max(0, -c["difference"]) for c in checked},
        custody_paused={c["coin"]: c["coin"] in paused for c in custody},
        custody_last_check_at=await last_check_at(db),
        payouts_waiting_for_fees={r["coin"]: int(r["n"]) for r in waiting},
        hot_wallet_below_floor={coin: int(hot[coin] < floor) for coin, floor in floors.items() if coin in hot},
        operator_events={(r["event_type"], r["status"]): int(r["n"]) for r in operator},
        sweep_bookings={"due": int(bookings["due"]), "refused": int(bookings["refused"])} if bookings else {},
    )


class FactsCollector(Collector):
    def __init__(self, facts: DatabaseFacts) -> None:
        self.facts = facts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        f = self.facts
        yield GaugeMetricFamily("orbchain_webhook_queue_depth", "Webhook events waiting to be delivered",
                                value=f.webhook_pending)
        if f.webhook_oldest_pending_age is not None:
            yield GaugeMetricFamily("orbchain_webhook_oldest_pending_age_seconds",
                                    "Age of the oldest webhook event still waiting", value=f.webhook_oldest_pending_age)
        payouts = GaugeMetricFamily("orbchain_payouts", "Payouts by status", labels=("status",))
        for status, count in sorted(f.payouts_by_status.items()):
            payouts.add_metric((status,), count)
        yield payouts
        backlog = GaugeMetricFamily("orbchain_payout_backlog", "Payouts not yet final, by pipeline stage",
                                    labels=("stage",))
        for stage, count in sorted(f.payout_backlog_by_stage.items()):
            backlog.add_metric((stage,), count)
        yield backlog
        if f.payout_oldest_backlog_age is not None:
            yield GaugeMetricFamily("orbchain_payout_oldest_backlog_age_seconds",
                                    "Age of the oldest payout not yet final", value=f.payout_oldest_backlog_age)
        if f.ledger_check_ok is not None and f.ledger_check_age is not None:
            yield GaugeMetricFamily("orbchain_ledger_check_ok", "1 when the last ledger check found no problem",
                                    value=1 if f.ledger_check_ok else 0)
            yield GaugeMetricFamily("orbchain_ledger_check_problems", "Problems the last ledger check found",
                                    value=f.ledger_check_problems)
            yield GaugeMetricFamily("orbchain_ledger_check_age_seconds", "Seconds since the last ledger check",
                                    value=f.ledger_check_age)

        if f.custody_last_check_at is not None:
            yield GaugeMetricFamily("orbchain_custody_last_check_timestamp_seconds",
                                    "Unix time of the last custody check", value=f.custody_last_check_at)
        yield _by_label("orbchain_custody_shortfall",
                        "What the nodes hold below what the ledger owes, in the coin's base units"
                        " (0: covered), at the last custody check", ("coin",), f.custody_shortfall)
        yield _by_label("orbchain_custody_payouts_paused",
                        "1 while a custody shortfall makes the coin's payouts wait", ("coin",),
                        {coin: 1 if on else 0 for coin, on in f.custody_paused.items()})
        yield _by_label("orbchain_payouts_waiting_for_fees",
                        "Queued payouts waiting for the network fee to fall below the operator's ceiling",
                        ("coin",), f.payouts_waiting_for_fees)
        yield _by_label("orbchain_hot_wallet_below_floor",
                        "1 when the last custody check saw the coin's spendable hot wallet below the"
                        " operator's floor", ("coin",), f.hot_wallet_below_floor)
        yield _by_label("orbchain_operator_events",
                        "Operator webhook events (payout holds, sweeps to cold, custody shortfalls and"
                        " recoveries, nodes refused) by type and delivery status", ("type", "status"),
                        f.operator_events)
        yield _by_label("orbchain_sweep_bookings",
                        "Sweeps the signer recorded: due (serve books them) or refused (never booked:"
                        " postings outside the sweep chain's world accounts)", ("state",), f.sweep_bookings)


def _by_label(name: str, text: str, labels: tuple[str, ...], values: Mapping[Any, int]) -> GaugeMetricFamily:
    """A gauge with one sample per key of ``values`` (a label value, or a tuple of them), in key order."""
    family = GaugeMetricFamily(name, text, labels=labels)
    for key, value in sorted(values.items()):
        family.add_metric(key if isinstance(key, tuple) else (key,), value)
    return family


def facts_registry(facts: DatabaseFacts) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FactsCollector(facts))
    return registry


async def record_ledger_check(db: "Database", report: LedgerReport, source: str, now: int | None = None) -> None:
    """Store one check's result (``source``: "job" or "cli") and keep only the newest ``KEEP_CHECKS``."""
    at = int(time.time()) if now is None else now
    async with db.transaction():
        await db.execute(
            "INSERT INTO ledger_checks (checked_at, ok, problems, balances_checked, transactions_checked, source)"
            " VALUES (:at, :ok, :problems, :balances, :transactions, :source)",
            {"at": at, "ok": report.ok, "problems": len(report.problems), "balances": report.balances_checked,
             "transactions": report.transactions_checked, "source": source})
        await db.execute(
            "DELETE FROM ledger_checks WHERE id NOT IN"
            " (SELECT id FROM ledger_checks ORDER BY checked_at DESC, id DESC LIMIT :keep)", {"keep": KEEP_CHECKS})


async def ledger_check_job(gateway: "Gateway") -> None:
    """The periodic ``ledger.check`` job: check, log a mismatch loudly, store the result."""
    report = await check_ledger(gateway.db)
    if not report.ok:
        log.error("ledger check found %d problem(s): %s", len(report.problems),
                                          "; ".join(report.lines()[:5]))
    await record_ledger_check(gateway.db, report, "job", gateway.now())
