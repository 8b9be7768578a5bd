"""A payer replaces or double-spends a deposit: seen within one scan (issue 46 item 3), on a real litecoind.

The module runs on the run's second node, started once with ``-mempoolreplacement=1``
(``tests/litecoind.py`` ``replacing_node``; Litecoin Core refuses replacements by
default); the payer is the faucet's key, signing BIP 125-signalling transactions it later replaces.
"""

from __future__ import annotations

import pytest

from orbchain.core.events.webhooks import deliver_due
from orbchain.web.live_state import read_state

from .litecoind import Faucet, replacing_faucet
from .test_bitcoin_litecoind import LTC, make_shop, receiver  # noqa: F401 - the webhook receiver fixture

REPLACEABLE = 0xFFFFFFFD  # BIP 125: any sequence below 0xfffffffe signals replaceability
LOW_FEE, HIGH_FEE = 20_000, 80_000


@pytest.fixture(scope="module")
def payer(replacing_node, replacing_coinbases) -> Faucet:
    return replacing_faucet(replacing_node, replacing_coinbases, 10)


@pytest.fixture
async def shop(make_client, make_config, replacing_node, payer, receiver):  # noqa: F811 - the fixture
    return await make_shop(make_client, make_config, replacing_node, payer, receiver)


async def _paying(shop, amount: int) -> tuple[dict, tuple[str, int, int], str]:
    """A payment paid by a replaceable transaction seen in the mempool: (payment, the coin it spends, txid)."""
    payment = await shop.payment("0.5")
    coin = shop.faucet.utxos.pop()
    original = shop.faucet.spend(coin, payment["address"], amount, LOW_FEE, sequence=REPLACEABLE)
    await shop.scan()
    assert (await shop.status(payment["track_id"]))["status"] == "Paying"
    return payment, coin, original.txid


async def test_replacement_paying_the_same_address_credits_once(shop, receiver):  # noqa: F811
    payment, coin, original = await _paying(shop, LTC // 2)
    replacement = shop.faucet.spend(coin, payment["address"], LTC // 2, HIGH_FEE).txid
    assert original not in shop.faucet.node.call("getrawmempool")

    await shop.scan()
    state = await read_state(shop.gateway, payment["track_id"])
    assert state["status"] == "Paying" and state["paid_amount"] == "0.5" and state["due_amount"] == "0"
    assert {t["tx_hash"]: t["status"] for t in state["transactions"]} == {original: "FAILED", replacement: "PENDING"}

    await shop.mine(6)
    assert (await shop.status(payment["track_id"]))["status"] == "Paid"
    assert await shop.balance() == {"LTC": "0.495"}
    failure = await shop.gateway.db.fetch_val("SELECT failure_reason FROM deposits WHERE tx_hash = :h",
                                              {"h": original})
    assert failure == "replaced"
    await deliver_due(shop.gateway)
    assert sorted(b["event_type"] for b in receiver.verified(shop.secret)) == [
        "deposit.credited", "payment.paid", "payment.paying"]
    assert receiver.of_type("deposit.credited")[0]["tx_hash"] == replacement


async def test_conflict_paying_the_payer_back_turns_the_payment_back_in_one_scan(shop, receiver):  # noqa: F811
    payment, coin, original = await _paying(shop, LTC // 2)
    back_to_payer = shop.faucet.spend(coin, shop.faucet.address, LTC // 2, HIGH_FEE, broadcast=False)
    shop.faucet.node.call("generateblock", shop.faucet.address, [back_to_payer.hex])
    assert original not in shop.faucet.node.call("getrawmempool")

    await shop.scan()
    state = await read_state(shop.gateway, payment["track_id"])
    assert state["status"] == "Waiting" and state["paid_amount"] == "0" and state["due_amount"] == "0.5"
    assert [t["status"] for t in state["transactions"]] == ["FAILED"]
    failure = await shop.gateway.db.fetch_val("SELECT failure_reason FROM deposits WHERE tx_hash = :h",
                                              {"h": original})
    assert failure == "double_spent"
    await deliver_due(shop.gateway)
    assert sorted(b["event_type"] for b in receiver.verified(shop.secret)) == ["payment.paying", "payment.reverted"]
    reverted = receiver.of_type("payment.reverted")[0]
    assert reverted["track_id"] == payment["track_id"] and reverted["status"] == "Waiting"
    assert await shop.balance() == {}
