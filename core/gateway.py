"""The gateway context object passed to every hook (like datasette's ``datasette``).

Built once per process by :func:`assemble_gateway`, which the composition
root (``core/startup.py``, ``build_gateway``) calls with the core's own jobs:
it validates plugin config and collects coins, address families, chains,
price sources, jobs and migrations from the plugins; a coin whose address
family no plugin registered stops it here. This module imports no job. Runtime resources (database connection, HTTP
session, scheduler) are opened by the web app's cleanup contexts, not here.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable

import pluggy

from .types.chains import check_capabilities
from .contract.nodes import warn_unchecked
from .money.coins import CoinRegistry
from .infra.config import Config, ConfigError, naming_variable
from .infra.cpu_pool import CpuPool
from .accounts.auth import CORE_SCOPE_DESCRIPTIONS, MEMBER_SCOPE_DESCRIPTIONS
from .infra.db import Database
from .events.outbox import CORE_EVENT_KINDS
from .keys import AddressFamilyRegistry
from .infra.db_faults import DatabaseOutage
from .contract.held import HeldEvents
from .infra.metrics import Metrics
from .infra.migrate import MigrationRegistry
from .contract.hooks import Hooks
from .contract.plugin_identity import check_declarations, hold_unconfigured
from .contract.plugins import check_plugin_blocks, get_plugin_manager
from .contract.registries import (
    AssetRegistry,
    ChainRegistry,
    DashboardRegistry,
    EventKindRegistry,
    JobRegistry,
    OperationRegistry,
    PaymentFieldRegistry,
    PriceSourceRegistry,
    ScopeRegistry,
    )
from .types.registry import StartupError
from .types.services import Services
from .keys.secrets import Secrets
from .infra.signals import Signals
from .infra.stopping import Stop

log = logging.getLogger(__name__)

CORE_MIGRATIONS_PACKAGE = "orbchain.migrations"


@dataclass
class Gateway:
    config: Config
    pm: pluggy.PluginManager
    db: Database
    coins: CoinRegistry = field(default_factory=CoinRegistry)
    address_families: AddressFamilyRegistry = field(default_factory=AddressFamilyRegistry)
    chains: ChainRegistry = field(default_factory=ChainRegistry)
    price_sources: PriceSourceRegistry = field(default_factory=PriceSourceRegistry)
    jobs: JobRegistry = field(default_factory=JobRegistry)
    migrations: MigrationRegistry = field(default_factory=MigrationRegistry)
    # What feature plugins contribute (see ``collect_features``).
    scopes: ScopeRegistry = field(default_factory=ScopeRegistry)
    event_kinds: EventKindRegistry = field(default_factory=EventKindRegistry)
    dashboard: DashboardRegistry = field(default_factory=DashboardRegistry)
    api_operations: OperationRegistry = field(default_factory=OperationRegistry)
    assets: AssetRegistry = field(default_factory=AssetRegistry)
    payment_fields: PaymentFieldRegistry = field(default_factory=PaymentFieldRegistry)
    secrets: Secrets | None = None
    clock: Callable[[], float] = time.time
    maintenance: bool = False
    # Where reports and analytics read: a standby when ``[database] read_url`` is set, else ``db`` itself.
    # Never for a money decision (a standby lags); see ``reports_as_of``.
    reports_db: Database = field(init=False)
    # This process's Prometheus metrics (core/infra/metrics.py); built with the gateway, after any fork.
    metrics: Metrics = field(default_factory=Metrics)
    # The bounded pool CPU-heavy work runs in, off the event loop (core/infra/cpu_pool.py).
    cpu: CpuPool = field(default_factory=CpuPool)
    # Services attached by the web app or the CLI at start (prices, outbox ...), each under its ServiceKey.
    services: Services = field(default_factory=Services)
    # Messages every process of this gateway hears (core/infra/signals.py): wake a scan, a payment changed.
    signals: Signals = field(default_factory=Signals)
    # This process's stop (core/infra/stopping.py): set on SIGTERM/SIGINT; long loops may end early on it.
    stop: Stop = field(init=False)
    # The database being away, as this process met it (core/infra/db_faults.py): 503s, one log line, counters.
    db_outage: DatabaseOutage = field(init=False)
    # Event hook calls that met the database away, called again once it is back (core/contract/held.py).
    held_events: HeldEvents = field(init=False)
    # Every core hook as a typed method through pluggy: ``await gateway.hooks.payment_paid(payment=...)``
    # (core/contract/hooks.py, generated from the specs; core/contract/hook_caller.py calls them).
    hooks: Hooks = field(init=False)

    def __post_init__(self) -> None:
        self.reports_db = self.db
        self.stop = Stop(self.config.server.drain_seconds)
        self.db_outage = DatabaseOutage(self.metrics.database_error, self.metrics.database_up.set)
        self.held_events = HeldEvents(self.db_outage.absorb, self.metrics.event_hooks_held.set)
        self.db_outage.when_back(self.held_events.database_back)
        self.hooks = Hooks(self.pm, self)

    def now(self) -> int:
        """Unix seconds; tests replace ``clock`` to move time."""
        return int(self.clock())

    def require_secrets(self) -> Secrets:
        """The loaded secrets, for code that signs tokens, receipts or derives keys.

        ``secrets`` stays None until the web app's start (or a CLI command)
        loads them; a use before that is a programming error, reported as one
        instead of an ``AttributeError`` on None.
        """
        if self.secrets is None:
            raise RuntimeError("secrets are not loaded yet (the web app loads them at start)")
        return self.secrets

    async def close_chains(self) -> None:
        """Call every chain adapter's ``close`` once, at shutdown.

        The web app calls it after the scheduler stopped and the plugins'
        ``gateway_stopping`` ran; CLI commands call it when they finish. A
        failing close is logged and the others still run: shutdown never
        stops half way.
        """
        for adapter in self.chains:
            try:
                await adapter.close()
            except Exception:  # one adapter must not keep the others open
                log.exception("closing chain adapter %s failed", adapter.name)


def collect_migrations(pm: pluggy.PluginManager) -> MigrationRegistry:
    registry = MigrationRegistry()
    registry.add_package("core", CORE_MIGRATIONS_PACKAGE)
    Hooks(pm).register_migrations(registry=registry)
    return registry


def collect_features(gateway: Gateway) -> None:
    """Scopes, event kinds, dashboard pages, API documentation, template folders and
    payment fields: the core's own first, then every plugin's."""
    hooks = gateway.hooks
    for name, description in CORE_SCOPE_DESCRIPTIONS.items():
        gateway.scopes.add(name, description)
    for name, description in MEMBER_SCOPE_DESCRIPTIONS.items():
        gateway.scopes.add(name, description, members_only=True)
    for name, description in CORE_EVENT_KINDS.items():
        gateway.event_kinds.add(name, description)
    hooks.register_scopes(registry=gateway.scopes)
    hooks.register_event_kinds(registry=gateway.event_kinds)
    hooks.register_dashboard_pages(registry=gateway.dashboard)
    hooks.register_openapi(registry=gateway.api_operations)
    hooks.register_templates(registry=gateway.assets)
    hooks.register_payment_fields(registry=gateway.payment_fields)


def assemble_gateway(config: Config, pm: pluggy.PluginManager | None,
                     core_jobs: Callable[[Gateway], None]) -> Gateway:
    """Collect everything plugins contribute and validate their config.

    ``core_jobs(gateway)`` adds the core's own jobs, after the chains (a scan
    per adapter) and before the plugins' jobs; the composition root passes
    them, so this module needs none of the modules they run. A
    ``ConfigError`` about a key set in the environment names the variable too.
    """
    try:
        return _assemble(config, pm, core_jobs)
    except ConfigError as exc:
        raise naming_variable(exc, config.env_sources) from None


def _assemble(config: Config, pm: pluggy.PluginManager | None, core_jobs: Callable[[Gateway], None]) -> Gateway:
    if pm is None:
        pm = get_plugin_manager(blocked=config.plugins.blocked)
    check_declarations(pm)
    db = Database(config.database_url, config.database.direct_url or None)
    gateway = Gateway(config=config, pm=pm, db=db, maintenance=config.server.maintenance,
                      cpu=CpuPool(config.server.cpu_workers, config.server.cpu_queue))
    if config.database.read_url:
        gateway.reports_db = Database(config.database.read_url)
    hooks = gateway.hooks
    hooks.check_config(config=config.plugin)
    check_plugin_blocks(pm, config.plugin)
    gateway.migrations = collect_migrations(pm)
    hooks.register_coins(registry=gateway.coins)
    hooks.register_address_families(registry=gateway.address_families)
    gateway.address_families.check_complete()
    gateway.coins.check_families(gateway.address_families.family_names())
    hooks.register_chains(registry=gateway.chains, skip=hold_unconfigured(pm, config))
    for adapter in gateway.chains:
        try:
            check_capabilities(adapter)
        except ValueError as exc:
            raise StartupError(str(exc)) from None
        warn_unchecked(adapter)
    hooks.register_price_sources(registry=gateway.price_sources)
    core_jobs(gateway)
    hooks.register_jobs(registry=gateway.jobs)
    collect_features(gateway)
    return gateway
