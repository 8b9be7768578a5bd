"""What a room of the core (and, later, a plugin) uses of the gateway: a ``Protocol``, not the dataclass.

Why: ``core/gateway.py`` builds the gateway from every room, so a room that imported it for a type ran an
import back up the floors (and 50 ``if TYPE_CHECKING`` imports existed only to dodge that cycle). Rooms
type against this protocol instead; it names nothing above the contract's floor, and the composition
root's ``Gateway`` dataclass satisfies it (mypy checks that wherever a ``Gateway`` is passed to a room).
Issue 44 step 7 narrows it to what a plugin may reach; today it is every field the rooms use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:  # pragma: no cover - typing only: the protocol's members name these types
    import pluggy

    from ..infra.config import Config
    from ..infra.cpu_pool import CpuPool
    from ..infra.db import Database
    from ..infra.db_faults import DatabaseOutage
    from ..infra.metrics import Metrics
    from ..infra.migrate import MigrationRegistry
    from ..infra.signals import Signals
    from ..infra.stopping import Stop
    from ..keys import AddressFamilyRegistry
    from ..keys.secrets import Secrets
    from ..money.coins import CoinRegistry
    from ..types.services import Services
    from .held import HeldEvents
    from .hooks import Hooks
    from .registries import (
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


class PluginGateway(Protocol):
    """The gateway as the rooms see it (the fields and methods of ``core/gateway.py``'s ``Gateway``)."""

    config: Config
    pm: pluggy.PluginManager
    db: Database
    reports_db: Database  # a standby for reports when ``[database] read_url`` is set, else ``db``
    coins: CoinRegistry
    address_families: AddressFamilyRegistry
    chains: ChainRegistry
    price_sources: PriceSourceRegistry
    jobs: JobRegistry
    migrations: MigrationRegistry
    scopes: ScopeRegistry
    event_kinds: EventKindRegistry
    dashboard: DashboardRegistry
    api_operations: OperationRegistry
    assets: AssetRegistry
    payment_fields: PaymentFieldRegistry
    secrets: Secrets | None
    maintenance: bool
    metrics: Metrics
    cpu: CpuPool
    services: Services
    signals: Signals
    stop: Stop
    db_outage: DatabaseOutage
    held_events: HeldEvents
    hooks: Hooks

    # Read-only here: mypy reads the dataclass's ``clock = time.time`` default as a method, not a variable.
    @property
    def clock(self) -> Callable[[], float]: ...

    def now(self) -> int: ...

    def require_secrets(self) -> Secrets: ...

    async def close_chains(self) -> None: ...
