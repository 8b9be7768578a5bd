"""Sweeping credited SOL deposits to the hot wallet: to exactly zero, booked once final, crash- and expiry-safe.

The sweep job records what a final sweep owes the ledger; serve's ``ledger.book_sweeps`` books it
(``book_sweeps``, core/ledger/sweep_bookings.py), as when the sweep is signed in a separate signer.

Balances and fees are the LiteSVM runtime's (``tests/solana_node.py``).
"""

from __future__ import annotations

from typing import AsyncIterator

import pytest
import pytest_asyncio

from orbchain.chains.solana import sweep_chain
from orbchain.chains.solana.keys import hot_wallet_address
from orbchain.chains.solana.sweeper import deposit_addresses_account, hot_wallet_account
from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import NETWORK_FEES
from orbchain.core.ledger.sweep_bookings import book_sweeps
from orbchain.testing import SimulatedCrash, open_chain_shop

from .solana_node import FINALITY, VALID_BLOCKS, SolanaDriver, SolanaNode, running_node


@pytest_asyncio.fixture
async def solana_node() -> AsyncIterator[SolanaNode]:
    async with running_node() as node:
        yield node


async def _credited(node, make_config, make_client):
    shop = await open_chain_shop(SolanaDriver(node), make_config, make_client)
    payment, _ = await shop.paid_deposit()
    return shop, payment["address"]


async def _sweep_txs(shop):
    return [dict(r) for r in await shop.gateway.db.fetch_all(
        "SELECT * FROM solana_txs WHERE kind = 'sweep' ORDER BY created_at")]


async def test_sweep_empties_the_address_and_books_once_final(solana_node, make_config, make_client):
    shop, address = await _credited(solana_node, make_config, make_client)
    hot = hot_wallet_address(shop.gateway)
    deposited = solana_node.balance(address)
    report = await sweep_chain(shop.gateway, shop.adapter)
    assert report.started == 1
    solana_node.produce(1)
    assert solana_node.balance(address) == 0  # closed: nothing left below the rent-exempt minimum
    (tx,) = await _sweep_txs(shop)
    fee = solana_node.handle("getTransaction", [tx["signature"], {"commitment": "confirmed"}])["meta"]["fee"]
    assert solana_node.balance(hot) == deposited - fee

    await sweep_chain(shop.gateway, shop.adapter)
    db = shop.gateway.db
    assert await ledger.balance(db, hot_wallet_account("solana"), "SOL") == 0  # landed, not final yet
    solana_node.produce(FINALITY)
    report = await sweep_chain(shop.gateway, shop.adapter)
    assert (report.finished, report.started) == (1, 0)
    assert await ledger.balance(db, hot_wallet_account("solana"), "SOL") == 0  # recorded: serve books it
    assert await book_sweeps(shop.gateway) == 2  # the move and its fee
    assert await book_sweeps(shop.gateway) == 0  # once
    assert await ledger.balance(db, hot_wallet_account("solana"), "SOL") == deposited - fee
    assert await ledger.balance(db, deposit_addresses_account("solana"), "SOL") == fee - deposited
    assert await ledger.balance(db, NETWORK_FEES, "SOL") == -fee
    assert await shop.ledger_ok()
    assert (await sweep_chain(shop.gateway, shop.adapter)).started == 0  # swept: nothing new


async def test_crash_after_signing_resends_the_same_sweep(solana_node, make_config, make_client, monkeypatch):
    shop, address = await _credited(solana_node, make_config, make_client)
    txs = shop.adapter.txs
    send = txs.broadcast

    async def die(stored):
        raise SimulatedCrash("after storing the sweep")

    monkeypatch.setattr(txs, "broadcast", die)
    with pytest.raises(SimulatedCrash):
        await sweep_chain(shop.gateway, shop.adapter)
    monkeypatch.setattr(txs, "broadcast", send)
    (stored,) = await _sweep_txs(shop)
    assert stored["status"] == "stored" and solana_node.mempool == []

    report = await sweep_chain(shop.gateway, shop.adapter)
    assert report.started == 0  # the live sweep is followed, not replaced
    assert [str(t.signatures[0]) for t in solana_node.mempool] == [stored["signature"]]
    solana_node.produce(FINALITY + 1)
    assert (await sweep_chain(shop.gateway, shop.adapter)).finished == 1
    assert solana_node.balance(address) == 0 and len(await _sweep_txs(shop)) == 1


async def test_an_expired_sweep_is_given_up_then_signed_anew(solana_node, make_config, make_client):
    shop, address = await _credited(solana_node, make_config, make_client)
    await sweep_chain(shop.gateway, shop.adapter)
    solana_node.mempool.clear()  # lost on the way
    solana_node.produce(VALID_BLOCKS + FINALITY + 2)
    report = await sweep_chain(shop.gateway, shop.adapter)
    assert (report.expired, report.started) == (1, 1)  # the old bytes can never land; a fresh sweep goes out
    first, second = await _sweep_txs(shop)
    assert first["status"] == "expired" and second["signature"] != first["signature"]
    solana_node.produce(FINALITY + 1)
    assert (await sweep_chain(shop.gateway, shop.adapter)).finished == 1
    assert solana_node.balance(address) == 0
    await book_sweeps(shop.gateway)
    hot = hot_wallet_address(shop.gateway)
    assert await ledger.balance(shop.gateway.db, hot_wallet_account("solana"), "SOL") == solana_node.balance(hot)
    assert await shop.ledger_ok()
