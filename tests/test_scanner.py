"""The generic scanner, driven by an in-memory chain adapter.

Also proves the plugin contract end to end: a throwaway third-party package
installed through the ``orbchain`` entry-point group registers a coin and a
chain adapter, and a payment is taken with it.
"""

from __future__ import annotations

import hashlib
import sys
import textwrap

import pytest

from orbchain.core.types.chains import Block, BlockRef, BlocksPruned, Capability, ChainAdapter, PastTransfer, Transfer
from orbchain.core.contract.plugins import get_plugin_manager, plugin_names
from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY

from .support import api, signup


class MemoryChain(ChainAdapter):
    """A chain in a list; tests append blocks and rewrite history."""

    name = "memchain"
    coins = ("BTC",)
    start_height = 0
    capabilities = frozenset({Capability.DEPOSITS, Capability.MEMPOOL})

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.pool: list[Transfer] = []
        self.block_calls = 0
        self.first_available = 0  # blocks below it are pruned
        self.history_asked: list[tuple[list[str], int, int]] = []
        self.append([])

    def append(self, transfers: list[Transfer], salt: str = "") -> Block:
        height = len(self.blocks)
        parent = self.blocks[-1].hash if self.blocks else "0" * 64
        digest = hashlib.sha256(f"{parent}{height}{salt}{transfers}".encode()).hexdigest()
        block = Block(height, digest, parent, tuple(transfers))
        self.blocks.append(block)
        return block

    def rewrite_from(self, height: int, salt: str) -> None:
        """Replace every block from ``height`` with empty ones of new hashes (plus one)."""
        count = len(self.blocks) - height + 1
        del self.blocks[height:]
        for _ in range(count):
            self.append([], salt)

    async def tip(self) -> BlockRef:
        return self.blocks[-1].ref

    async def block(self, height: int) -> Block:
        self.block_calls += 1
        if height < self.first_available:
            raise BlocksPruned(height, self.first_available)
        return self.blocks[height]

    async def mempool(self):
        return list(self.pool)

    async def address_history(self, addresses, start, end):
        self.history_asked.append((list(addresses), start, end))
        return [PastTransfer(t, BlockRef(b.height, f"past:{b.height}")) for b in self.blocks[start:end + 1]
                for t in b.transfers if t.address in addresses]


class MemoryChainPlugin:
    PLUGIN_NAME = "memchain"

    def __init__(self, chain: MemoryChain) -> None:
        self.chain = chain

    from orbchain.core.contract.plugins import hookimpl

    @hookimpl
    def register_chains(self, registry):
        registry.add(self.chain)


@pytest.fixture
async def setup(make_client, make_config):
    chain = MemoryChain()
    pm = get_plugin_manager([MemoryChainPlugin(chain)], blocked=["devnet"])
    client = await make_client(make_config(scheduler={"enabled": False}), pm)
    merchant = await signup(client)
    return client, merchant, chain, client.app[GATEWAY]


async def _payment(client, merchant, amount="0.01"):
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": amount})
    assert status == 200, body
    return body["data"]


async def _status(client, merchant, track_id):
    return (await api(client, "GET", f"/v1/payment/{track_id}", merchant.merchant_key))[1]["data"]


async def test_catch_up_after_downtime(setup):
    client, merchant, chain, gateway = setup
    payment = await _payment(client, merchant)
    await scan_chain(gateway, chain)
    # The gateway is "down" while five blocks are mined, the deposit in the first.
    chain.append([Transfer("aa" * 32, 0, payment["address"], "BTC", 1_000_000)])
    for _ in range(4):
        chain.append([])
    report = await scan_chain(gateway, chain)
    assert report.blocks == 5 and report.credited == 1 and report.scanned_tip == 5
    view = await _status(client, merchant, payment["track_id"])
    assert view["status"] == "Paid" and view["transactions"][0]["confirmations"] == 5


async def test_deep_reorg_rewinds_to_the_fork_point(setup):
    client, merchant, chain, gateway = setup
    payment = await _payment(client, merchant)
    chain.append([Transfer("bb" * 32, 0, payment["address"], "BTC", 1_000_000)])
    chain.append([])
    await scan_chain(gateway, chain)
    assert (await _status(client, merchant, payment["track_id"]))["status"] == "Paid"
    chain.rewrite_from(1, salt="fork")  # the deposit's block is gone and nothing replaces it
    report = await scan_chain(gateway, chain)
    assert report.disconnected == 2 and report.scanned_tip == 3
    view = await _status(client, merchant, payment["track_id"])
    assert view["status"] == "Paying" and view["transactions"][0]["confirmations"] == 0


async def test_unknown_addresses_cost_one_lookup_per_block(setup):
    client, merchant, chain, gateway = setup
    noise = [Transfer(f"{i:064x}", 0, f"bc1qnotours{i}", "BTC", 5) for i in range(300)]
    chain.append(noise)
    report = await scan_chain(gateway, chain)
    assert report.blocks == 2 and report.observed == 0
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM deposits") == 0


async def test_a_scan_is_bounded_and_resumes(setup):
    client, merchant, chain, gateway = setup
    chain.max_blocks_per_scan = 3
    for _ in range(7):
        chain.append([])
    first = await scan_chain(gateway, chain)
    second = await scan_chain(gateway, chain)
    third = await scan_chain(gateway, chain)
    assert (first.scanned_tip, second.scanned_tip, third.scanned_tip) == (2, 5, 7)


async def test_mempool_transfer_makes_the_payment_paying(setup):
    client, merchant, chain, gateway = setup
    payment = await _payment(client, merchant)
    chain.pool.append(Transfer("cc" * 32, 0, payment["address"], "BTC", 1_000_000))
    await scan_chain(gateway, chain)
    assert (await _status(client, merchant, payment["track_id"]))["status"] == "Paying"
    chain.pool.clear()
    chain.append([Transfer("cc" * 32, 0, payment["address"], "BTC", 1_000_000)])
    chain.append([])
    await scan_chain(gateway, chain)
    view = await _status(client, merchant, payment["track_id"])
    assert view["status"] == "Paid" and len(view["transactions"]) == 1


async def test_pruned_blocks_without_history_stop_the_scan(setup):
    client, merchant, chain, gateway = setup
    payment = await _payment(client, merchant)
    await scan_chain(gateway, chain)
    chain.append([Transfer("dd" * 32, 0, payment["address"], "BTC", 1_000_000)])
    chain.append([])
    chain.first_available = 2
    with pytest.raises(BlocksPruned):
        await scan_chain(gateway, chain)
    assert await gateway.db.fetch_val("SELECT MAX(height) FROM chain_blocks WHERE chain = 'memchain'") == 0


async def test_pruned_blocks_are_caught_up_through_address_history(setup):
    client, merchant, chain, gateway = setup
    chain.capabilities = frozenset({Capability.DEPOSITS, Capability.HISTORY})
    payment, other = await _payment(client, merchant), await _payment(client, merchant)
    await scan_chain(gateway, chain)
    chain.max_history_addresses = 5
    chain.append([Transfer("ee" * 32, 0, payment["address"], "BTC", 1_000_000)])
    for _ in range(3):
        chain.append([])
    chain.first_available = 3  # block 0 (remembered) to 2 are gone; 3 and 4 are there
    report = await scan_chain(gateway, chain)
    assert report.scanned_tip == 4 and report.blocks == 2 and report.disconnected == 0
    ((asked, start, end),) = chain.history_asked
    assert sorted(asked) == sorted([payment["address"], other["address"]]) and (start, end) == (1, 2)
    view = await _status(client, merchant, payment["track_id"])
    assert view["status"] == "Paid" and view["transactions"][0]["confirmations"] == 4
    remembered = await gateway.db.fetch_val("SELECT hash FROM chain_blocks WHERE chain = 'memchain' AND height = 2")
    assert remembered == "pruned:1-2"

    chain.rewrite_from(4, salt="fork")  # a reorg above the gap rewinds to it, never into it
    report = await scan_chain(gateway, chain)
    assert report.disconnected == 1 and report.scanned_tip == 5 and len(chain.history_asked) == 1
    assert (await _status(client, merchant, payment["track_id"]))["status"] == "Paid"


THIRD_PARTY_MODULE = textwrap.dedent('''
    """A throwaway third-party chain adapter package (test only)."""
    import hashlib
    from orbchain.api import Block, BlockRef, ChainAdapter, Coin, Transfer, hookimpl

    BLOCKS = []

    class AcmeChain(ChainAdapter):
        name = "acme"
        coins = ("ACME",)
        start_height = 0

        async def tip(self):
            return BLOCKS[-1].ref

        async def block(self, height):
            return BLOCKS[height]

    def add_block(transfers):
        parent = BLOCKS[-1].hash if BLOCKS else "0" * 64
        digest = hashlib.sha256(f"{parent}{len(BLOCKS)}".encode()).hexdigest()
        BLOCKS.append(Block(len(BLOCKS), digest, parent, tuple(transfers)))

    add_block([])

    @hookimpl
    def register_coins(registry):
        registry.add(Coin("ACME", "Acme Token", "acme", 6, 1, "1", "evm"))

    @hookimpl
    def register_chains(registry):
        registry.add(AcmeChain())
''')


@pytest.fixture
def third_party_package(tmp_path, monkeypatch):
    """Install ``acme_orbchain`` the way pip would: a module plus dist-info with entry points."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "acme_orbchain.py").write_text(THIRD_PARTY_MODULE)
    dist = site / "acme_orbchain-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-orbchain\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[orbchain]\nacme = acme_orbchain\n")
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("acme_orbchain", None)


async def test_third_party_adapter_takes_a_payment(third_party_package, make_client, make_config):
    pm = get_plugin_manager()
    assert "acme" in plugin_names(pm)
    client = await make_client(make_config(scheduler={"enabled": False}), pm)
    gateway = client.app[GATEWAY]
    assert "ACME" in gateway.coins and "acme" in gateway.chains
    merchant = await signup(client)
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt, json={"accepted_coins": ["ACME"]})
    assert status == 200, body
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "ACME", "amount": "12.5"})
    assert status == 200, body
    payment = body["data"]
    assert payment["address"].startswith("0x") and payment["pay_amount"] == "12.5"
    import acme_orbchain

    acme_orbchain.add_block([Transfer("dd" * 32, 0, payment["address"], "ACME", 12_500_000)])
    await scan_chain(gateway, gateway.chains.get("acme"))
    view = (await api(client, "GET", f"/v1/payment/{payment['track_id']}", merchant.merchant_key))[1]["data"]
    assert view["status"] == "Paid"
    balances = (await api(client, "GET", "/v1/general/account/balance", merchant.general_key))[1]["data"]["balances"]
    assert balances == [{"coin": "ACME", "amount": "12.375"}]
