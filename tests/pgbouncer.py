"""Private PgBouncer instances in front of the test PostgreSQL, for tests/test_pgbouncer.py.

``pgbouncer`` (session scope) starts a ``pgbouncer`` process (Debian's
1.18: no ``max_prepared_statements``) on a free port with its own ini in a
temporary directory, pooling per transaction as operators run it, with few
server sessions so that clients share them; ``pgbouncer_session`` another
one pooling per session, for comparison. Any database name passes through
(``*``), so each test uses a database of its own. Auth is ``trust``, as the
test PostgreSQL's. Each process is stopped by PID at the end, SIGKILL if it
lingers. A missing binary is a failure pointing at
``scripts/ensure_pgbouncer.sh``, never a skip.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

import pytest

from tests.support import free_port

POOL_SIZE = 4  # server sessions per database and user: fewer than the gateway's clients, so they are shared
START_SECONDS = 10.0

INI = """[databases]
{databases}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {dir}/users.txt
pool_mode = {mode}
default_pool_size = {pool}
max_client_conn = 500
server_reset_query =
ignore_startup_parameters = extra_float_digits
logfile = {dir}/pgbouncer.log
pidfile = {dir}/pgbouncer.pid
"""


@dataclass
class PgBouncer:
    """One running pgbouncer: the URL of a database through it, and straight to PostgreSQL."""

    process: subprocess.Popen
    directory: Path
    port: int
    upstream: str  # the test PostgreSQL's DSN (postgresql://user@host:port/db)

    def url(self, database: str) -> str:
        """``postgresql+asyncpg://`` URL of ``database`` through this pgbouncer."""
        user = urlsplit(self.upstream).username or "postgres"
        return f"postgresql+asyncpg://{user}@127.0.0.1:{self.port}/{database}"

    def direct(self, database: str) -> str:
        """The same database straight on PostgreSQL."""
        parts = urlsplit(self.upstream)
        return f"postgresql+asyncpg://{parts.netloc}/{database}"

    def log(self) -> str:
        path = self.directory / "pgbouncer.log"
        return path.read_text() if path.exists() else ""


def binary() -> str:
    found = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer" if os.path.exists("/usr/sbin/pgbouncer") else None)
    if found is None:
        pytest.fail("pgbouncer is not installed: run scripts/ensure_pgbouncer.sh (make test does)")
    return found


def start(upstream: str, mode: str) -> PgBouncer:
    parts = urlsplit(upstream)
    host, pg_port = parts.hostname or "127.0.0.1", parts.port or 5432
    directory = Path(tempfile.mkdtemp(prefix="orbchain-pgbouncer-"))
    port = free_port()
    target = f"host={host} port={pg_port}"
    (directory / "pgbouncer.ini").write_text(INI.format(databases=f"* = {target}", port=port, dir=directory,
                                                        pool=POOL_SIZE, mode=mode))
    (directory / "users.txt").write_text(f'"{parts.username or "postgres"}" ""\n')
    command = [binary(), str(directory / "pgbouncer.ini")]
    if os.geteuid() == 0:  # pgbouncer refuses to run as root
        shutil.chown(directory, "postgres")
        for path in directory.iterdir():
            shutil.chown(path, "postgres")
        command[1:1] = ["-u", "postgres"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    bouncer = PgBouncer(process, directory, port, upstream)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"pgbouncer exited: {process.stderr.read().decode() if process.stderr else ''}"
                               f" {bouncer.log()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return bouncer
        except OSError:
            time.sleep(0.05)
    stop(bouncer)
    raise RuntimeError(f"pgbouncer did not listen on {port}: {bouncer.log()}")


def stop(bouncer: PgBouncer) -> None:
    if bouncer.process.poll() is None:
        bouncer.process.send_signal(signal.SIGINT)  # "safe shutdown": at once when no client is left
        try:
            bouncer.process.wait(5)
        except subprocess.TimeoutExpired:
            bouncer.process.kill()
            bouncer.process.wait()
    shutil.rmtree(bouncer.directory, ignore_errors=True)


def running(mode: str) -> Iterator[PgBouncer]:
    upstream = os.environ.get("ORBCHAIN_TEST_PG_DSN")
    assert upstream, "PgBouncer tests run with ORBCHAIN_TEST_PG_DSN (they are postgresql_only)"
    bouncer = start(upstream.replace("postgresql+asyncpg://", "postgresql://", 1), mode)
    try:
        yield bouncer
    finally:
        stop(bouncer)


@pytest.fixture(scope="session")
def pgbouncer() -> Iterator[PgBouncer]:
    """pgbouncer in transaction pooling mode in front of ``ORBCHAIN_TEST_PG_DSN``."""
    yield from running("transaction")


@pytest.fixture(scope="session")
def pgbouncer_session() -> Iterator[PgBouncer]:
    """pgbouncer in session pooling mode, for comparison."""
    yield from running("session")
