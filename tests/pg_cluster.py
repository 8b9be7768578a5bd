"""A private PostgreSQL cluster a test may restart, stop or kill -9 (the machine's server is shared).

Why its own cluster: the fault tests take PostgreSQL away under a running
gateway; doing that to the server ``ORBCHAIN_TEST_PG_DSN`` names would fail
every other test (and engineer) using it. ``initdb`` into a temporary
directory as the ``postgres`` user (initdb refuses root), ``pg_ctl`` on a
free port, unix socket in the same directory; removed at the end.

Use the session fixture ``private_pg`` (list this module in a test module's
``pytest_plugins`` or import the fixture), or ``PrivateCluster`` directly.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from orbchain.core.infra.config import Config, load_config
from tests.support import free_port

OWNER = "postgres"


def _bin_dir() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise RuntimeError("no /usr/lib/postgresql/*/bin/pg_ctl: install the postgresql package (make test does)")
    return found[-1].parent


class PrivateCluster:
    """One PostgreSQL cluster of this test run: ``start``, ``stop``, ``restart``, ``kill`` its postmaster."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.data = root / "data"
        self.port = port
        self.log = root / "postgresql.log"
        self._bin = _bin_dir()
        self._user = pwd.getpwnam(OWNER) if os.geteuid() == 0 else None

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self._bin / args[0]), *args[1:]]
        if self._user is not None:
            command = ["runuser", "-u", OWNER, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=check, timeout=60)

    def init(self) -> None:
        if self._user is not None:
            os.chown(self.root, self._user.pw_uid, self._user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")

    def start(self, seconds: float = 30) -> None:
        """Start the postmaster; after a kill -9 the old backends may hold shared memory a moment: retried."""
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
                   " -c max_connections=100 -c shared_buffers=16MB")
        deadline = time.monotonic() + seconds
        while True:
            done = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start",
                             check=False)
            if done.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"private PostgreSQL did not start: {done.stdout}{done.stderr}\n{self.tail()}")
            time.sleep(0.2)

    def standby_of(self, primary: "PrivateCluster") -> None:
        """Make this (not yet initialised) cluster a streaming standby of ``primary``: ``pg_basebackup -R``
        (primary_conninfo and standby.signal written), WAL streamed during the copy; ``start`` it next."""
        if self._user is not None:
            os.chown(self.root, self._user.pw_uid, self._user.pw_gid)
        self._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                  "-D", str(self.data), "-R", "-X", "stream", "--no-sync", "-c", "fast")

    def promote(self) -> None:
        """``pg_ctl promote -w``: this standby leaves recovery and takes writes."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "promote")

    async def async_promote(self) -> None:
        await asyncio.to_thread(self.promote)

    def stop(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m fast`` (sessions ended, clean) or ``immediate`` (no shutdown checkpoint, recovery next)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast", down_seconds: float = 0) -> None:
        """Stop then start (``pg_ctl restart`` would hand the postmaster our output pipe), down for a while."""
        self.stop(mode)
        time.sleep(down_seconds)
        self.start()

    def kill(self) -> None:
        """kill -9 of the postmaster (its backends see it die and exit); ``start`` brings it back."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def remove(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    async def async_stop(self, mode: str = "fast") -> None:
        """``stop`` off the event loop, so a gateway in this process keeps serving (503s) meanwhile."""
        await asyncio.to_thread(self.stop, mode)

    async def async_start(self) -> None:
        await asyncio.to_thread(self.start)

    async def async_restart(self, mode: str = "fast", down_seconds: float = 0) -> None:
        await asyncio.to_thread(self.restart, mode, down_seconds)

    async def async_kill(self) -> None:
        await asyncio.to_thread(self.kill)

    async def gateway_config(self, prefix: str, tmp_path: Path, **overrides: Any) -> Config:
        """A development gateway's config on a fresh database ``<prefix>_<ms>`` of this cluster, no scheduler."""
        import asyncpg

        name = f"{prefix}_{int(time.time() * 1000)}"
        admin = await asyncpg.connect(self.dsn())
        await admin.execute(f'CREATE DATABASE "{name}"')
        await admin.close()
        return load_config(None, environ={}).with_overrides(**{
            "server": {"data_dir": str(tmp_path / "var"), "environment": "development"},
            "database": {"url": self.dsn(name).replace("postgresql://", "postgresql+asyncpg://")},
            "scheduler": {"enabled": False}, "rate_limits": {"enabled": False}, **overrides})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of ours counts as gone
        waited, _ = os.waitpid(pid, os.WNOHANG)
        return waited == 0
    except ChildProcessError:
        return True


@pytest.fixture(scope="session")
def private_pg() -> Iterator[PrivateCluster]:
    """A PostgreSQL cluster of this test process alone, started once per session; stopped and removed after."""
    cluster = PrivateCluster(Path(tempfile.mkdtemp(prefix="orbchain-pg-")), free_port())
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.remove()
