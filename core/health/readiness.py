"""Readiness: can this process serve traffic right now? (``GET /ready``, ``orbchain doctor``)

Liveness (``/health``, SPEC 4.1) only says the process runs. Ready means the
database answers, no migration is pending, and every chain adapter that
watches deposits has a reachable node whose tip our scanner follows within
``readiness.max_lag_blocks``. Nodes are asked in parallel with a timeout, so
one hung node makes the answer "not ready", never a hung probe. With several
nodes per chain, "reachable" means a quorum of them agreed on the tip, and
``nodes`` lists each one's state (up, behind, set aside, refused, down). A
node on another network, in its initial sync or with a stale tip is refused
(core/types/node_identity.py): never asked, so never the reason a chain
looks ready, and ``error`` names it when the chain is not.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..types.chains import Capability, ChainAdapter, NodeState
from ..infra.db_faults import unavailable_cause
from ..contract.gateway import PluginGateway as Gateway
from ..types.services import ServiceKey


@dataclass(frozen=True)
class ChainReadiness:
    chain: str
    reachable: bool
    synced: bool
    node_height: int | None = None
    scanned_height: int | None = None
    lag: int | None = None
    error: str | None = None
    nodes: tuple[NodeState, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"chain": self.chain, "reachable": self.reachable, "synced": self.synced,
                "node_height": self.node_height, "scanned_height": self.scanned_height, "lag": self.lag,
                "error": self.error, "nodes": [n.as_dict() for n in self.nodes]}


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
    found = await _tip(gateway, adapter, scanned)
    nodes = tuple(adapter.node_states())
    refused = [f"node {n.name} refused ({n.refused})" for n in nodes if n.refused]
    if refused and not (found.reachable and found.synced):  # why no quorum: say which node was refused and why
        found = replace(found, error="; ".join([*refused, *([found.error] if found.error else [])]))
    return replace(found, nodes=nodes)


async def _tip(gateway: "Gateway", adapter: ChainAdapter, scanned: int | None) -> ChainReadiness:
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


async def _migrated_at_all(db: Any) -> bool:
    """Whether the migrations' bookkeeping table exists (read-only on both databases)."""
    if db.is_postgres:
        return await db.fetch_val("SELECT to_regclass('schema_migrations') IS NOT NULL") is True
    return await db.fetch_val("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'"
                              " AND name = 'schema_migrations'") == 1


async def check_readiness(gateway: "Gateway") -> Readiness:
    """Database, migrations and every watched chain; never raises."""
    db = gateway.db
    try:
        await db.fetch_val("SELECT 1")
        if not await _migrated_at_all(db):
            # A database never migrated: every migration is pending, which is what the operator must read
            # (not "cannot query" about a table that does not exist yet).
            return Readiness(True, sum(1 for _ in gateway.migrations), ())
        # Read-only: ``migrate.pending`` would first create the bookkeeping table.
        done = {(r["namespace"], int(r["version"])) for r in
                await db.fetch_all("SELECT namespace, version FROM schema_migrations")}
        todo = sum(1 for m in gateway.migrations if (m.namespace, m.version) not in done)
        rows = await db.fetch_all("SELECT chain, MAX(height) AS height FROM chain_blocks GROUP BY chain")
    except Exception as exc:  # noqa: BLE001 - a database that cannot answer is exactly what this reports
        cause = unavailable_cause(exc)
        if cause is not None:
            gateway.db_outage.failed(cause, "the readiness probe")
        return Readiness(False, None, database_error=cause or type(exc).__name__)
    gateway.db_outage.answered()
    scanned = {r["chain"]: int(r["height"]) for r in rows if r["height"] is not None}
    chains = await asyncio.gather(*(_chain(gateway, a, scanned.get(a.name)) for a in watched_chains(gateway)))
    return Readiness(True, todo, tuple(chains) + _refused_elsewhere(gateway))


def _refused_elsewhere(gateway: "Gateway") -> tuple[ChainReadiness, ...]:
    """Adapters without blocks to scan (Lightning) count only when their node was refused: then nothing of
    theirs may be trusted, and the operator must hear it here too."""
    found = []
    for adapter in gateway.chains:
        nodes = tuple(adapter.node_states())
        refused = [f"node {n.name} refused ({n.refused})" for n in nodes if n.refused]
        if refused and not adapter.supports(Capability.DEPOSITS):
            found.append(ChainReadiness(adapter.name, False, False, error="; ".join(refused), nodes=nodes))
    return tuple(found)


# One answer serves every /ready request of this second: the probe asks the database and every node, so
# without this an anonymous client could make each request cost one RPC per chain (an amplifier).
SHARED_FOR_SECONDS = 1


class SharedReadiness:
    """The last check, shared by concurrent and closely following callers (one check in flight at a time).

    The first caller runs the check itself, on its own database connection; the others wait for its answer.
    A check in a task of its own would need one more connection while every waiting request holds one: on a
    full PostgreSQL pool that deadlocks. A leader that is cancelled hands over to the next caller.
    """

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self._last: tuple[int, Readiness] | None = None
        self._running: asyncio.Future[Readiness] | None = None

    async def check(self, gateway: "Gateway") -> Readiness:
        while True:
            if self._last is not None and self._clock() - self._last[0] < SHARED_FOR_SECONDS:
                return self._last[1]
            running = self._running
            if running is None:
                return await self._lead(gateway)
            try:
                return await asyncio.shield(running)
            except asyncio.CancelledError:
                if not running.cancelled():
                    raise  # this caller was cancelled, not the leader
                # the leader went away before answering: the next one of us leads

    async def _lead(self, gateway: "Gateway") -> Readiness:
        answer: asyncio.Future[Readiness] = asyncio.get_running_loop().create_future()
        self._running = answer
        try:
            readiness = await check_readiness(gateway)
        except BaseException:
            answer.cancel()
            raise
        finally:
            self._running = None
        self._last = (self._clock(), readiness)
        answer.set_result(readiness)
        return readiness


SERVICE_NAME = ServiceKey("readiness", SharedReadiness)


async def shared_readiness(gateway: "Gateway") -> Readiness:
    """``check_readiness``, at most once a second per process, for anonymous ``GET /ready`` callers.

    The operator's detailed answer (the metrics token) is always fresh; it is not the amplifier.
    """
    shared = gateway.services.get(SERVICE_NAME)
    if shared is None:
        shared = gateway.services[SERVICE_NAME] = SharedReadiness(gateway.now)
    return await shared.check(gateway)
