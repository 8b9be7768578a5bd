"""Several real ``orbchain serve --workers N`` hosts on one PostgreSQL database, and a client spread over them.

Shared by tests/test_several_hosts.py, tests/test_backups.py and
bench/soak.py. A ``Host`` is one supervisor with its workers on its own port,
started the way an operator starts it (its own session); the ``Cluster``
restarts a host whose supervisor exited, as a service manager would (a
worker killed stops its whole set: web/workers.py). ``Client`` sends every
request to the next host in turn and records each answer with its time, so
a caller can tell what happened inside and outside a fault window.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg

from .hostile_support import write_config
from .support import children_of, free_port, kill_group, running, serve_process, wait_healthy

BTC_DESTINATION = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"  # a valid mainnet address nobody of ours owns
POOL_SIZE = 6


def with_database(dsn: str, name: str) -> str:
    """``dsn`` pointing at database ``name``."""
    return urlunsplit(urlsplit(dsn)._replace(path="/" + name, query=""))


async def _admin(admin_dsn: str, sql: str, *args: Any) -> list:
    conn = await asyncpg.connect(admin_dsn)
    try:
        return await conn.fetch(sql, *args)
    finally:
        await conn.close()


async def create_database(admin_dsn: str, prefix: str = "orbchain_hosts") -> str:
    """A fresh, empty database on ``admin_dsn``'s server; its DSN."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    await _admin(admin_dsn, f'CREATE DATABASE "{name}"')
    return with_database(admin_dsn, name)


async def drop_database(admin_dsn: str, dsn: str) -> None:
    await _admin(admin_dsn, f'DROP DATABASE IF EXISTS "{urlsplit(dsn).path[1:]}" WITH (FORCE)')


async def terminate_connections(admin_dsn: str, dsn: str) -> int:
    """``pg_terminate_backend`` every session on ``dsn``'s database (a failover's effect on the gateway)."""
    return len(await _admin(admin_dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                       "WHERE datname = $1 AND pid <> pg_backend_pid()", urlsplit(dsn).path[1:]))


def gateway_config(path: Path, dsn: str, data_dir: Path, **sections: dict[str, Any]) -> Path:
    """A development gateway on ``dsn`` with the devnet mining every second and webhooks to loopback allowed.

    Each process's pool is capped (``max_size``): the suite shares one PostgreSQL server (100 connections)
    between two test processes, and four gateway processes with the default 20 each could exhaust it.
    """
    config: dict[str, dict[str, Any]] = {
        "server": {"data_dir": str(data_dir), "environment": "development", "drain_seconds": 3},
        "database": {"url": f"{dsn}?max_size={POOL_SIZE}"},
        "webhooks": {"allow_private_urls": True, "tick_seconds": 1},
        "rate_limits": {"enabled": False},
        "plugin.devnet": {"block_seconds": 1, "coins": ["BTC"]},
    }
    for name, values in sections.items():
        config[name] = {**config.get(name, {}), **values}
    return write_config(path, config)


def rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` in KiB; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


@dataclass
class Host:
    """One ``orbchain serve --workers N`` on its own port; ``start`` again after it exited."""

    name: str
    config: Path
    workdir: Path
    workers: int
    env: dict[str, str] = field(default_factory=dict)  # extra environment (ORBCHAIN_MAINTENANCE ...)
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    starts: int = 0

    @property
    def log(self) -> Path:
        return self.workdir / f"{self.name}.log"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self.starts += 1
        self.proc = serve_process("", self.workdir, self.port, self.workers, log=self.log,
                                  ORBCHAIN_CONFIG=str(self.config), ORBCHAIN_DATABASE_URL=None, **self.env)
        await wait_healthy(self.port, self.proc, log=self.log)

    def pids(self) -> set[int]:
        """The supervisor and its workers (empty once the set exited)."""
        if self.proc is None or self.proc.poll() is not None:
            return set()
        return {self.proc.pid, *children_of(self.proc.pid)}

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL the supervisor and every worker at once: a host lost mid-request."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def kill_worker(self) -> int:
        """SIGKILL one worker; the supervisor then stops the set (a service manager restarts it)."""
        worker = min(children_of(self.proc.pid)) if self.proc else 0
        assert worker, f"{self.name}: no worker to kill"
        os.kill(worker, signal.SIGKILL)
        return worker

    def stop(self) -> None:
        if self.proc is not None:
            if running(self.proc.pid, group=True):
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    pass
            kill_group(self.proc)


@dataclass
class Answer:
    at: float  # time.monotonic() when sent
    seconds: float
    host: str
    method: str
    route: str
    status: int | str  # the HTTP status, or "no answer"
    body: Any = None
    retry_after: str | None = None  # the Retry-After header, if any


class Client:
    """Requests spread over ``hosts`` in turn; every answer kept in ``answers``."""

    def __init__(self, hosts: list[Host], timeout: float = 30) -> None:
        self.hosts = hosts
        self._next = itertools.cycle(range(len(hosts)))
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))
        self.answers: list[Answer] = []

    async def close(self) -> None:
        await self._session.close()

    async def request(self, method: str, path: str, *, route: str = "", host: Host | None = None,
                      **kwargs: Any) -> Answer:
        """One request to ``host`` (default: the next host in turn); a refused connection is "no answer"."""
        host = host or self.hosts[next(self._next)]
        started = time.monotonic()
        retry_after = None
        try:
            async with self._session.request(method, host.base + path, **kwargs) as response:
                text = await response.text()
                body: Any = text
                if response.content_type == "application/json":
                    body = await response.json()
                status: int | str = response.status
                retry_after = response.headers.get("Retry-After")
        except (TimeoutError, aiohttp.ClientError):
            status, body = "no answer", None
        answer = Answer(started, time.monotonic() - started, host.name, method, route or path, status, body,
                        retry_after)
        self.answers.append(answer)
        return answer

    async def json(self, method: str, path: str, headers: dict[str, str], body: dict | None = None,
                   **kwargs: Any) -> Answer:
        return await self.request(method, path, headers=headers, json=body, **kwargs)

    async def until_ok(self, method: str, path: str, headers: dict[str, str], body: dict | None = None,
                       seconds: float = 60, **kwargs: Any) -> Answer:
        """Repeat until 200 (an answer during a fault is retried, as a client with an idempotency key does)."""
        deadline = time.monotonic() + seconds
        while True:
            answer = await self.json(method, path, headers, body, **kwargs)
            if answer.status == 200:
                return answer
            assert time.monotonic() < deadline, f"{method} {path}: {answer.status} {answer.body}"
            await asyncio.sleep(0.5)


async def fetch(dsn: str, query: str, *args: Any) -> list[dict]:
    """Rows read straight from the database, beside the gateway (waiting out a moment of a full server)."""
    for attempt in range(20):
        try:
            conn = await asyncpg.connect(dsn)
            break
        except asyncpg.TooManyConnectionsError:
            if attempt == 19:
                raise
            await asyncio.sleep(0.5)
    try:
        return [dict(row) for row in await conn.fetch(query, *args)]
    finally:
        await conn.close()


def orbchain_cli(config: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``orbchain --config <file> <args>`` (``ledger check``, ``devnet outage on`` ...)."""
    from .hostile_support import orbchain_command

    return subprocess.run([*orbchain_command(), "--config", str(config), *args], capture_output=True, text=True,
                          timeout=timeout)
