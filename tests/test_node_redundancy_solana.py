"""Several Solana ``rpc_url`` nodes (``tests/solana_node.py`` stand-ins): one cluster reached twice, one impostor.

The impostor is another node with its own chain (every slot another block
hash) on which a payment to our address lands. It is outvoted by the two
URLs of the real node and set aside; only the real node's deposit counts.
"""

from __future__ import annotations

import pytest

from orbchain.core.types.chains import ChainUnavailable

from .solana_node import open_solana_shop, running_node


async def test_an_impostor_node_is_set_aside_and_credits_nothing(make_config, make_client):
    async with running_node() as node, running_node() as impostor:
        # The second and third URLs reach the same node.
        urls = [impostor.url, node.url, node.url.replace("127.0.0.1", "localhost")]
        shop = await open_solana_shop(node, make_config, make_client, rpc_url=urls)
        assert [s.state for s in shop.adapter.node_states()] == ["set aside", "up", "up"]
        forged = await shop.payment()
        impostor.pay(forged["address"], shop.units("1"))
        impostor.produce(40)
        real = await shop.payment()
        node.pay(real["address"], shop.units("1"))
        await shop.mine(32)
        assert (await shop.view(forged["track_id"]))["status"] == "Waiting"
        assert (await shop.view(real["track_id"]))["status"] == "Paid"
        assert await shop.ledger_ok()


async def test_one_url_down_leaves_a_quorum_of_two(make_config, make_client):
    async with running_node() as node:
        dead = "http://127.0.0.1:9"
        urls = [dead, node.url, node.url.replace("127.0.0.1", "localhost")]
        shop = await open_solana_shop(node, make_config, make_client, rpc_url=urls, timeout_seconds=2)
        payment = await shop.payment()
        node.pay(payment["address"], shop.units("1"))
        await shop.mine(32)
        assert (await shop.view(payment["track_id"]))["status"] == "Paid"
        assert [s.state for s in shop.adapter.node_states()] == ["down", "up", "up"]
        with pytest.raises(ChainUnavailable, match="1 of 3 node"):
            shop.adapter.nodes.nodes[2].client.url = dead  # a second node lost: no quorum, the scan waits
            await shop.scan()
