"""Helpers shared by the API and end-to-end tests (the merchant client comes from ``orbchain.testing``)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import resource
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from orbchain.chains.devnet.adapter import devnet_chain
from orbchain.core.watching.scanner import scan_chain
from orbchain.testing.api import Merchant, api, bearer, signup, signup_data  # noqa: F401 - re-exported
from orbchain.web.keys import GATEWAY


class WebhookReceiver:
    """A merchant endpoint on 127.0.0.1 recording raw webhook requests.

    ``requests`` holds the ones it accepted (answered 200). With ``hold``
    set it reads each request, records it in ``held`` and never answers (a
    receiver that hangs) until ``release()``.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next = 0
        self.hold = False
        self.held: list[dict[str, Any]] = []
        self._released = asyncio.Event()
        self.server: TestServer | None = None

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        if self.hold:
            self.held.append({"headers": dict(request.headers), "raw": raw})
            await self._released.wait()
            return web.Response(status=503)
        if self.fail_next:
            self.fail_next -= 1
            return web.Response(status=503)
        self.requests.append({"headers": dict(request.headers), "raw": raw, "body": json.loads(raw)})
        return web.Response(text="ok")

    def release(self) -> None:
        """Stop holding: requests held so far end (503), later ones are accepted."""
        self.hold = False
        self._released.set()

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self.server = TestServer(app)
        await self.server.start_server()
        return str(self.server.make_url("/hook"))

    async def close(self) -> None:
        self.release()
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
    from orbchain.core.infra.config import load_config

    base = make_config()
    return load_config(None, environ={
        "ORBCHAIN_DATA_DIR": base.server.data_dir, "ORBCHAIN_DATABASE_URL": base.database.url,
        "ORBCHAIN_ALLOW_PRIVATE_URLS": "true", "ORBCHAIN_SCHEDULER__ENABLED": "false", **variables})


class GatewayTestServer(TestServer):
    """A test server behind ``GatewayAppRunner`` (what ``orbchain serve`` runs), for raw-socket tests.

    As ``orbchain serve`` runs it: aiohttp's test server cancels a handler whose client left
    (``handler_cancellation``), the served gateway does not, so a test here sees what a real client would.
    """

    async def _make_runner(self, **kwargs: Any) -> Any:
        from orbchain.web.server import GatewayAppRunner

        kwargs.pop("handler_cancellation", None)
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


def orbchain_env(db_url: str, tmp_path: Any, **env: str | None) -> dict[str, str]:
    """The environment of an ``orbchain`` command in development on ``db_url``, data under ``tmp_path``.

    ``env`` adds variables; a None value removes one.
    """
    child = {**os.environ, "ORBCHAIN_DATABASE_URL": db_url, "ORBCHAIN_DATA_DIR": str(tmp_path / "var"),
             "ORBCHAIN_ENVIRONMENT": "development", "PYTHONUNBUFFERED": "1"}
    child.pop("ORBCHAIN_CONFIG", None)
    for name, value in env.items():
        if value is None:
            child.pop(name, None)
        else:
            child[name] = value
    return child


def start_session(command: list[str], tmp_path: Any, env: dict[str, str], log: Any = None,
                  open_files: tuple[int, int] | None = None) -> subprocess.Popen:
    """``command`` started as an operator would: its own session, so ``os.killpg(proc.pid, ...)`` signals
    it and everything it started the way a service manager or a terminal does. Output goes to the file
    ``log`` when given, else to a pipe. ``open_files`` (soft, hard) is its RLIMIT_NOFILE, as a unit's
    ``LimitNOFILE`` or a shell's ``ulimit -n`` would set it."""
    output = open(log, "ab") if log is not None else subprocess.PIPE  # the child has its own copy once started

    def limit_open_files() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, open_files)

    try:
        return subprocess.Popen(command, env=env, cwd=tmp_path, stdout=output, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=limit_open_files if open_files else None)
    finally:
        if log is not None:
            output.close()


def orbchain_process(db_url: str, tmp_path: Any, *args: str, log: Any = None,
                     open_files: tuple[int, int] | None = None, **env: str | None) -> subprocess.Popen:
    """``orbchain <args>`` (``orbchain_env``, ``start_session``)."""
    return start_session([sys.executable, "-m", "orbchain", *args], tmp_path, orbchain_env(db_url, tmp_path, **env),
                         log, open_files)


def serve_process(db_url: str, tmp_path: Any, port: int, workers: int, log: Any = None,
                  open_files: tuple[int, int] | None = None, **env: str | None) -> subprocess.Popen:
    """``orbchain serve --workers N`` on 127.0.0.1:``port`` (``orbchain_process``)."""
    return orbchain_process(db_url, tmp_path, "serve", "--host", "127.0.0.1", "--port", str(port),
                            "--workers", str(workers), log=log, open_files=open_files, **env)


def children_of(pid: int) -> set[int]:
    """The processes whose parent is ``pid``."""
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def running(pid: int, *, group: bool = False) -> bool:
    """Whether process ``pid`` (with ``group``: any process of process group ``pid``) still exists."""
    try:
        (os.killpg if group else os.kill)(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kill_group(process: subprocess.Popen) -> None:
    """Test teardown: SIGKILL what is left of ``process``'s group (it leads one: ``start_session``), reap it."""
    if running(process.pid, group=True):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


async def wait_healthy(port: int, process: subprocess.Popen, seconds: float = 60, log: Any = None) -> None:
    """Poll ``/health`` until it answers 200; fails when the process exits or ``seconds`` pass."""
    import aiohttp

    deadline = asyncio.get_running_loop().time() + seconds
    async with aiohttp.ClientSession() as session:
        while True:
            assert process.poll() is None, f"exited with {process.returncode}: {_tail(log)}"
            try:
                async with session.get(f"http://127.0.0.1:{port}/health") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            assert asyncio.get_running_loop().time() < deadline, f"no /health within {seconds} s: {_tail(log)}"
            await asyncio.sleep(0.2)


async def wait_exit(process: subprocess.Popen, seconds: float, log: Any = None) -> int:
    """The exit status once ``process`` ended; a process still alive after ``seconds`` is a hang:
    its group is killed and the test fails (the bound only catches a hang, it measures nothing)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while process.poll() is None:
        if asyncio.get_running_loop().time() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise AssertionError(f"still running {seconds} s after the stop: a hang. {_tail(log)}")
        await asyncio.sleep(0.05)
    return process.returncode


def _tail(log: Any, lines: int = 60) -> str:
    if log is None:
        return ""
    try:
        return "\n".join(Path(log).read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


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
