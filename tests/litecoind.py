"""A real Litecoin Core regtest node for the bitcoin-family integration tests.

``litecoind_node`` (session scope) starts ``litecoind`` on free ports in a
temporary data directory (listening for peers on loopback, as the gateway's push peer needs;
no wallet, no -txindex), waits for its RPC,
and stops it by PID at the end of the run, also when a test failed: the
``stop`` RPC first, SIGKILL if it does not exit. A missing binary is a
failure pointing at ``scripts/ensure_litecoind.sh``, never a skip.

``Faucet`` funds tests without the node's wallet: blocks are mined to an
address of a test-only key, and the faucet signs its own transactions from
those coinbases with the gateway's transaction code (the node judges the
signatures).

``NodeGate`` stands between a gateway and the node: JSON-RPC passes
through unchanged until the test makes chosen methods (or all) hang, a node
that accepts and never answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from orbchain.chains.bitcoin.rpc import coin_units
from orbchain.chains.bitcoin.transactions import (
    SEQUENCE_FINAL, Outpoint, Output, SignedTransaction, Spend, script_for_address, script_for_key, sign_transaction,
)
from orbchain.core.keys import SeedKeyStore
from tests.families import get_family
from tests.support import free_port

BINARY = "litecoind"
RPC_USER, RPC_PASSWORD = "orbchain", "regtest-only-password"
FAUCET_SEED = bytes([0x11]) * 32
COINBASE_MATURITY = 100
REPLACING_COINBASES = 15  # test_payer_replacement takes 10, test_bitcoin_replacement 5
FAUCET_FEE = 20_000  # satoshis, flat: far above the relay minimum for a 1-in 2-out transaction


class Node:
    """Synchronous RPC to the test node (setup and assertions; the gateway has its own client)."""

    def __init__(self, process: subprocess.Popen, datadir: Path, rpc_port: int, p2p_port: int | None = None) -> None:
        self.process = process
        self.datadir = datadir
        self.rpc_port = rpc_port
        self.p2p_port = p2p_port  # set when the node listens for peers (start_node(p2p_port=...))
        self.url = f"http://127.0.0.1:{rpc_port}"
        # A new connection per call: the node closes an idle one after -rpcservertimeout (2 s here), and a call
        # written into it just then is answered by nothing ("Server disconnected", seen in CI). The test's own
        # calls (generatetoaddress among them) are not all safe to repeat, so none is retried.
        self._http = httpx.Client(auth=(RPC_USER, RPC_PASSWORD), timeout=60,
                                  limits=httpx.Limits(max_keepalive_connections=0))

    @property
    def pid(self) -> int:
        return self.process.pid

    def call(self, method: str, *params: Any) -> Any:
        content = json.dumps({"jsonrpc": "1.0", "id": 1, "method": method, "params": list(params)})
        try:
            response = self._http.post(self.url, content=content)
        except httpx.RemoteProtocolError:
            # A fresh connection closed unanswered (seen in CI at a faucet's set-up on a loaded machine); a read
            # is asked once more, anything else is the caller's to judge (``Faucet.mine`` resumes by height).
            if not method.startswith("get"):
                raise
            time.sleep(0.5)
            response = self._http.post(self.url, content=content)
        answer = json.loads(response.content, parse_float=Decimal)
        if answer.get("error"):
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def height(self) -> int:
        return int(self.call("getblockcount"))

    @property
    def p2p(self) -> str:
        """``host:port`` of the node's P2P listener, the ``p2p`` push setting (a node started with ``p2p_port``)."""
        assert self.p2p_port, "this node does not listen for peers"
        return f"127.0.0.1:{self.p2p_port}"

    def plugin_block(self, **extra: Any) -> dict[str, Any]:
        """The ``[plugin.bitcoin.LTC]`` block pointing the gateway at this node."""
        return {"rpc_url": self.url, "rpc_user": RPC_USER, "rpc_password": RPC_PASSWORD, "network": "regtest",
                "fee_fallback_sat_per_vbyte": 10, "payout_confirmations": 1, "scan_seconds": 1, **extra}

    def close(self) -> None:
        self._http.close()


@dataclass
class Faucet:
    """Coins for tests, from coinbases paid to a key only the tests hold."""

    node: Node
    family: Any = field(default_factory=lambda: get_family("ltc", "regtest"))
    store: SeedKeyStore = field(default_factory=lambda: SeedKeyStore(FAUCET_SEED))
    utxos: list[tuple[str, int, int]] = field(default_factory=list)  # (txid, vout, amount)

    @property
    def address(self) -> str:
        return self.family.derive(self.store, 0, 0).address

    def mine(self, blocks: int = 1) -> list[str]:
        """Mine ``blocks`` blocks to the faucet; a call the node closed unanswered is finished from the height
        it reached (never more than asked: tests count confirmations)."""
        start = self.node.height()
        try:
            return self.node.call("generatetoaddress", blocks, self.address)
        except httpx.RemoteProtocolError:
            time.sleep(0.5)
            reached = self.node.height()
            rest = blocks - (reached - start)
            mined = [self.node.call("getblockhash", height) for height in range(start + 1, reached + 1)]
            return mined + (self.node.call("generatetoaddress", rest, self.address) if rest > 0 else [])

    def collect_coinbases(self, first: int, last: int) -> None:
        for height in range(first, last + 1):
            block = self.node.call("getblock", self.node.call("getblockhash", height), 2)
            coinbase = block["tx"][0]
            self.utxos.append((coinbase["txid"], 0, coin_units(coinbase["vout"][0]["value"])))

    def pay(self, address: str, amount: int) -> str:
        """Send ``amount`` satoshis to ``address`` (not mined); returns the txid."""
        self.utxos.sort(key=lambda u: u[2])
        index = next(i for i, u in enumerate(self.utxos) if u[2] >= amount + FAUCET_FEE + 100_000)
        txid, vout, value = self.utxos.pop(index)
        signed = self.spend((txid, vout, value), address, amount, FAUCET_FEE)
        self.utxos.append((signed.txid, 1, value - amount - FAUCET_FEE))
        return signed.txid

    def spend(self, utxo: tuple[str, int, int], address: str, amount: int, fee: int, *,
              sequence: int = SEQUENCE_FINAL, broadcast: bool = True) -> SignedTransaction:
        """Spend one faucet ``utxo`` (txid, vout, value): ``amount`` to ``address``, the rest back to the faucet
        (change at output 1), broadcast unless told not to, not mined. A ``sequence`` below final signals
        replaceability (BIP 125): a payer's wallet that may replace or double-spend it later with the same
        ``utxo``."""
        txid, vout, value = utxo
        key = self.store.private_key_for(self.family, 0, 0)
        public_key = self.family.derive(self.store, 0, 0).public_key
        outputs = [Output(amount, script_for_address("ltc", "regtest", address)),
                   Output(value - amount - fee, script_for_key("p2wpkh", public_key))]
        signed = sign_transaction([Spend(Outpoint(txid, vout), value, "p2wpkh", key)], outputs, sequence=sequence)
        if broadcast:
            assert self.node.call("sendrawtransaction", signed.hex) == signed.txid
        return signed


def external_address(index: int) -> str:
    """A regtest LTC address of a key only the tests hold (payout destinations)."""
    return get_family("ltc", "regtest").derive(SeedKeyStore(FAUCET_SEED), 7, index).address


class NodeGate:
    """The node's JSON-RPC behind a gate: passed through, or held unanswered for the methods in ``hanging``.

    ``hanging`` holds method names, or ``"*"`` for every call. A held call
    is recorded in ``held`` as (method, params) and never answered until
    ``release()``; the gateway sees a node that accepted its connection and
    went silent.
    """

    def __init__(self, upstream: str | None) -> None:
        self.upstream = upstream
        self.hanging: set[str] = set()
        self.held: list[tuple[str, list[Any]]] = []
        self._released = asyncio.Event()
        self._server: TestServer | None = None
        self.url: str | None = None
        self._client = httpx.AsyncClient(auth=(RPC_USER, RPC_PASSWORD), timeout=60,
                                         limits=httpx.Limits(max_keepalive_connections=0))  # as Node's

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/", self._handle)
        self._server = TestServer(app, host="127.0.0.1")
        await self._server.start_server()
        self.url = str(self._server.make_url("/")).rstrip("/")
        return self.url

    def _hangs(self, method: str) -> bool:
        return "*" in self.hanging or method in self.hanging

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        payload = json.loads(body)
        calls = payload if isinstance(payload, list) else [payload]
        if any(self._hangs(call.get("method", "")) for call in calls) or self.upstream is None:
            self.held.extend((call.get("method", ""), call.get("params", [])) for call in calls)
            await self._released.wait()
            return web.Response(status=503)
        answer = await self._client.post(self.upstream, content=body, headers={"Content-Type": "application/json"})
        return web.Response(body=answer.content, status=answer.status_code, content_type="application/json")

    def held_calls(self, method: str) -> list[list[Any]]:
        return [params for name, params in self.held if name == method]

    def release(self) -> None:
        """Pass everything through again; calls held so far end with a 503."""
        self.hanging.clear()
        self._released.set()
        self._released = asyncio.Event()

    async def close(self) -> None:
        self._released.set()
        if self._server is not None:
            await self._server.close()
        await self._client.aclose()


def _wait_for_rpc(node: Node, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if node.process.poll() is not None:
            raise RuntimeError(f"litecoind exited with {node.process.returncode}: {log.read_text()[-2000:]}")
        try:
            node.call("getblockchaininfo")
            answering = node.call("getrpcinfo")["logpath"]
        except Exception:  # noqa: BLE001 - still starting (connection refused, warm-up)
            time.sleep(0.2)
            continue
        if not answering.startswith(str(node.datadir)):  # another process's node took the port first
            raise PortTaken(f"port {node.rpc_port} is answered by the node logging to {answering}")
        return
    raise RuntimeError("litecoind did not answer RPC within 60 s")


class PortTaken(RuntimeError):
    """The RPC port picked for a new node is another node's (two test processes picked it at once)."""


def stop(node: Node) -> None:
    """Stop by PID: the stop RPC, then SIGKILL if it lingers."""
    try:
        node.call("stop")
    except Exception:  # noqa: BLE001
        pass
    node.close()  # litecoind waits for open keep-alive RPC connections before it exits
    try:
        node.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.kill(node.pid, signal.SIGKILL)
        node.process.wait(timeout=10)


def start_node(datadir: Path, rpc_port: int | None = None, p2p_port: int | None = None,
               extra_args: tuple[str, ...] = ()) -> Node:
    """Start litecoind on ``datadir``; with ``p2p_port`` it listens for peers on 127.0.0.1 and lets them in
    without trickling (``-whitelist=noban``, as docs/bitcoin.md tells operators for the gateway's P2P peer).
    Pass the ports of a stopped node to restart it where the gateway expects it. ``extra_args`` are more
    node options (``-mempoolreplacement=1``: a module's own node that accepts replacements;
    ``-persistmempool=0``, ``-minrelaytxfee=...``: a restart that is a fee spike)."""
    if shutil.which(BINARY) is None:
        pytest.fail(f"{BINARY} is not installed: run scripts/ensure_litecoind.sh (make test does)", pytrace=False)
    datadir.mkdir(parents=True, exist_ok=True)
    if rpc_port is not None:
        return _start(datadir, rpc_port, p2p_port, extra_args)
    for _ in range(2):
        try:
            return _start(datadir, free_port(), p2p_port, extra_args)
        except PortTaken:
            continue
    return _start(datadir, free_port(), p2p_port, extra_args)


def _start(datadir: Path, rpc_port: int, p2p_port: int | None, extra_args: tuple[str, ...]) -> Node:
    log = datadir / "stdout.log"
    # Every node gets a short -rpcservertimeout, or its shutdown (a restart under a running gateway, or the
    # end of its fixture) waits up to 30 s for a gateway's idle keep-alive RPC connection (measured: 14 s).
    listen = (["-listen=1", f"-bind=127.0.0.1:{p2p_port}", "-whitelist=noban@127.0.0.1"]
              if p2p_port else ["-listen=0", f"-port={free_port()}"])
    args = [
        BINARY, "-regtest", f"-datadir={datadir}", *listen, "-rpcservertimeout=2", "-server", f"-rpcport={rpc_port}",
        "-rpcbind=127.0.0.1", "-rpcallowip=127.0.0.1",
        f"-rpcuser={RPC_USER}", f"-rpcpassword={RPC_PASSWORD}", "-fallbackfee=0.0001", "-txindex=0",
        "-disablewallet", "-printtoconsole=0", "-dnsseed=0", "-upnp=0", *extra_args,
    ]
    with log.open("ab") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    node = Node(process, datadir, rpc_port, p2p_port)
    try:
        _wait_for_rpc(node, log)
    except BaseException:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        node.close()
        raise
    return node


@pytest.fixture(scope="session")
def litecoind_node(tmp_path_factory: pytest.TempPathFactory):
    """The session's node, listening for peers so the conformance kit's push case can follow it (``p2p``)."""
    node = start_node(tmp_path_factory.mktemp("litecoind"), p2p_port=free_port())
    try:
        yield node
    finally:
        stop(node)


@pytest.fixture(scope="session")
def replacing_node(tmp_path_factory: pytest.TempPathFactory):
    """The run's second node, one that accepts replacements (``-mempoolreplacement=1``; the session node refuses
    them). Started once per process for every module that needs it, as ``litecoind_node`` is; those modules
    take their coins with :func:`replacing_faucet`."""
    node = start_node(tmp_path_factory.mktemp("litecoind-rbf"), extra_args=("-mempoolreplacement=1",))
    try:
        yield node
    finally:
        stop(node)


@pytest.fixture(scope="session")
def replacing_coinbases(replacing_node: Node) -> list[tuple[str, int, int]]:
    """Mature coinbases on ``replacing_node``, mined once, handed out by :func:`replacing_faucet`."""
    miner = Faucet(replacing_node)
    start = replacing_node.height()
    miner.mine(COINBASE_MATURITY + REPLACING_COINBASES)
    miner.collect_coinbases(start + 1, start + REPLACING_COINBASES)
    return miner.utxos


def replacing_faucet(node: Node, coinbases: list[tuple[str, int, int]], count: int) -> Faucet:
    """A faucet on ``node`` owning ``count`` of the shared ``coinbases`` (taken from the list: no other faucet
    spends them)."""
    assert len(coinbases) >= count, f"replacing_coinbases holds {len(coinbases)}; raise REPLACING_COINBASES"
    return Faucet(node, utxos=[coinbases.pop() for _ in range(count)])


@pytest.fixture(scope="session")
def faucet(litecoind_node: Node) -> Faucet:
    """A faucet holding 50 mature coinbases (2,500 regtest LTC)."""
    faucet = Faucet(litecoind_node)
    start = litecoind_node.height()
    faucet.mine(COINBASE_MATURITY + 50)
    faucet.collect_coinbases(start + 1, start + 50)
    return faucet
