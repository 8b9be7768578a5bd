"""Two real monerods behind one ``[plugin.monero]`` block (``daemon_url`` a list): node redundancy, live.

``two_monerods`` (module scope) is tests/monerod.py's regtest (node A, the
wallets, spendable coins) with a second monerod, B, that follows A's chain
over P2P, only with A (``--add-exclusive-node``). The gateway lists B first,
so B is the node it prefers, with ``quorum = 1``: stopping B (its process,
by PID) must move every read to A without losing a deposit, ``/ready`` and
``/metrics`` must show B down with its error, and once B runs again (it
syncs from A) the gateway must ask it again. The wallet follows A: a
wallet's daemon is one (docs/monero.md), so A is the node that stays up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal

import pytest

from orbchain.chains.monero import swapin
from orbchain.core.ledger import book as ledger
from orbchain.core.watching.scanner import scan_job

from .monerod import MoneroRegtest, Service, restart, start_daemon, start_regtest, stop
from .support import free_port
from .test_monero import CONFIRMATIONS, PICONERO, open_xmr_shop

TOKEN = "monero-nodes-metrics-token"
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class TwoMonerods:
    regtest: MoneroRegtest  # node A, the wallets
    second: Service  # node B

    def tip(self, service: Service) -> tuple[int, str]:
        info = service.rpc.call("get_info")
        return int(info["height"]), info["top_block_hash"]

    def wait_synced(self, seconds: float = 120) -> None:
        """Until B has A's tip (same height and hash): P2P sync takes a few seconds, more on a busy machine."""
        deadline = time.monotonic() + seconds
        while (theirs := self.tip(self.second)) != (ours := self.tip(self.regtest.daemon)):
            if time.monotonic() > deadline:
                raise AssertionError(f"monerod B at {theirs}, A at {ours} after {seconds} s")
            time.sleep(0.2)


@pytest.fixture(scope="module")
def two_monerods(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("monero-two")
    a_p2p, b_p2p = free_port(), free_port()
    second = start_daemon(root, None, name="monerod-b", p2p_port=b_p2p, peers=(a_p2p,))  # A mines once it met B
    try:
        pair = TwoMonerods(start_regtest(root, p2p_port=a_p2p, peers=(b_p2p,)), second)
    except BaseException:
        stop(second)
        raise
    try:
        pair.wait_synced()
        yield pair
    finally:
        for service in (pair.second, pair.regtest.payer_wallet, pair.regtest.gateway_wallet, pair.regtest.daemon):
            stop(service)


async def test_a_stopped_monerod_is_shown_down_deposits_go_on_and_it_is_used_again_once_back(
        make_client, make_config, two_monerods):
    pair, regtest = two_monerods, two_monerods.regtest
    b, a = pair.second.rpc.url, regtest.node.url
    shop = await open_xmr_shop(make_client, make_config, regtest, config={"metrics": {"token": TOKEN}},
                               daemon_url=[b, a], quorum=1)
    scan = scan_job(shop.adapter)  # the scheduler's job: it also sets the node metrics

    async def ready_nodes() -> list[dict]:
        response = await shop.client.get("/ready", headers=OPERATOR)
        [chain] = [c for c in (await response.json())["chains"] if c["chain"] == "monero"]
        return chain["nodes"]

    async def node_metrics() -> str:
        response = await shop.client.get("/metrics", headers=OPERATOR)
        assert response.status == 200
        return "".join(line + "\n" for line in (await response.text()).splitlines() if 'node="' + b in line)

    await scan(shop.gateway)
    assert [(n["name"], n["state"]) for n in await ready_nodes()] == [(b, "up"), (a, "up")]

    status, body = await shop.create("0.75")
    assert status == 200, body
    track_id, address = body["data"]["track_id"], body["data"]["address"]
    stop(pair.second)  # B, the node the gateway prefers, is gone (connection refused)
    txid = regtest.pay(address, int(Decimal("0.75") * PICONERO))
    await scan(shop.gateway)
    view = await shop.payment(track_id)
    assert view["status"] == "Paying" and view["transactions"][0]["tx_hash"] == txid
    regtest.mine_including(txid)
    regtest.mine(CONFIRMATIONS - 1)
    await scan(shop.gateway)
    view = await shop.payment(track_id)
    assert view["transactions"][0]["status"] == "CONFIRMED", view  # credited through A alone
    assert await ledger.balance(shop.gateway.db, swapin.SWAP_IN_ACCOUNT, "XMR") == int(Decimal("0.75") * PICONERO)

    down, up = await ready_nodes()
    assert (down["name"], down["state"], up["name"], up["state"]) == (b, "down", a, "up")
    assert down["error"].startswith("monerod ") and up["height"] == regtest.height() - 1, (down, up)
    metrics = await node_metrics()
    assert f'orbchain_chain_node_state{{chain="monero",node="{b}",state="down"}} 1.0' in metrics
    assert f'orbchain_chain_node_state{{chain="monero",node="{b}",state="up"}} 0.0' in metrics

    pair.second = restart(pair.second)  # B again, same ports and data directory: it syncs from A
    pair.wait_synced()
    await scan(shop.gateway)  # B is asked in the background while down ...
    await probed(shop)
    regtest.mine(1)
    pair.wait_synced()
    await scan(shop.gateway)  # ... and up again once it answered
    tip = regtest.height() - 1
    assert [(n["state"], n["height"]) for n in await ready_nodes()] == [("up", tip), ("up", tip)]
    metrics = await node_metrics()
    assert f'orbchain_chain_node_state{{chain="monero",node="{b}",state="up"}} 1.0' in metrics
    assert f'orbchain_chain_node_reported_height{{chain="monero",node="{b}"}} {float(tip)}' in metrics
    assert (await ledger.check_ledger(shop.gateway.db)).ok
    deposits = await shop.gateway.db.fetch_val("SELECT COUNT(*) FROM deposits WHERE tx_hash = :t", {"t": txid})
    assert deposits == 1


async def probed(shop) -> None:
    """Wait for the background probes of down nodes (``NodeSet._probe``) to finish."""
    for node in shop.adapter.nodes.nodes:
        if node.probe is not None:
            await node.probe
