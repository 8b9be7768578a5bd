"""Prometheus metrics of one gateway process, and of all ``serve --workers N`` processes together.

Counters, histograms and gauges that the process itself moves (HTTP
requests, webhook delivery outcomes, job runs, what each chain's scan saw)
live on :class:`Metrics`, one instance per gateway (``gateway.metrics``), in
a registry of its own: tests build many gateways in one process and a
global registry would refuse the second. Numbers that are facts of the
database (webhook queue depth, payouts by state, the last ledger check) are
read at scrape time (``core/health/metrics_db.py``), so every process reports the
same truth however many there are.

With several worker processes a scrape reaches one of them, so each
process's own counters would be a random fraction of the whole. prometheus-
client's multiprocess mode is used then: every process writes its values to
memory-mapped files in one directory and any process sums them at scrape
time (:func:`enable_multiprocess`, called by ``serve --workers`` before it
forks). Gauges that one process sets for everyone (a chain's height, set by
whichever process led the scan job) use the "most recent" mode.

Labels never carry merchant data: routes are templates
(``/v1/payment/{track_id}``), jobs and chains are names the operator
configured, outcomes are fixed words.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, values
from prometheus_client.multiprocess import MultiProcessCollector

from ..types.chains import NodeState
from ..types.node_identity import REASONS as REFUSAL_REASONS

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Request latency buckets (seconds): the hot path answers in about a millisecond.
HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
JOB_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0)
# Anything else a client sends as a method is one label value: no unbounded label set.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_ROUTE = "<unmatched>"
# prometheus-client names its files <kind>_<pid>.db (gauges <kind>_<mode>_<pid>.db).
NODE_STATES = ("up", "behind", "set aside", "refused", "down", "unknown")  # core/contract/nodes.py Health
METRIC_FILE_KINDS = frozenset({"counter", "gauge", "histogram", "summary"})


def multiprocess_enabled() -> bool:
    return bool(os.environ.get(MULTIPROC_ENV))


def enable_multiprocess(directory: Path) -> None:
    """Switch this process (and every process forked from it) to multiprocess metrics in ``directory``.

    Must run before any :class:`Metrics` is built. prometheus-client picks its
    value store when it is first imported, from the environment; the CLI
    imports it long before it knows ``--workers``, so the store is switched
    here as well (``values.ValueClass`` is what every metric reads when it is
    constructed). Files of an earlier run are removed: their counters belong
    to processes that no longer exist.
    """
    clear_metric_files(directory)
    os.environ[MULTIPROC_ENV] = str(directory)
    values.ValueClass = values.get_value_class()


def clear_metric_files(directory: Path) -> None:
    """Create ``directory`` or remove the metric files of earlier processes from it.

    Only prometheus-client's own files go: a directory pointed at by mistake keeps everything else.
    """
    directory.mkdir(parents=True, mode=0o700, exist_ok=True)
    for stale in directory.glob("*.db"):
        if stale.name.split("_", 1)[0] in METRIC_FILE_KINDS:
            stale.unlink()


class HttpMetrics:
    """Requests by method, route template and status; latency by method and route.

    ``observe`` is on every request's path: it looks the pre-bound label
    children up in a dict and moves them, nothing else (see docs/decisions.md,
    Operations, for the measured cost).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter("orbchain_http_requests", "HTTP requests answered, by route template and status",
                                ("method", "route", "status"), registry=registry)
        self.latency = Histogram("orbchain_http_request_duration_seconds",
                                 "Time from the request reaching the gateway to its answer",
                                 ("method", "route"), buckets=HTTP_BUCKETS, registry=registry)
        self._children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:  # float ok: a duration
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            children = self._bind(*key)
        counter, histogram = children
        counter.inc()
        histogram.observe(seconds)

    def _bind(self, method: str, route: str, status: int) -> tuple[Counter, Histogram]:
        label = method if method in KNOWN_METHODS else "OTHER"
        children = (self.requests.labels(label, route, str(status)), self.latency.labels(label, route))
        self._children[(method, route, status)] = children
        return children


class Metrics:
    """Every metric this process moves; one per gateway (``gateway.metrics``)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.http = HttpMetrics(registry)
        self.webhook_deliveries = Counter(
            "orbchain_webhook_deliveries", "Webhook delivery attempts by outcome (delivered, retrying, failed, ...)",
            ("outcome",), registry=registry)
        self.job_runs = Counter("orbchain_job_runs", "Periodic job runs by job name", ("job",), registry=registry)
        self.job_failures = Counter("orbchain_job_failures", "Periodic job runs that raised", ("job",),
                                    registry=registry)
        self.job_duration = Histogram("orbchain_job_duration_seconds", "How long one run of a job took", ("job",),
                                      buckets=JOB_BUCKETS, registry=registry)
        self.chain_node_height = Gauge("orbchain_chain_node_height", "Best block height the chain node reported",
                                       ("chain",), multiprocess_mode="mostrecent", registry=registry)
        self.chain_scanned_height = Gauge("orbchain_chain_scanned_height", "Last block height the scanner processed",
                                          ("chain",), multiprocess_mode="mostrecent", registry=registry)
        self.chain_lag = Gauge("orbchain_chain_lag_blocks", "Blocks the scanner is behind the node",
                               ("chain",), multiprocess_mode="mostrecent", registry=registry)
        self.chain_last_scan = Gauge("orbchain_chain_last_scan_timestamp_seconds", "When the last scan pass ended",
                                     ("chain",), multiprocess_mode="mostrecent", registry=registry)
        # Each configured node of a chain (core/contract/nodes.py), named without credentials.
        self.chain_node_state = Gauge("orbchain_chain_node_state", "1 for the node's current state (up, behind,"
                                      " set aside, down, unknown), 0 for the others", ("chain", "node", "state"),
                                      multiprocess_mode="mostrecent", registry=registry)
        self.node_refused = Gauge("orbchain_node_refused", "1 while the node is refused for this reason"
                                  " (wrong_network, initial_sync, behind_peers, stale_tip), 0 once accepted",
                                  ("chain", "node", "reason"), multiprocess_mode="mostrecent", registry=registry)
        self.chain_node_peer_height = Gauge("orbchain_chain_node_reported_height", "Tip height this node last"
                                            " reported", ("chain", "node"), multiprocess_mode="mostrecent",
                                            registry=registry)
        # Outputs a UTXO chain leaves because spending them costs more than they hold (set by the custody check).
        self.wallet_dust_units = Gauge("orbchain_wallet_dust_units", "Base units held in outputs worth less than"
                                       " the fee to spend them at the last custody check (left, not swept)",
                                       ("coin",), multiprocess_mode="mostrecent", registry=registry)
        self.wallet_dust_outputs = Gauge("orbchain_wallet_dust_outputs", "Outputs worth less than the fee to spend"
                                         " them at the last custody check", ("coin",),
                                         multiprocess_mode="mostrecent", registry=registry)
        # Push streams (core/watching/push.py): every serving process follows them, so "any process connected".
        self.push_connected = Gauge("orbchain_chain_push_connected", "1 while the chain node's notification"
                                    " stream is up", ("chain",), multiprocess_mode="livemax", registry=registry)
        self.push_notifications = Counter("orbchain_chain_push_notifications", "Notifications the chain node"
                                          " pushed, by kind (tx, block)", ("chain", "kind"), registry=registry)
        self.push_reconnects = Counter("orbchain_chain_push_reconnects", "Times the notification stream was"
                                       " opened again after it ended", ("chain",), registry=registry)

        # The database being away (core/infra/db_faults.py): every error met, by cause, and whether it answers.
        self.database_errors = Counter("orbchain_database_errors", "Errors because the database was away"
                                       " (restart, lost connection, full disk, read-only file), by cause",
                                       ("cause",), registry=registry)
        self.database_up = Gauge("orbchain_database_up", "0 from the first database error of an outage until"
                                 " the database answers again", multiprocess_mode="livemin", registry=registry)
        self.database_up.set(1)
        self.event_hooks_held = Gauge("orbchain_event_hooks_held", "Plugins' event hook calls that met the"
                                      " database away, waiting to be called again", multiprocess_mode="livesum",
                                      registry=registry)

        # Connections and live streams (web/connection_guard.py, web/live.py): what was refused or closed, and why.
        self.connections_closed = Counter("orbchain_connections_closed", "Connections closed or refused by the"
                                          " gateway: header_timeout, body_timeout, pending_per_address",
                                          ("reason",), registry=registry)
        self.live_streams_refused = Counter("orbchain_live_streams_refused", "Event streams refused, by the bound"
                                            " that refused them: total, address, merchant, page",
                                            ("bound",), registry=registry)
        self.live_streams_open = Gauge("orbchain_live_streams_open", "Event streams open", multiprocess_mode="livesum",
                                       registry=registry)
        # The signer's policy (core/payouts/signing_policy.py): payouts it refused to sign, by coin and reason.
        self.payouts_held_by_policy = Counter("orbchain_payouts_held_by_policy", "Payouts the signer's policy held"
                                              " instead of signing, by coin and reason (no_reservation,"
                                              " over_hourly_cap ...)", ("coin", "reason"), registry=registry)
        # ... and the hot wallet's other spends it refused (gas top-ups, signing_gate.authorize_hot_wallet_spend).
        self.hot_wallet_spends_held_by_policy = Counter(
            "orbchain_hot_wallet_spends_held_by_policy", "Spends of a hot wallet that are not payouts (gas top-ups"
            " and their re-signings) the signer's policy refused, by coin, kind and reason; tried again at each"
            " sweep run", ("coin", "kind", "reason"), registry=registry)
        # Failed payouts whose give-back the ledger's reserve did not back as the row says
        # (core/payouts/reserve_release.py), by coin and reason.
        self.payout_release_anomalies = Counter(
            "orbchain_payout_release_anomalies", "Failed payouts whose reserve did not back the row: nothing given"
            " back (no_reservation, reservation_released) or the reserve's own figures given back instead of the"
            " row's (reservation_mismatch), by coin and reason", ("coin", "reason"), registry=registry)
        # Payments refused because no deposit address could be given (a seedless serve's pre-derived pool empty).
        self.deposit_addresses_unavailable = Counter(
            "orbchain_deposit_addresses_unavailable", "Payments refused (503) because no deposit address could be"
            " given, by chain and reason (pool_empty: the signer's pre-derived addresses ran out)",
            ("chain", "reason"), registry=registry)

    def deposit_address_unavailable(self, chain: str, reason: str) -> None:
        self.deposit_addresses_unavailable.labels(chain, reason).inc()

    def connection_closed(self, reason: str) -> None:
        self.connections_closed.labels(reason).inc()

    def database_error(self, cause: str) -> None:
        self.database_errors.labels(cause).inc()

    def job_finished(self, job: str, seconds: float, failed: bool) -> None:  # float ok: a duration
        self.job_runs.labels(job).inc()
        self.job_duration.labels(job).observe(seconds)
        if failed:
            self.job_failures.labels(job).inc()

    def chain_scanned(self, chain: str, node_height: int, scanned_height: int | None, at: float) -> None:
        self.chain_node_height.labels(chain).set(node_height)
        if scanned_height is not None:
            self.chain_scanned_height.labels(chain).set(scanned_height)
            self.chain_lag.labels(chain).set(max(0, node_height - scanned_height))
        self.chain_last_scan.labels(chain).set(at)

    def wallet_dust(self, coin: str, outputs: int, units: int) -> None:
        """What a chain adapter's custody check found too small to spend at the current fee (its dust)."""
        self.wallet_dust_outputs.labels(coin).set(outputs)
        self.wallet_dust_units.labels(coin).set(units)

    def chain_nodes(self, chain: str, nodes: Iterable[NodeState]) -> None:
        for node in nodes:
            for state in NODE_STATES:
                self.chain_node_state.labels(chain, node.name, state).set(1 if node.state == state else 0)
            for reason in REFUSAL_REASONS:
                self.node_refused.labels(chain, node.name, reason).set(1 if node.refused == reason else 0)
            if node.height is not None:
                self.chain_node_peer_height.labels(chain, node.name).set(node.height)

    def exposition(self, extra: Iterable[CollectorRegistry] = ()) -> bytes:
        """The text format of this process's metrics (or every worker's) followed by ``extra``."""
        if multiprocess_enabled():
            combined = CollectorRegistry()
            MultiProcessCollector(combined)
            text = generate_latest(combined)
        else:
            text = generate_latest(self.registry)
        return text + b"".join(generate_latest(registry) for registry in extra)
