"""A real monerod in regtest with two monero-wallet-rpc processes, for the XMR detection tests.

``monero_regtest`` (session scope: once per test process) starts ``monerod --regtest --offline`` with a
fixed difficulty of 1 and its ZMQ publisher (``--zmq-pub``) on free ports in a temporary directory, then two
``monero-wallet-rpc`` processes against it:

* the **gateway's** wallet: a full wallet is created only to read its
  address and secret view key, then replaced by a **view-only** wallet made
  from those two (``generate_from_keys`` without a spend key) — the wallet
  the gateway really uses;
* the **payer's** wallet: a full wallet, funded by mining coinbases to it
  (``generateblocks``; coinbases unlock after 60 blocks), that pays the
  gateway's subaddresses with real signed transactions the node judges.

Every process is stopped by PID at the end, also when a test failed. A
missing binary is a failure pointing at ``scripts/ensure_monero.sh``, never a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from .support import free_port

DAEMON, WALLET_RPC = "monerod", "monero-wallet-rpc"
COINBASE_UNLOCK = 60
SPENDABLE_AFTER = 10
RING_DECOYS = 16  # a spend's ring needs this many other unlocked outputs on chain


class Rpc:
    """Synchronous JSON-RPC for setup and assertions (the gateway has its own async client)."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self._http = httpx.Client(timeout=300)

    def call(self, method: str, **params: Any) -> Any:
        response = self._http.post(self.url + "/json_rpc", content=json.dumps(
            {"jsonrpc": "2.0", "id": "0", "method": method, "params": params}))
        answer = response.json()
        if answer.get("error"):
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def other(self, path: str, **body: Any) -> Any:
        answer = self._http.post(self.url + path, content=json.dumps(body)).json()
        assert answer.get("status") == "OK", answer
        return answer

    def close(self) -> None:
        self._http.close()


@dataclass
class Service:
    name: str
    process: subprocess.Popen
    rpc: Rpc
    log: Path
    args: list[str]  # how it was started: ``restart`` starts it again with them
    workdir: Path


@dataclass
class MoneroRegtest:
    daemon: Service
    gateway_wallet: Service
    payer_wallet: Service
    payer_address: str
    zmq_pub_url: str  # monerod's --zmq-pub publisher (the adapter's push)

    @property
    def node(self) -> Rpc:
        return self.daemon.rpc

    @property
    def wallet(self) -> Rpc:
        return self.gateway_wallet.rpc

    @property
    def payer(self) -> Rpc:
        return self.payer_wallet.rpc

    def plugin_block(self, **extra: Any) -> dict[str, Any]:
        """The ``[plugin.monero]`` block pointing the gateway at this node and its view-only wallet."""
        return {"daemon_url": self.node.url, "wallet_rpc_url": self.wallet.url, "network": "regtest",
                "scan_seconds": 1, **extra}

    def height(self) -> int:
        """The number of blocks (the tip's height plus one)."""
        return int(self.node.call("get_info")["height"])

    def mine(self, blocks: int, to: str | None = None) -> None:
        self.node.call("generateblocks", amount_of_blocks=blocks, wallet_address=to or self.payer_address)

    def pay(self, address: str, amount: int) -> str:
        """A real transfer of ``amount`` piconero from the payer's wallet (into the pool); its txid."""
        self.payer.call("refresh")
        sent = self.payer.call("transfer", destinations=[{"address": address, "amount": amount}])
        assert sent["tx_hash"] in self.pool_hashes(), "the node took the payer's transaction into its pool"
        return sent["tx_hash"]

    def pay_announced(self, address: str, amount: int) -> str:
        """A real transfer the payer's wallet signs and the test hands to the node itself, kept from relay
        (``send_raw_transaction`` with ``do_not_relay``); its txid. monerod announces such a transaction on
        ``json-minimal-txpool_add`` at once, as it does one it fluffs (an ``--offline`` node fluffs none)."""
        self.payer.call("refresh")
        built = self.payer.call("transfer", destinations=[{"address": address, "amount": amount}],
                                do_not_relay=True, get_tx_hex=True)
        self.node.other("/send_raw_transaction", tx_as_hex=built["tx_blob"], do_not_relay=True)
        assert built["tx_hash"] in self.pool_hashes(), "the node took the payer's transaction into its pool"
        return built["tx_hash"]

    def tx_height(self, txid: str) -> int | None:
        """The height of the block holding ``txid`` on the node's best chain, None while in the pool."""
        [tx] = self.node.other("/get_transactions", txs_hashes=[txid])["txs"]
        return None if tx["in_pool"] else int(tx["block_height"])

    def mine_including(self, txid: str, tries: int = 3) -> int:
        """Mine one block at a time until ``txid`` is in one (the node picks its template); its height."""
        for _ in range(tries):
            self.mine(1)
            height = self.tx_height(txid)
            if height is not None:
                return height
        raise AssertionError(f"{txid} was not mined in {tries} blocks")

    def pool_hashes(self) -> list[str]:
        return self.node.other("/get_transaction_pool_hashes").get("tx_hashes", [])

    def reorg_dropping_pool(self, depth: int) -> None:
        """Pop the newest ``depth`` blocks, drop what they held, mine ``depth + 1`` others."""
        self.node.other("/pop_blocks", nblocks=depth)
        self.node.call("flush_txpool")
        self.mine(depth + 1)
        self.payer.call("refresh")
        self.payer.call("rescan_spent")  # the dropped spend's outputs are the payer's again


def _wait(service: Service, probe: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if service.process.poll() is not None:
            raise RuntimeError(f"{service.name} exited with {service.process.returncode}: "
                               f"{service.log.read_text(errors='replace')[-2000:]}")
        try:
            service.rpc.call(probe)
            return
        except Exception:  # noqa: BLE001 - still starting
            time.sleep(0.5)
    raise RuntimeError(f"{service.name} did not answer within {seconds} s")


def _start(name: str, args: list[str], workdir: Path, port: int, probe: str) -> Service:
    if shutil.which(args[0]) is None:
        pytest.fail(f"{args[0]} is not installed: run scripts/ensure_monero.sh (make test does)", pytrace=False)
    log = workdir / f"{name}.out"
    with log.open("ab") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=workdir)
    service = Service(name, process, Rpc(port), log, args, workdir)
    try:
        _wait(service, probe)
    except BaseException:
        stop(service)
        raise
    return service


def restart(service: Service, probe: str = "get_info") -> Service:
    """``service`` started again with the same arguments (ports, data directory), once it answers."""
    port = int(service.rpc.url.rsplit(":", 1)[1])
    return _start(service.name, service.args, service.workdir, port, probe)


def stop(service: Service) -> None:
    """Stop by PID: SIGTERM, then SIGKILL if it lingers."""
    service.rpc.close()
    if service.process.poll() is None:
        service.process.send_signal(signal.SIGTERM)
        try:
            service.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(service.process.pid, signal.SIGKILL)
            service.process.wait(timeout=10)


def start_daemon(root: Path, zmq_pub_url: str | None, *, name: str = "monerod", p2p_port: int | None = None,
                 peers: tuple[int, ...] = (), options: tuple[str, ...] = ()) -> Service:
    """A regtest monerod: ``--offline`` alone, or talking P2P only to the local ``peers`` (their P2P ports),
    which is how a second node follows the first one's chain (``--add-exclusive-node``: no seed node, no DNS).
    ``options`` adds flags (``--keep-fakechain``: a restart keeps the regtest chain instead of starting anew)."""
    port = free_port()
    network = [f"--add-exclusive-node=127.0.0.1:{peer}" for peer in peers] + [
        "--p2p-bind-ip=127.0.0.1", "--allow-local-ip", "--disable-dns-checkpoints", "--check-updates=disabled",
    ] if peers else ["--offline"]
    args = [DAEMON, *([f"--zmq-pub={zmq_pub_url}"] if zmq_pub_url else []), "--regtest", *network,
            "--fixed-difficulty", "1", "--no-igd", "--non-interactive",
            f"--data-dir={root / name}", "--rpc-bind-ip=127.0.0.1", f"--rpc-bind-port={port}",
            f"--p2p-bind-port={p2p_port or free_port()}", f"--zmq-rpc-bind-port={free_port()}", "--log-level=0",
            f"--log-file={root / (name + '.log')}", *options]
    return _start(name, args, root, port, "get_info")


def _until_synchronized(daemon: Service, seconds: float = 120) -> None:
    """A monerod that is not ``--offline`` mines (``generateblocks``) only once it met a peer and synced."""
    deadline = time.monotonic() + seconds
    while not daemon.rpc.call("get_info")["synchronized"]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{daemon.name} met no peer within {seconds} s")
        time.sleep(0.2)


def start_wallet_rpc(root: Path, name: str, daemon_port: int) -> Service:
    port = free_port()
    wallets = root / name
    wallets.mkdir()
    args = [WALLET_RPC, f"--daemon-address=127.0.0.1:{daemon_port}", "--trusted-daemon", "--rpc-bind-ip=127.0.0.1",
            f"--rpc-bind-port={port}", "--disable-rpc-login", f"--wallet-dir={wallets}", "--non-interactive",
            "--log-level=0", f"--log-file={root / (name + '.log')}"]
    return _start(name, args, root, port, "get_version")


def _view_only(wallet: Rpc) -> None:
    """Create a full wallet, keep only its address and view key, and open a view-only wallet of them."""
    wallet.call("create_wallet", filename="gateway-full", language="English")
    address = wallet.call("get_address", account_index=0)["address"]
    view_key = wallet.call("query_key", key_type="view_key")["key"]
    wallet.call("close_wallet")
    wallet.call("generate_from_keys", filename="gateway-view", address=address, viewkey=view_key, password="",
                restore_height=0)
    try:
        wallet.call("query_key", key_type="spend_key")
    except RuntimeError:
        return  # a view-only wallet has no spend key to show
    raise AssertionError("the gateway's wallet must be view-only")


def start_regtest(root: Path, *, p2p_port: int | None = None, peers: tuple[int, ...] = (),
                  options: tuple[str, ...] = ()) -> MoneroRegtest:
    """The node, the two wallets and spendable coins; ``p2p_port``/``peers``/``options`` as ``start_daemon``'s."""
    zmq_pub_url = f"tcp://127.0.0.1:{free_port()}"
    daemon = start_daemon(root, zmq_pub_url, p2p_port=p2p_port, peers=peers, options=options)
    started = [daemon]
    try:
        if peers:
            _until_synchronized(daemon)
        port = int(daemon.rpc.url.rsplit(":", 1)[1])
        gateway_wallet = start_wallet_rpc(root, "gateway-wallet", port)
        started.append(gateway_wallet)
        payer_wallet = start_wallet_rpc(root, "payer-wallet", port)
        started.append(payer_wallet)
        _view_only(gateway_wallet.rpc)
        payer_wallet.rpc.call("create_wallet", filename="payer", language="English")
        payer_address = payer_wallet.rpc.call("get_address", account_index=0)["address"]
        regtest = MoneroRegtest(daemon, gateway_wallet, payer_wallet, payer_address, zmq_pub_url)
        regtest.mine(COINBASE_UNLOCK + SPENDABLE_AFTER + 2 * RING_DECOYS)
        payer_wallet.rpc.call("refresh")
        return regtest
    except BaseException:
        for service in reversed(started):
            stop(service)
        raise


@pytest.fixture(scope="module")
def monero_regtest(tmp_path_factory: pytest.TempPathFactory):
    """A node and wallets per module that uses them (test_monero, test_xmr_swapin; registered in
    tests/conftest.py): a start mines over a hundred blocks (68-136 s measured on a loaded machine). Shared by the
    whole process it failed in the clean-clone run: test_xmr_swapin, run 18 minutes after test_monero on the same
    node, had every payer transfer "rejected by daemon" (back to back they passed); one node per module again."""
    regtest = start_regtest(tmp_path_factory.mktemp("monero"))
    try:
        yield regtest
    finally:
        for service in (regtest.payer_wallet, regtest.gateway_wallet, regtest.daemon):
            stop(service)
