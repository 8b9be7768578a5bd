"""Readiness: can this process serve traffic right now? (``GET /ready``, ``orbchain doctor``)

Liveness (``/health``, SPEC 4.1) only says the process runs. Ready means the
database answers, no migration is pending, and every chain adapter that
watches deposits has a reachable node whose tip our scanner follows within
``readiness.max_lag_blocks``. Nodes are asked in parallel with a timeout, so
one hung node makes the answer "not ready", never a hung probe.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .chains import Capability, ChainAdapter

if TYPE_CHECKING:  # pragma: no cover
    from .gateway import Gateway


@dataclass(frozen=True)
class ChainReadiness:
    chain: str
    reachable: bool
    synced: bool
    node_height: int | None = None
    scanned_height: int | None = None
    lag: int | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"chain": self.chain, "reachable": self.reachable, "synced": self.synced,
                "node_height": self.node_height, "scanned_height": self.scanned_height, "lag": self.lag,
                "error": self.error}


@dataclass(frozen=True)
class Readiness:
    database: bool
    migrations_pending: int | None
    chains: tuple[ChainReadiness, ...] = field(default_factory=tuple)
    database_error: str | None = None

    @property
    def ready(self) -> bool:
        return self.database and self.migrations_pending == 0 and all(c.reachable and c.synced for c in self.chains)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "database": {"ok": self.database, "error": self.database_error},
            "migrations": {"ok": self.migrations_pending == 0, "pending": self.migrations_pending},
            "chains": [c.as_dict() for c in self.chains],
        }


def watched_chains(gateway: "Gateway") -> list[ChainAdapter]:
    return [a for a in gateway.chains if a.supports(Capability.DEPOSITS)]


async def _chain(gateway: "Gateway", adapter: ChainAdapter, scanned: int | None) -> ChainReadiness:
    timeout = gateway.config.readiness.node_timeout_seconds
    try:
        tip = await asyncio.wait_for(adapter.tip(), timeout)
    except TimeoutError:
        return ChainReadiness(adapter.name, False, False, scanned_height=scanned, error=f"no answer in {timeout} s")
    except Exception as exc:  # noqa: BLE001 - any failure to reach the node means "not ready", with its kind
        return ChainReadiness(adapter.name, False, False, scanned_height=scanned, error=type(exc).__name__)
    if scanned is None:
        return ChainReadiness(adapter.name, True, False, tip.height, None, None, "not scanned yet")
    lag = max(0, tip.height - scanned)
    return ChainReadiness(adapter.name, True, lag <= gateway.config.readiness.max_lag_blocks, tip.height, scanned, lag)


async def check_readiness(gateway: "Gateway") -> Readiness:
    """Database, migrations and every watched chain; never raises."""
    db = gateway.db
    try:
        await db.fetch_val("SELECT 1")
        # Read-only: ``migrate.pending`` would first create the bookkeeping table.
        done = {(r["namespace"], int(r["version"])) for r in
                await db.fetch_all("SELECT namespace, version FROM schema_migrations")}
        todo = sum(1 for m in gateway.migrations if (m.namespace, m.version) not in done)
        rows = await db.fetch_all("SELECT chain, MAX(height) AS height FROM chain_blocks GROUP BY chain")
    except Exception as exc:  # noqa: BLE001 - a database that cannot answer is exactly what this reports
        return Readiness(False, None, database_error=type(exc).__name__)
    scanned = {r["chain"]: int(r["height"]) for r in rows if r["height"] is not None}
    chains = await asyncio.gather(*(_chain(gateway, a, scanned.get(a.name)) for a in watched_chains(gateway)))
    return Readiness(True, todo, tuple(chains))
