"""Event hooks that met the database away are called again once it is back (issue 33's gap), on both databases.

A plugin's ``ledger_posted`` implementation that enqueues a webhook of its
own (``enqueue_event``) runs while the database is away: PostgreSQL stopped
(the private cluster, tests/pg_cluster.py), or SQLite's file made immutable
(``chattr +i``, as tests/test_db_faults_sqlite.py does). Before, the failure
was counted as an outage and the event was gone. Now the call is held; once
the database answers again (here: ``/ready``) that implementation alone is
called again and its webhook is in the outbox once. A second plugin that did
not touch the database ran once and is not called again.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from orbchain.api import enqueue_event, hookimpl
from orbchain.core.contract.held import HeldCall, HeldEvents
from orbchain.web.app import create_app
from orbchain.web.keys import GATEWAY

from .push_support import until
from .support import signup
from .test_db_faults_sqlite import TOKEN, _shop, outage_ends_at_once  # noqa: F401 - autouse

OPERATOR = {"Authorization": f"Bearer {TOKEN}"}


class Enqueuing:
    """A plugin announcing each ledger posting to the merchant with a webhook of its own."""

    def __init__(self, merchant_id: str) -> None:
        self.merchant_id, self.tries = merchant_id, 0

    @hookimpl
    async def ledger_posted(self, gateway: Any, transaction: dict) -> None:
        self.tries += 1
        await enqueue_event(gateway, merchant_id=self.merchant_id, event_type="payment.paid",
                            body={"reference": transaction["reference"]}, logical_key=transaction["reference"])


class Quiet:
    """A plugin that only counts: it never meets the database."""

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def ledger_posted(self, transaction: dict) -> None:
        self.calls += 1


async def held_then_delivered(client: Any, gateway: Any, merchant_id: str, take_away, bring_back) -> None:
    enqueuing, quiet = Enqueuing(merchant_id), Quiet()
    gateway.pm.register(enqueuing, name="held-enqueuing")
    gateway.pm.register(quiet, name="held-quiet")
    await take_away()
    try:
        await gateway.hooks.ledger_posted(transaction={"reference": "held-posting-1"})
        assert (enqueuing.tries, quiet.calls, len(gateway.held_events)) == (1, 1, 1)
        assert gateway.db_outage.down
        assert "orbchain_event_hooks_held 1.0" in gateway.metrics.exposition().decode()
    finally:
        await bring_back()

    async def in_the_outbox() -> bool:
        await client.get("/ready", headers=OPERATOR)  # an answer from the database ends the outage
        if gateway.held_events:
            return False
        return await gateway.db.fetch_val(
            "SELECT COUNT(*) FROM webhook_events WHERE logical_key = 'held-posting-1'") == 1

    await until(in_the_outbox, "the held hook call went through")
    assert enqueuing.tries >= 2 and quiet.calls == 1  # called again, only the one that met the outage
    assert "orbchain_event_hooks_held 0.0" in gateway.metrics.exposition().decode()
    row = await gateway.db.fetch_one("SELECT merchant_id, event_type FROM webhook_events WHERE logical_key"
                                     " = 'held-posting-1'")
    assert (row["merchant_id"], row["event_type"]) == (merchant_id, "payment.paid")


def _chattr(flag: str, files: list[str]) -> None:
    done = subprocess.run(["chattr", flag, *files], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"chattr {flag} failed ({done.stderr.strip()}): this test needs root, as make test has")


async def test_sqlite_read_only_file_holds_the_hook_call_until_it_is_writable(aiohttp_client, tmp_path):
    db_file = tmp_path / "orbchain.db"
    client, merchant, gateway = await _shop(aiohttp_client, tmp_path, db_file)
    await gateway.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    files = [str(p) for p in (db_file, Path(f"{db_file}-wal"), Path(f"{db_file}-shm")) if p.exists()]

    async def take_away() -> None:
        _chattr("+i", files)

    async def bring_back() -> None:
        _chattr("-i", files)

    await held_then_delivered(client, gateway, merchant.merchant_id, take_away, bring_back)


async def test_postgresql_stopped_holds_the_hook_call_until_it_is_back(private_pg, aiohttp_client, tmp_path):
    config = await private_pg.gateway_config("held", tmp_path, metrics={"token": TOKEN})
    client = await aiohttp_client(create_app(config))
    merchant = await signup(client, "held@example.com")
    await held_then_delivered(client, client.app[GATEWAY], merchant.merchant_id, private_pg.async_stop,
                              private_pg.async_start)


async def test_held_calls_go_again_in_order_stop_at_the_next_outage_and_are_named_when_lost(caplog):
    """``HeldEvents`` alone: the database away again keeps the rest held; another error is logged and dropped;
    over the limit the oldest is dropped; the stop names what it loses."""
    away = [True]
    ran: list[str] = []

    def call(name: str, fails: BaseException | None = None) -> HeldCall:
        def function(what: str) -> None:
            if fails is not None and not (isinstance(fails, ConnectionError) and not away[0]):
                raise fails
            ran.append(what)
        return HeldCall(f"plugin-{name}", "ledger_posted", function, {"what": name})

    shown: list[int] = []
    held = HeldEvents(lambda exc, where: isinstance(exc, ConnectionError) and away[0], shown.append, limit=3)
    for held_call in (call("a"), call("b", ConnectionError("away")), call("c")):
        held.hold(held_call)
    assert await held.replay() == 1 and ran == ["a"] and len(held) == 2  # b met the outage again: b, c stay
    assert shown == [1, 2, 3, 2]  # the gauge orbchain_event_hooks_held
    away[0] = False
    held.hold(call("d", ValueError("the plugin's own bug")))
    held.hold(call("e"))  # a fourth: over the limit, the oldest (b) is dropped
    assert "plugin plugin-b's ledger_posted dropped" in caplog.text
    assert await held.replay() == 2 and ran == ["a", "c", "e"] and not held
    assert "plugin plugin-d failed in hook ledger_posted, called again" in caplog.text
    held.hold(call("f"))
    await held.close()
    assert "plugin plugin-f in hook ledger_posted was held while the database was away and is lost" in caplog.text
    assert not held
