"""Solana payouts and sweeps pay a priority fee from recent fees, under the operator's ceiling (issue 46 item 2).

The LiteSVM-backed node (``tests/solana_node.py``) answers
``getRecentPrioritizationFees`` from the blocks it made (strangers'
transfers paying a unit price: a market), and the runtime judges the
Compute Budget instructions the gateway sends: the fee it charges is the
fee booked. Above the ceiling a payout waits queued with the reason (the
metric and the dashboard read that reason: tests/test_bitcoin_fee_ceiling.py).
"""

from __future__ import annotations

import base64
from typing import AsyncIterator

import pytest_asyncio
from solders.keypair import Keypair
from solders.transaction import VersionedTransaction

from orbchain.chains.solana import sweep_chain
from orbchain.chains.solana.keys import hot_wallet_address
from orbchain.chains.solana.wire import TRANSFER_COMPUTE_UNITS
from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import NETWORK_FEES
from orbchain.core.payouts.fee_waits import FEE_RECHECK_SECONDS
from orbchain.testing import open_chain_shop

from .solana_node import SIGNATURE_FEE, SolanaDriver, SolanaNode, compute_budget_of, running_node


@pytest_asyncio.fixture
async def solana_node() -> AsyncIterator[SolanaNode]:
    async with running_node() as node:
        yield node


def priority_fee(unit_price: int) -> int:
    return -(-TRANSFER_COMPUTE_UNITS * unit_price // 1_000_000)


def landed(node: SolanaNode, signature: str) -> dict:
    return node.handle("getTransaction", [signature, {"commitment": "confirmed"}])


async def funded_payout(node, make_config, make_client, **settings):
    shop = await open_chain_shop(SolanaDriver(node, **settings), make_config, make_client)
    _, net = await shop.paid_deposit()
    await shop.driver.fund_hot_wallet(shop.gateway, shop.units("0.3"))
    destination = str(Keypair().pubkey())
    return shop, net, destination, await shop.payout(destination)


async def test_a_payout_pays_the_recent_fee_of_its_accounts_and_books_what_the_runtime_charged(
        solana_node, make_config, make_client):
    shop, net, destination, payout = await funded_payout(solana_node, make_config, make_client)
    hot = hot_wallet_address(shop.gateway)
    # Each block's least price is 0 (the unpriced transfer); writing the hot wallet cost 25,000: that is the fee.
    solana_node.market(hot, 25_000)
    before = solana_node.balance(hot)
    await shop.work_payouts()
    signed = await shop.payout_row(payout["track_id"])
    tx = VersionedTransaction.from_bytes(base64.b64decode(signed["raw_tx"]))
    assert compute_budget_of(tx.message) == (TRANSFER_COMPUTE_UNITS, 25_000)  # solders' decoding of our bytes
    final = await shop.confirm_payout(payout["track_id"])
    assert final["status"] == "Confirmed", dict(final)
    fee = landed(solana_node, final["tx_hash"])["meta"]["fee"]  # the runtime's charge
    assert fee == SIGNATURE_FEE + priority_fee(25_000) == 5_025
    assert solana_node.balance(hot) == before - shop.units("0.3") - fee
    booked = await ledger.find_transaction(shop.gateway.db, f"payout:{final['id']}:network_fee")
    assert [p.amount for p in booked.postings if p.account == NETWORK_FEES] == [-fee]
    assert await shop.ledger_ok()


async def test_above_the_ceiling_the_payout_waits_then_goes_when_fees_fall(solana_node, make_config, make_client):
    shop, net, destination, payout = await funded_payout(solana_node, make_config, make_client,
                                                         fee_ceiling_micro_lamports_per_cu=40_000)
    hot = hot_wallet_address(shop.gateway)
    solana_node.market(hot, 50_000)
    await shop.work_payouts()
    waiting = await shop.payout_row(payout["track_id"])
    assert (waiting["status"], waiting["stage"]) == ("Confirming", "queued"), dict(waiting)
    assert waiting["last_error"] == "waiting: fee 50000 micro-lamports/CU above the ceiling 40000"
    assert waiting["attempts"] == 0 and waiting["tx_hash"] is None
    assert solana_node.mempool == [] and await shop.gateway.db.fetch_val("SELECT COUNT(*) FROM solana_txs") == 0

    solana_node.market(hot, 30_000)  # the spike is over
    await shop.work_payouts(FEE_RECHECK_SECONDS)
    final = await shop.confirm_payout(payout["track_id"])
    assert final["status"] == "Confirmed" and final["last_error"] is None, dict(final)
    assert landed(solana_node, final["tx_hash"])["meta"]["fee"] == SIGNATURE_FEE + priority_fee(30_000)
    assert solana_node.balance(destination) == shop.units("0.3")
    assert await shop.balance() == net - shop.units("0.3")


async def test_a_sweep_pays_the_priority_fee_and_still_empties_the_address(solana_node, make_config, make_client):
    shop = await open_chain_shop(SolanaDriver(solana_node), make_config, make_client)
    payment, _ = await shop.paid_deposit()
    address, hot = payment["address"], hot_wallet_address(shop.gateway)
    solana_node.market(hot, 7_777)  # the sweep writes the hot wallet too: its price
    deposited, before = solana_node.balance(address), solana_node.balance(hot)
    assert (await sweep_chain(shop.gateway, shop.adapter)).started == 1
    solana_node.produce(1)
    (tx,) = await shop.gateway.db.fetch_all("SELECT * FROM solana_txs WHERE kind = 'sweep'")
    fee = landed(solana_node, tx["signature"])["meta"]["fee"]
    assert fee == SIGNATURE_FEE + priority_fee(7_777) == shop.gateway.db.to_int(tx["fee"])  # the quote was exact
    assert solana_node.balance(address) == 0 and solana_node.balance(hot) == before + deposited - fee
