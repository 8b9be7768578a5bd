"""XMR payment detection against a real monerod in regtest (chains/monero), on both databases.

The gateway uses a view-only monero-wallet-rpc wallet; a separate full wallet
pays it with real transactions (tests/monerod.py). Blocks are mined with
``generateblocks``; a reorg pops blocks (``pop_blocks``) and flushes the pool.
XMR is credited into the swap-in account and the deposit held CONFIRMED for
the converter; a stand-in converter here takes it through the seam
(``chains/monero/swapin.py``) and completes the credit in BTC.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
import zmq
import zmq.asyncio

from orbchain.chains.monero import swapin
from orbchain.chains.monero.adapter import MoneroAdapter
from orbchain.chains.monero.settings import MoneroSettings
from orbchain.core.types.chains import Capability, ChainUnavailable, check_capabilities
from orbchain.core.ledger import book as ledger
from orbchain.core.watching.deposits import complete_credit
from orbchain.core.ledger.book import Posting
from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY
from tests.families import get_family

from .push_support import Watch, until
from .support import api, free_port, signup

PICONERO = 10**12
CONFIRMATIONS = 10  # XMR's floor (SPEC 2.7 lists none; chains/monero/coins.py)


class Shop:
    def __init__(self, client, merchant, regtest) -> None:
        self.client, self.merchant, self.regtest = client, merchant, regtest
        self.gateway = client.app[GATEWAY]
        self.adapter = self.gateway.chains.get("monero")

    async def scan(self):
        return await scan_chain(self.gateway, self.adapter)

    async def mine(self, blocks: int) -> None:
        self.regtest.mine(blocks)
        await self.scan()

    async def create(self, amount: str = "1.5", **extra):
        return await api(self.client, "POST", "/v1/payment/white-label", self.merchant.merchant_key,
                         json={"currency": "XMR", "amount": amount, **extra})

    async def payment(self, track_id: str):
        status, body = await api(self.client, "GET", f"/v1/payment/{track_id}", self.merchant.merchant_key)
        assert status == 200, body
        return body["data"]

    async def balances(self) -> dict[str, str]:
        body = (await api(self.client, "GET", "/v1/general/account/balance", self.merchant.general_key))[1]
        return {b["coin"]: b["amount"] for b in body["data"]["balances"]}


async def open_xmr_shop(make_client, make_config, regtest, config: dict | None = None, **block) -> Shop:
    """A gateway on the regtest node and wallet (``block`` adds to ``[plugin.monero]``, ``config`` other
    sections), scanned to the tip."""
    client = await make_client(make_config(scheduler={"enabled": False},
                                           plugin={"monero": regtest.plugin_block(**block)}, **(config or {})))
    merchant = await signup(client)
    gateway = client.app[GATEWAY]
    # default_settlement_coin is set by the swaps plugin's settings; straight into the row here.
    await gateway.db.execute("UPDATE merchants SET default_settlement_coin = 'BTC' WHERE id = :id",
                             {"id": merchant.merchant_id})
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt,
                             json={"accepted_coins": ["BTC", "XMR"]})
    assert status == 200, body
    shop = Shop(client, merchant, regtest)
    await shop.scan()  # the scanner starts at the current tip
    return shop


@pytest.fixture
async def shop(make_client, make_config, monero_regtest):
    return await open_xmr_shop(make_client, make_config, monero_regtest)


async def test_each_payment_gets_its_own_subaddress_of_the_view_only_wallet(shop):
    first = await shop.create()
    second = await shop.create()
    assert first[0] == 200 and second[0] == 200, (first, second)
    a, b = first[1]["data"]["address"], second[1]["data"]["address"]
    assert a != b
    family = get_family("xmr", "regtest")
    assert family.validate(a) == a and family.validate(b) == b
    assert a.startswith("8") and first[1]["data"]["pay_amount"] == "1.5"  # subaddresses (mainnet bytes in regtest)
    # The wallet made them: it knows their labels (the payment's track_id).
    index = shop.regtest.wallet.call("get_address_index", address=a)["index"]
    label = shop.regtest.wallet.call("get_address", account_index=0, address_index=[index["minor"]])
    assert label["addresses"][0]["label"] == first[1]["data"]["track_id"]


async def test_payment_detected_confirmed_by_the_node_and_held_for_conversion(shop):
    status, body = await shop.create("1.5")
    assert status == 200, body
    track_id, address = body["data"]["track_id"], body["data"]["address"]
    txid = shop.regtest.pay(address, int(Decimal("1.5") * PICONERO))
    await shop.scan()
    view = await shop.payment(track_id)
    assert view["status"] == "Paying" and view["transactions"][0]["tx_hash"] == txid
    assert view["transactions"][0]["confirmations"] == 0
    mined_at = shop.regtest.mine_including(txid)
    await shop.scan()
    confirmations = shop.regtest.height() - mined_at  # the node's count: blocks from it to the tip
    assert (await shop.payment(track_id))["transactions"][0]["confirmations"] == confirmations
    await shop.mine(CONFIRMATIONS - 1 - confirmations)
    view = await shop.payment(track_id)
    assert view["transactions"][0]["confirmations"] == CONFIRMATIONS - 1 and view["status"] == "Paying"
    assert await ledger.balance(shop.gateway.db, swapin.SWAP_IN_ACCOUNT, "XMR") == 0
    await shop.mine(1)
    view = await shop.payment(track_id)
    # Credited into the swap-in account, held CONFIRMED: no XMR balance, the payment waits for the swap.
    assert view["status"] == "Paying" and view["transactions"][0]["status"] == "CONFIRMED", view
    assert view["transactions"][0]["confirmations"] == CONFIRMATIONS
    assert "XMR" not in await shop.balances()
    assert await ledger.balance(shop.gateway.db, swapin.SWAP_IN_ACCOUNT, "XMR") == int(Decimal("1.5") * PICONERO)
    assert (await ledger.check_ledger(shop.gateway.db)).ok
    [waiting] = await swapin.awaiting(shop.gateway)
    assert waiting.amount == int(Decimal("1.5") * PICONERO) and waiting.track_id == track_id
    assert waiting.fee == waiting.amount // 100  # the core's 1 %, kept for the converter to charge once

    # A stand-in converter (the swaps plugin's part): take the XMR to its venue account, book the BTC it
    # delivered, complete the credit.
    db = shop.gateway.db
    async with db.transaction():
        taken = await swapin.take(shop.gateway, waiting.deposit_id, to_account="swap:standin",
                                  reference=f"standin:{waiting.deposit_id}:in")
        assert taken is not None
        await ledger.post(db, kind="swap", reference=f"standin:{waiting.deposit_id}:out", postings=[
            Posting("swap:standin", "XMR", -waiting.amount), Posting(ledger.world("monero"), "XMR", waiting.amount),
            Posting(ledger.world("bitcoin"), "BTC", -1_000_000),
            Posting(ledger.merchant_available(shop.merchant.merchant_id), "BTC", 990_000),
            Posting(ledger.PLATFORM_FEES, "BTC", 10_000)])
    assert await swapin.take(shop.gateway, waiting.deposit_id, to_account="swap:standin", reference="again") is None
    assert await complete_credit(shop.gateway, waiting.deposit_id)
    view = await shop.payment(track_id)
    assert view["status"] == "Paid" and view["transactions"][0]["status"] == "CREDITED"
    assert await shop.balances() == {"BTC": "0.0099"}
    assert await ledger.balance(db, swapin.SWAP_IN_ACCOUNT, "XMR") == 0
    assert (await ledger.check_ledger(db)).ok


async def test_reorg_before_credit_takes_the_deposit_back(shop):
    status, body = await shop.create("0.5")
    track_id, address = body["data"]["track_id"], body["data"]["address"]
    txid = shop.regtest.pay(address, int(Decimal("0.5") * PICONERO))
    mined_at = shop.regtest.mine_including(txid)
    await shop.mine(2)
    depth = shop.regtest.height() - mined_at
    assert (await shop.payment(track_id))["transactions"][0]["confirmations"] == depth >= 3
    shop.regtest.reorg_dropping_pool(depth)  # the block holding it is gone, and so is the transaction
    assert txid not in shop.regtest.pool_hashes()
    await shop.scan()
    view = await shop.payment(track_id)
    assert view["transactions"][0]["confirmations"] == 0 and view["transactions"][0]["status"] == "PENDING"
    await shop.mine(CONFIRMATIONS + 1)
    view = await shop.payment(track_id)
    assert view["status"] == "Paying" and view["transactions"][0]["status"] == "PENDING"
    assert await swapin.awaiting(shop.gateway) == []
    assert await ledger.balance(shop.gateway.db, swapin.SWAP_IN_ACCOUNT, "XMR") == 0
    assert (await ledger.check_ledger(shop.gateway.db)).ok


async def test_xmr_refusals_stay(shop):
    client, merchant = shop.client, shop.merchant
    status, body = await api(client, "GET", "/dashboard/receive-address", merchant.jwt, params={"coin": "XMR"})
    assert status == 400 and body["error"]["code"] == "xmr_receive_unsupported"
    status, body = await api(client, "POST", "/v1/payment/static-address", merchant.merchant_key,
                             json={"currency": "XMR"})
    assert status == 400 and body["error"]["code"] == "xmr_receive_unsupported"
    # Without a non-XMR default settlement coin, XMR is not received at all.
    # Through the API: the merchant row is cached per process and a settings change drops it.
    status, body = await api(client, "PUT", "/dashboard/settings/settlement-coin", merchant.jwt,
                             json={"default_settlement_coin": None})
    assert status == 200, body
    status, body = await shop.create()
    assert status == 400 and body["error"]["code"] == "xmr_receive_unsupported", body
    # Splits cannot apply to XMR: it is swapped, never credited as such.
    status, body = await api(client, "PUT", "/dashboard/settings/settlement-coin", merchant.jwt,
                             json={"default_settlement_coin": "BTC"})
    assert status == 200, body
    status, body = await shop.create(splits=[{"bps": 10000, "recipient_merchant_id": merchant.merchant_id}])
    assert status == 400 and "splits" in body["error"]["detail"], body


async def test_reorg_after_the_credit_empties_the_swap_in_before_it_is_taken(shop):
    status, body = await shop.create("0.25")
    track_id, address = body["data"]["track_id"], body["data"]["address"]
    amount = int(Decimal("0.25") * PICONERO)
    txid = shop.regtest.pay(address, amount)
    mined_at = shop.regtest.mine_including(txid)
    await shop.mine(CONFIRMATIONS - (shop.regtest.height() - mined_at))
    assert (await shop.payment(track_id))["transactions"][0]["status"] == "CONFIRMED"
    [waiting] = await swapin.awaiting(shop.gateway)
    assert await ledger.balance(shop.gateway.db, swapin.SWAP_IN_ACCOUNT, "XMR") == amount
    shop.regtest.reorg_dropping_pool(CONFIRMATIONS)
    await shop.scan()
    view = await shop.payment(track_id)
    assert view["status"] == "Paying" and view["transactions"][0]["status"] == "PENDING"
    assert await swapin.awaiting(shop.gateway) == []
    assert (await swapin.find(shop.gateway, waiting.deposit_id)).status == swapin.REVERSED
    assert await swapin.take(shop.gateway, waiting.deposit_id, to_account="swap:standin", reference="late") is None
    assert await ledger.balance(shop.gateway.db, swapin.SWAP_IN_ACCOUNT, "XMR") == 0
    assert "XMR" not in await shop.balances()
    assert (await ledger.check_ledger(shop.gateway.db)).ok


# -- push: monerod's ZMQ publisher ------------------------------------------------------------
#
# The real monerod publishes json-minimal-chain_main for every block, here too. It publishes
# json-minimal-txpool_add only for transactions it broadcasts in Dandelion++'s fluff phase, which an
# --offline node never does; so the pool announcement is replayed by a publisher of the test's own, in
# monerod's frame format, for the real node's own pool transaction.


async def test_monerods_block_announcements_wake_the_scan(make_client, make_config, monero_regtest):
    """Break caught: a wrong topic name or frame parsing (nothing heard, or blocks heard as "tx")."""
    shop = await open_xmr_shop(make_client, make_config, monero_regtest, zmq_pub_url=monero_regtest.zmq_pub_url,
                               scan_seconds=3600)
    assert shop.adapter.supports(Capability.PUSH)
    check_capabilities(shop.adapter)
    status, body = await shop.create("0.5")
    assert status == 200, body
    # The poll is an hour away: only the announcements can make these scans happen.
    async with Watch(shop.gateway, shop.adapter, poll=3600) as watch:
        await until(lambda: "block" in watch.heard, "the first chain_main announcement",
                    step=lambda: monero_regtest.mine(1))
        watch.heard.clear()
        txid = monero_regtest.pay(body["data"]["address"], int(Decimal("0.5") * PICONERO))
        monero_regtest.mine_including(txid)
        await until(lambda: _seen(shop, body["data"]["track_id"], txid, 1), "the mined payment scanned")
    assert set(watch.heard) == {"block"} and watch.losses == 0


async def test_a_pool_announcement_shows_paying_and_a_lost_publisher_ends_push(make_client, make_config,
                                                                              monero_regtest):
    """Break caught: txpool_add not waking the scan; push waiting forever on a publisher that went away."""
    context = zmq.asyncio.Context.instance()
    publisher = context.socket(zmq.PUB)
    port = publisher.bind_to_random_port("tcp://127.0.0.1")
    shop = await open_xmr_shop(make_client, make_config, monero_regtest, zmq_pub_url=f"tcp://127.0.0.1:{port}",
                               scan_seconds=3600)
    status, body = await shop.create("0.25")
    assert status == 200, body
    async with Watch(shop.gateway, shop.adapter, poll=3600) as watch:
        txid = monero_regtest.pay(body["data"]["address"], int(Decimal("0.25") * PICONERO))
        [pooled] = [t for t in monero_regtest.node.other("/get_transaction_pool")["transactions"]
                    if t["id_hash"] == txid]
        frame = b"json-minimal-txpool_add:" + json.dumps(
            [{"id": txid, "blob_size": pooled["blob_size"], "weight": pooled["weight"], "fee": pooled["fee"]}]).encode()

        def announce() -> None:  # a topic the adapter does not follow, then the pool's
            publisher.send(b"json-full-miner_data:{}")
            publisher.send(frame)

        # A subscriber misses what is sent before its subscription arrives: announce until heard.
        await until(lambda: "tx" in watch.heard, "the pool announcement heard", step=announce)
        await until(lambda: _seen(shop, body["data"]["track_id"], txid, 0), "the payment to show Paying")
        assert set(watch.heard) == {"tx"} and watch.losses == 0  # miner_data is not followed
        publisher.close(linger=0)
        await until(lambda: watch.losses >= 1, "push to report the lost publisher")
    monero_regtest.mine_including(txid)  # leave the pool empty for the next test


async def _seen(shop: Shop, track_id: str, txid: str, confirmations: int) -> bool:
    view = await shop.payment(track_id)
    return (view["status"] == "Paying" and view["transactions"][0]["tx_hash"] == txid
            and view["transactions"][0]["confirmations"] >= confirmations)


async def test_an_unreachable_publisher_ends_push():
    settings = MoneroSettings("http://127.0.0.1:9", None, None, "http://127.0.0.1:9", None, None, "regtest", 0, 1.0,
                              None, 1.0, 3600, zmq_pub_url=f"tcp://127.0.0.1:{free_port()}")
    with pytest.raises(ChainUnavailable, match="not reachable"):
        await MoneroAdapter(settings).push(lambda _: None)
