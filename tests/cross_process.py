"""Two ``orbchain serve`` processes on one PostgreSQL database, for the cross-process tests.

Two full apps in one test stand for two processes: each has its own pool,
its own side connection (LISTEN, heartbeat, node row) and its own caches;
they share only the database, as two processes do. SQLite is one process
by design (nothing to share), so these tests carry ``CROSS_PROCESS`` and
run on PostgreSQL alone.

``Pair.barrier`` makes "B has heard everything committed so far" an event
rather than a sleep: A sends a probe on the auth channel, PostgreSQL
delivers notifications in commit order, and B's listener sets the event
when the probe arrives (the probe itself is kept from B's cache, so it
cannot be what empties it).
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from orbchain.core.accounts.auth_cache import CHANNEL
from orbchain.testing.api import bearer
from orbchain.web.keys import GATEWAY

CROSS_PROCESS = pytest.mark.postgresql_only("two processes on one database: SQLite is one process by design")
HANG_SECONDS = 30.0  # only catches a hang: a notification takes milliseconds
PROBE = "test-probe:"


@dataclass
class Pair:
    a: Any  # test client of process A
    b: Any  # test client of process B
    b_hears_late: float = 0.0
    probes: dict[str, asyncio.Event] = field(default_factory=dict)

    @property
    def gateways(self) -> tuple[Any, Any]:
        return self.a.app[GATEWAY], self.b.app[GATEWAY]

    async def barrier(self, write: Callable[[Any], Any] | None = None) -> None:
        """Run ``write(db)`` (if given) in one transaction on A with a probe after it; return once B heard the probe.

        Notifications of one transaction arrive in the order they were sent,
        and those of earlier commits before them, so B has acted on every one.
        """
        assert not self.b_hears_late, "a barrier needs B to hear in order (no artificial delay)"
        token = secrets.token_hex(8)
        heard = self.probes[token] = asyncio.Event()
        db = self.gateways[0].db
        async with db.transaction():
            if write is not None:
                await write(db)
            await db.execute("SELECT pg_notify(:c, :p)", {"c": CHANNEL, "p": PROBE + token})
        await asyncio.wait_for(heard.wait(), HANG_SECONDS)


async def two_processes(make_client: Callable, config: Any, *, b_hears_late: float = 0.0) -> Pair:
    """Processes A and B; ``b_hears_late`` delays B's notifications, as a busy process may hear them."""
    a, b = await make_client(config), await make_client(config)
    pair = Pair(a, b, b_hears_late)
    gw_a, gw_b = pair.gateways
    assert gw_a.db.is_postgres and gw_b.db.is_postgres, "cross-process tests run on PostgreSQL only"
    assert gw_a.db is not gw_b.db and gw_a.db._pool is not gw_b.db._pool  # no shared pool
    side_a, side_b = gw_a.services["auth_fanout"]._side, gw_b.services["auth_fanout"]._side
    assert side_a is not side_b and side_a.node != side_b.node  # two LISTENing sessions, two live nodes
    assert gw_a.services["auth_cache"] is not gw_b.services["auth_cache"]
    acted = side_b._on_notify

    def on_notify(payload: str) -> None:
        if payload.startswith(PROBE):
            event = pair.probes.get(payload[len(PROBE):])
            if event is not None:
                event.set()
            return
        acted(payload)

    if b_hears_late:
        side_b._on_notify = lambda payload: asyncio.get_running_loop().call_later(b_hears_late, on_notify, payload)
    else:
        side_b._on_notify = on_notify
    return pair


async def settings_change_reaches(a: Any, b: Any, owner: Any) -> None:
    """A coin setting changed in A is in force in B's next payment create (B had the merchant row cached)."""
    key = owner.keys["merchant_api_key"]
    body = {"currency": "BTC", "amount": "0.01"}
    assert (await b.post("/v1/payment/white-label", json=body, headers={"merchant_api_key": key})).status == 200
    response = await a.put("/dashboard/settings/coins", json={"accepted_coins": ["ETH"]}, headers=bearer(owner.token))
    assert response.status == 200
    refused = await b.post("/v1/payment/white-label", json=body, headers={"merchant_api_key": key})
    assert refused.status == 400 and (await refused.json())["error"]["code"] == "currency_not_accepted"
