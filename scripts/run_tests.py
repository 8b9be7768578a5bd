"""Run the whole test suite against SQLite and a real PostgreSQL.

Used by ``make test``. Finds PostgreSQL in this order: ``$ORBCHAIN_TEST_PG_DSN``
if already set; the local server at 127.0.0.1:5432 when it answers; else a
throwaway cluster made with ``initdb`` under /tmp when PostgreSQL's binaries
are installed (stopped and removed afterwards). Without any of them the run
fails: the suite is never silently SQLite-only.

The suite runs in ``ORBCHAIN_TEST_WORKERS`` processes (pytest-xdist, default
2, one per core of the CI machine; 0 runs in this process alone): most of a
test's time is spent waiting on a node, a browser, a subprocess or a
database, so two workers roughly halve the run (docs/decisions.md "The suite
in two processes"). Each worker has its own PostgreSQL database for the run,
so advisory locks and NOTIFY never cross between workers. ``-n`` in the
arguments wins.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import asyncpg

LOCAL_DSNS = (
    "postgresql://postgres@127.0.0.1:5432/postgres",
    "postgresql://root@127.0.0.1:5432/postgres",
)


async def _answers(dsn: str) -> bool:
    try:
        conn = await asyncio.wait_for(asyncpg.connect(dsn), 5)
    except Exception:  # noqa: BLE001 - any failure means "not usable"
        return False
    await conn.close()
    return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _throwaway_cluster() -> tuple[str, callable] | None:
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        return None
    root = tempfile.mkdtemp(prefix="orbchain-pg-")
    data = os.path.join(root, "data")
    port = _free_port()
    user = ["-U", "postgres"]
    run_as = []
    if os.geteuid() == 0:  # initdb refuses root: run it as the postgres user
        shutil.chown(root, "postgres")
        run_as = ["runuser", "-u", "postgres", "--"]
    subprocess.run(run_as + [initdb, "-D", data, "-A", "trust", *user], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(run_as + [pg_ctl, "-D", data, "-l", os.path.join(root, "log"), "-w", "-o",
                             f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"], check=True,
                   stdout=subprocess.DEVNULL)

    def stop() -> None:
        subprocess.run(run_as + [pg_ctl, "-D", data, "-m", "immediate", "stop"], stdout=subprocess.DEVNULL)
        shutil.rmtree(root, ignore_errors=True)

    return f"postgresql://postgres@127.0.0.1:{port}/postgres", stop


def main(argv: list[str]) -> int:
    stop = None
    dsn = os.environ.get("ORBCHAIN_TEST_PG_DSN")
    if not dsn:
        dsn = next((d for d in LOCAL_DSNS if asyncio.run(_answers(d))), None)
    if not dsn:
        cluster = _throwaway_cluster()
        if cluster:
            dsn, stop = cluster
    if not dsn:
        print("make test: no PostgreSQL found (127.0.0.1:5432 silent, no initdb): install postgresql", file=sys.stderr)
        return 2
    print(f"make test: PostgreSQL at {dsn.split('@')[-1]}", flush=True)
    env = {**os.environ, "ORBCHAIN_TEST_PG_DSN": dsn}
    env.pop("ORBCHAIN_TEST_SQLITE_ONLY", None)  # make test runs both databases, whatever the shell says
    workers = os.environ.get("ORBCHAIN_TEST_WORKERS", "2")
    if not any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in argv) and workers != "0":
        argv = ["-n", workers, *argv]
    try:
        return subprocess.call([sys.executable, "-m", "pytest", *argv], env=env)
    finally:
        if stop:
            stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
