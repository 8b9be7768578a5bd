"""A dropped bitcoin-family payout is never paid twice (issue 46 item 2), on a real Litecoin Core node.

The eviction is the one measured in the issue: the node restarts with
``-persistmempool=0`` and a relay floor above the payout's fee rate (a fee
spike), so the gateway's re-broadcasts of the payout are refused. Past the
drop timeout (an injected clock) the gateway closes the payout with its own
transaction spending the payout's inputs back to the hot wallet, and
re-credits the merchant only once that is mined. Then the original bytes,
kept by "another node", are offered again: whichever of the two is mined, the
payout is either Confirmed or re-credited, never both, and the ledger holds.

The node is this module's own (restarted with other options; the session's
node is never restarted).
"""

from __future__ import annotations

import pytest

from orbchain.chains.bitcoin import BitcoinAdapter, wallet
from orbchain.core.types.chains import ChainUnavailable
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.ledger.check import check_ledger
from orbchain.core.payouts import worker as payout_worker
from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY

from .litecoind import COINBASE_MATURITY, Faucet, Node, external_address, start_node, stop
from .support import api, free_port, signup

LTC = 100_000_000
DROP_AFTER = 600
SPIKE = ("-persistmempool=0", "-minrelaytxfee=0.0005")  # 50 sat/vB: the payout's 10 sat/vB is refused


class SpikyNode:
    """The module's litecoind; ``restart(*options)`` brings it back on the same ports with other options."""

    def __init__(self, datadir) -> None:
        self.datadir = datadir
        # p2p_port only for the short -rpcservertimeout a node restarted under a running gateway needs.
        self.node: Node = start_node(datadir, p2p_port=free_port())
        self.faucet = Faucet(self.node)

    def restart(self, *options: str) -> None:
        stop(self.node)
        self.node = start_node(self.datadir, rpc_port=self.node.rpc_port, p2p_port=self.node.p2p_port,
                               extra_args=options)
        self.faucet.node = self.node


@pytest.fixture(scope="module")
def spiky(tmp_path_factory: pytest.TempPathFactory):
    node = SpikyNode(tmp_path_factory.mktemp("litecoind-spiky"))
    try:
        start = node.node.height()
        node.faucet.mine(COINBASE_MATURITY + 10)
        node.faucet.collect_coinbases(start + 1, start + 10)
        yield node
    finally:
        if node.node.process.poll() is None:
            stop(node.node)


class Shop:
    def __init__(self, client, merchant, spiky: SpikyNode) -> None:
        self.client, self.merchant, self.spiky = client, merchant, spiky
        self.gateway = client.app[GATEWAY]
        self.adapter: BitcoinAdapter = self.gateway.chains.get("litecoin")

    async def mine(self, blocks: int = 1) -> None:
        self.spiky.faucet.mine(blocks)
        await scan_chain(self.gateway, self.adapter)

    async def balance(self) -> str:
        body = (await api(self.client, "GET", "/v1/general/account/balance", self.merchant.general_key))[1]
        return {b["coin"]: b["amount"] for b in body["data"]["balances"]}.get("LTC", "0")

    async def work(self, seconds: int = 5) -> None:
        later = self.gateway.now() + seconds
        self.gateway.clock = lambda: later
        await payout_worker.process_payouts(self.gateway)

    async def payout(self, track_id: str):
        return await self.gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": track_id})

    async def funded_payout_evicted(self) -> dict:
        """1 LTC credited, a 0.3 LTC payout broadcast, then the fee spike evicts it: Confirming, re-broadcasts refused."""
        status, body = await api(self.client, "POST", "/v1/payment/white-label", self.merchant.merchant_key,
                                 json={"currency": "LTC", "amount": "1"})
        assert status == 200, body
        self.spiky.faucet.pay(body["data"]["address"], LTC)
        await self.mine(6)
        status, body = await api(self.client, "POST", "/v1/payout", self.merchant.payout_key,
                                 json={"currency": "LTC", "address": external_address(0), "amount": "0.3"})
        assert status == 200, body
        await self.work()
        row = await self.payout(body["data"]["track_id"])
        assert row["stage"] == "broadcast" and row["tx_hash"] in self.spiky.node.call("getrawmempool")
        self.spiky.restart(*SPIKE)
        await self.work()  # missing: the worker offers the bytes again, the node refuses them (fee below the floor)
        assert self.spiky.node.call("getrawmempool") == []
        assert (await self.payout(row["track_id"]))["missing_since"] is not None
        return dict(row)


@pytest.fixture
async def shop(make_client, make_config, spiky):
    spiky.restart()  # a calm node: the usual relay floor
    block = spiky.node.plugin_block(drop_after_seconds=DROP_AFTER)
    client = await make_client(make_config(scheduler={"enabled": False}, plugin={"bitcoin": {"LTC": block}}),
                               get_plugin_manager(blocked=["devnet"]))
    shop = Shop(client, await signup(client, "spiky-shop@example.com"), spiky)
    await scan_chain(shop.gateway, shop.adapter)  # a fresh database starts at the tip
    return shop


async def assert_books_clean(shop: Shop) -> None:
    report = await check_ledger(shop.gateway.db)
    assert report.ok, report.lines()


async def network_fees_booked(shop: Shop, payout_id: str) -> int:
    rows = await shop.gateway.db.fetch_all(
        "SELECT p.amount FROM ledger_postings p JOIN ledger_transactions t ON t.id = p.transaction_id"
        " WHERE t.reference = :r AND p.account = 'platform:network_fees'", {"r": f"payout:{payout_id}:network_fee"})
    return -sum(shop.gateway.db.to_int(r["amount"]) for r in rows)


async def test_a_dropped_payout_is_recredited_only_once_our_closing_transaction_is_mined(shop, monkeypatch):
    row = await shop.funded_payout_evicted()
    node = shop.spiky.node  # the restarted one

    async def node_lost(signed) -> None:
        raise ChainUnavailable("connection reset")

    # Past the drop timeout: the closing transaction is signed and stored, but its broadcast is lost (a crash).
    monkeypatch.setattr(shop.adapter, "broadcast", node_lost)
    await shop.work(DROP_AFTER + 1)
    closing = await shop.gateway.db.fetch_one("SELECT * FROM bitcoin_payout_conflicts WHERE payout_id = :p",
                                              {"p": row["id"]})
    assert node.call("getrawmempool") == []
    monkeypatch.undo()
    await shop.work()  # the stored bytes go out, never a second signature
    current = await shop.payout(row["track_id"])
    assert current["status"] == "Confirming" and "closing transaction" in current["last_error"]
    assert await shop.balance() == "0.69"  # not re-credited while the closing transaction is unconfirmed
    assert node.call("getrawmempool") == [closing["tx_hash"]]
    assert await shop.gateway.db.fetch_val("SELECT COUNT(*) FROM bitcoin_payout_conflicts") == 1
    decoded = node.call("getrawtransaction", closing["tx_hash"], True)
    original = node.call("decoderawtransaction", row["raw_tx"])
    assert {(i["txid"], i["vout"]) for i in decoded["vin"]} == {(i["txid"], i["vout"]) for i in original["vin"]}
    assert len(decoded["vout"]) == 1  # back to our own key only: the fee is all that leaves

    await shop.mine(1)
    await shop.work()
    final = await shop.payout(row["track_id"])
    assert (final["status"], final["failure_reason"]) == ("Failed", "dropped")
    assert await shop.balance() == "0.99"  # re-credited once the closing transaction is mined
    assert await network_fees_booked(shop, row["id"]) == shop.gateway.db.to_int(closing["fee"])

    # The original bytes, kept by another node, come back: they can no longer be mined.
    with pytest.raises(RuntimeError, match="missingorspent|missing-inputs"):
        node.call("sendrawtransaction", row["raw_tx"])
    with pytest.raises(RuntimeError):
        node.call("generateblock", shop.spiky.faucet.address, [row["raw_tx"]])
    await shop.mine(1)
    await shop.work()
    assert (await shop.payout(row["track_id"]))["status"] == "Failed"
    assert await shop.balance() == "0.99"
    await assert_books_clean(shop)
    spendable = await wallet.spendable_outputs(shop.gateway, "litecoin", "regtest")
    assert [(o.tx_hash, o.amount) for o in spendable] == [(closing["tx_hash"], LTC - int(closing["fee"]))]


async def test_a_dropped_payout_mined_after_all_ends_confirmed_and_is_never_recredited(shop):
    row = await shop.funded_payout_evicted()
    node = shop.spiky.node  # the restarted one
    await shop.work(DROP_AFTER + 1)  # our closing transaction waits in the mempool
    closing = await shop.gateway.db.fetch_val("SELECT tx_hash FROM bitcoin_payout_conflicts WHERE payout_id = :p",
                                              {"p": row["id"]})
    assert node.call("getrawmempool") == [closing]
    assert await shop.balance() == "0.69"

    # Another node kept the original and a miner takes it: our closing transaction can never be mined now.
    node.call("generateblock", shop.spiky.faucet.address, [row["raw_tx"]])
    assert node.call("getrawmempool") == []
    await scan_chain(shop.gateway, shop.adapter)
    await shop.work()
    final = await shop.payout(row["track_id"])
    assert (final["status"], final["failure_reason"]) == ("Confirmed", None)
    assert await shop.balance() == "0.69"  # paid, never re-credited
    assert await network_fees_booked(shop, row["id"]) == shop.gateway.db.to_int(row["network_fee"])
    await shop.mine(2)
    await shop.work()
    assert await shop.balance() == "0.69"
    await assert_books_clean(shop)
    spendable = await wallet.spendable_outputs(shop.gateway, "litecoin", "regtest")
    assert [o.tx_hash for o in spendable] == [row["tx_hash"]]  # the original's change; nothing of the closing one


async def funded_batch_evicted(shop: Shop) -> list:
    """1 LTC credited, a 3-item batch broadcast as one transaction, then the fee spike evicts it."""
    status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                             json={"currency": "LTC", "amount": "1"})
    assert status == 200, body
    shop.spiky.faucet.pay(body["data"]["address"], LTC)
    await shop.mine(6)
    items = [{"currency": "LTC", "address": external_address(20 + i), "amount": "0.1", "external_id": f"d-{i}"}
             for i in range(3)]
    status, body = await api(shop.client, "POST", "/v1/payout/batch", shop.merchant.payout_key, json={"items": items})
    assert status == 200 and body["data"]["summary"]["created"] == 3, body
    await shop.work()
    rows = [await shop.payout(r["track_id"]) for r in body["data"]["results"]]
    assert {r["stage"] for r in rows} == {"broadcast"} and len({r["tx_hash"] for r in rows}) == 1
    assert rows[0]["tx_hash"] in shop.spiky.node.call("getrawmempool")
    shop.spiky.restart(*SPIKE)
    await shop.work()
    assert shop.spiky.node.call("getrawmempool") == []
    return [dict(r) for r in rows]


async def test_a_dropped_batch_is_closed_once_and_every_item_recredited_with_its_share_of_the_closing_fee(shop):
    rows = await funded_batch_evicted(shop)
    node = shop.spiky.node
    await shop.work(DROP_AFTER + 1)
    closings = await shop.gateway.db.fetch_all("SELECT * FROM bitcoin_payout_conflicts")
    assert len(closings) == 1  # one closing transaction for the batch, not one per item
    closing = closings[0]
    assert node.call("getrawmempool") == [closing["tx_hash"]]
    assert await shop.balance() == "0.69"  # nothing re-credited while the closing transaction is unconfirmed
    await shop.mine(1)
    await shop.work()
    finals = [await shop.payout(r["track_id"]) for r in rows]
    assert {(f["status"], f["failure_reason"]) for f in finals} == {("Failed", "dropped")}
    assert await shop.balance() == "0.99"
    booked = [await network_fees_booked(shop, r["id"]) for r in rows]
    assert sum(booked) == shop.gateway.db.to_int(closing["fee"])  # the closing fee, shared to the unit
    assert max(booked) - min(booked) <= 1
    with pytest.raises(RuntimeError, match="missingorspent|missing-inputs"):
        node.call("sendrawtransaction", rows[0]["raw_tx"])
    await assert_books_clean(shop)


async def test_a_dropped_batch_mined_after_all_ends_confirmed_for_every_item(shop):
    rows = await funded_batch_evicted(shop)
    node = shop.spiky.node
    await shop.work(DROP_AFTER + 1)  # our closing transaction waits in the mempool
    node.call("generateblock", shop.spiky.faucet.address, [rows[0]["raw_tx"]])  # another node's miner had it
    await scan_chain(shop.gateway, shop.adapter)
    await shop.work()
    finals = [await shop.payout(r["track_id"]) for r in rows]
    assert {(f["status"], f["failure_reason"]) for f in finals} == {("Confirmed", None)}
    assert await shop.balance() == "0.69"  # paid, never re-credited
    booked = [await network_fees_booked(shop, r["id"]) for r in rows]
    assert sum(booked) == sum(shop.gateway.db.to_int(r["network_fee"]) for r in rows)
    await shop.mine(2)
    await shop.work()
    assert await shop.balance() == "0.69"
    await assert_books_clean(shop)
