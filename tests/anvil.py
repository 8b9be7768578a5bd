"""A real anvil node for the EVM tests, and TestToken.sol compiled by solc-js.

The node starts once per test process on a free port (``--chain-id 31337``,
anvil's deterministic pre-funded accounts, automine), and is stopped at
exit. The ``anvil`` fixture takes an ``evm_snapshot`` before each test and
reverts to it after, so every test sees the same chain.

The tools come from ``scripts/ensure_node_tools.sh`` (``make test`` runs it).
When they are missing the tests FAIL with that hint; they never skip.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from eth_abi import encode
from eth_utils import keccak

from .support import free_port

REPO = Path(__file__).resolve().parent.parent
TOOLS = Path(os.environ.get("ORBCHAIN_NODE_TOOLS", REPO / "node_modules" / ".tools"))
ANVIL = TOOLS / "node_modules" / "@foundry-rs" / "anvil-linux-amd64" / "bin" / "anvil"
SOLC = TOOLS / "node_modules" / "solc"
CONTRACT = Path(__file__).resolve().parent / "contracts" / "TestToken.sol"
CHAIN_ID = 31337
# anvil's default mnemonic ("test test ... junk"): account 0 deploys, account 1 pays.
DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
PAYER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
PAYER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"  # anvil's public test key
REVERT_CODE = "0x60006000fd"  # PUSH1 0 PUSH1 0 REVERT: an account that refuses every call

COMPILE_JS = r"""
const solc = require(process.argv[1]);
const fs = require('fs');
const input = {language: 'Solidity', sources: {'TestToken.sol': {content: fs.readFileSync(process.argv[2], 'utf8')}},
  settings: {optimizer: {enabled: true, runs: 200}, evmVersion: 'cancun',
             outputSelection: {'*': {'*': ['abi', 'evm.bytecode.object']}}}};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (out.errors || []).filter(e => e.severity === 'error');
if (errors.length) { console.error(errors.map(e => e.formattedMessage).join('\n')); process.exit(1); }
const c = out.contracts['TestToken.sol'].TestToken;
process.stdout.write(JSON.stringify({abi: c.abi, bytecode: c.evm.bytecode.object, solc: solc.version()}));
"""


def require_tools() -> None:
    if not ANVIL.exists() or not (SOLC / "package.json").exists():
        pytest.fail(f"anvil or solc-js missing under {TOOLS}: run scripts/ensure_node_tools.sh "
                    "(make test does it)", pytrace=False)


def compile_token() -> dict[str, Any]:
    """``{abi, bytecode}`` of TestToken, cached next to the tools by source hash."""
    require_tools()
    source = CONTRACT.read_bytes()
    cache = TOOLS / "cache" / f"TestToken-{hashlib.sha256(source).hexdigest()[:16]}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    result = subprocess.run(["node", "-e", COMPILE_JS, str(SOLC), str(CONTRACT)], capture_output=True, text=True,
                            timeout=300)
    if result.returncode != 0:
        pytest.fail(f"solc-js failed to compile {CONTRACT.name}:\n{result.stderr}", pytrace=False)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(result.stdout)
    return json.loads(result.stdout)


@dataclass
class Anvil:
    """A running anvil and a synchronous JSON-RPC helper for the tests."""

    process: subprocess.Popen
    url: str
    token_artifact: dict[str, Any]
    automine: bool = True

    def rpc(self, method: str, *params: Any) -> Any:
        answer = httpx.post(self.url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)},
                            timeout=30).json()
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def height(self) -> int:
        return int(self.rpc("eth_blockNumber"), 16)

    def mine(self, blocks: int = 1) -> None:
        self.rpc("anvil_mine", hex(blocks))

    def set_balance(self, address: str, wei: int) -> None:
        self.rpc("anvil_setBalance", address, hex(wei))

    def balance(self, address: str) -> int:
        return int(self.rpc("eth_getBalance", address, "latest"), 16)

    def send(self, sender: str, to: str | None, *, value: int = 0, data: str = "0x", gas: int | None = None) -> str:
        """An unlocked anvil account sends a transaction; with automine, returns once it is mined."""
        tx: dict[str, Any] = {"from": sender, "value": hex(value), "data": data}
        if to is not None:
            tx["to"] = to
        if gas is not None:
            tx["gas"] = hex(gas)
        tx_hash = self.rpc("eth_sendTransaction", tx)
        if self.automine:
            self.settle()
        return tx_hash

    def set_automine(self, enabled: bool) -> None:
        self.rpc("evm_setAutomine", enabled)
        self.automine = enabled

    def settle(self, timeout: float = 20.0) -> None:
        """Wait until automine has mined everything sent: anvil answers before its miner runs."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.rpc("txpool_status")
            if int(status["pending"], 16) == 0 and int(status["queued"], 16) == 0:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"anvil did not mine its pool within {timeout} s: {status}")
            time.sleep(0.01)

    def receipt(self, tx_hash: str) -> dict[str, Any]:
        return self.rpc("eth_getTransactionReceipt", tx_hash)

    def deploy_token(self, name: str, symbol: str, decimals: int) -> str:
        args = encode(["string", "string", "uint8"], [name, symbol, decimals]).hex()
        tx_hash = self.send(DEPLOYER, None, data="0x" + self.token_artifact["bytecode"] + args)
        return self.receipt(tx_hash)["contractAddress"]

    def snapshot(self) -> str:
        return self.rpc("evm_snapshot")

    def revert(self, snapshot_id: str) -> None:
        assert self.rpc("evm_revert", snapshot_id) is True

    @property
    def ws_url(self) -> str:
        """anvil serves WebSocket (eth_subscribe) on its HTTP port."""
        return "ws" + self.url[len("http"):]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


_NODE: Anvil | None = None


def launch_anvil(port: int | None = None, *options: str) -> Anvil:
    """A new anvil process on ``port`` (a free one by default) with extra command-line ``options``.

    For tests that stop or restart their node: every other test shares
    :func:`start_anvil`'s. The caller stops it (``stop``, or ``process.kill()``).
    """
    artifact = compile_token()
    port = port or free_port()
    process = subprocess.Popen([str(ANVIL), "--port", str(port), "--chain-id", str(CHAIN_ID), "--silent",
                                "--host", "127.0.0.1", *options], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    node = Anvil(process, f"http://127.0.0.1:{port}", artifact)
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            pytest.fail(f"anvil exited: {process.stderr.read().decode(errors='replace')}", pytrace=False)
        try:
            node.height()
            return node
        except (httpx.HTTPError, ValueError):
            if time.monotonic() > deadline:
                node.stop()
                pytest.fail("anvil did not answer within 30 s", pytrace=False)
            time.sleep(0.05)


def start_anvil() -> Anvil:
    """The process-wide anvil (started on first use, stopped at exit)."""
    global _NODE
    if _NODE is not None and _NODE.process.poll() is None:
        return _NODE
    node = launch_anvil()
    atexit.register(node.stop)
    _NODE = node
    return node


@pytest.fixture
def anvil() -> Any:
    """The shared anvil, rolled back to the same state after every test."""
    node = start_anvil()
    snapshot = node.snapshot()
    try:
        yield node
    finally:
        node.revert(snapshot)


# -- a gateway wired to the node ----------------------------------------------------------------


def abi_call_data(function: str, types: list[str], args: list[Any]) -> str:
    """Contract call data built with eth_abi and eth_utils alone: the judge of the product's own encoders."""
    selector = keccak(text=f"{function}({','.join(types)})")[:4].hex()
    return "0x" + selector + encode(types, args).hex()


def balance_of_data(owner: str) -> str:
    """``balanceOf(owner)`` call data, independent of orbchain.chains.evm.tokens.balance_of_calldata."""
    return abi_call_data("balanceOf", ["address"], [owner])


@dataclass
class EvmShop:
    """A merchant on a gateway whose ``ethereum`` chain is the anvil node."""

    node: Anvil
    client: Any
    merchant: Any
    gateway: Any
    adapter: Any
    token: str  # pinned as USDT_ERC20 (6 decimals)
    other_token: str  # a look-alike nobody pinned

    def call_token(self, token: str, sender: str, function: str, types: list[str], args: list[Any],
                   gas: int | None = None) -> str:
        return self.node.send(sender, token, data=abi_call_data(function, types, args), gas=gas)

    def mint(self, to: str, amount: int, token: str | None = None) -> str:
        return self.call_token(token or self.token, DEPLOYER, "mint", ["address", "uint256"], [to, amount])

    def pay_token(self, to: str, amount: int, token: str | None = None, gas: int | None = None) -> str:
        return self.call_token(token or self.token, PAYER, "transfer", ["address", "uint256"], [to, amount], gas)

    def token_balance(self, owner: str, token: str | None = None) -> int:
        return int(self.node.rpc("eth_call", {"to": token or self.token, "data": balance_of_data(owner)},
                                 "latest"), 16)

    async def scan(self) -> Any:
        from orbchain.core.watching.scanner import scan_chain

        self.node.settle()
        return await scan_chain(self.gateway, self.adapter)

    async def sweep(self) -> Any:
        """One run of the sweep job, once anvil has mined what the last run sent, then serve's booking of what it
        recorded (``ledger.book_sweeps``)."""
        from orbchain.chains.evm.sweeper import sweep_chain
        from orbchain.core.ledger.sweep_bookings import book_sweeps

        self.node.settle()
        report = await sweep_chain(self.gateway, self.adapter)
        await book_sweeps(self.gateway)
        return report

    async def work_payouts(self) -> int:
        """One tick of the core payout worker, once anvil has mined what the last one sent.

        With automine, a second tick follows once anvil has mined what the first
        broadcast: anvil answers ``eth_sendRawTransaction`` before its miner runs,
        so the first tick's own poll may still find the transaction pending.
        """
        from orbchain.core.payouts.worker import process_payouts

        if not self.node.automine:
            return await process_payouts(self.gateway)
        self.node.settle()
        worked = await process_payouts(self.gateway)
        self.node.settle()
        return worked + await process_payouts(self.gateway)

    async def mine(self, blocks: int = 1) -> Any:
        self.node.mine(blocks)
        return await self.scan()


async def open_shop(node: Anvil, make_client: Any, make_config: Any, *, custody: dict | None = None,
                    overrides: dict | None = None, **evm_settings: Any) -> EvmShop:
    from orbchain.core.contract.plugins import get_plugin_manager
    from orbchain.web.keys import GATEWAY

    from .support import signup

    token = node.deploy_token("Tether USD", "USDT", 6)
    other = node.deploy_token("Tether USD", "USDT", 6)  # same name, not pinned: must be ignored
    settings = {"rpc_url": node.url, "chain_id": CHAIN_ID, "start_height": node.height() + 1, "scan_seconds": 1,
                "contracts": {"USDT_ERC20": token}, **evm_settings}
    config = make_config(scheduler={"enabled": False}, plugin={"evm": {"ethereum": settings}},
                         **({"custody": custody} if custody else {}), **(overrides or {}))
    client = await make_client(config, get_plugin_manager(blocked=["devnet", *(overrides or {}).get("plugins", {})
                                                                   .get("blocked", [])]))
    merchant = await signup(client, "evm-shop@example.com")
    gateway = client.app[GATEWAY]
    return EvmShop(node, client, merchant, gateway, gateway.chains.get("ethereum"), token, other)


async def credited_deposit(shop: EvmShop, coin: str, amount: str, units: int) -> str:
    """Pay ``amount`` of ``coin`` to a fresh payment address and mine it to crediting; returns the address."""
    from .support import api

    status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                             json={"currency": coin, "amount": amount})
    assert status == 200, body
    address = body["data"]["address"]
    if coin == "ETH":
        shop.node.send(PAYER, address, value=units)
    else:
        shop.mint(PAYER, units)
        shop.pay_token(address, units)
    await shop.mine(11)
    paid = (await api(shop.client, "GET", f"/v1/payment/{body['data']['track_id']}", shop.merchant.merchant_key))[1]
    assert paid["data"]["status"] == "Paid", paid
    return address
