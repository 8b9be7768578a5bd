"""EVM payouts through the core payout pipeline (core/payouts/service.py + core/payouts/worker.py) on anvil."""

from __future__ import annotations

import asyncio
import secrets

import pytest
from eth_account import Account

from orbchain.chains.evm.keys import hot_wallet_address
from orbchain.core.ledger import book as ledger
from orbchain.core.types.chains import PayoutOrder
from orbchain.core.ledger.accounts import NETWORK_FEES, merchant_available

from .anvil import EvmShop, anvil, credited_deposit, open_shop  # noqa: F401 - anvil is a fixture
from .support import api


@pytest.fixture
async def shop(anvil, make_client, make_config) -> EvmShop:  # noqa: F811 - anvil is the fixture
    return await open_shop(anvil, make_client, make_config)


def _somebody() -> str:
    return Account.create().address


async def _payout(shop: EvmShop, coin: str, address: str, amount: str) -> dict:
    status, body = await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                             json={"currency": coin, "address": address, "amount": amount})
    assert status == 200, body
    return body["data"]


async def _state(shop: EvmShop, track_id: str) -> dict:
    return (await api(shop.client, "GET", f"/v1/payout/{track_id}", shop.merchant.payout_key))[1]["data"]


async def test_native_payout_is_signed_broadcast_and_confirmed(shop):
    await credited_deposit(shop, "ETH", "1", 10**18)
    shop.node.set_balance(hot_wallet_address(shop.gateway), 2 * 10**18)
    destination = _somebody()
    payout = await _payout(shop, "ETH", destination, "0.3")
    await shop.work_payouts()
    view = await _state(shop, payout["track_id"])
    assert view["status"] == "Confirmed", view
    assert shop.node.balance(destination) == 3 * 10**17
    receipt = shop.node.receipt(view["tx_hash"])
    assert receipt["status"] == "0x1" and int(receipt["type"], 16) == 2  # EIP-1559
    assert await ledger.balance(shop.gateway.db, merchant_available(shop.merchant.merchant_id), "ETH") == 69 * 10**16
    # The platform's network-fee expense is the gas actually used, not the signed ceiling.
    paid = int(receipt["gasUsed"], 16) * int(receipt["effectiveGasPrice"], 16)
    booked = await shop.gateway.db.fetch_val(
        "SELECT amount FROM ledger_postings WHERE account = :a", {"a": NETWORK_FEES})
    assert shop.gateway.db.to_int(booked) == -paid


async def test_token_payout_is_a_transfer_call(shop):
    await credited_deposit(shop, "USDT_ERC20", "50", 50 * 10**6)
    hot = hot_wallet_address(shop.gateway)
    shop.node.set_balance(hot, 10**18)
    shop.mint(hot, 50 * 10**6)
    destination = _somebody()
    payout = await _payout(shop, "USDT_ERC20", destination, "12.5")
    await shop.work_payouts()
    view = await _state(shop, payout["track_id"])
    assert view["status"] == "Confirmed", view
    assert shop.token_balance(destination) == 12_500_000 and shop.node.balance(destination) == 0
    tx = shop.node.rpc("eth_getTransactionByHash", view["tx_hash"])
    assert tx["to"].lower() == shop.token.lower() and tx["input"].startswith("0xa9059cbb")


async def test_a_payout_reverted_on_chain_is_recredited(shop):
    await credited_deposit(shop, "USDT_ERC20", "20", 20 * 10**6)
    hot = hot_wallet_address(shop.gateway)
    shop.node.set_balance(hot, 10**18)
    shop.mint(hot, 10 * 10**6)  # enough for one of the two payouts below
    account = merchant_available(shop.merchant.merchant_id)
    first = await _payout(shop, "USDT_ERC20", _somebody(), "9.9")
    second = await _payout(shop, "USDT_ERC20", _somebody(), "9.9")
    shop.node.set_automine(False)
    try:
        await shop.work_payouts()  # both estimated against the same state, signed, sent
        shop.node.mine(1)  # the first spends the tokens; the second reverts
    finally:
        shop.node.set_automine(True)
    start = shop.gateway.clock()
    shop.gateway.clock = lambda: start + 30
    await shop.work_payouts()
    one, two = await _state(shop, first["track_id"]), await _state(shop, second["track_id"])
    assert one["status"] == "Confirmed", one
    assert two["status"] == "Failed" and two["failure_reason"] == "reverted", two
    reverted = await shop.gateway.db.fetch_val("SELECT tx_hash FROM payouts WHERE track_id = :t",
                                               {"t": second["track_id"]})
    assert shop.node.receipt(reverted)["status"] == "0x0"
    assert await ledger.balance(shop.gateway.db, account, "USDT_ERC20") == 19_800_000 - 9_900_000
    assert (await ledger.check_ledger(shop.gateway.db)).ok


async def test_concurrent_signing_takes_distinct_nonces_and_a_repeat_returns_the_same_bytes(shop):
    hot = hot_wallet_address(shop.gateway)
    shop.node.set_balance(hot, 10**18)
    orders = [PayoutOrder(f"po_{secrets.token_hex(4)}", "ETH", _somebody(), 10**15) for _ in range(5)]
    signed = await asyncio.gather(*(shop.adapter.sign_payout(order) for order in orders))
    rows = await shop.gateway.db.fetch_all("SELECT nonce FROM evm_txs ORDER BY nonce")
    assert [int(r["nonce"]) for r in rows] == [0, 1, 2, 3, 4]
    again = await shop.adapter.sign_payout(orders[2])
    assert again == signed[2] and again.network_fee == 21_000 * int(
        await shop.gateway.db.fetch_val("SELECT max_fee_per_gas FROM evm_txs WHERE ref = :r", {"r": orders[2].payout_id}))
    for one in signed:
        await shop.adapter.broadcast(one)
        await shop.adapter.broadcast(one)  # again: harmless
    shop.node.settle()
    statuses = [await shop.adapter.payout_status(one) for one in signed]
    assert all(s.found and s.confirmations >= 1 and not s.failed for s in statuses)


async def test_a_refused_transaction_frees_its_nonce(shop):
    hot = hot_wallet_address(shop.gateway)
    shop.node.set_balance(hot, 10**18)
    big = await shop.adapter.sign_payout(PayoutOrder("po_big", "ETH", _somebody(), 10**17))
    shop.node.set_balance(hot, 10**15)  # no longer enough: the node refuses it for good
    from orbchain.core.types.chains import BroadcastError

    with pytest.raises(BroadcastError) as refused:
        await shop.adapter.broadcast(big)
    assert refused.value.permanent
    small = await shop.adapter.sign_payout(PayoutOrder("po_small", "ETH", _somebody(), 10**12))
    rows = {r["ref"]: r for r in await shop.gateway.db.fetch_all("SELECT ref, nonce, status FROM evm_txs")}
    assert rows["po_big"]["status"] == "abandoned" and rows["po_small"]["nonce"] == rows["po_big"]["nonce"]
    await shop.adapter.broadcast(small)
    shop.node.settle()
    assert (await shop.adapter.payout_status(small)).confirmations == 1


async def test_a_failed_payout_the_node_never_saw_frees_its_nonce(shop):
    """Dropped or never accepted: the nonce is reused, so later transactions are not stuck behind a gap."""
    hot = hot_wallet_address(shop.gateway)
    shop.node.set_balance(hot, 10**18)
    lost = await shop.adapter.sign_payout(PayoutOrder("po_lost", "ETH", _somebody(), 10**15))
    pending = await shop.adapter.sign_payout(PayoutOrder("po_pending", "ETH", _somebody(), 10**15))
    # "po_lost" was stored as broadcast but the node dropped it; "po_pending" really waits in the node's pool.
    await shop.gateway.db.execute("UPDATE evm_txs SET status = 'broadcast' WHERE ref = 'po_lost'")
    await shop.adapter.broadcast(pending)
    for payout_id in ("po_lost", "po_pending"):
        await shop.gateway.hooks.payout_finished(payout={"id": payout_id, "chain": shop.adapter.name,
                                                         "status": "Failed"})
    rows = {r["ref"]: r for r in await shop.gateway.db.fetch_all("SELECT ref, nonce, status FROM evm_txs")}
    assert rows["po_lost"]["status"] == "abandoned"
    assert rows["po_pending"]["status"] == "broadcast"  # the node may still mine it: its nonce stays taken
    again = await shop.adapter.sign_payout(PayoutOrder("po_next", "ETH", _somebody(), 10**12))
    rows = {r["ref"]: r for r in await shop.gateway.db.fetch_all("SELECT ref, nonce FROM evm_txs")}
    assert rows["po_next"]["nonce"] == rows["po_lost"]["nonce"]
    await shop.adapter.broadcast(again)
    shop.node.settle()
    assert (await shop.adapter.payout_status(again)).confirmations >= 1
    assert (await shop.adapter.payout_status(pending)).confirmations >= 1
    assert lost.tx_hash != again.tx_hash


async def test_payouts_wait_while_the_base_fee_is_above_the_ceiling_and_go_when_it_falls(
        anvil, make_client, make_config):  # noqa: F811 - anvil is the fixture
    shop = await open_shop(anvil, make_client, make_config, fee_ceiling_gwei=50)
    await credited_deposit(shop, "ETH", "1", 10**18)
    shop.node.set_balance(hot_wallet_address(shop.gateway), 2 * 10**18)
    destination = _somebody()
    shop.node.rpc("anvil_setNextBlockBaseFeePerGas", hex(200 * 10**9))  # a fee spike: 200 gwei
    shop.node.mine(1)
    payout = await _payout(shop, "ETH", destination, "0.3")
    await shop.work_payouts()
    row = await shop.gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": payout["track_id"]})
    assert (row["status"], row["stage"], row["attempts"], row["tx_hash"]) == ("Confirming", "queued", 0, None)
    assert row["last_error"].startswith("waiting: fee ") and row["last_error"].endswith(" gwei above the ceiling 50")
    assert await shop.gateway.db.fetch_val("SELECT COUNT(*) FROM evm_txs WHERE kind = 'payout'") == 0  # nothing signed

    shop.node.rpc("anvil_setNextBlockBaseFeePerGas", hex(10**9))  # the spike ends: 1 gwei
    shop.node.mine(1)
    later = shop.gateway.now() + 60
    shop.gateway.clock = lambda: later
    await shop.work_payouts()
    view = await _state(shop, payout["track_id"])
    assert view["status"] == "Confirmed", view
    assert shop.node.balance(destination) == 3 * 10**17
    signed = shop.node.rpc("eth_getTransactionByHash", view["tx_hash"])
    assert int(signed["maxFeePerGas"], 16) <= 50 * 10**9  # never above the ceiling
