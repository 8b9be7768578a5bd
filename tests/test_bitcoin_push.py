"""The bitcoin family's push against a real litecoind that listens for peers, and a replayed ZMQ feed.

One node for the module (``-listen=1 -bind=127.0.0.1:<port> -whitelist=noban@127.0.0.1``,
the flags docs/bitcoin.md gives operators); the session's litecoind stays
``-listen=0``. The P2P peer handshakes and hears a broadcast transaction and
a mined block; peers speaking garbage are dropped; ZMQ notifications in
Bitcoin Core's frame format, made of the node's own transactions and block
hashes, are heard and their sequence gaps logged; ``orbchain chain notify``
(``-blocknotify``) wakes every process on PostgreSQL and refuses on SQLite.
The end-to-end test stops and restarts the node while payments arrive and
checks every deposit is credited exactly once, with the scan driven the way
the core drives it: at once when ``heard`` fires, and on a poll.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import struct
import time
from types import SimpleNamespace
from typing import Any, Callable

import pytest
import zmq
import zmq.asyncio

from orbchain.chains.bitcoin import BitcoinAdapter, p2p
from orbchain.chains.bitcoin import p2p_wire as wire
from orbchain.chains.bitcoin.settings import read_settings
from orbchain.cli import main
from orbchain.core.types.chains import Capability, ChainUnavailable
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.events.webhooks import deliver_due
from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY

from .litecoind import COINBASE_MATURITY, Faucet, Node, start_node, stop
from .support import WebhookReceiver, api, free_port, signup

LTC = 100_000_000
REGTEST = wire.MAGIC[("LTC", "regtest")]
WAIT = 60.0  # a guard against hanging, never a timing assertion


class ListeningNode:
    """The module's litecoind; ``restart`` brings it back on the same ports and data directory."""

    def __init__(self, datadir) -> None:
        self.datadir = datadir
        self.node: Node = start_node(datadir, p2p_port=free_port())
        self.faucet = Faucet(self.node)

    @property
    def p2p(self) -> str:
        return self.node.p2p

    def terminate(self) -> None:
        """SIGTERM, as a service manager stops it (a clean stop keeps its chain and mempool)."""
        self.node.close()
        os.kill(self.node.pid, signal.SIGTERM)
        self.node.process.wait(timeout=60)

    def restart(self) -> None:
        self.node = start_node(self.datadir, rpc_port=self.node.rpc_port, p2p_port=self.node.p2p_port)
        self.faucet.node = self.node

    def our_peers(self) -> int:
        """Our peers whose handshake the node completed (it relays to no one before our verack)."""
        return sum(p2p.USER_AGENT in peer["subver"] and "verack" in peer["bytesrecv_per_msg"]
                   for peer in self.node.call("getpeerinfo"))


@pytest.fixture(scope="module")
def listening(tmp_path_factory: pytest.TempPathFactory):
    node = ListeningNode(tmp_path_factory.mktemp("litecoind-listen"))
    try:
        start = node.node.height()
        node.faucet.mine(COINBASE_MATURITY + 20)
        node.faucet.collect_coinbases(start + 1, start + 20)
        yield node
    finally:
        if node.node.process.poll() is None:
            stop(node.node)


def adapter_for(listening: ListeningNode, **push: Any) -> BitcoinAdapter:
    """An adapter of the node with the push settings given; push() needs no gateway."""
    config = SimpleNamespace(plugin_config=lambda name: {"LTC": listening.node.plugin_block(**push)})
    return BitcoinAdapter(None, read_settings(config)["LTC"])  # type: ignore[arg-type, call-arg]


class Heard:
    """heard() as the core passes it: records, and wakes whoever waits."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.changed = asyncio.Event()

    def __call__(self, kind: str) -> None:
        self.kinds.append(kind)
        self.changed.set()

    async def until(self, kind: str, after: int = 0) -> None:
        async def wait() -> None:
            while kind not in self.kinds[after:]:
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(wait(), WAIT)


async def until(condition: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not await asyncio.to_thread(condition):
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        await asyncio.sleep(0.1)


# -- P2P ------------------------------------------------------------------------------------------


async def test_p2p_peer_hears_a_broadcast_transaction_and_a_mined_block(listening):
    adapter = adapter_for(listening, p2p=listening.p2p)
    assert Capability.PUSH in adapter.capabilities
    heard = Heard()
    task = asyncio.create_task(adapter.push(heard))
    try:
        await until(lambda: listening.our_peers() == 1, "the handshake")
        peer = next(p for p in listening.node.call("getpeerinfo") if p2p.USER_AGENT in p["subver"])
        assert peer["inbound"] and "noban" in peer["permissions"] and peer["relaytxes"]
        listening.faucet.pay(listening.faucet.address, LTC // 10)
        await heard.until("tx")
        mark = len(heard.kinds)
        listening.faucet.mine(1)
        await heard.until("block", after=mark)
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await adapter.close()
    await until(lambda: listening.our_peers() == 0, "cancellation closes the connection")


def garbage_peer(reply: Callable[[bytes], bytes]):
    """A TCP server answering our version with ``reply(our_bytes)`` and recording whether we hung up."""
    state = SimpleNamespace(closed=asyncio.Event())

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ours = await reader.read(1000)
        writer.write(reply(ours))
        await writer.drain()
        while await reader.read(1000):
            pass
        state.closed.set()
        writer.close()

    return handle, state


def their_version(version: int = wire.PROTOCOL_VERSION) -> bytes:
    payload = struct.pack("<iQq", version, 1, int(time.time())) + bytes(26 + 26 + 8) + b"\0" + bytes(4) + b"\1"
    return wire.frame(REGTEST, "version", payload)


def corrupt_checksum(message: bytes) -> bytes:
    return message[:20] + bytes(4) + message[24:]


@pytest.mark.parametrize("reply, error", [
    (lambda ours: b"HTTP/1.1 400 Bad Request\r\n\r\n" + bytes(64), "wrong network magic"),
    (lambda ours: their_version().replace(REGTEST, wire.MAGIC[("LTC", "mainnet")]), "wrong network magic"),
    (lambda ours: corrupt_checksum(their_version()), "checksum"),
    (lambda ours: REGTEST + b"inv".ljust(12, b"\0") + struct.pack("<I", 2**32 - 1) + bytes(4), "exceeds"),
    (lambda ours: wire.frame(REGTEST, "verack"), "before the handshake's version"),
    (lambda ours: their_version(209), "below"),
    (lambda ours: their_version() + wire.frame(REGTEST, "verack") + wire.frame(REGTEST, "inv", b"\x05"), "truncated"),
    (lambda ours: their_version() + wire.frame(REGTEST, "verack") + wire.frame(REGTEST, "ping", b"\0"), "8-byte"),
    (lambda ours: their_version() + wire.frame(REGTEST, "verack") + their_version(), "a second 'version'"),
    (lambda ours: b"", "no handshake"),  # silent
])
async def test_a_peer_speaking_garbage_is_dropped(reply, error):
    handle, state = garbage_peer(reply)
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    heard = Heard()
    try:
        with pytest.raises(ChainUnavailable, match=error):
            await p2p.listen("127.0.0.1", port, REGTEST, heard, "litecoin", handshake_seconds=2, idle_seconds=2)
        await asyncio.wait_for(state.closed.wait(), WAIT)  # we hung up
        assert heard.kinds == []
    finally:
        server.close()
        await server.wait_closed()


async def test_a_peer_silent_after_the_handshake_is_pinged_then_dropped():
    """A half-open connection: the node answers the handshake, then nothing, not even our ping."""
    pings = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1000)
        writer.write(their_version() + wire.frame(REGTEST, "verack"))
        while data := await reader.read(1000):
            pings.append(b"ping" in data)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        with pytest.raises(ChainUnavailable, match="no answer to a ping"):
            await p2p.listen("127.0.0.1", server.sockets[0].getsockname()[1], REGTEST, Heard(), "litecoin",
                             idle_seconds=0.3)
        assert any(pings)
    finally:
        server.close()
        await server.wait_closed()


async def test_unreachable_node_is_unavailable():
    with pytest.raises(ChainUnavailable, match="cannot connect"):
        await p2p.listen("127.0.0.1", free_port(), REGTEST, Heard(), "litecoin")


# -- ZMQ ------------------------------------------------------------------------------------------


class Publisher:
    """Bitcoin Core's ZMQ publisher, replayed: (topic, body, 4-byte little-endian sequence) per message.

    An XPUB socket, so the test knows when the subscriber's subscriptions arrived.
    """

    def __init__(self, context: zmq.asyncio.Context) -> None:
        self.socket = context.socket(zmq.XPUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        port = self.socket.bind_to_random_port("tcp://127.0.0.1")
        self.url = f"tcp://127.0.0.1:{port}"
        self.sequence: dict[bytes, int] = {}

    async def subscribed(self, *topics: bytes) -> None:
        wanted = {b"\x01" + t for t in topics}
        while wanted:
            wanted.discard(await asyncio.wait_for(self.socket.recv(), WAIT))

    async def send(self, topic: bytes, body: bytes, sequence: int | None = None) -> None:
        number = self.sequence.get(topic, 0) if sequence is None else sequence
        self.sequence[topic] = number + 1
        await self.socket.send_multipart([topic, body, struct.pack("<I", number)])

    def close(self) -> None:
        self.socket.close(linger=0)


@pytest.fixture
async def zmq_context():
    context = zmq.asyncio.Context()
    yield context
    context.term()


async def test_zmq_replay_of_the_nodes_own_transactions_and_blocks(listening, zmq_context, caplog):
    publisher = Publisher(zmq_context)
    adapter = adapter_for(listening, zmq_rawtx=publisher.url, zmq_hashblock=publisher.url)
    heard = Heard()
    task = asyncio.create_task(adapter.push(heard))
    try:
        await publisher.subscribed(b"rawtx", b"hashblock")
        txids = [listening.faucet.pay(listening.faucet.address, LTC // 10) for _ in range(2)]
        raw = [bytes.fromhex(listening.node.call("getrawtransaction", txid)) for txid in txids]
        await publisher.send(b"rawtx", raw[0])
        await heard.until("tx")
        listening.faucet.mine(1)
        await publisher.send(b"hashblock", bytes.fromhex(listening.node.call("getbestblockhash")))
        await heard.until("block")
        with caplog.at_level(logging.WARNING, logger="orbchain.chains.bitcoin.zmq_feed"):
            mark = len(heard.kinds)
            await publisher.send(b"rawtx", raw[1], sequence=4)  # 1, 2 and 3 never came
            await heard.until("tx", after=mark)
        assert "3 ZMQ rawtx notification(s) missed (sequence 4)" in caplog.text
        assert heard.kinds == ["tx", "block", "tx"]
        publisher.close()  # the node went away
        with pytest.raises(ChainUnavailable, match="disconnected"):
            await asyncio.wait_for(task, WAIT)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        publisher.close()
        await adapter.close()


async def test_a_malformed_zmq_message_ends_the_stream(listening, zmq_context):
    publisher = Publisher(zmq_context)
    adapter = adapter_for(listening, zmq_hashblock=publisher.url)
    task = asyncio.create_task(adapter.push(Heard()))
    try:
        await publisher.subscribed(b"hashblock")
        await publisher.socket.send_multipart([b"hashblock", bytes(31), struct.pack("<I", 0)])
        with pytest.raises(ChainUnavailable, match="expected 32"):
            await asyncio.wait_for(task, WAIT)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        publisher.close()
        await adapter.close()


# -- -blocknotify ---------------------------------------------------------------------------------


async def test_chain_notify_wakes_every_process_on_postgresql_and_refuses_on_sqlite(
        make_client, make_config, db_url, tmp_path, listening, monkeypatch, capsys):
    for name in ("ORBCHAIN_CONFIG", "ORBCHAIN_DATABASE_URL", "ORBCHAIN_DATA_DIR", "ORBCHAIN_ENVIRONMENT"):
        monkeypatch.delenv(name, raising=False)
    block = listening.node.plugin_block()
    client = await make_client(make_config(scheduler={"enabled": False}, plugin={"bitcoin": {"LTC": block}}),
                               get_plugin_manager(blocked=["devnet"]))
    gateway = client.app[GATEWAY]
    woken: list[str] = []
    arrived = asyncio.Event()

    def wake(payload: str) -> None:
        woken.append(payload)
        arrived.set()

    gateway.signals.subscribe("wake", wake)
    path = tmp_path / "orbchain.toml"
    path.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "development"\n\n'
                    f'[database]\nurl = "{db_url}"\n\n[plugin.bitcoin.LTC]\n'
                    + "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in block.items()))

    async def notify(chain: str) -> int:
        return await asyncio.to_thread(main, ["--config", str(path), "chain", "notify", chain])

    assert await notify("monero") == 2
    err = capsys.readouterr().err
    assert "no chain 'monero' is configured (chains: " in err and "litecoin" in err
    if not gateway.db.is_postgres:
        assert await notify("litecoin") == 2
        assert "needs PostgreSQL" in capsys.readouterr().err and woken == []
        return
    assert await notify("litecoin") == 0
    await asyncio.wait_for(arrived.wait(), WAIT)
    assert woken == ["chain.litecoin.scan"]


# -- the node restarts while payments arrive ------------------------------------------------------


class ScanDriver:
    """Drives the scan as the core does with push: at once on ``heard``, else every ``poll`` seconds;
    ``push`` is called again after it ends (a short backoff here)."""

    def __init__(self, gateway, adapter: BitcoinAdapter, poll: float) -> None:
        self.gateway, self.adapter, self.poll = gateway, adapter, poll
        self.heard = Heard()
        self.ended: list[str] = []
        self.scans = 0
        self._tasks = [asyncio.create_task(self._push()), asyncio.create_task(self._scan())]

    async def _push(self) -> None:
        while True:
            try:
                await self.adapter.push(self.heard)
            except ChainUnavailable as exc:
                self.ended.append(str(exc))
            await asyncio.sleep(0.2)

    async def _scan(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self.heard.changed.wait(), self.poll)
            except TimeoutError:
                pass
            self.heard.changed.clear()
            try:
                await scan_chain(self.gateway, self.adapter)
                self.scans += 1
            except ChainUnavailable:
                await asyncio.sleep(0.2)  # the node is down: the poll retries

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def test_node_restart_while_payments_arrive_credits_each_deposit_once(make_client, make_config, listening):
    receiver = WebhookReceiver()
    config = make_config(scheduler={"enabled": False},
                         plugin={"bitcoin": {"LTC": listening.node.plugin_block(p2p=listening.p2p)}})
    client = await make_client(config, get_plugin_manager(blocked=["devnet"]))
    gateway = client.app[GATEWAY]
    adapter: BitcoinAdapter = gateway.chains.get("litecoin")
    merchant = await signup(client, "push-shop@example.com")
    status, body = await api(client, "PUT", "/dashboard/settings/webhook", merchant.jwt,
                             json={"webhook_url": await receiver.start()})
    assert status == 200, body
    await scan_chain(gateway, adapter)  # a fresh database starts at the tip
    payments = []
    for _ in range(4):
        status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                                 json={"currency": "LTC", "amount": "0.2"})
        assert status == 200, body
        payments.append(body["data"])

    async def statuses() -> list[str]:
        out = []
        for payment in payments:
            answer = await api(client, "GET", f"/v1/payment/{payment['track_id']}", merchant.merchant_key)
            out.append(answer[1]["data"]["status"])
        return out

    async def until_statuses(wanted: list[str]) -> None:
        deadline = time.monotonic() + WAIT
        while await statuses() != wanted:
            assert time.monotonic() < deadline, await statuses()
            await asyncio.sleep(0.2)

    driver = ScanDriver(gateway, adapter, poll=adapter.scan_seconds)
    try:
        await until(lambda: listening.our_peers() == 1, "the handshake")
        pay = listening.faucet.pay
        txids = [pay(payments[0]["address"], LTC // 5), pay(payments[1]["address"], LTC // 5)]
        await until_statuses(["Paying", "Paying", "Waiting", "Waiting"])
        txids.append(pay(payments[2]["address"], LTC // 5))  # the node stops right after accepting it
        listening.terminate()
        await until(lambda: driver.ended, "push ends when the node goes away")
        assert "connection lost" in driver.ended[0]
        listening.restart()
        await until(lambda: listening.our_peers() == 1, "push reconnects to the restarted node")
        mark = len(driver.heard.kinds)
        txids.append(pay(payments[3]["address"], LTC // 5))
        await driver.heard.until("tx", after=mark)
        await until_statuses(["Paying"] * 4)
        listening.faucet.mine(6)
        await driver.heard.until("block", after=mark)
        await until_statuses(["Paid"] * 4)
    finally:
        await driver.close()
    deposits = await gateway.db.fetch_all("SELECT tx_hash, status, credit_count FROM deposits"
                                          " WHERE chain = 'litecoin' ORDER BY tx_hash")
    assert [(d["tx_hash"], d["status"], d["credit_count"]) for d in deposits] == \
        [(t, "CREDITED", 1) for t in sorted(txids)]
    balances = (await api(client, "GET", "/v1/general/account/balance", merchant.general_key))[1]["data"]
    assert {b["coin"]: b["amount"] for b in balances["balances"]} == {"LTC": "0.792"}  # 4 x 0.2 less 1 %
    await deliver_due(gateway)
    credited = sorted(b["tx_hash"] for b in receiver.of_type("deposit.credited"))
    assert credited == sorted(txids)
    assert len(receiver.of_type("payment.paid")) == 4
    await receiver.close()
