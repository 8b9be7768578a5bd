"""A dropped EVM payout is never paid twice and its nonce is never reused on one node's word (issue 46 item 2), on anvil.

The node keeps evicting the payout (``anvil_dropTransaction`` after each of
the worker's re-broadcasts) until the drop timeout (an injected clock). Then
the gateway takes the nonce with a zero-value transfer to itself and
re-credits the merchant only once that is mined; or the original, kept by
another node, is mined first and the payout ends Confirmed.
"""

from __future__ import annotations

import pytest
from eth_account import Account

from orbchain.chains.evm.keys import hot_wallet_address
from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import merchant_available
from orbchain.core.payouts.worker import process_payouts

from .anvil import EvmShop, anvil, credited_deposit, open_shop  # noqa: F401 - anvil is a fixture
from .support import api

DROP_AFTER = 600


@pytest.fixture
async def shop(anvil, make_client, make_config) -> EvmShop:  # noqa: F811 - anvil is the fixture
    shop = await open_shop(anvil, make_client, make_config, drop_after_seconds=DROP_AFTER)
    await credited_deposit(shop, "ETH", "1", 10**18)
    shop.node.set_balance(hot_wallet_address(shop.gateway), 2 * 10**18)
    shop.node.set_automine(False)
    yield shop
    shop.node.set_automine(True)


async def work(shop: EvmShop, seconds: int = 5) -> None:
    later = shop.gateway.now() + seconds
    shop.gateway.clock = lambda: later
    await process_payouts(shop.gateway)


async def row_of(shop: EvmShop, track_id: str):
    return await shop.gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": track_id})


async def available(shop: EvmShop) -> int:
    return await ledger.balance(shop.gateway.db, merchant_available(shop.merchant.merchant_id), "ETH")


async def dropped_payout(shop: EvmShop, destination: str):
    """A 0.3 ETH payout broadcast, then evicted after every re-broadcast until past the drop timeout."""
    status, body = await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                             json={"currency": "ETH", "address": destination, "amount": "0.3"})
    assert status == 200, body
    await work(shop)
    row = await row_of(shop, body["data"]["track_id"])
    assert row["stage"] == "broadcast", row["last_error"]
    for _ in range(2):  # our node keeps losing it; the worker keeps offering it
        shop.node.rpc("anvil_dropTransaction", row["tx_hash"])
        await work(shop)
    shop.node.rpc("anvil_dropTransaction", row["tx_hash"])
    await work(shop, DROP_AFTER)  # past the timeout: our transaction at its nonce is sent, nothing re-credited
    current = await row_of(shop, row["track_id"])
    assert current["status"] == "Confirming" and "cancelling transaction" in current["last_error"], current
    assert await available(shop) == 69 * 10**16
    cancel = await shop.gateway.db.fetch_one("SELECT * FROM evm_txs WHERE kind = 'payout' AND ref = :r",
                                             {"r": row["id"] + ":cancel"})
    original = await shop.gateway.db.fetch_one("SELECT * FROM evm_txs WHERE kind = 'payout' AND ref = :r",
                                               {"r": row["id"]})
    assert cancel["nonce"] == original["nonce"] and cancel["recipient"] == cancel["sender"]
    return row, cancel


async def test_a_dropped_evm_payout_is_recredited_once_our_transaction_at_its_nonce_is_mined(shop):
    destination = Account.create().address
    row, cancel = await dropped_payout(shop, destination)
    shop.node.mine(1)
    await work(shop)
    final = await row_of(shop, row["track_id"])
    assert (final["status"], final["failure_reason"]) == ("Failed", "dropped")
    assert await available(shop) == 99 * 10**16
    receipt = shop.node.receipt(cancel["tx_hash"])
    fee = int(receipt["gasUsed"], 16) * int(receipt["effectiveGasPrice"], 16)
    booked = await shop.gateway.db.fetch_val(
        "SELECT p.amount FROM ledger_postings p JOIN ledger_transactions t ON t.id = p.transaction_id"
        " WHERE t.reference = :r AND p.account = 'platform:network_fees'", {"r": f"payout:{row['id']}:network_fee"})
    assert -shop.gateway.db.to_int(booked) == fee

    # The original bytes come back from another node: their nonce is taken, they can never be mined.
    with pytest.raises(RuntimeError, match="nonce"):
        shop.node.rpc("eth_sendRawTransaction", row["raw_tx"])
    shop.node.mine(1)
    assert shop.node.balance(destination) == 0
    # The next payout gets a fresh nonce, not the dropped one.
    status, body = await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                             json={"currency": "ETH", "address": destination, "amount": "0.1"})
    assert status == 200, body
    await work(shop)
    shop.node.mine(1)
    await work(shop)
    assert (await row_of(shop, body["data"]["track_id"]))["status"] == "Confirmed"
    assert shop.node.balance(destination) == 10**17
    assert (await ledger.check_ledger(shop.gateway.db)).ok


async def test_a_dropped_evm_payout_mined_after_all_ends_confirmed_and_is_never_recredited(shop):
    destination = Account.create().address
    row, cancel = await dropped_payout(shop, destination)
    # Another node kept the original and mined it before our transaction at the same nonce.
    shop.node.rpc("anvil_dropTransaction", cancel["tx_hash"])
    shop.node.rpc("eth_sendRawTransaction", row["raw_tx"])
    shop.node.mine(1)
    await work(shop)
    final = await row_of(shop, row["track_id"])
    assert (final["status"], final["failure_reason"]) == ("Confirmed", None)
    assert shop.node.balance(destination) == 3 * 10**17
    shop.node.mine(2)
    await work(shop)
    assert await available(shop) == 69 * 10**16  # paid once, never re-credited
    assert (await ledger.check_ledger(shop.gateway.db)).ok
