"""Latency from broadcast to the payer's page and to the merchant's webhook (issue 31), push on and off.

Starts a litecoind regtest node listening for peers (the flags docs/bitcoin.md
gives operators) and anvil with ``--no-mining`` (blocks only on demand), then,
once per mode, ``orbchain serve`` on a scratch PostgreSQL database
(``--pg-dsn``, as bench_hotpath.py) with both chains configured: litecoin
through the node's P2P port, ethereum with ``ws_url`` (eth_subscribe
newHeads), scan intervals at their MAINNET defaults (litecoin 30 s, set
explicitly as regtest's default is 5 s; ethereum 5 s). Mode "push on" is the
default; "push off" is the same gateway with ``ORBCHAIN_SCHEDULER__PUSH=false``.
One merchant's webhook URL points at a receiver in this process that checks
every HMAC-SHA512 signature with the merchant's webhook secret.

Per chain, ``--payments`` invoices in waves of ``--concurrency`` (the two
chains run side by side): create the invoices, open each one's live stream
(``GET /pay/{id}/events``), and the payer sends the exact amount. Recorded:

(a) broadcast -> the stream's first event that is not Waiting (Paying).
    litecoin: from the moment the node accepted the transaction
    (``sendrawtransaction`` returned). ethereum: the gateway watches blocks,
    not the pool, so from the moment the block holding the wave's
    transactions was mined (``evm_mine`` returned).
(b) confirming block mined -> the signed ``payment.paid`` received: the
    blocks still missing (``confirmations_required`` of the Paying event) are
    mined in one call; from its return.

Printed: p50/p99 of (a) and (b) per chain and mode as one table, with the
machine load (uptime) before and after each mode. The issue's goal with
push: p50 < 1 s, p99 < 2 s on both chains. No figure fails the run; a lost
payment (no Paying event, no ``payment.paid`` within ``--wait`` seconds), a
duplicate ``payment.paid`` or a bad signature does.

    .venv/bin/python bench/bench_latency.py [--payments 200] [--concurrency 10] [--modes on,off]
        [--chains litecoin,ethereum] [--wait 180] [--pg-dsn DSN]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import random
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench_hotpath import ORBCHAIN, default_pg_dsn, free_port, postgres_target, running, uptime

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.anvil import PAYER, Anvil, launch_anvil  # noqa: E402 - the test nodes, after the path
from tests.litecoind import COINBASE_MATURITY, Faucet, Node, start_node, stop  # noqa: E402
from tests.live_support import EventStream  # noqa: E402

AMOUNT = "0.01"
COINS = {"litecoin": ("LTC", 8), "ethereum": ("ETH", 18)}
# litecoin: docs/bitcoin.md's mainnet default (regtest's would be 5); ethereum: docs/evm.md's, every network.
SCAN_SECONDS = {"litecoin": 30, "ethereum": 5}
STREAM_READ_SECONDS = 60.0  # one read of an event stream (heartbeats come every 15 s)
GOAL_P50, GOAL_P99 = 1.0, 2.0


class Lost(RuntimeError):
    """A payment that never showed Paying or whose payment.paid never came, or a bad webhook."""


# -- the merchant's receiver ------------------------------------------------------------------------


class Receiver:
    """Verifies every webhook's signature; records when each ``payment.paid`` arrived, by track id."""

    def __init__(self) -> None:
        self.secret = ""
        self.paid: dict[str, float] = {}
        self.duplicates: list[str] = []
        self.bad = 0
        self.arrived = asyncio.Event()

    async def hook(self, request: web.Request) -> web.Response:
        arrived = time.time()
        raw = await request.read()
        expected = hmac.new(self.secret.encode(), raw, hashlib.sha512).hexdigest()
        if not self.secret or not hmac.compare_digest(expected, request.headers.get("HMAC", "")):
            self.bad += 1
            return web.Response(status=401)
        body = json.loads(raw)
        if body["event_type"] == "payment.paid":
            if body["track_id"] in self.paid:
                self.duplicates.append(body["track_id"])
            self.paid.setdefault(body["track_id"], arrived)
            self.arrived.set()
        return web.Response(text="ok")

    async def until(self, track_ids: list[str], seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while missing := [t for t in track_ids if t not in self.paid]:
            if self.bad:
                raise Lost(f"{self.bad} webhook(s) with a bad signature")
            left = deadline - time.monotonic()
            if left <= 0:
                raise Lost(f"no payment.paid within {seconds:.0f} s for {len(missing)} payment(s): {missing[:3]}")
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), left)
            except TimeoutError:
                pass

    async def start(self) -> tuple[str, web.AppRunner]:
        app = web.Application()
        app.router.add_post("/hook", self.hook)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        return f"http://127.0.0.1:{port}/hook", runner


# -- the payers -------------------------------------------------------------------------------------


@dataclass
class Payers:
    """The two nodes and how a payer sends on each (blocking RPC, run in threads)."""

    faucet: Faucet
    anvil: Anvil

    def send(self, chain: str, address: str, units: int) -> None:
        if chain == "litecoin":
            self.faucet.pay(address, units)
        else:
            self.anvil.rpc("eth_sendTransaction", {"from": PAYER, "to": address, "value": hex(units)})

    def include(self, chain: str) -> None:
        """ethereum: mine the block holding the wave's transactions (litecoin: the mempool is seen)."""
        if chain == "ethereum":
            self.anvil.rpc("evm_mine")

    def confirm(self, chain: str, blocks: int) -> None:
        if blocks <= 0:
            return
        if chain == "litecoin":
            self.faucet.mine(blocks)
        else:
            self.anvil.rpc("anvil_mine", hex(blocks))


# -- one mode: a gateway, a merchant, the waves -----------------------------------------------------


@dataclass
class Samples:
    to_page: list[float] = field(default_factory=list)  # (a)
    to_webhook: list[float] = field(default_factory=list)  # (b)
    page_paid: list[float] = field(default_factory=list)  # confirming block -> the stream's Paid (for reference)


async def _data(session: aiohttp.ClientSession, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
    async with session.request(method, url, **kwargs) as response:
        body = await response.json()
        if response.status != 200:
            raise RuntimeError(f"{method} {url}: {response.status} {body}")
        return body["data"]


class Watch:
    """One invoice's live stream: when it first left Waiting (and its confirmations needed), when it showed Paid."""

    def __init__(self, session: aiohttp.ClientSession, base: str, invoice: dict[str, Any]) -> None:
        self.session, self.base, self.invoice = session, base, invoice
        self.track_id: str = invoice["track_id"]
        self.opened = asyncio.Event()
        self.moving = asyncio.Event()
        self.moved_at = self.paid_at = 0.0
        self.required = 0
        self.error: BaseException | None = None
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            await self._follow()
        except Exception as exc:  # noqa: BLE001 - the wave reports it; the waits must not hang on it
            self.error = exc
            self.opened.set()
            self.moving.set()

    async def _follow(self) -> None:
        async with self.session.get(f"{self.base}/pay/{self.track_id}/events") as response:
            if response.status != 200:
                raise Lost(f"stream of {self.track_id}: {response.status} {await response.text()}")
            stream = EventStream(response)
            first = await stream.event(STREAM_READ_SECONDS)
            if first is None or first["status"] != "Waiting":
                raise Lost(f"stream of {self.track_id} started with {first}")
            self.opened.set()
            while (state := await stream.event(STREAM_READ_SECONDS)) is not None:
                now = time.time()
                if not self.moving.is_set():
                    self.moved_at, self.required = now, int(state["confirmations_required"] or 0)
                    self.moving.set()
                if state["status"] == "Paid":
                    self.paid_at = now
                    return


async def wave(chain: str, count: int, base: str, session: aiohttp.ClientSession, key: str, payers: Payers,
               receiver: Receiver, samples: Samples | None, wait: float, phase: float) -> None:
    """``count`` payments on ``chain`` from invoice to payment.paid; their figures into ``samples`` (None: warm-up).

    ``phase`` (push off: the chain's scan interval) spreads the broadcasts and delays the confirming blocks at
    random within it: a wave starts just after the scan that ended the last one, so without it every payment
    would wait a whole interval and the figures would be the worst case, not the poll's spread.
    """
    symbol, decimals = COINS[chain]
    invoices = await asyncio.gather(*(
        _data(session, "POST", base + "/v1/payment/invoice", headers={"merchant_api_key": key},
              json={"currency": symbol, "amount": AMOUNT}) for _ in range(count)))
    watches = [Watch(session, base, invoice) for invoice in invoices]

    def check() -> None:
        if failed := [w for w in watches if w.error is not None]:
            raise Lost(f"{chain}: {len(failed)} stream(s) failed, first: {failed[0].error!r}")

    try:
        await asyncio.wait_for(asyncio.gather(*(w.opened.wait() for w in watches)), wait)
        check()
        broadcast: dict[str, float] = {}
        start = time.monotonic()
        spread = sorted(random.uniform(0, phase) if chain == "litecoin" else 0.0 for _ in watches)
        for w, offset in zip(watches, spread):
            await asyncio.sleep(start + offset - time.monotonic())
            units = int(Decimal(w.invoice["pay_amount"]).scaleb(decimals))
            await asyncio.to_thread(payers.send, chain, w.invoice["address"], units)
            broadcast[w.track_id] = time.time()
        if chain == "ethereum":
            await asyncio.sleep(random.uniform(0, phase))
            await asyncio.to_thread(payers.include, chain)
            broadcast = dict.fromkeys(broadcast, time.time())
        try:
            await asyncio.wait_for(asyncio.gather(*(w.moving.wait() for w in watches)), wait)
        except TimeoutError:
            stuck = [w.track_id for w in watches if not w.moving.is_set()]
            raise Lost(f"{chain}: no Paying event within {wait:.0f} s for {len(stuck)} payment(s): "
                       f"{stuck[:3]}") from None
        check()
        await asyncio.sleep(random.uniform(0, phase))
        have = 1 if chain == "ethereum" else 0  # the block that included them already counts on ethereum
        await asyncio.to_thread(payers.confirm, chain, max(w.required for w in watches) - have)
        mined = time.time()
        await receiver.until([w.track_id for w in watches], wait)
        await asyncio.wait_for(asyncio.gather(*(w.task for w in watches)), wait)  # each stream ends on Paid
        check()
    finally:
        for w in watches:
            w.task.cancel()
        await asyncio.gather(*(w.task for w in watches), return_exceptions=True)
    if samples is not None:
        for w in watches:
            samples.to_page.append(w.moved_at - broadcast[w.track_id])
            samples.to_webhook.append(receiver.paid[w.track_id] - mined)
            samples.page_paid.append(w.paid_at - mined)


async def run_mode(base: str, payers: Payers, chains: list[str], payments: int, concurrency: int,
                   wait: float, push: bool) -> dict[str, Samples]:
    receiver = Receiver()
    hook_url, runner = await receiver.start()
    timeout = aiohttp.ClientTimeout(total=None, sock_read=STREAM_READ_SECONDS + 30)
    connector = aiohttp.TCPConnector(limit=0)
    try:
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            owner = await _data(session, "POST", base + "/dashboard/auth/signup",
                                json={"email": f"latency-{secrets.token_hex(3)}@example.com",
                                      "password": "bench-password-1"})
            webhook = await _data(session, "PUT", base + "/dashboard/settings/webhook",
                                  headers={"Authorization": f"Bearer {owner['token']}"},
                                  json={"webhook_url": hook_url})
            receiver.secret = webhook["webhook_secret"]
            key = owner["api_keys"]["merchant_api_key"]
            # One payment per chain first, not counted: the node streams are connected, the caches warm.
            await asyncio.gather(*(wave(c, 1, base, session, key, payers, receiver, None, wait, 0.0) for c in chains))
            results = {c: Samples() for c in chains}

            async def chain_run(chain: str) -> None:
                done = 0
                while done < payments:
                    count = min(concurrency, payments - done)
                    await wave(chain, count, base, session, key, payers, receiver, results[chain], wait,
                               0.0 if push else SCAN_SECONDS[chain])
                    done += count
                    print(f"    {chain}: {done}/{payments}", file=sys.stderr, flush=True)

            await asyncio.gather(*(chain_run(c) for c in chains))
            if receiver.bad or receiver.duplicates:
                raise Lost(f"{receiver.bad} bad signature(s), duplicate payment.paid for {receiver.duplicates[:3]}")
            return results
    finally:
        await runner.cleanup()


# -- set-up and the table ---------------------------------------------------------------------------


def config_text(node: Node, anvil: Anvil) -> str:
    ltc = node.plugin_block(p2p=f"127.0.0.1:{node.p2p_port}", scan_seconds=SCAN_SECONDS["litecoin"])
    eth = {"rpc_url": anvil.url, "ws_url": anvil.ws_url, "chain_id": 31337, "scan_seconds": SCAN_SECONDS["ethereum"],
           "sweep": False}

    def block(values: dict[str, Any]) -> str:
        return "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())

    return f"[plugin.bitcoin.LTC]\n{block(ltc)}\n[plugin.evm.ethereum]\n{block(eth)}"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))]


def print_table(results: dict[str, dict[str, Samples]]) -> None:
    headers = ["chain", "push", "n", "(a) p50", "(a) p99", "(b) p50", "(b) p99", "page Paid p50", "goal met"]
    rows = []
    for chain in COINS:
        for mode, per_chain in results.items():
            if chain not in per_chain:
                continue
            s = per_chain[chain]
            a50, a99, b50, b99 = (percentile(v, q) for v in (s.to_page, s.to_webhook) for q in (0.5, 0.99))
            met = "yes" if max(a50, b50) < GOAL_P50 and max(a99, b99) < GOAL_P99 else "no"
            rows.append([chain, mode, str(len(s.to_page)), *(f"{x:.2f} s" for x in (a50, a99, b50, b99)),
                         f"{percentile(s.page_paid, 0.5):.2f} s", met if mode == "on" else "-"])
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        print("  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))))


def start_payers(root: Path) -> Payers:
    node = start_node(root / "litecoind", p2p_port=free_port())
    try:
        faucet = Faucet(node)
        start = node.height()
        coinbases = 40  # each payment spends the last change: a chain of unconfirmed spends within a wave only
        faucet.mine(COINBASE_MATURITY + coinbases)
        faucet.collect_coinbases(start + 1, start + coinbases)
        anvil = launch_anvil(None, "--no-mining")
    except BaseException:
        stop(node)
        raise
    anvil.automine = False
    return Payers(faucet, anvil)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payments", type=int, default=200, help="measured payments per chain and mode")
    parser.add_argument("--off-payments", type=int, help="with push off (default: --payments); a wave waits "
                        "for litecoin's 30 s polls there")
    parser.add_argument("--concurrency", type=int, default=10, help="payments in flight per chain (<= 20: "
                        "litecoin's mempool chains at most 25 unconfirmed spends)")
    parser.add_argument("--modes", default="on,off", help="push on, off, or both (default on,off)")
    parser.add_argument("--chains", default="litecoin,ethereum")
    parser.add_argument("--wait", type=float, default=180.0, help="seconds before a payment counts as lost")
    parser.add_argument("--pg-dsn", default=default_pg_dsn())
    args = parser.parse_args()
    chains = [c for c in args.chains.split(",") if c]
    modes = [m for m in args.modes.split(",") if m]
    if not set(chains) <= set(COINS) or not set(modes) <= {"on", "off"} or not 1 <= args.concurrency <= 20:
        parser.error("chains: litecoin, ethereum; modes: on, off; concurrency 1-20")
    results: dict[str, dict[str, Samples]] = {}
    mode = modes[0]
    with tempfile.TemporaryDirectory(prefix="orbchain-latency-") as tmp:
        root = Path(tmp)
        payers = start_payers(root)
        try:
            for mode in modes:
                count = args.payments if mode == "on" or args.off_payments is None else args.off_payments
                with postgres_target(args.pg_dsn, root) as target:
                    (root / "orbchain.toml").write_text(config_text(payers.faucet.node, payers.anvil))
                    env = {**target.gateway_env(), "ORBCHAIN_CONFIG": str(root / "orbchain.toml"),
                           "ORBCHAIN_RATE_LIMITS__PAY_PAGE_PER_MINUTE": "100000000",
                           "ORBCHAIN_ALLOW_PRIVATE_URLS": "true", "ORBCHAIN_LIVE__MAX_STREAMS_PER_IP": "1000",
                           "ORBCHAIN_SCHEDULER__PUSH": "true" if mode == "on" else "false"}
                    print(f"  push {mode}: {count} payment(s) per chain, {args.concurrency} at a time; "
                          f"{uptime()}", file=sys.stderr, flush=True)
                    with running([*ORBCHAIN, "serve", "--host", "127.0.0.1"], env, root,
                                 root / f"gateway-{mode}.log") as base:
                        results[mode] = asyncio.run(run_mode(base, payers, chains, count, args.concurrency,
                                                             args.wait, mode == "on"))
                    print(f"  push {mode} done; {uptime()}", file=sys.stderr, flush=True)
        except Lost as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            log = root / f"gateway-{mode}.log"
            if log.exists():
                print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
            return 1
        finally:
            stop(payers.faucet.node)
            payers.anvil.stop()
    print(f"\nLatency, broadcast -> page (a) and confirming block -> signed payment.paid (b); "
          f"goal with push: p50 < {GOAL_P50:.0f} s, p99 < {GOAL_P99:.0f} s")
    print_table(results)
    print(f"machine: {uptime()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
