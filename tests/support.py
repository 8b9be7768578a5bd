"""Helpers shared by the API and end-to-end tests (the merchant client comes from ``orbchain.testing``)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from orbchain.chains.devnet.adapter import devnet_chain
from orbchain.core.scanner import scan_chain
from orbchain.testing.api import Merchant, api, bearer, signup, signup_data  # noqa: F401 - re-exported
from orbchain.web.keys import GATEWAY


class WebhookReceiver:
    """A merchant endpoint on 127.0.0.1 recording raw webhook requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next = 0
        self.server: TestServer | None = None

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        if self.fail_next:
            self.fail_next -= 1
            return web.Response(status=503)
        self.requests.append({"headers": dict(request.headers), "raw": raw, "body": json.loads(raw)})
        return web.Response(text="ok")

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self.server = TestServer(app)
        await self.server.start_server()
        return str(self.server.make_url("/hook"))

    async def close(self) -> None:
        if self.server:
            await self.server.close()

    def verified(self, secret: str) -> list[dict[str, Any]]:
        """Bodies whose HMAC-SHA512 over the raw bytes matches ``secret`` (all of them, or fail)."""
        bodies = []
        for request in self.requests:
            expected = hmac.new(secret.encode(), request["raw"], hashlib.sha512).hexdigest()
            assert hmac.compare_digest(expected, request["headers"]["HMAC"]), "bad webhook signature"
            bodies.append(request["body"])
        return bodies

    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["body"]["event_type"] == event_type]


class Devnet:
    """Drive the devnet chain and the scanner from a test."""

    def __init__(self, client: Any) -> None:
        self.gateway = client.app[GATEWAY]
        self.chain = devnet_chain(self.gateway)
        self.adapter = self.gateway.chains.get("devnet")

    async def pay(self, coin: str, address: str, amount: str) -> str:
        symbol = self.gateway.coins.require(coin)
        tx = await self.chain.pay(symbol, address, symbol.to_units(amount))
        await self.scan()
        return tx

    async def mine(self, blocks: int = 1) -> None:
        await self.chain.mine(blocks)
        await self.scan()

    async def scan(self) -> Any:
        return await scan_chain(self.gateway, self.adapter)


def install_entry_point_package(site: Any, package: str, entry_name: str, files: dict[str, str],
                                target: str | None = None) -> None:
    """Install ``package`` under ``site`` the way pip would: its files plus a dist-info declaring
    ``entry_name = target`` in the ``orbchain`` entry-point group. Put ``site`` on ``sys.path``
    (``monkeypatch.syspath_prepend``) and drop the module from ``sys.modules`` afterwards."""
    from pathlib import Path

    site = Path(site)
    for relative, text in files.items():
        path = site / package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    dist = site / f"{package}-1.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package.replace('_', '-')}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[orbchain]\n{entry_name} = {target or package}\n")


def config_from_environment(make_config: Any, **variables: str) -> Any:
    """The config ``orbchain serve`` builds from ``ORBCHAIN_*`` variables alone (no file): this test's data
    folder and database, private URLs allowed, scheduler off, plus ``variables``."""
    from orbchain.core.config import load_config

    base = make_config()
    return load_config(None, environ={
        "ORBCHAIN_DATA_DIR": base.server.data_dir, "ORBCHAIN_DATABASE_URL": base.database.url,
        "ORBCHAIN_ALLOW_PRIVATE_URLS": "true", "ORBCHAIN_SCHEDULER__ENABLED": "false", **variables})


class GatewayTestServer(TestServer):
    """A test server behind ``GatewayAppRunner`` (what ``orbchain serve`` runs), for raw-socket tests."""

    async def _make_runner(self, **kwargs: Any) -> Any:
        from orbchain.web.server import GatewayAppRunner

        return GatewayAppRunner(self.app, **kwargs)


async def raw_exchange(server: Any, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes, read until the server closes; status, headers (lower-cased) and body."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        writer.write(request)
        await writer.drain()
    except ConnectionError:
        pass  # the server may answer and close before reading everything
    raw = await asyncio.wait_for(reader.read(), timeout=10)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


# -- time, backlog and races for job tests ---------------------------------------------------------


def advance_clock(gateway: Any, seconds: int) -> int:
    """Move ``gateway.clock`` ``seconds`` ahead of now and stop it there; the new now."""
    later = gateway.now() + seconds
    gateway.clock = lambda: later
    return later


def freeze_clock(gateway: Any) -> int:
    """Stop ``gateway.clock`` at now (so times can be compared exactly); that now."""
    return advance_clock(gateway, 0)


async def fill_backlog(gateway: Any, merchant_id: str, count: int) -> None:
    """``count`` queued (not yet due) payouts straight into the table: the backlog breaker answers 503."""
    now = gateway.now()
    rows = [{"id": f"po_fake{i}", "t": f"fake{i}", "m": merchant_id, "a": gateway.db.amount_param(1), "now": now}
            for i in range(count)]
    await gateway.db.execute_many(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
        " next_attempt_at, created_at, updated_at) VALUES (:id, :t, :m, 'BTC', 'devnet', 'x', :a, 'Confirming',"
        " 'queued', :now + 100000, :now, :now)", rows)


def hold_concurrent_reads(monkeypatch: Any, owner: Any, name: str, *, skip_empty: bool = False) -> list[Any]:
    """Patch the async read ``owner.name`` so two concurrent jobs both hold what they read before either goes on.

    Returns the list of what each read returned, in order (a job's claim
    must then let exactly one of them act). With ``skip_empty``, empty reads
    pass straight through and are not recorded.
    """
    read, both_read, readers = getattr(owner, name), asyncio.Event(), []

    async def read_then_wait(*args: Any, **kwargs: Any) -> Any:
        rows = await read(*args, **kwargs)
        if rows or not skip_empty:
            readers.append(rows)
            if len(readers) == 2:
                both_read.set()
            await asyncio.wait_for(both_read.wait(), 10)
        return rows

    monkeypatch.setattr(owner, name, read_then_wait)
    return readers


# -- real processes ------------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port nobody listens on right now (for a server or a node started next)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_process(db_url: str, tmp_path: Any, port: int, workers: int, **env: str | None) -> subprocess.Popen:
    """``orbchain serve --workers N`` on 127.0.0.1:``port`` in development, in its own session, output piped.

    ``env`` adds variables to the child's environment; a None value removes one.
    """
    child = {**os.environ, "ORBCHAIN_DATABASE_URL": db_url, "ORBCHAIN_DATA_DIR": str(tmp_path / "var"),
             "ORBCHAIN_ENVIRONMENT": "development"}
    child.pop("ORBCHAIN_CONFIG", None)
    for name, value in env.items():
        if value is None:
            child.pop(name, None)
        else:
            child[name] = value
    return subprocess.Popen([sys.executable, "-m", "orbchain", "serve", "--host", "127.0.0.1", "--port", str(port),
                             "--workers", str(workers)], env=child, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


# The rate limiter's own tables: PostgreSQL counts requests there (reads too), outside any handler.
RATE_LIMIT_TABLES = frozenset({"rate_limit_hits", "gateway_nodes"})


async def database_rows(db: Any, skip: frozenset[str] = RATE_LIMIT_TABLES) -> dict[str, list[str]]:
    """Every table's rows as sorted text: equal before and after a request that wrote nothing."""
    if db.is_sqlite:
        query = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    else:
        query = "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()"
    names = sorted(r["name"] for r in await db.fetch_all(query) if r["name"] not in skip)
    return {name: sorted(repr(tuple(row.values())) for row in await db.fetch_all(f'SELECT * FROM "{name}"'))
            for name in names}
