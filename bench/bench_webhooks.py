"""Webhook delivery throughput and first-attempt latency (issue 31, P5).

A scratch database (PostgreSQL by default: ``ORBCHAIN_TEST_PG_DSN``, else the
local server's socket, as bench_hotpath.py; ``--databases sqlite`` too) gets
``--endpoints`` merchants, each with its own endpoint on one local aiohttp
receiver that runs in a subprocess and verifies every signature the way a
merchant would (HMAC-SHA512 of the raw body with that merchant's secret).

1. Backlog: ``--events`` events (10,000) are enqueued spread over the
   merchants, then the delivery job (``deliver_due``, what the scheduler
   runs) runs until nothing is pending. Reported: deliveries/s from the first
   run's start to the last receipt, p50/p99 enqueue -> receipt.
2. Trickle: ``--trickle`` events enqueued one transaction at a time at
   ``--rate``/s while a stand-in for the scheduler runs the job every
   ``webhooks.tick_seconds`` and whenever it hears the ``wake`` signal for it
   (one run at a time; a wake during a run asks for one more). Reported:
   p50/p99 enqueue -> receipt, i.e. how long a new event waits for its first
   attempt.

Checked (a failure fails the run): every event received exactly once with a
valid signature, and per endpoint in the outbox's due order (when due, then
event id; see ``check``) with never two requests to one endpoint at once. The highest
number of requests in flight is printed too. No figure fails the run.

    .venv/bin/python bench/bench_webhooks.py [--events 10000] [--endpoints 20] [--trickle 200] [--rate 50]
        [--databases postgresql,sqlite] [--pg-dsn DSN]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench_hotpath import default_pg_dsn, free_port, postgres_target, sqlite_target, uptime
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.events.outbox import OutboxEvent, enqueue_events
from orbchain.core.events.webhooks import deliver_due
from orbchain.core.infra.config import load_config
from orbchain.core.infra.migrate import migrate
from orbchain.core.startup import build_gateway

ENQUEUE_BATCH = 500
WAKE_TOPIC = "wake"
JOB = "webhooks.deliver"


def secret_of(endpoint: int) -> str:
    return f"whsec_bench_{endpoint:04d}_" + "s" * 24


# -- the receiver (a subprocess: its own core, as a merchant's server would be) -----------------------


class Receiver:
    """Verifies each signature and records (endpoint, event id, arrival time) in arrival order."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, str, float]] = []
        self.bad = 0
        self.busy: Counter[int] = Counter()
        self.most_per_endpoint = 0
        self.in_flight = 0
        self.most_in_flight = 0

    async def hook(self, request: web.Request) -> web.Response:
        arrived = time.time()
        endpoint = int(request.match_info["n"])
        self.busy[endpoint] += 1
        self.in_flight += 1
        self.most_per_endpoint = max(self.most_per_endpoint, self.busy[endpoint])
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            raw = await request.read()
            expected = hmac.new(secret_of(endpoint).encode(), raw, hashlib.sha512).hexdigest()
            if not hmac.compare_digest(expected, request.headers.get("HMAC", "")):
                self.bad += 1
                return web.Response(status=401)
            self.seen.append((endpoint, request.headers["X-Event-Id"], arrived))
            await asyncio.sleep(0)  # let another request to the same endpoint overlap, if one was sent
            return web.Response(text="ok")
        finally:
            self.busy[endpoint] -= 1
            self.in_flight -= 1

    async def results(self, request: web.Request) -> web.Response:
        return web.json_response({"seen": self.seen, "bad": self.bad, "most_per_endpoint": self.most_per_endpoint,
                                  "most_in_flight": self.most_in_flight})

    async def reset(self, request: web.Request) -> web.Response:
        self.__init__()  # type: ignore[misc]
        return web.Response(text="ok")


def serve_receiver(port: int) -> None:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/hook/{n}", receiver.hook)
    app.router.add_get("/results", receiver.results)
    app.router.add_post("/reset", receiver.reset)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


async def receiver_call(base: str, method: str, path: str) -> Any:
    async with aiohttp.ClientSession() as http:
        for _ in range(100):
            try:
                async with http.request(method, base + path) as response:
                    return await response.json() if path == "/results" else await response.text()
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.1)
    raise RuntimeError("the receiver did not start")


# -- the gateway side ------------------------------------------------------------------------------------


class Scheduler:
    """Stands in for scheduler/runner.py: the job on its tick and on a ``wake`` naming it, one run at a time."""

    def __init__(self, gateway: Any) -> None:
        self.gateway = gateway
        self.running: asyncio.Task | None = None
        self.again = False
        self.runs = 0
        self.wakes = 0
        self.held = False  # while the backlog is written: neither ticks nor wakes start a run

    def wake(self, name: str) -> None:
        if name != JOB:
            return
        self.wakes += 1
        self.start()

    def start(self) -> None:
        if self.held:
            return
        if self.running is not None:
            self.again = True
            return
        self.running = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            self.again = False
            self.runs += 1
            await deliver_due(self.gateway)
            if not self.again:
                break
        self.running = None

    async def ticks(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            self.start()


async def add_merchants(gateway: Any, port: int, count: int) -> list[str]:
    ids = []
    for n in range(count):
        merchant_id = f"m_bench_{n:04d}"
        await gateway.db.execute(
            "INSERT INTO merchants (id, account_id, email, password_hash, key_account, accepted_coins,"
            " webhook_url, webhook_secret, created_at, updated_at)"
            " VALUES (:id, :acct, :email, 'x', :ka, '[]', :url, :secret, :now, :now)",
            {"id": merchant_id, "acct": "OC-" + merchant_id, "email": f"{merchant_id}@example.com", "ka": 1000 + n,
             "url": f"http://127.0.0.1:{port}/hook/{n}", "secret": secret_of(n), "now": gateway.now()})
        ids.append(merchant_id)
    return ids


def event(merchant_id: str, key: str) -> OutboxEvent:
    body = {"type": "payment", "track_id": key, "status": "Paid", "amount": "0.00150000", "currency": "BTC"}
    return OutboxEvent(merchant_id, "payment.paid", body, f"bench:{key}")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


async def check(gateway: Any, base: str, enqueued: dict[str, float], *, one_run: bool = True) -> dict[str, Any]:
    """Exactly once, valid signatures, one request at a time per endpoint, in order; failures are listed.

    The order per endpoint is the outbox's due order: when due (whole
    seconds), then event id for what one run claims (``one_run``: the
    backlog); events of one second that woke separate runs arrive in the
    order they committed, so there only the seconds are compared.
    """
    got = await receiver_call(base, "GET", "/results")
    counts = Counter(event_id for _, event_id, _ in got["seen"])
    missing = [e for e in enqueued if counts[e] == 0]
    twice = [e for e, n in counts.items() if n > 1]
    strangers = [e for e in counts if e not in enqueued]
    rows = await gateway.db.fetch_all("SELECT event_id, merchant_id, created_at FROM webhook_events")
    due = {row["event_id"]: (int(row["created_at"]), row["event_id"] if one_run else "")
           for row in rows if row["event_id"] in enqueued}
    arrivals: dict[int, list[str]] = defaultdict(list)
    for endpoint, event_id, _ in got["seen"]:
        arrivals[endpoint].append(event_id)
    out_of_order = [n for n, ids in arrivals.items() if ids != sorted(ids, key=lambda e: due.get(e, (0, e)))]
    problems = []
    if missing or twice or strangers or got["bad"]:
        problems.append(f"{len(missing)} missing, {len(twice)} received twice, {len(strangers)} unknown,"
                        f" {got['bad']} bad signatures")
    if out_of_order:
        problems.append(f"{len(out_of_order)} endpoint(s) received events out of order")
    if got["most_per_endpoint"] > 1:
        problems.append(f"up to {got['most_per_endpoint']} requests at once to one endpoint")
    latencies = [arrived - enqueued[event_id] for _, event_id, arrived in got["seen"] if event_id in enqueued]
    return {"problems": problems, "latencies": latencies, "last": max(a for _, _, a in got["seen"]),
            "in_flight": got["most_in_flight"]}


async def run(url: str, data_dir: Path, args: argparse.Namespace, base: str, port: int) -> list[str]:
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(data_dir), "environment": "development"},
        database={"url": url}, webhooks={"allow_private_urls": True})
    gateway = build_gateway(config, get_plugin_manager(blocked=config.plugins.blocked))
    await gateway.db.connect()
    failures: list[str] = []
    try:
        await migrate(gateway.db, gateway.migrations)
        merchants = await add_merchants(gateway, port, args.endpoints)

        scheduler = Scheduler(gateway)
        unsubscribe = gateway.signals.subscribe(WAKE_TOPIC, scheduler.wake)
        ticking = asyncio.get_running_loop().create_task(scheduler.ticks(config.webhooks.tick_seconds))
        try:
            failures += await backlog(gateway, scheduler, merchants, base, args)
            failures += await trickle(gateway, scheduler, merchants, base, args)
        finally:
            ticking.cancel()
            unsubscribe()
            if scheduler.running is not None:
                await scheduler.running
    finally:
        await gateway.db.disconnect()
    return failures


async def pending(gateway: Any) -> int:
    return int(await gateway.db.fetch_val("SELECT COUNT(*) FROM webhook_events WHERE status = 'pending'"))


async def drained(gateway: Any, *, seconds: float) -> None:
    """Wait until nothing is pending, for at most ``seconds`` (the checks then tell what is missing)."""
    for _ in range(int(seconds / 0.05)):
        if not await pending(gateway):
            return
        await asyncio.sleep(0.05)


async def backlog(gateway: Any, scheduler: Scheduler, merchants: list[str], base: str,
                  args: argparse.Namespace) -> list[str]:
    """Enqueue the backlog in a few large transactions with the job held, then let it drain from the first run."""
    await receiver_call(base, "POST", "/reset")
    enqueued: dict[str, float] = {}
    scheduler.held = True
    for start in range(0, args.events, ENQUEUE_BATCH):
        batch = [event(merchants[i % len(merchants)], f"backlog-{i}")
                 for i in range(start, min(args.events, start + ENQUEUE_BATCH))]
        async with gateway.db.transaction():
            ids = await enqueue_events(gateway, batch)
        enqueued.update(dict.fromkeys(ids, time.time()))
    scheduler.held = False
    scheduler.runs = scheduler.wakes = 0
    started = time.time()
    scheduler.start()
    await drained(gateway, seconds=600)
    result = await check(gateway, base, enqueued)
    elapsed = result["last"] - started
    lat = result["latencies"]
    print(f"  backlog {args.events} events to {args.endpoints} endpoints: {len(enqueued) / elapsed:,.0f}"
          f" deliveries/s ({elapsed:.1f} s, {scheduler.runs} run(s) of the job, up to {result['in_flight']}"
          f" in flight); enqueue->receipt p50 {percentile(lat, .5):.2f} s, p99 {percentile(lat, .99):.2f} s")
    return [f"backlog: {p}" for p in result["problems"]]


async def trickle(gateway: Any, scheduler: Scheduler, merchants: list[str], base: str,
                  args: argparse.Namespace) -> list[str]:
    """One event per transaction at ``--rate``/s: how long a new event waits for its first attempt."""
    await receiver_call(base, "POST", "/reset")
    scheduler.runs = scheduler.wakes = 0
    trickled: dict[str, float] = {}
    for i in range(args.trickle):
        async with gateway.db.transaction():
            [event_id] = await enqueue_events(gateway, [event(merchants[i % len(merchants)], f"new-{i}")])
        trickled[event_id] = time.time()
        await asyncio.sleep(1 / args.rate)
    await drained(gateway, seconds=gateway.config.webhooks.tick_seconds * 3)
    result = await check(gateway, base, trickled, one_run=False)
    lat = [1000 * s for s in result["latencies"]]
    print(f"  trickle {args.trickle} events at {args.rate:g}/s, tick {gateway.config.webhooks.tick_seconds} s:"
          f" enqueue->receipt p50 {percentile(lat, .5):,.0f} ms, p99 {percentile(lat, .99):,.0f} ms"
          f" ({scheduler.wakes} wake(s) heard, {scheduler.runs} run(s))")
    return [f"trickle: {p}" for p in result["problems"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--endpoints", type=int, default=20)
    parser.add_argument("--trickle", type=int, default=200)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--databases", default="postgresql")
    parser.add_argument("--pg-dsn", default=default_pg_dsn())
    parser.add_argument("--serve-receiver", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_receiver:
        serve_receiver(args.serve_receiver)
        return 0
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    receiver = subprocess.Popen([sys.executable, __file__, "--serve-receiver", str(port)])
    failures: list[str] = []
    print(f"load before: {uptime()}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            for name in args.databases.split(","):
                print(name)
                if name == "postgresql":
                    with postgres_target(args.pg_dsn, root) as target:
                        failures += asyncio.run(run(target.url, target.data_dir, args, base, port))
                else:
                    target = sqlite_target(root)
                    failures += asyncio.run(run(target.url, target.data_dir, args, base, port))
    finally:
        receiver.terminate()
        receiver.wait(10)
    print(f"load after: {uptime()}")
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
