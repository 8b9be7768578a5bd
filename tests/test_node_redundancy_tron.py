"""Several Tron ``url`` nodes (``tests/tron_node.py`` stand-ins): one node reached twice, one impostor.

The impostor is another node with its own blocks, on which a TRX payment to
our address lands; the two URLs of the real node outvote it and only the
real node's deposit is credited, once.
"""

from __future__ import annotations

from .tron_node import TronNode
from .tron_support import API_KEY, NodeOnline, open_tron_shop, tron_node  # noqa: F401 - fixtures

THRESHOLD = 19  # Tron's confirmations (SPEC)


async def test_an_impostor_node_is_set_aside_and_credits_nothing(tron_node, tron_protos, aiohttp_server,  # noqa: F811
                                                                 make_config, make_client):
    impostor = TronNode(tron_protos, api_key=API_KEY)
    server = await aiohttp_server(impostor.app())
    impostor.mine(tron_node.node.head.number - impostor.head.number)  # the same heights, other blocks
    urls = [str(server.make_url("")).rstrip("/"), tron_node.url, tron_node.url.replace("127.0.0.1", "localhost")]
    shop = await open_tron_shop(tron_node, make_config, make_client, url=urls)
    assert [s.state for s in shop.adapter.node_states()] == ["set aside", "up", "up"]
    forged = await shop.payment("TRX", "5")
    impostor.pay_trx(forged["address"], 5_000_000)
    impostor.mine(THRESHOLD + 1)
    real = await shop.payment("TRX", "5")
    tx_id = shop.node.pay_trx(real["address"], 5_000_000)
    await shop.mine(THRESHOLD)
    assert (await shop.view(forged["track_id"]))["status"] == "Waiting"
    assert (await shop.view(real["track_id"]))["status"] == "Paid"
    assert [d["tx_hash"] for d in await shop.deposits()] == [tx_id]
    await shop.mine(1)
    assert len(await shop.deposits()) == 1
