"""A real node on another network than the configuration says is refused, by name, and nothing is credited.

litecoind (the session regtest node) against a configuration expecting
Litecoin's mainnet; anvil (chain id 31337) against a configuration expecting
chain id 1; the Tron stand-in with Nile's genesis under a mainnet
configuration; the Solana stand-in with devnet's genesis under the default
cluster (mainnet-beta); the LND stand-in on testnet under a regtest
configuration issues no invoice. ``/ready`` names the node and what it reported, ``/metrics`` has
``orbchain_node_refused``, and the scan reads no block. The same nodes under
their right configuration are used.

Behind its own peers: a second litecoind that holds headers of blocks it has not
got (announced to it with ``submitheader``, as a peer's header announcement does;
the blocks come later with ``submitblock``), the Tron stand-in whose peers list
blocks still to fetch (``getnodeinfo``), the Solana stand-in whose cluster is
slots ahead (``getHealth`` -32005). The rules on their own, with an injected
clock: tests/unit/test_node_identity.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from orbchain.api import ChainUnavailable
from orbchain.chains.lightning import poll_job
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.watching.scanner import scan_job
from orbchain.web.keys import GATEWAY

from .anvil import CHAIN_ID, anvil  # noqa: F401 - anvil is a fixture
from .lightning_support import lightning_shop
from .litecoind import RPC_PASSWORD, Faucet, litecoind_node, start_node, stop  # noqa: F401 - the session fixture
from .lnd_standin import LndStandIn
from .solana_node import DEVNET_GENESIS_HASH, MAINNET_GENESIS_HASH, running_node
from .tron_node import MAINNET_GENESIS_ID, NILE_GENESIS_ID, TronNode
from .support import api
from .tron_support import API_KEY, tron_node, tron_settings  # noqa: F401 - fixtures

TOKEN = "node-identity-metrics-token"
LTC_MAINNET_GENESIS = "12a765e31ffd4059bada1e25190f6e98c99d9714d334efa41a195a7e7e04bfe2"
LTC_REGTEST_GENESIS = "530827f38f93b43ed12af0b3ad25a288dc02ed74d6d7857862df51fc56c416f9"


async def open_gateway(make_client: Any, make_config: Any, plugin: dict[str, Any]) -> Any:
    config = make_config(scheduler={"enabled": False}, metrics={"token": TOKEN}, readiness={"node_timeout_seconds": 5},
                         plugin=plugin)
    return await make_client(config, get_plugin_manager(blocked=["devnet"]))


async def chain_readiness(client: Any, chain: str) -> dict[str, Any]:
    response = await client.get("/ready", headers={"Authorization": f"Bearer {TOKEN}"})
    body = await response.json()
    return next(c for c in body["chains"] if c["chain"] == chain)


async def refused_metric(client: Any, chain: str, node: str, reason: str = "wrong_network") -> str:
    gateway = client.app[GATEWAY]
    adapter = gateway.chains.get(chain)
    with pytest.raises(ChainUnavailable):
        await scan_job(adapter)(gateway)  # the scheduler's job: it sets the node metrics, then fails
    metrics = gateway.metrics.exposition().decode()
    return next(line for line in metrics.splitlines()
                if line.startswith(f'orbchain_node_refused{{chain="{chain}",node="{node}",reason="{reason}"}}'))


def check_again_now(client: Any, chain: str) -> None:
    """The next /ready reads each node's state again, as the check a minute later would (``recheck_seconds``)."""
    client.app[GATEWAY].chains.get(chain).nodes.recheck_seconds = 0


async def test_litecoind_on_regtest_under_a_mainnet_configuration_is_refused(
        make_client, make_config, litecoind_node):  # noqa: F811
    block = litecoind_node.plugin_block(network="mainnet")
    client = await open_gateway(make_client, make_config, {"bitcoin": {"LTC": block}})
    ready = await chain_readiness(client, "litecoin")
    assert ready["reachable"] is False and ready["synced"] is False
    (node,) = ready["nodes"]
    assert node["name"] == litecoind_node.url and node["state"] == "refused" and node["refused"] == "wrong_network"
    assert node["error"] == (f"refused: it reports network 'regtest' (genesis {LTC_REGTEST_GENESIS}); the"
                             f" configuration expects network 'main' and genesis '{LTC_MAINNET_GENESIS}'")
    assert f"node {litecoind_node.url} refused (wrong_network)" in ready["error"]
    assert RPC_PASSWORD not in str(ready)
    assert await refused_metric(client, "litecoin", litecoind_node.url) == (
        f'orbchain_node_refused{{chain="litecoin",node="{litecoind_node.url}",reason="wrong_network"}} 1.0')
    scanned = await client.app[GATEWAY].db.fetch_val("SELECT COUNT(*) FROM chain_blocks WHERE chain = 'litecoin'")
    assert scanned == 0

    right = await open_gateway(make_client, make_config, {"bitcoin": {"LTC": litecoind_node.plugin_block()}})
    ready = await chain_readiness(right, "litecoin")
    assert ready["reachable"] is True and [(n["state"], n["refused"]) for n in ready["nodes"]] == [("up", None)]


async def test_anvil_under_another_chain_id_is_refused(make_client, make_config, anvil):  # noqa: F811
    def block(chain_id: int) -> dict[str, Any]:
        return {"ethereum": {"rpc_url": anvil.url, "chain_id": chain_id, "scan_seconds": 1}}

    client = await open_gateway(make_client, make_config, {"evm": block(1)})
    ready = await chain_readiness(client, "ethereum")
    assert ready["reachable"] is False
    (node,) = ready["nodes"]
    assert node["state"] == "refused" and node["refused"] == "wrong_network"
    assert node["error"] == f"refused: it reports network '{CHAIN_ID}'; the configuration expects network '1'"
    assert (await refused_metric(client, "ethereum", anvil.url)).endswith(" 1.0")

    right = await open_gateway(make_client, make_config, {"evm": block(CHAIN_ID)})
    ready = await chain_readiness(right, "ethereum")
    assert ready["reachable"] is True and [(n["state"], n["refused"]) for n in ready["nodes"]] == [("up", None)]


async def test_a_tron_node_on_nile_under_a_mainnet_configuration_is_refused(
        tron_node, tron_protos, aiohttp_server, make_client, make_config):  # noqa: F811
    nile = TronNode(tron_protos, api_key=API_KEY, genesis_id=NILE_GENESIS_ID)
    nile_url = str((await aiohttp_server(nile.app())).make_url("")).rstrip("/")
    client = await open_gateway(make_client, make_config, {"tron": tron_settings(tron_node, url=nile_url)})
    ready = await chain_readiness(client, "tron")
    assert ready["reachable"] is False
    (node,) = ready["nodes"]
    assert node["state"] == "refused" and node["refused"] == "wrong_network"
    assert node["error"] == (f"refused: it reports genesis {NILE_GENESIS_ID}; the configuration expects genesis"
                             f" '{MAINNET_GENESIS_ID}'")
    assert API_KEY not in str(ready)

    right = await open_gateway(make_client, make_config, {"tron": tron_settings(tron_node)})
    ready = await chain_readiness(right, "tron")
    assert ready["reachable"] is True and [(n["state"], n["refused"]) for n in ready["nodes"]] == [("up", None)]


async def test_a_solana_node_on_devnet_under_the_default_mainnet_cluster_is_refused(make_client, make_config):
    async with running_node(genesis_hash=DEVNET_GENESIS_HASH) as devnet, running_node() as mainnet:
        client = await open_gateway(make_client, make_config, {"solana": {"rpc_url": devnet.url}})
        ready = await chain_readiness(client, "solana")
        assert ready["reachable"] is False
        (node,) = ready["nodes"]
        assert node["state"] == "refused" and node["refused"] == "wrong_network"
        assert node["error"] == (f"refused: it reports genesis {DEVNET_GENESIS_HASH}; the configuration expects"
                                 f" genesis '{MAINNET_GENESIS_HASH}'")
        # Only what it says about itself was read (its newest block, for the tip age): never asked for the tip.
        assert [method for method, _ in devnet.calls] == ["getGenesisHash", "getHealth", "getSlot", "getBlock"]

        right = await open_gateway(make_client, make_config, {"solana": {"rpc_url": mainnet.url}})
        ready = await chain_readiness(right, "solana")
        assert ready["reachable"] is True and [(n["state"], n["refused"]) for n in ready["nodes"]] == [("up", None)]


def lnd_block(node: LndStandIn) -> dict[str, Any]:
    return {"backend": "lnd", "network": "regtest", "lnd_url": node.url, "macaroon_path": node.macaroon_path,
            "tls_cert_path": node.cert_path, "subscribe": False}


async def test_an_lnd_on_testnet_under_a_regtest_configuration_issues_no_invoice(make_client, make_config,
                                                                                 tmp_path):
    testnet, regtest = LndStandIn("tb"), LndStandIn()
    for node, directory in ((testnet, tmp_path / "testnet"), (regtest, tmp_path / "regtest")):
        directory.mkdir()
        await node.start(directory)
    try:
        shop = await lightning_shop(make_config, make_client, metrics={"token": TOKEN},
                                    plugin={"lightning": lnd_block(testnet)})
        status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                                 json={"currency": "BTC_LN", "amount": "0.0001", "lifetime": 30})
        assert status == 503, body
        assert not [path for _, path, _ in testnet.requests if path == "/v1/invoices"]  # never asked to issue
        await poll_job(shop.gateway)  # the scheduler's poll: it sets the node metrics
        ready = await chain_readiness(shop.client, "lightning")
        (node,) = ready["nodes"]
        assert ready["reachable"] is False and node["state"] == "refused" and node["refused"] == "wrong_network"
        assert node["error"] == ("refused: it reports network 'bitcoin:testnet'; the configuration expects network"
                                 " 'bitcoin:regtest'")
        assert (f'orbchain_node_refused{{chain="lightning",node="{testnet.url}",reason="wrong_network"}} 1.0'
                in shop.gateway.metrics.exposition().decode())

        right = (await open_gateway(make_client, make_config, {"lightning": lnd_block(regtest)})).app[GATEWAY]
        invoice = await right.chains.get("lightning").backend.create_invoice(10_000, "the right node", 600)
        assert invoice.bolt11.startswith("lnbcrt")
        assert [(n.state, n.refused) for n in right.chains.get("lightning").node_states()] == [("up", None)]
    finally:
        await testnet.close()
        await regtest.close()


@pytest.fixture(scope="module")
def behind_node(tmp_path_factory: pytest.TempPathFactory):
    """A second litecoind, one per module: each test run gives it the session node's next blocks."""
    node = start_node(tmp_path_factory.mktemp("litecoind-behind"))
    try:
        yield node
    finally:
        stop(node)


async def test_a_litecoind_holding_headers_it_has_no_blocks_for_is_refused_until_it_has_them(
        make_client, make_config, litecoind_node, behind_node):  # noqa: F811
    ahead, behind = 10, behind_node  # LTC's node_lag_blocks is 4
    start = behind.height()
    if litecoind_node.height() < start + ahead:
        Faucet(litecoind_node).mine(start + ahead - litecoind_node.height())
    hashes = [litecoind_node.call("getblockhash", height) for height in range(start + 1, start + ahead + 1)]
    assert behind.call("getblockhash", start) == litecoind_node.call("getblockhash", start)  # the same chain
    for block_hash in hashes:  # the network's headers reach it; their blocks do not (yet)
        behind.call("submitheader", litecoind_node.call("getblockheader", block_hash, False))
    chain_info = behind.call("getblockchaininfo")
    assert (chain_info["blocks"], chain_info["headers"]) == (start, start + ahead)
    client = await open_gateway(make_client, make_config, {"bitcoin": {"LTC": behind.plugin_block()}})
    ready = await chain_readiness(client, "litecoin")
    assert ready["reachable"] is False
    (node,) = ready["nodes"]
    assert node["name"] == behind.url and node["state"] == "refused" and node["refused"] == "behind_peers"
    assert node["error"] == ("refused: it is 10 block(s) behind what its peers have, more than the 4 allowed"
                             " (node_lag_blocks)")
    assert await refused_metric(client, "litecoin", behind.url, "behind_peers") == (
        f'orbchain_node_refused{{chain="litecoin",node="{behind.url}",reason="behind_peers"}} 1.0')
    db = client.app[GATEWAY].db
    assert await db.fetch_val("SELECT COUNT(*) FROM chain_blocks WHERE chain = 'litecoin'") == 0

    for block_hash in hashes:  # it downloads and validates them: caught up
        assert behind.call("submitblock", litecoind_node.call("getblock", block_hash, 0)) is None
    check_again_now(client, "litecoin")
    ready = await chain_readiness(client, "litecoin")
    assert ready["reachable"] is True and ready["node_height"] == start + ahead
    assert [(n["state"], n["refused"]) for n in ready["nodes"]] == [("up", None)]


async def test_a_tron_node_whose_peers_have_blocks_it_has_not_fetched_is_refused(
        tron_node, make_client, make_config):  # noqa: F811
    tron_node.node.peers_ahead = [0, 6]  # node_lag_blocks is 5: one peer is 6 blocks ahead
    client = await open_gateway(make_client, make_config, {"tron": tron_settings(tron_node)})
    ready = await chain_readiness(client, "tron")
    (node,) = ready["nodes"]
    assert ready["reachable"] is False and node["state"] == "refused" and node["refused"] == "behind_peers"
    assert node["error"] == "refused: it is 6 block(s) behind what its peers have, more than the 5 allowed (node_lag_blocks)"
    assert (await refused_metric(client, "tron", node["name"], "behind_peers")).endswith(" 1.0")

    tron_node.node.peers_ahead = [0, 5]  # within the bound
    check_again_now(client, "tron")
    ready = await chain_readiness(client, "tron")
    assert ready["reachable"] is True and [(n["state"], n["refused"]) for n in ready["nodes"]] == [("up", None)]


async def test_a_solana_node_the_cluster_is_slots_ahead_of_is_refused(make_client, make_config):
    async with running_node() as solana:
        solana.cluster_slot = solana.tip.slot + 400  # getHealth: "Node is behind by 400 slots"
        client = await open_gateway(make_client, make_config, {"solana": {"rpc_url": solana.url}})
        ready = await chain_readiness(client, "solana")
        (node,) = ready["nodes"]
        assert ready["reachable"] is False and node["state"] == "refused" and node["refused"] == "behind_peers"
        assert node["error"] == ("refused: it is 400 block(s) behind what its peers have, more than the 150"
                                 " allowed (node_lag_blocks)")

        solana.cluster_slot = None  # caught up with its cluster
        check_again_now(client, "solana")
        ready = await chain_readiness(client, "solana")
        assert ready["reachable"] is True and [(n["state"], n["refused"]) for n in ready["nodes"]] == [("up", None)]
