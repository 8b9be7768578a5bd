"""The API hot path (issue 11): the gateway against a bare aiohttp app, in one run.

Starts ``orbchain serve`` as a subprocess on a free loopback port, on
PostgreSQL (``--pg-dsn``: ``ORBCHAIN_TEST_PG_DSN``, else the local server's
Unix socket, else 127.0.0.1:5432; a scratch database is created and dropped
here) and on SQLite, with 1 and 2 workers when ``orbchain serve --workers``
exists, and a bare aiohttp app (bench/bare_app.py) as the baseline. Each request is driven with 50
connections for a few seconds (wrk, or the asyncio client of loadgen.py
when wrk is missing) and reported as requests/s, p99 and the ratio to the
bare app's GET or POST measured just before it (the bare app stays up for
the whole run; ``--rounds N`` repeats each pair and keeps the median
ratio, as other processes on a shared machine move single figures by a
third). Then 1,000 concurrent transfers among 100 merchants (``--rounds``
times, the median kept), reported as transfers/s, followed by
``orbchain ledger check``.

Rate limits are raised through ``ORBCHAIN_RATE_LIMITS__*`` so the limiter
still runs but never refuses. The machine load (uptime) is printed before
and after: on a shared machine the absolute figures move, the ratios less.
No figure fails the run; a failed request, a failed start or an unclean
ledger does.

    .venv/bin/python bench/bench_hotpath.py [--seconds 5] [--connections 50] [--databases postgresql,sqlite]
        [--rounds 1] [--requests read,create,page] [--workers 1,2] [--transfers 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg

import loadgen
from orbchain.core.ledger import book as ledger
from orbchain.core.infra.db import Database

HERE = Path(__file__).resolve().parent
ORBCHAIN = [sys.executable, "-m", "orbchain"]
DEFAULT_PG_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
# The local server's Unix socket (Debian's directory), what docs/operations.md advises for a
# gateway on the database's machine: a query over TCP loopback costs the gateway more CPU.
PG_SOCKET_DIR = "/var/run/postgresql"
PG_SOCKET_DSN = f"postgresql://postgres@/postgres?host={PG_SOCKET_DIR}"


def default_pg_dsn() -> str:
    """``$ORBCHAIN_TEST_PG_DSN``, else the local Unix socket when there is one, else TCP on 127.0.0.1."""
    if os.environ.get("ORBCHAIN_TEST_PG_DSN"):
        return os.environ["ORBCHAIN_TEST_PG_DSN"]
    return PG_SOCKET_DSN if Path(PG_SOCKET_DIR, ".s.PGSQL.5432").exists() else DEFAULT_PG_DSN
RAISED_LIMITS = {f"ORBCHAIN_RATE_LIMITS__{name}": "100000000" for name in (
    "READ_PER_MINUTE", "WRITE_PER_MINUTE", "AUTH_PER_MINUTE", "PUBLIC_PAGE_PER_MINUTE", "PAY_PAGE_PER_MINUTE",
    "AUTH_FAILURES_PER_MINUTE")}
# 1,000 transfers open 1,000 connections from 127.0.0.1 at once: the guard against idle connections
# (web/connection_guard.py, 32 per address) would refuse most of them, as it should a real client's flood.
RAISED_LIMITS["ORBCHAIN_SERVER__MAX_PENDING_CONNECTIONS_PER_IP"] = "0"  # 0: no cap
GOALS = {"read": 0.30, "create": 0.15, "page": 0.20}
P99_GOALS_MS = {"read": 50.0, "create": 100.0}
TRANSFER_GOAL = 500.0  # issue 47


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average: {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


# Server pid by base URL (set by ``running``), so ``measure`` can read the CPU time its processes spent.
_SERVER_PIDS: dict[str, int] = {}
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the workers of ``serve --workers N``), from /proc."""
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo.extend(int(child) for child in task.read_text().split())
            except OSError:
                pass
    return pids


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a server's processes so far (0 where /proc is missing)."""
    total = 0
    for each in _process_tree(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _CLOCK_TICKS


def serve_supports_workers() -> bool:
    # Importing every plugin takes over a minute on a loaded shared machine.
    result = subprocess.run([*ORBCHAIN, "serve", "--help"], capture_output=True, text=True, timeout=300)
    return "--workers" in result.stdout


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


async def wait_healthy(base: str, process: subprocess.Popen, log: Path, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode}:\n{_tail(log)}")
            try:
                async with session.get(base + "/health") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError(f"server did not answer /health in {seconds}s:\n{_tail(log)}")


@contextmanager
def running(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> Iterator[str]:
    """Start a server on a free port; yield its base URL; stop it (SIGTERM, then SIGKILL)."""
    port = free_port()
    with log.open("ab") as out:
        process = subprocess.Popen([*command, "--port", str(port)], env=env, cwd=cwd, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    _SERVER_PIDS[base] = process.pid
    try:
        asyncio.run(wait_healthy(base, process, log))
        yield base
    finally:
        _SERVER_PIDS.pop(base, None)
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- the gateway's environment ------------------------------------------------------------------


@dataclass
class Target:
    """One database the gateway runs on, with what the setup created there."""

    name: str
    url: str
    data_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    merchant_key: str = ""
    track_id: str = ""
    invoice_id: str = ""

    def gateway_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ORBCHAIN_")}
        env.update(RAISED_LIMITS, ORBCHAIN_DATABASE_URL=self.url, ORBCHAIN_DATA_DIR=str(self.data_dir))
        return env


async def _pg_admin(dsn: str, sql: str) -> None:
    admin = await asyncpg.connect(dsn.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        await admin.execute(sql)
    finally:
        await admin.close()


@contextmanager
def postgres_target(dsn: str, root: Path) -> Iterator[Target]:
    name = f"orbchain_bench_{secrets.token_hex(4)}"
    asyncio.run(_pg_admin(dsn, f'CREATE DATABASE "{name}"'))
    try:
        plain = dsn.replace("postgresql+asyncpg://", "postgresql://", 1)
        url = urlunsplit(urlsplit(plain)._replace(scheme="postgresql+asyncpg", path="/" + name))
        yield Target("PostgreSQL", url, root / "var-pg")
    finally:
        asyncio.run(_pg_admin(dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def sqlite_target(root: Path) -> Target:
    return Target("SQLite", f"sqlite+aiosqlite:///{root / 'bench.db'}", root / "var-sqlite")


def pg_reachable(dsn: str) -> bool:
    try:
        asyncio.run(_pg_admin(dsn, "SELECT 1"))
        return True
    except (OSError, asyncpg.PostgresError) as exc:
        print(f"PostgreSQL at {dsn} not reachable ({exc}): skipped", file=sys.stderr)
        return False


# -- set-up through the API -----------------------------------------------------------------------


async def _json(session: aiohttp.ClientSession, method: str, url: str, **kwargs) -> dict:
    async with session.request(method, url, **kwargs) as response:
        body = await response.json()
        if response.status != 200:
            raise RuntimeError(f"{method} {url}: {response.status} {body}")
        return body["data"]


async def signup(session: aiohttp.ClientSession, base: str, email: str) -> dict:
    return await _json(session, "POST", base + "/dashboard/auth/signup",
                       json={"email": email, "password": "bench-password-1"})


async def prepare(target: Target, base: str) -> None:
    """One merchant, one white-label payment to read and one invoice whose page to render."""
    async with aiohttp.ClientSession() as session:
        owner = await signup(session, base, "bench@example.com")
        target.merchant_key = owner["api_keys"]["merchant_api_key"]
        headers = {"merchant_api_key": target.merchant_key}
        payment = await _json(session, "POST", base + "/v1/payment/white-label", headers=headers,
                              json={"currency": "BTC", "amount": "0.01"})
        invoice = await _json(session, "POST", base + "/v1/payment/invoice", headers=headers,
                              json={"currency": "BTC", "amount": "0.01"})
        target.track_id, target.invoice_id = payment["track_id"], invoice["track_id"]
        async with session.get(f"{base}/pay/{target.invoice_id}") as page:
            if page.status != 200 or "<svg" not in await page.text():
                raise RuntimeError(f"hosted page answered {page.status} without a QR code")


# -- measurements ---------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    load: loadgen.Load
    baseline: float | None = None
    goal: str = ""
    key: tuple[str, int] = ("", 0)  # (request, workers): pairs the databases' rows for the SQLite goal
    database: str = ""

    def cells(self) -> list[str]:
        ratio = f"{self.load.rps / self.baseline:6.1%}" if self.baseline else ""
        errors = str(self.load.errors) if self.load.errors else ""
        cpu = f"{self.load.cpu_us:,.0f}" if self.load.cpu_us else ""
        bare = f"{self.baseline:,.0f}" if self.baseline else ""
        return [self.label, f"{self.load.rps:,.0f}", f"{self.load.p99_ms:,.1f}", bare, ratio, cpu, errors, self.goal]


def write_json(path: Path, rows: list[Row], load: str) -> None:
    """The figures bench/compare.py compares with a committed baseline."""
    figures = [{"label": r.label, "rps": r.load.rps, "p99_ms": r.load.p99_ms, "cpu_us": r.load.cpu_us,
                "of_bare": r.load.rps / r.baseline if r.baseline else None} for r in rows]
    path.write_text(json.dumps({"machine_load": load, "rows": figures}, indent=1) + "\n")


def measure(url: str, seconds: float, connections: int, warmup: float = 1.0, **request) -> loadgen.Load:
    """Requests/s and p99 of ``url``, and the server's CPU time per request (user + system, all workers).

    CPU per request moves far less than requests/s when other processes
    share the machine: it is the figure to compare between runs.
    """
    if warmup:
        loadgen.run(url, connections=connections, seconds=warmup, **request)
    base = "{0.scheme}://{0.netloc}".format(urlsplit(url))
    pid = _SERVER_PIDS.get(base)
    before = cpu_seconds(pid) if pid else 0.0
    load = loadgen.run(url, connections=connections, seconds=seconds, **request)
    if pid and load.requests:
        load = replace(load, cpu_us=(cpu_seconds(pid) - before) * 1e6 / load.requests)
    return load


BARE_PATHS = {"GET": ("/get", {}), "POST": ("/post", {"method": "POST", "body": {"currency": "BTC", "amount": "0.01"}})}


def bare_figure(bare_base: str, verb: str, seconds: float, connections: int) -> loadgen.Load:
    path, request = BARE_PATHS[verb]
    return measure(bare_base + path, seconds, connections, **request)


def bare_figures(bare_base: str, seconds: float, connections: int) -> dict[str, loadgen.Load]:
    return {verb: bare_figure(bare_base, verb, seconds, connections) for verb in BARE_PATHS}


REQUESTS = {"read": ("GET /v1/payment/:id", "GET"), "create": ("POST /v1/payment/white-label", "POST"),
            "page": ("GET /pay/:id", "GET")}


def gateway_rows(target: Target, base: str, workers: int, bare_base: str,
                 args: argparse.Namespace) -> list[Row]:
    """One row per request kind in ``args.requests`` (read, create, page).

    Each gateway figure is paired with a figure of the bare app taken just
    before it, and the ratio is that pair's: other processes on a shared
    machine move both alike. With ``--rounds N`` the pair is measured N
    times and the row is the pair with the median ratio.
    """
    headers = {"merchant_api_key": target.merchant_key}
    tag = f"{target.name}, {workers} worker{'s' if workers > 1 else ''}"
    how = {
        "read": (f"{base}/v1/payment/{target.track_id}", {"headers": headers}),
        "create": (f"{base}/v1/payment/white-label",
                   {"method": "POST", "headers": headers, "body": {"currency": "BTC", "amount": "0.01"}}),
        "page": (f"{base}/pay/{target.invoice_id}", {}),
    }
    rows = []
    for kind in args.requests:
        url, request = how[kind]
        label, verb = REQUESTS[kind]
        pairs = []
        for _ in range(args.rounds):
            bare = bare_figure(bare_base, verb, args.seconds, args.connections)
            load = measure(url, args.seconds, args.connections, **request)
            pairs.append((load.rps / bare.rps, load, bare.rps))
        pairs.sort(key=lambda pair: pair[0])
        _, load, bare_rps = pairs[len(pairs) // 2]
        rows.append(Row(f"{label} ({tag})", load, bare_rps, _goal(kind, load, bare_rps), (label, workers),
                        target.name))
    return rows


def sqlite_versus_postgres(rows: list[Row]) -> list[list[str]]:
    """The goal "SQLite within half of PostgreSQL": SQLite's requests/s over PostgreSQL's, per request."""
    pg = {r.key: r for r in rows if r.database == "PostgreSQL"}
    out = []
    for row in rows:
        if row.database == "SQLite" and row.key in pg:
            ratio = row.load.rps / pg[row.key].load.rps
            out.append([f"{row.key[0]} ({row.key[1]} worker(s))", f"{ratio:.0%}",
                        ">=50%: " + ("met" if ratio >= 0.5 else "NOT met")])
    return out


def _goal(kind: str, load: loadgen.Load, baseline: float) -> str:
    ratio_ok = load.rps / baseline >= GOALS[kind]
    p99_ok = load.p99_ms < P99_GOALS_MS.get(kind, float("inf"))
    text = f">={GOALS[kind]:.0%}" + (f", p99<{P99_GOALS_MS[kind]:.0f}ms" if kind in P99_GOALS_MS else "")
    return f"{text}: {'met' if ratio_ok and p99_ok else 'NOT met'}"


# -- transfers ------------------------------------------------------------------------------------


@dataclass
class TransferResult:
    label: str
    count: int
    per_second: float
    failed: int
    ledger_check: str
    cpu_us: float = 0.0  # the server's CPU per transfer over all rounds (what the round trips cost it)
    statuses: str = ""  # the failed ones' HTTP statuses, e.g. "503 x7"


async def _merchants(base: str, count: int) -> list[dict]:
    """``count`` merchants with their key and public account id (signed up 10 at a time)."""
    async with aiohttp.ClientSession() as session:
        merchants: list[dict] = []
        for start in range(0, count, 10):
            batch = await asyncio.gather(*(signup(session, base, f"t{start + i}-{secrets.token_hex(3)}@example.com")
                                           for i in range(min(10, count - start))))
            merchants.extend(batch)
        for merchant in merchants:
            account = await _json(session, "GET", base + "/dashboard/account",
                                  headers={"Authorization": f"Bearer {merchant['token']}"})
            merchant["account_id"] = account["account"]["account_id"]
        return merchants


async def _fund(url: str, merchants: list[dict], units: int) -> None:
    """Credit each merchant ``units`` BTC the way a confirmed deposit does (one ledger post each)."""
    db = Database(url)
    await db.connect()
    try:
        for merchant in merchants:
            await ledger.credit_deposit(db, merchant_id=merchant["merchant_id"], coin="BTC", chain="bitcoin",
                                        amount=units, fee=0, reference=f"bench:fund:{merchant['merchant_id']}")
    finally:
        await db.disconnect()


async def _transfers(base: str, merchants: list[dict], count: int) -> tuple[float, list[int]]:
    """The rate of ``count`` transfers sent at once, and the statuses of those that failed."""
    rng = random.Random(11)
    plan = []
    for _ in range(count):
        sender, recipient = rng.sample(merchants, 2)
        plan.append((sender, recipient, rng.randint(1, 10_000)))
    connector = aiohttp.TCPConnector(limit=count)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
        async def one(sender: dict, recipient: dict, units: int) -> int:
            body = {"to_account_id": recipient["account_id"], "coin": "BTC", "amount": f"{units / 1e8:.8f}"}
            async with session.post(base + "/v1/transfer", json=body,
                                    headers={"merchant_api_key": sender["api_keys"]["merchant_api_key"]}) as r:
                await r.read()
                return r.status

        started = time.perf_counter()
        statuses = await asyncio.gather(*(one(*p) for p in plan))
        elapsed = time.perf_counter() - started
    return count / elapsed, [s for s in statuses if s != 200]


def ledger_check(target: Target, root: Path) -> str:
    result = subprocess.run([*ORBCHAIN, "ledger", "check"], env=target.gateway_env(), cwd=root,
                            capture_output=True, text=True, timeout=300)
    last = (result.stdout.strip().splitlines() or [""])[-1]
    if result.returncode != 0:
        raise RuntimeError(f"orbchain ledger check failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return f"clean ({last})" if last else "clean"


def transfer_run(target: Target, base: str, workers: int, merchants: list[dict], count: int,
                 root: Path, rounds: int = 1) -> TransferResult:
    """``rounds`` floods of ``count`` transfers; the median rate, every round's failures, one ledger check after."""
    pid = _SERVER_PIDS.get(base)
    cpu_before = cpu_seconds(pid) if pid else 0.0
    runs = [asyncio.run(_transfers(base, merchants, count)) for _ in range(rounds)]
    cpu_us = (cpu_seconds(pid) - cpu_before) / (count * rounds) * 1e6 if pid else 0.0
    rates = sorted(per_second for per_second, _ in runs)
    failed = [status for _, statuses in runs for status in statuses]
    label = f"{count} transfers among {len(merchants)} merchants ({target.name}, {workers} worker(s))"
    if rounds > 1:
        label += f", median of {rounds}: " + " / ".join(f"{rate:,.0f}" for rate in rates)
    statuses = ", ".join(f"{status} x{failed.count(status)}" for status in sorted(set(failed)))
    return TransferResult(label, count, rates[len(rates) // 2], len(failed), ledger_check(target, root), cpu_us,
                          statuses)


# -- the run --------------------------------------------------------------------------------------


def bench_target(target: Target, worker_counts: list[int], bare_base: str, args: argparse.Namespace,
                 root: Path) -> tuple[list[Row], list[TransferResult]]:
    rows: list[Row] = []
    transfers: list[TransferResult] = []
    merchants: list[dict] = []
    command = [*ORBCHAIN, "serve", "--host", "127.0.0.1"]
    log = root / f"gateway-{target.name}.log"
    if target.name == "SQLite" and any(n > 1 for n in worker_counts):
        # One writer at a time in one file: `serve` refuses more than one process on SQLite.
        print("  SQLite: 1 worker only (serve refuses several processes on one SQLite file)", file=sys.stderr)
        worker_counts = [n for n in worker_counts if n == 1]
    for workers in worker_counts:
        flags = ["--workers", str(workers)] if args.pass_workers else []
        print(f"  {target.name}, {workers} worker(s) ...", file=sys.stderr, flush=True)
        with running([*command, *flags], target.gateway_env(), root, log) as base:
            if not target.track_id:
                asyncio.run(prepare(target, base))
            rows.extend(gateway_rows(target, base, workers, bare_base, args))
            if args.transfers:
                if not merchants:
                    merchants = asyncio.run(_merchants(base, args.merchants))
                    asyncio.run(_fund(target.url, merchants, 10**8))
                transfers.append(transfer_run(target, base, workers, merchants, args.transfers, root, args.rounds))
    return rows, transfers


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        print("  ".join(cell.ljust(w) if i == 0 or i == len(row) - 1 else cell.rjust(w)
                        for i, (cell, w) in enumerate(zip(row, widths))).rstrip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds of load per figure (default 5)")
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--databases", default="postgresql,sqlite", help="comma-separated: postgresql, sqlite")
    parser.add_argument("--workers", default="1,2", help="worker counts, when `serve --workers` exists")
    parser.add_argument("--transfers", type=int, default=1000, help="concurrent transfers (0: none)")
    parser.add_argument("--merchants", type=int, default=100)
    parser.add_argument("--requests", default="read,create,page", help="comma-separated: read, create, page")
    parser.add_argument("--pg-dsn", default=default_pg_dsn(),
                        help="PostgreSQL server to bench on (default: $ORBCHAIN_TEST_PG_DSN, else the local"
                             " Unix socket, else 127.0.0.1:5432)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="bare/gateway pairs per figure; the median ratio is reported (default 1)")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write every row (req/s, p99, ratio, CPU us per request) here (bench/compare.py)")
    args = parser.parse_args()
    args.requests = [r for r in args.requests.split(",") if r]
    unknown = set(args.requests) - set(REQUESTS)
    if unknown:
        parser.error(f"unknown requests: {', '.join(sorted(unknown))}")

    wanted = [w for w in args.databases.split(",") if w]
    workers = [int(n) for n in args.workers.split(",") if n]
    args.pass_workers = serve_supports_workers()
    if not args.pass_workers:
        print("`orbchain serve` has no --workers: measuring 1 worker only", file=sys.stderr)
        workers = [1]
    load_before = uptime()
    print(f"load generator: {loadgen.generator_name()}, {args.connections} connections, {args.seconds:g} s per figure")
    print(f"PostgreSQL at: {args.pg_dsn}")
    print(f"machine load before: {load_before}")
    rows: list[Row] = []
    transfers: list[TransferResult] = []
    with tempfile.TemporaryDirectory(prefix="orbchain-bench-") as tmp:
        root = Path(tmp)
        try:
            with running([sys.executable, str(HERE / "bare_app.py")], dict(os.environ), root,
                         root / "bare.log") as bare_base:
                first = bare_figures(bare_base, args.seconds, args.connections)
                dsn = args.pg_dsn
                for name in wanted:
                    if name == "postgresql":
                        if not pg_reachable(dsn):
                            continue
                        with postgres_target(dsn, root) as target:
                            more_rows, more_transfers = bench_target(target, workers, bare_base, args, root)
                    elif name == "sqlite":
                        more_rows, more_transfers = bench_target(sqlite_target(root), workers, bare_base, args, root)
                    else:
                        parser.error(f"unknown database {name!r}")
                    rows += more_rows
                    transfers += more_transfers
                last = bare_figures(bare_base, args.seconds, args.connections)
        except Exception:
            for log in root.glob("*.log"):
                print(f"--- {log.name} (tail)\n{log.read_text(errors='replace')[-2000:]}", file=sys.stderr)
            raise
    baseline = [Row(f"bare aiohttp {verb} (start)", first[verb]) for verb in ("GET", "POST")]
    baseline += [Row(f"bare aiohttp {verb} (end)", last[verb]) for verb in ("GET", "POST")]
    print()
    print_table(["request", "req/s", "p99 ms", "bare req/s", "of bare", "cpu us/req", "errors", "goal"],
                [r.cells() for r in baseline + rows])
    versus = sqlite_versus_postgres(rows)
    if versus:
        print()
        print_table(["SQLite / PostgreSQL", "req/s", "goal"], versus)
    if transfers:
        print()
        print_table(["transfers", "transfers/s", "cpu us/transfer", "failed", "ledger check"],
                    [[t.label, f"{t.per_second:,.0f}", f"{t.cpu_us:,.0f}",
                      str(t.failed) + (f" ({t.statuses})" if t.statuses else ""),
                      t.ledger_check + (f"; goal >={TRANSFER_GOAL:.0f}/s on PostgreSQL" if "Postgre" in t.label
                                        else "")] for t in transfers])
    if args.json:
        write_json(args.json, baseline + rows, load_before)
    print()
    print(f"machine load after:  {uptime()}")
    print("each ratio is to the bare app measured just before that figure (the median pair of --rounds);"
          " other processes on the machine move all figures")
    failures = sum(r.load.errors for r in rows) + sum(t.failed for t in transfers)
    if failures:
        print(f"{failures} requests failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if not shutil.which("wrk"):
        print("wrk not found (Debian: apt-get install wrk): using the slower asyncio client", file=sys.stderr)
    sys.exit(main())
