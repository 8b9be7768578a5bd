"""Soak: a mixed load on two real ``orbchain serve --workers 2`` hosts with faults injected on a schedule.

    .venv/bin/python bench/soak.py --seconds 1800 [--dsn postgresql://postgres@127.0.0.1:5432/postgres]
        [--json out.json] [--fault-every 30] [--fault-seconds 8] [--concurrency 3]

A fresh PostgreSQL database; two hosts (two supervisors, two workers each)
on it; a client spreading over both: payment creates, reads, hosted page
views, devnet payments through the pay form, payouts, internal transfers,
and webhooks to a receiver that fails one delivery in five. Every
``--fault-every`` seconds after the warm-up the next fault of the cycle
lasts ``--fault-seconds``: every database session killed with
``pg_terminate_backend``, a devnet node outage (``orbchain devnet outage``),
the webhook receiver down, one worker SIGKILLed (its host stops and is
restarted here, as a service manager would). The load is paced
(``--pause`` between a client's requests) so the run leaves CPU to others.

At the end it waits for the books to settle. Its verdict (``ok``, the exit
status) is about what happened, never about how much in a time: every error
explained by the fault that caused it (tests/soak_verdict.py: a 500
anywhere fails; a 503 needs Retry-After and a fault of its cause; no answer
only from a host a worker kill took down, until it was back), no payment
create answered 200 missing, every devnet transfer credited exactly once, no
webhook event given up on or still due, ``orbchain ledger check`` clean.
The figures beside it are the bench's, for docs/decisions.md: throughput,
p50 and p99, devnet blocks a second (one job leader across the four
processes), RSS of every process over time and its growth after the
warm-up, and the errors met after a fault's window plus ``GRACE``
(``errors_after_grace``: how long effects lasted). tests/test_soak.py runs
two minutes of it; ``make bench`` three (bench/bench_soak.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aiohttp import web

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.gateway_hosts import (  # noqa: E402 - the test harness, after the path
    BTC_DESTINATION, Client, Host, create_database, drop_database, fetch, gateway_config, orbchain_cli, rss_kib,
    terminate_connections,
)
from tests.soak_verdict import Fault, judge  # noqa: E402

FAULTS = ("db_kill", "node_outage", "receiver_outage", "worker_kill")
GRACE = 15.0  # seconds after a fault within which an error is not counted in the errors_after_grace figure
MIX = (("create", 30), ("read", 25), ("page", 15), ("pay", 12), ("payout", 6), ("transfer", 12))
SETTLE = 120.0  # seconds to wait at the end for every credit and delivery


class FlakyReceiver:
    """A webhook receiver failing every fifth delivery, and all of them while ``down``."""

    def __init__(self) -> None:
        self.down = False
        self.calls = 0
        self.delivered: set[str] = set()
        self._runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.Response:
        self.calls += 1
        body = await request.json()
        if self.down or self.calls % 5 == 0:
            return web.Response(status=503 if self.down else 500)
        self.delivered.add(str(body.get("event_id") or body.get("id")))
        return web.Response(text="ok")

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}/hook"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@dataclass
class Merchant:
    headers: dict[str, dict[str, str]]
    account_id: str
    jwt: str


@dataclass
class Run:
    hosts: list[Host]
    client: Client
    admin_dsn: str
    dsn: str
    config: Path
    receiver: FlakyReceiver
    started: float = field(default_factory=time.monotonic)
    faults: list[Fault] = field(default_factory=list)  # as injected; a worker kill's ``back`` is set at the end
    backs: list[tuple[str, float]] = field(default_factory=list)  # (host, when its restart answered)
    created: list[str] = field(default_factory=list)  # track ids answered 200
    payable: list[str] = field(default_factory=list)
    rss: dict[str, list[tuple[float, int]]] = field(default_factory=dict)  # "host/pid" -> (t, KiB)
    restarts: int = 0
    stopping: bool = False


async def signup(client: Client, email: str) -> Merchant:
    answer = await client.until_ok("POST", "/dashboard/auth/signup", {}, {"email": email, "password": "soak-pass-1"})
    data = answer.body["data"]
    keys, jwt = data["api_keys"], {"Authorization": f"Bearer {data['token']}"}
    account = await client.until_ok("GET", "/dashboard/account", jwt)
    return Merchant({"merchant": {"merchant_api_key": keys["merchant_api_key"]},
                     "payout": {"payout_api_key": keys["payout_api_key"]}},
                    account.body["data"]["account"]["account_id"], data["token"])


async def pay(run: Run, track_id: str, amount: str | None = None) -> int | str:
    form = {"amount": amount} if amount else {}
    answer = await run.client.request("POST", f"/pay/{track_id}/devnet-pay", route="/pay/{id}/devnet-pay",
                                      data=form, allow_redirects=False)
    return answer.status


async def fund(run: Run, merchant: Merchant, btc: str) -> None:
    """One devnet deposit of ``btc`` credited to ``merchant`` (the float for payouts and transfers)."""
    answer = await run.client.until_ok("POST", "/v1/payment/invoice", merchant.headers["merchant"],
                                       {"currency": "BTC", "amount": btc, "pay_currency": "BTC"})
    track_id = answer.body["data"]["track_id"]
    run.created.append(track_id)
    assert await pay(run, track_id) == 303
    deadline = time.monotonic() + 60
    while (await run.client.json("GET", f"/v1/payment/{track_id}", merchant.headers["merchant"])).body["data"][
            "status"] != "Paid":
        assert time.monotonic() < deadline, "the float was not credited"
        await asyncio.sleep(0.5)


async def load(run: Run, a: Merchant, b: Merchant, pause: float, rng: random.Random) -> None:
    """One client: a weighted mix of operations until the run stops."""
    ops, weights = zip(*MIX)
    while not run.stopping:
        op = rng.choices(ops, weights)[0]
        if op == "create" or not run.created:
            # Invoices (a hosted page, the pay form) paid in BTC: the address exists from the start.
            answer = await run.client.json("POST", "/v1/payment/invoice", a.headers["merchant"],
                                           {"currency": "BTC", "amount": "0.0001", "pay_currency": "BTC"},
                                           route="/v1/payment/invoice")
            if answer.status == 200:
                run.created.append(answer.body["data"]["track_id"])
                run.payable.append(answer.body["data"]["track_id"])
        elif op == "read":
            track_id = rng.choice(run.created)
            await run.client.request("GET", f"/v1/payment/{track_id}", route="/v1/payment/{id}",
                                     headers=a.headers["merchant"])
        elif op == "page":
            await run.client.request("GET", f"/pay/{rng.choice(run.created)}", route="/pay/{id}")
        elif op == "pay" and run.payable:
            await pay(run, run.payable.pop(rng.randrange(len(run.payable))))
        elif op == "payout":
            await run.client.json("POST", "/v1/payout", a.headers["payout"],
                                  {"currency": "BTC", "address": BTC_DESTINATION, "amount": "0.0001"},
                                  route="/v1/payout")
        elif op == "transfer":
            await run.client.json("POST", "/v1/transfer", a.headers["merchant"],
                                  {"to_account_id": b.account_id, "coin": "BTC", "amount": "0.000001",
                                   "idempotency_key": secrets.token_hex(8)}, route="/v1/transfer")
        await asyncio.sleep(pause)


async def inject(run: Run, fault: str, seconds: float) -> None:
    """One fault lasting about ``seconds``; its window is recorded for the 5xx accounting."""
    start = time.monotonic()
    if fault == "db_kill":
        end = start + seconds
        while time.monotonic() < end:  # a database that keeps dropping its sessions for the window
            await terminate_connections(run.admin_dsn, run.dsn)
            await asyncio.sleep(2)
    elif fault == "node_outage":
        # What ``orbchain devnet outage on|off`` writes, without a CLI start (seconds under load) in the window.
        await fetch(run.dsn, "INSERT INTO devnet_outage (one, since) VALUES (1, 0)")
        await asyncio.sleep(seconds)
        await fetch(run.dsn, "DELETE FROM devnet_outage")
    elif fault == "receiver_outage":
        run.receiver.down = True
        await asyncio.sleep(seconds)
        run.receiver.down = False
    elif fault == "worker_kill":
        run.hosts[-1].kill_worker()  # the last host only: the first keeps its processes for the RSS trend
        await asyncio.sleep(seconds)
    host = run.hosts[-1].name if fault == "worker_kill" else None
    run.faults.append(Fault(fault, start, time.monotonic(), host))


async def clear_faults(run: Run) -> None:
    run.receiver.down = False
    await fetch(run.dsn, "DELETE FROM devnet_outage")


async def faults(run: Run, warmup: float, every: float, seconds: float) -> None:
    await asyncio.sleep(warmup)
    for fault in _cycle():
        if run.stopping:
            return
        await inject(run, fault, seconds)
        await asyncio.sleep(max(0.0, every - seconds))


def _cycle():
    while True:
        yield from FAULTS


async def supervise(run: Run, sample_every: float) -> None:
    """Restart a host whose set stopped (a service manager's job); sample every process's RSS."""
    last_sample = 0.0
    while not run.stopping:
        for host in run.hosts:
            if not host.alive():
                run.restarts += 1
                await restart(run, host)
        if time.monotonic() - last_sample >= sample_every:
            last_sample = time.monotonic()
            for host in run.hosts:
                for pid in host.pids():
                    if (kib := rss_kib(pid)):
                        run.rss.setdefault(f"{host.name}/{pid}", []).append((last_sample - run.started, kib))
        await asyncio.sleep(0.5)


async def restart(run: Run, host: Host) -> None:
    """Start ``host`` again; when it answers, it is back (the end of what its worker kill explains)."""
    await host.start()
    run.backs.append((host.name, time.monotonic()))


def with_backs(run: Run) -> list[Fault]:
    """The faults, each worker kill with the moment its host was first back after it."""
    return [replace(f, back=next((t for name, t in run.backs if name == f.host and t >= f.start), None))
            if f.kind == "worker_kill" else f for f in run.faults]


def in_window(run: Run, sent: float, answered: float) -> bool:
    """Whether a request in flight from ``sent`` to ``answered`` overlaps a fault window or its grace (a figure).

    A request sent a moment before a fault began and answered after it (a database session killed under
    it) met the fault: 503 at "50.1 s" for a window from 50.1 s was counted outside before.
    """
    return any(sent <= f.end + GRACE and answered >= f.start for f in run.faults)


async def devnet_height(dsn: str) -> int:
    return (await fetch(dsn, "SELECT max(height) AS h FROM devnet_blocks"))[0]["h"] or 0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def rss_points(run: Run, warmup: float) -> dict[str, tuple[int, int, int]]:
    """KiB at the start, after the warm-up and at the end (the largest of the last three samples), per process
    sampled before the warm-up's end and at least twice after it (a killed worker's end is its last sample).

    The baseline is the first sample after the warm-up, not the start: a process grows from cold to
    steady (modules imported on first use, templates compiled, pool connections opened, the bounded
    caches filling), which is not a leak; docs/decisions.md, "Worker RSS after warm-up".
    """
    points = {}
    for name, samples in run.rss.items():
        after = [kib for t, kib in samples if t >= warmup]
        if samples[0][0] <= warmup and len(after) >= 2:
            points[name] = (samples[0][1], after[0], max(after[-3:]))
    return points


def rss_growth(points: dict[str, tuple[int, int, int]]) -> dict[str, float]:
    """RSS growth in % from after the warm-up to the end, per process of ``rss_points``."""
    return {name: round(100.0 * (end - base) / base, 1) for name, (_, base, end) in points.items()}


async def settle(run: Run) -> dict[str, Any]:
    """Wait until every devnet transfer to a payment is credited and the outbox is empty; what is still off."""
    deadline = time.monotonic() + SETTLE
    while True:
        uncredited = await fetch(run.dsn, """
            SELECT t.tx_hash FROM devnet_txs t JOIN deposit_addresses a ON a.address = t.address
            LEFT JOIN deposits d ON d.tx_hash = t.tx_hash AND d.output_index = t.output_index AND d.credited
            WHERE d.id IS NULL""")
        # Undelivered events: due within a minute (still settling), scheduled later (a retry after an outage
        # waits up to 10 min: core/events/attempts.py), or given up on (lost).
        events = {r["state"]: r["n"] for r in await fetch(run.dsn, """
            SELECT CASE WHEN status = 'delivered' THEN 'delivered'
                        WHEN status <> 'pending' THEN 'lost'
                        WHEN next_attempt_at <= extract(epoch FROM now()) + 60 THEN 'due'
                        ELSE 'retry_later' END AS state, count(*) AS n
            FROM webhook_events GROUP BY 1""")}
        if (not uncredited and not events.get("due")) or time.monotonic() > deadline:
            return {"uncredited": len(uncredited), "webhooks": events}
        await asyncio.sleep(1)


async def soak(admin_dsn: str, seconds: float, workdir: Path, *, fault_every: float = 30, fault_seconds: float = 8,
               concurrency: int = 3, pause: float = 0.05, warmup: float | None = None, seed: int = 1,
               keep_database: bool = False) -> dict[str, Any]:
    warmup = seconds / 3 if warmup is None else warmup
    dsn = await create_database(admin_dsn, "orbchain_soak")
    receiver = FlakyReceiver()
    hook = await receiver.start()
    config = gateway_config(workdir / "orbchain.toml", dsn, workdir / "var")
    migrated = await asyncio.to_thread(orbchain_cli, config, "migrate")
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    hosts = [Host(name, config, workdir, 2) for name in ("a", "b")]
    run = Run(hosts, Client(hosts), admin_dsn, dsn, config, receiver)
    tasks: list[asyncio.Task] = []
    try:
        await asyncio.gather(*(host.start() for host in hosts))
        a, b = await signup(run.client, "a@soak.example"), await signup(run.client, "b@soak.example")
        for merchant in (a, b):
            await run.client.until_ok("PUT", "/dashboard/settings/webhook", {"Authorization": f"Bearer {merchant.jwt}"},
                                      {"webhook_url": hook})
        await fund(run, a, "10")
        run.client.answers.clear()
        run.started, first_height = time.monotonic(), await devnet_height(dsn)
        rng = random.Random(seed)
        tasks = [asyncio.create_task(supervise(run, max(5.0, seconds / 120))),
                 asyncio.create_task(faults(run, warmup, fault_every, fault_seconds))]
        tasks += [asyncio.create_task(load(run, a, b, pause, random.Random(rng.random()))) for _ in range(concurrency)]
        await asyncio.sleep(seconds)
        run.stopping = True
        await asyncio.gather(*tasks[2:])
        tasks[1].cancel()
        await asyncio.gather(tasks[1], return_exceptions=True)
        await clear_faults(run)  # a fault cut short by the end must not outlive it
        await tasks[0]
        elapsed, mined = time.monotonic() - run.started, await devnet_height(dsn) - first_height
        for host in hosts:  # a host killed by the last fault comes back before the books are read
            if not host.alive():
                await restart(run, host)
        settled = await settle(run)
        existing = {r["track_id"] for r in await fetch(dsn, "SELECT track_id FROM payments")}
        twice = await fetch(dsn, "SELECT id FROM deposits WHERE credit_count > 1")
        ledger = await asyncio.to_thread(orbchain_cli, config, "ledger", "check")
        answers = run.client.answers
        problems = judge(answers, with_backs(run), run.started)
        outside = [x for x in answers if not in_window(run, x.at, x.at + x.seconds)]
        late = [f"{x.method} {x.route} on {x.host} at {x.at - run.started:.1f} s: {x.status} {_code(x.body)}"
                for x in outside if x.status == "no answer" or (isinstance(x.status, int) and x.status >= 500)]
        latencies = [x.seconds for x in outside]
        points = rss_points(run, warmup)
        report = {
            "seconds": round(elapsed, 1), "requests": len(answers),
            "throughput_rps": round(len(answers) / elapsed, 1),
            "creates_per_s": round(sum(x.route == "/v1/payment/invoice" and x.status == 200 for x in answers)
                                   / elapsed, 1),
            "devnet_blocks_per_s": round(mined / elapsed, 2),  # block_seconds = 1: one leader mines one a second
            "p50_ms": round(1000 * percentile(latencies, 0.5), 1),
            "p99_ms": round(1000 * percentile(latencies, 0.99), 1),
            "by_status": _count(str(x.status) for x in answers),
            "by_route": _count(f"{x.method} {x.route} {x.status}" for x in answers),
            "refusals": sorted({f"{x.route} {x.status} {_code(x.body)}" for x in answers
                                if isinstance(x.status, int) and 400 <= x.status < 500})[:20],
            "faults": [(f.kind, round(f.start - run.started, 1), round(f.end - f.start, 1)) for f in run.faults],
            "host_restarts": run.restarts,
            "problems": problems[:50], "problems_count": len(problems),
            "errors_after_grace": late[:50], "errors_after_grace_count": len(late),
            "creates_ok": len(run.created), "creates_lost": sorted(set(run.created) - existing),
            **settled, "double_credits": len(twice),
            "webhooks_delivered": len(receiver.delivered),
            "ledger_check": {"status": ledger.returncode, "output": (ledger.stdout + ledger.stderr).strip()[-500:]},
            "rss_kib": run.rss, "rss_start_warm_end_kib": points, "rss_growth_pct": rss_growth(points),
        }
        report["ok"] = bool(not problems and not report["creates_lost"] and not settled["uncredited"]
                            and not settled["webhooks"].get("lost") and not settled["webhooks"].get("due")
                            and not twice and ledger.returncode == 0)
        return report
    finally:
        run.stopping = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.to_thread(lambda: [host.stop() for host in hosts])
        await run.client.close()
        await receiver.close()
        if not keep_database:
            await drop_database(admin_dsn, dsn)


def _code(body: Any) -> str:
    return str(body.get("error") or body.get("code") or body)[:120] if isinstance(body, dict) else str(body)[:80]


def _count(items: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


def summary(report: dict[str, Any]) -> str:
    """The report without the RSS series (``rss_start_warm_end_kib`` has each process's start, warm and end)."""
    return json.dumps({k: v for k, v in report.items() if k != "rss_kib"}, indent=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--dsn", default=os.environ.get("ORBCHAIN_TEST_PG_DSN",
                                                        "postgresql://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--fault-every", type=float, default=30)
    parser.add_argument("--fault-seconds", type=float, default=8)
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--pause", type=float, default=0.05, help="seconds between one client's requests")
    parser.add_argument("--warmup", type=float, default=None,
                        help="seconds before the first fault; also the RSS baseline (default: a third of --seconds)")
    parser.add_argument("--json", type=Path, help="write the whole report (with the RSS series) here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="orbchain-soak-") as tmp:
        report = asyncio.run(soak(args.dsn, args.seconds, Path(tmp), fault_every=args.fault_every,
                                  fault_seconds=args.fault_seconds, concurrency=args.concurrency, pause=args.pause,
                                  warmup=args.warmup))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    print(summary(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
