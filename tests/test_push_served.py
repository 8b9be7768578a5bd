"""``orbchain serve`` follows real nodes' notifications, through the core's own scheduler and push supervisor
(issue 43, item 3).

One served gateway per database (``orbchain serve`` as an operator starts it: one process on SQLite, two
workers on PostgreSQL, where a wake crosses processes by NOTIFY) follows three real nodes of this module:
litecoind as a P2P peer (``p2p``), anvil over WebSocket (``ws_url``) and monerod's ZMQ publisher
(``zmq_pub_url``). Every chain's ``scan_seconds`` is an hour, so polling never happens during a run: a
payment can only reach Paying because the node announced something and the supervisor woke the scan. That
is the broadcast on litecoind and monerod, the mined block on anvil (no mempool). Each journey then stops
its node (SIGTERM, as a service manager does) and starts it again on the same ports and data, and a second
payment reaches Paying with nothing from the test but waiting: the supervisor reconnected by itself.

What the test watches: the hosted page's event stream (one request per payment, no status poll) and, to
know a stream is subscribed before it pays, the push counters on ``/metrics``, read a few times a second
while single blocks are mined, well inside every rate limit.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterator

import aiohttp
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from orbchain.testing import PG_ENV, backends

from .anvil import CHAIN_ID, PAYER, Anvil, launch_anvil
from .gateway_hosts import Host, create_database, drop_database
from .hostile_support import write_config
from .litecoind import COINBASE_MATURITY, Faucet, Node, start_node, stop as stop_litecoind
from .live_support import EventStream
from .monerod import MoneroRegtest, restart as restart_monero, start_regtest, stop as stop_monero
from .support import free_port

HOUR = 3600
WAIT = 120.0  # a guard against a hang, never a timing assertion
METRICS_TOKEN = "served-push-metrics"
PASSWORD = "correct horse battery"


# -- the nodes, one of each for the module ------------------------------------------------------------


@dataclass
class Nodes:
    ltc: Node
    faucet: Faucet
    eth: Anvil
    eth_state: str  # anvil's --state file: its chain survives a restart
    xmr: MoneroRegtest

    def restart_litecoind(self) -> None:
        """SIGTERM (the chain and mempool survive), then the same ports and data directory."""
        self.ltc.close()
        os.kill(self.ltc.pid, signal.SIGTERM)
        self.ltc.process.wait(timeout=60)
        self.ltc = self.faucet.node = start_node(self.ltc.datadir, rpc_port=self.ltc.rpc_port,
                                                 p2p_port=self.ltc.p2p_port)

    def restart_anvil(self) -> None:
        """SIGTERM writes anvil's state; it starts again on the same port from it."""
        port = int(self.eth.url.rsplit(":", 1)[1])
        self.eth.process.send_signal(signal.SIGTERM)
        self.eth.process.wait(timeout=30)
        self.eth = launch_anvil(port, "--state", self.eth_state)

    def restart_monerod(self) -> None:
        """SIGTERM, then the same arguments (``--keep-fakechain``: the regtest chain survives); the wallets
        reconnect to it by themselves."""
        stop_monero(self.xmr.daemon)
        self.xmr.daemon = restart_monero(self.xmr.daemon)
        deadline = time.monotonic() + WAIT
        while True:  # the payer's own wallet (the test's, not the gateway's) back on the node before it pays
            try:
                self.xmr.payer.call("refresh")
                return
            except RuntimeError as exc:  # "no connection to daemon" until its next reconnect
                assert time.monotonic() < deadline, f"the payer's wallet never reconnected: {exc}"
                time.sleep(0.5)

    def stop(self) -> None:
        for service in (self.xmr.payer_wallet, self.xmr.gateway_wallet, self.xmr.daemon):
            stop_monero(service)
        self.eth.stop()
        if self.ltc.process.poll() is None:
            stop_litecoind(self.ltc)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    root = tmp_path_factory.mktemp("served-push")
    ltc = start_node(root / "litecoind", p2p_port=free_port())
    started: list[Callable[[], None]] = [lambda: stop_litecoind(ltc)]
    try:
        faucet = Faucet(ltc)
        first = ltc.height() + 1
        faucet.mine(COINBASE_MATURITY + 10)
        faucet.collect_coinbases(first, first + 9)
        state = str(root / "anvil-state.json")
        eth = launch_anvil(free_port(), "--state", state)
        started.append(eth.stop)
        xmr = start_regtest(tmp_path_factory.mktemp("served-push-monero"), options=("--keep-fakechain",))
        started.clear()
        nodes = Nodes(ltc, faucet, eth, state, xmr)
    finally:
        for undo in reversed(started):
            undo()
    try:
        yield nodes
    finally:
        nodes.stop()


# -- the served gateway, one per database -------------------------------------------------------------


@dataclass
class Served:
    host: Host
    key: str  # the merchant's API key
    nodes: Nodes

    @property
    def base(self) -> str:
        return self.host.base

    def log(self) -> str:
        return self.host.log.read_text(errors="replace")

    async def invoice(self, coin: str, amount: str) -> dict[str, Any]:
        async with aiohttp.ClientSession() as session:
            async with session.post(self.base + "/v1/payment/invoice", headers={"merchant_api_key": self.key},
                                    json={"amount": amount, "currency": coin, "accepted_coins": [coin]}) as answer:
                body = await answer.json()
                assert answer.status == 200, body
                return body["data"]

    async def white_label(self, coin: str, amount: str) -> dict[str, Any]:
        """A payment with no hosted page (XMR is paid only this way: it is swapped in, docs/monero.md)."""
        async with aiohttp.ClientSession() as session:
            async with session.post(self.base + "/v1/payment/white-label", headers={"merchant_api_key": self.key},
                                    json={"amount": amount, "currency": coin}) as answer:
                body = await answer.json()
                assert answer.status == 200, body
                return body["data"]

    async def heard(self, chain: str) -> float:
        """Notifications the push streams of every worker counted for ``chain`` (``/metrics``)."""
        async with aiohttp.ClientSession() as session:
            async with session.get(self.base + "/metrics",
                                   headers={"Authorization": f"Bearer {METRICS_TOKEN}"}) as answer:
                assert answer.status == 200, await answer.text()
                text = await answer.text()
        return sum(sample.value for family in text_string_to_metric_families(text)
                   for sample in family.samples
                   if sample.name == "orbchain_chain_push_notifications_total" and sample.labels["chain"] == chain)

    async def until_following(self, chain: str, mine: Callable[[], Any]) -> None:
        """Mine one block at a time until the gateway's stream of ``chain`` announced one: it is subscribed."""
        before = await self.heard(chain)
        deadline = time.monotonic() + WAIT
        while True:
            await asyncio.to_thread(mine)
            for _ in range(10):
                await asyncio.sleep(0.2)
                if await self.heard(chain) > before:
                    return
            assert time.monotonic() < deadline, f"the gateway heard no {chain} block in {WAIT} s:\n{self.log()[-3000:]}"

    async def until_paying(self, invoice: dict[str, Any], pay: Callable[[], Any]) -> dict[str, Any]:
        """Open the hosted page's stream, pay, and wait for the stream to show Paying."""
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{self.base}/pay/{invoice['track_id']}/events") as response:
                assert response.status == 200, await response.text()
                stream = EventStream(response)
                assert (await stream.event())["status"] == "Waiting"
                await asyncio.to_thread(pay)
                try:
                    return await asyncio.wait_for(stream.until("Paying"), WAIT)
                except TimeoutError:
                    raise AssertionError(f"{invoice['track_id']} never reached Paying with scans an hour apart:"
                                         f"\n{self.log()[-3000:]}") from None


    async def until_paying_read(self, payment: dict[str, Any], pay: Callable[[], Any]) -> dict[str, Any]:
        """Pay, then read the payment once a second until it is Paying: a payment without a public stream,
        read far below the API's read limit (at most WAIT reads, 60 a minute)."""
        await asyncio.to_thread(pay)
        path = f"{self.base}/v1/payment/{payment['track_id']}"
        deadline = time.monotonic() + WAIT
        async with aiohttp.ClientSession(headers={"merchant_api_key": self.key}) as session:
            while True:
                async with session.get(path) as answer:
                    body = await answer.json()
                    assert answer.status == 200, body
                if body["data"]["status"] == "Paying":
                    return body["data"]
                assert time.monotonic() < deadline, (f"{payment['track_id']} never reached Paying with scans an hour"
                                                     f" apart (last {body['data']['status']}):\n{self.log()[-3000:]}")
                await asyncio.sleep(1)


def _config(path: Path, db_url: str, nodes: Nodes, data_dir: Path) -> Path:
    return write_config(path, {
        "server": {"data_dir": str(data_dir), "environment": "development", "drain_seconds": 3},
        "database": {"url": db_url},
        "metrics": {"token": METRICS_TOKEN},
        "plugin.devnet": {"coins": ["BTC"], "block_seconds": HOUR, "scan_seconds": HOUR},
        "plugin.bitcoin.LTC": nodes.ltc.plugin_block(p2p=f"127.0.0.1:{nodes.ltc.p2p_port}", scan_seconds=HOUR),
        "plugin.evm.ethereum": {"rpc_url": nodes.eth.url, "ws_url": nodes.eth.ws_url, "chain_id": CHAIN_ID,
                                "start_height": nodes.eth.height() + 1, "scan_seconds": HOUR},
        "plugin.monero": nodes.xmr.plugin_block(zmq_pub_url=nodes.xmr.zmq_pub_url, scan_seconds=HOUR),
    })


def _sign_up(base: str) -> str:
    """A merchant accepting LTC, ETH and XMR (settled in BTC); its merchant API key."""
    with httpx.Client(base_url=base, timeout=30) as http:
        signed = http.post("/dashboard/auth/signup", json={"email": "push@example.com", "password": PASSWORD})
        assert signed.status_code == 200, signed.text
        data = signed.json()["data"]
        settle = http.put("/dashboard/settings/settlement-coin", headers={"Authorization": f"Bearer {data['token']}"},
                          json={"default_settlement_coin": "BTC"})  # XMR is only accepted with one (docs/monero.md)
        assert settle.status_code == 200, settle.text
        coins = http.put("/dashboard/settings/coins", headers={"Authorization": f"Bearer {data['token']}"},
                         json={"accepted_coins": ["LTC", "ETH", "XMR"]})
        assert coins.status_code == 200, coins.text
        return data["api_keys"]["merchant_api_key"]


@pytest.fixture(scope="module", params=backends())
def served(request: pytest.FixtureRequest, nodes: Nodes, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    backend = request.param
    workdir = tmp_path_factory.mktemp(f"served-{backend}")
    admin = os.environ.get(PG_ENV, "")
    db_url = (asyncio.run(create_database(admin, "orbchain_served_push")) if backend == "postgresql"
              else f"sqlite+aiosqlite:///{workdir / 'orbchain.db'}")
    host = Host(backend, _config(workdir / "orbchain.toml", db_url, nodes, workdir / "var"), workdir,
                workers=2 if backend == "postgresql" else 1)
    try:
        asyncio.run(host.start())
        yield Served(host, _sign_up(host.base), nodes)
    finally:
        host.stop()
        if backend == "postgresql":
            asyncio.run(drop_database(admin, db_url))


def _restored(served: Served, chain: str) -> bool:
    log = served.log()
    return f"push stream of chain {chain} lost" in log and f"push stream of chain {chain} restored" in log


# -- the journeys --------------------------------------------------------------------------------------


async def test_a_litecoind_broadcast_makes_a_payment_paying_and_a_node_restart_recovers(served: Served) -> None:
    nodes = served.nodes
    await served.until_following("litecoin", lambda: nodes.faucet.mine(1))
    first = await served.invoice("LTC", "0.2")
    units = int(Decimal(first["pay_amount"]) * 10**8)
    paying = await served.until_paying(first, lambda: nodes.faucet.pay(first["address"], units))
    assert [t["confirmations"] for t in paying["transactions"]] == [0]  # from the mempool: the broadcast

    await asyncio.to_thread(nodes.restart_litecoind)
    await served.until_following("litecoin", lambda: nodes.faucet.mine(1))  # reconnected, on its own
    second = await served.invoice("LTC", "0.2")
    paying = await served.until_paying(second, lambda: nodes.faucet.pay(second["address"], units))
    assert [t["confirmations"] for t in paying["transactions"]] == [0]
    assert _restored(served, "litecoin"), served.log()[-3000:]


async def test_an_anvil_block_makes_a_payment_paying_and_a_node_restart_recovers(served: Served) -> None:
    nodes = served.nodes
    await served.until_following("ethereum", lambda: nodes.eth.mine(1))
    first = await served.invoice("ETH", "0.01")
    wei = int(Decimal(first["pay_amount"]) * 10**18)
    paying = await served.until_paying(first, lambda: nodes.eth.send(PAYER, first["address"], value=wei))
    assert [t["confirmations"] for t in paying["transactions"]] == [1]  # automine: seen from its block

    await asyncio.to_thread(nodes.restart_anvil)
    await served.until_following("ethereum", lambda: nodes.eth.mine(1))
    second = await served.invoice("ETH", "0.01")
    paying = await served.until_paying(second, lambda: nodes.eth.send(PAYER, second["address"], value=wei))
    assert [t["confirmations"] for t in paying["transactions"]] == [1]
    assert _restored(served, "ethereum"), served.log()[-3000:]


async def test_a_monerod_broadcast_makes_a_payment_paying_and_a_node_restart_recovers(served: Served) -> None:
    nodes = served.nodes
    await served.until_following("monero", lambda: nodes.xmr.mine(1))
    piconero = int(Decimal("0.5") * 10**12)
    first = await served.white_label("XMR", "0.5")
    paying = await served.until_paying_read(first, lambda: nodes.xmr.pay_announced(first["address"], piconero))
    assert [t["confirmations"] for t in paying["transactions"]] == [0]  # from the pool: txpool_add

    await asyncio.to_thread(nodes.restart_monerod)
    await served.until_following("monero", lambda: nodes.xmr.mine(1))
    second = await served.white_label("XMR", "0.5")
    paying = await served.until_paying_read(second, lambda: nodes.xmr.pay_announced(second["address"], piconero))
    assert [t["confirmations"] for t in paying["transactions"]] == [0]
    assert _restored(served, "monero"), served.log()[-3000:]
