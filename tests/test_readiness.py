"""``GET /ready`` (issue 22): database, migrations and every watched chain's node; 503 while not ready.

``/health`` stays the SPEC 4.1 liveness answer whatever ``/ready`` says. The
detail is the operator's (the metrics token, or the metrics.listen address);
anyone else gets the bare status (issue 29).
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from orbchain.chains.devnet.adapter import devnet_chain
from orbchain.core.health.readiness import watched_chains
from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY

from .support import advance_clock, free_port


TOKEN = "readiness-metrics-token-42"
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}


async def ready(client, headers: dict[str, str] = OPERATOR) -> tuple[int, dict]:
    """``/ready`` as the operator reads it (the metrics token), or with ``headers``."""
    response = await client.get("/ready", headers=headers)
    return response.status, await response.json()


async def scan_all(gateway) -> None:
    for adapter in watched_chains(gateway):
        await scan_chain(gateway, adapter)


@pytest.fixture
async def app(make_client, make_config):
    # Only devnet watches deposits without a node of its own to start.
    client = await make_client(make_config(scheduler={"enabled": False}, readiness={"node_timeout_seconds": 1},
                                           metrics={"token": TOKEN}))
    return client, client.app[GATEWAY]


async def test_not_ready_until_the_chain_is_scanned_then_ready(app):
    client, gateway = app
    status, body = await ready(client)
    assert status == 503 and body["ready"] is False
    assert body["database"] == {"ok": True, "error": None}
    assert body["migrations"] == {"ok": True, "pending": 0}
    devnet = next(c for c in body["chains"] if c["chain"] == "devnet")
    assert devnet["reachable"] is True and devnet["synced"] is False and devnet["error"] == "not scanned yet"
    await scan_all(gateway)
    status, body = await ready(client)
    assert status == 200 and body["ready"] is True, body
    devnet = next(c for c in body["chains"] if c["chain"] == "devnet")
    assert devnet["lag"] == 0 and devnet["node_height"] == devnet["scanned_height"]
    health = await client.get("/health")
    assert health.status == 200 and await health.json() == {"ok": True}


async def test_lag_beyond_the_limit_is_not_synced(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, readiness={"max_lag_blocks": 2},
                                           metrics={"token": TOKEN}))
    gateway = client.app[GATEWAY]
    await scan_all(gateway)
    assert (await ready(client))[0] == 200
    await devnet_chain(gateway).mine(3)  # the scanner has not seen them
    status, body = await ready(client)
    devnet = next(c for c in body["chains"] if c["chain"] == "devnet")
    assert status == 503 and devnet["lag"] == 3 and devnet["synced"] is False and devnet["reachable"] is True


async def test_unreachable_or_hung_node(app, monkeypatch):
    client, gateway = app
    await scan_all(gateway)
    adapter = gateway.chains.get("devnet")

    async def refused():
        raise ConnectionRefusedError("node down")

    monkeypatch.setattr(adapter, "tip", refused)
    status, body = await ready(client)
    devnet = next(c for c in body["chains"] if c["chain"] == "devnet")
    assert status == 503 and devnet["reachable"] is False and devnet["error"] == "ConnectionRefusedError"

    async def hung():
        await asyncio.sleep(30)

    monkeypatch.setattr(adapter, "tip", hung)
    status, body = await ready(client)
    devnet = next(c for c in body["chains"] if c["chain"] == "devnet")
    assert status == 503 and devnet["error"] == "no answer in 1 s"
    assert (await client.get("/health")).status == 200


async def test_pending_migration_is_not_ready(app):
    client, gateway = app
    await scan_all(gateway)
    await gateway.db.execute("DELETE FROM schema_migrations WHERE namespace = 'core' AND version = 16")
    status, body = await ready(client)
    assert status == 503 and body["migrations"] == {"ok": False, "pending": 1}


async def test_database_down_is_not_ready(app, monkeypatch):
    client, gateway = app

    async def broken(*args, **kwargs):
        raise OSError("database gone")

    monkeypatch.setattr(gateway.db, "fetch_val", broken)
    status, body = await ready(client)
    assert status == 503 and body["database"] == {"ok": False, "error": "OSError"} and body["ready"] is False


# -- who sees the detail (issue 29: chain heights were public on the main port) -----------------------------


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                                     {"Authorization": f"Basic {TOKEN}"}])
async def test_without_the_token_ready_is_a_bare_status(app, headers):
    """Same status codes as with the token, but only {"ready": ...}: no chains, heights or components."""
    client, gateway = app
    assert await ready(client, headers) == (503, {"ready": False})
    await scan_all(gateway)
    advance_clock(gateway, 1)  # the anonymous answer is shared for a second
    assert await ready(client, headers) == (200, {"ready": True})
    status, body = await ready(client)  # the operator's view of the same moment
    assert status == 200 and {"database", "migrations", "chains"} <= set(body)


async def test_without_any_metrics_protection_the_detail_is_nowhere(make_client, make_config):
    """No token and no listener: /metrics is 404, and /ready stays bare whatever is sent."""
    client = await make_client(make_config(scheduler={"enabled": False}))
    await scan_all(client.app[GATEWAY])
    assert await ready(client, {}) == (200, {"ready": True})
    assert await ready(client, OPERATOR) == (200, {"ready": True})


async def test_the_separate_listener_keeps_the_detail(make_client, make_config):
    """With metrics.listen the main port is bare even with the token (/metrics is not served there); the
    listener, a private address, shows the detail, behind the token too when one is set."""
    for token in ("", TOKEN):
        port = free_port()
        client = await make_client(make_config(scheduler={"enabled": False},
                                               metrics={"listen": f"127.0.0.1:{port}", "token": token}))
        await scan_all(client.app[GATEWAY])
        assert await ready(client, OPERATOR) == (200, {"ready": True})
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/ready", headers=OPERATOR) as response:
                body = await response.json()
                assert response.status == 200 and body["ready"] is True and "chains" in body, body
            async with session.get(f"http://127.0.0.1:{port}/ready") as response:
                body = await response.json()
                assert response.status == 200 and ("chains" in body) is (not token), body


async def test_anonymous_callers_share_one_check_a_second(app, monkeypatch):
    """Anonymous /ready asked the database and every node per request: an amplifier. Now concurrent and
    closely following anonymous requests share one check (the node is asked once); a second later, or with
    the operator's token, it is asked again. Catches: dropping the shared check from the bare answer."""
    client, gateway = app
    await scan_all(gateway)
    adapter = gateway.chains.get("devnet")
    real_tip, asked = adapter.tip, []

    async def counted():
        asked.append(1)
        return await real_tip()

    monkeypatch.setattr(adapter, "tip", counted)
    answers = await asyncio.gather(*(ready(client, {}) for _ in range(20)))
    assert answers == [(200, {"ready": True})] * 20 and len(asked) == 1
    assert await ready(client, {}) == (200, {"ready": True}) and len(asked) == 1
    advance_clock(gateway, 1)
    assert await ready(client, {}) == (200, {"ready": True}) and len(asked) == 2
    assert (await ready(client))[0] == 200 and len(asked) == 3  # the operator's detail is always fresh
