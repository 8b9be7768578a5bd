"""Solana payouts: signed locally, stored before sending, never paid twice when a blockhash expires.

The LiteSVM-backed node (``tests/solana_node.py``) executes what the gateway
sends: signatures, fees and rent are the runtime's verdict.
"""

from __future__ import annotations

from typing import AsyncIterator

import pytest
import pytest_asyncio
from solders.keypair import Keypair

from orbchain.chains.solana.keys import hot_wallet_address
from orbchain.core.ledger import book as ledger
from orbchain.core.payouts import worker as payout_worker
from orbchain.core.types.chains import BroadcastError, PayoutOrder
from orbchain.core.ledger.accounts import NETWORK_FEES
from orbchain.testing import SimulatedCrash, open_chain_shop

from .solana_node import FINALITY, VALID_BLOCKS, SolanaDriver, SolanaNode, running_node

EXPIRY = VALID_BLOCKS + FINALITY + 2  # blocks until no fork can include a transaction of today's blockhash


@pytest_asyncio.fixture
async def solana_node() -> AsyncIterator[SolanaNode]:
    async with running_node() as node:
        yield node


async def _funded_payout(node, make_config, make_client, **settings):
    shop = await open_chain_shop(SolanaDriver(node, **settings), make_config, make_client)
    _, net = await shop.paid_deposit()
    await shop.driver.fund_hot_wallet(shop.gateway, shop.units("0.3"))
    destination = str(Keypair().pubkey())
    payout = await shop.payout(destination)
    return shop, net, destination, payout


async def test_the_runtime_charges_the_booked_fee(solana_node, make_config, make_client):
    shop, net, destination, payout = await _funded_payout(solana_node, make_config, make_client)
    hot = hot_wallet_address(shop.gateway)
    before = solana_node.balance(hot)
    await shop.work_payouts()
    final = await shop.confirm_payout(payout["track_id"])
    assert final["status"] == "Confirmed", dict(final)
    meta = solana_node.handle("getTransaction", [final["tx_hash"], {"commitment": "confirmed"}])["meta"]
    amount = shop.units("0.3")
    assert solana_node.balance(destination) == amount
    assert solana_node.balance(hot) == before - amount - meta["fee"]
    booked = await ledger.find_transaction(shop.gateway.db, f"payout:{final['id']}:network_fee")
    assert booked is not None
    assert [p.amount for p in booked.postings if p.account == NETWORK_FEES] == [-meta["fee"]]
    assert await shop.ledger_ok()


async def _crash_after_signing(shop, monkeypatch):
    def crash(point: str) -> None:
        if point == "after_sign":
            raise SimulatedCrash(point)

    with monkeypatch.context() as faulty:
        faulty.setattr(payout_worker, "_fault", crash)
        with pytest.raises(SimulatedCrash):
            await shop.work_payouts()


async def test_crash_then_expired_blockhash_fails_without_paying(solana_node, make_config, make_client, monkeypatch):
    """Signed, never sent, blockhash expired: the stored bytes can never land, so the payout fails and re-credits."""
    shop, net, destination, payout = await _funded_payout(solana_node, make_config, make_client)
    await _crash_after_signing(shop, monkeypatch)
    signed = await shop.payout_row(payout["track_id"])
    solana_node.produce(EXPIRY)

    await shop.work_payouts(payout_worker.LEASE_SECONDS + 1)
    row = await shop.payout_row(payout["track_id"])
    assert row["status"] == "Failed" and "blockhash expired" in row["failure_reason"], dict(row)
    assert row["tx_hash"] == signed["tx_hash"]  # never re-signed
    assert solana_node.balance(destination) == 0
    assert await shop.balance() == net  # re-credited
    assert await shop.ledger_ok()


async def test_crash_then_rebroadcast_before_expiry_pays_once(solana_node, make_config, make_client, monkeypatch):
    shop, net, destination, payout = await _funded_payout(solana_node, make_config, make_client)
    await _crash_after_signing(shop, monkeypatch)
    solana_node.produce(VALID_BLOCKS - 5)  # old, but still valid
    await shop.work_payouts(payout_worker.LEASE_SECONDS + 1)
    final = await shop.confirm_payout(payout["track_id"])
    assert final["status"] == "Confirmed", dict(final)
    assert solana_node.balance(destination) == shop.units("0.3")
    assert await shop.balance() == net - shop.units("0.3")


async def test_a_lost_transaction_is_resent_not_dropped_while_it_can_land(solana_node, make_config, make_client):
    shop, net, destination, payout = await _funded_payout(solana_node, make_config, make_client,
                                                          drop_after_seconds=10)
    await shop.work_payouts()
    assert len(solana_node.mempool) == 1
    solana_node.mempool.clear()  # the leader never got it
    await shop.work_payouts(100)  # far past the drop timer: still in flight, and sent again
    row = await shop.payout_row(payout["track_id"])
    assert row["status"] == "Confirming", dict(row)
    assert len(solana_node.mempool) == 1
    final = await shop.confirm_payout(payout["track_id"])
    assert final["status"] == "Confirmed"
    assert solana_node.balance(destination) == shop.units("0.3")


async def test_a_lost_transaction_fails_only_once_it_expired(solana_node, make_config, make_client):
    shop, net, destination, payout = await _funded_payout(solana_node, make_config, make_client,
                                                          drop_after_seconds=10)
    await shop.work_payouts()
    solana_node.mempool.clear()
    solana_node.produce(EXPIRY)
    await shop.work_payouts(30)  # no longer in flight: missing from now on
    assert (await shop.payout_row(payout["track_id"]))["status"] == "Confirming"
    assert solana_node.mempool == []  # the re-send was refused: the blockhash is gone
    await shop.work_payouts(30)
    row = await shop.payout_row(payout["track_id"])
    assert row["status"] == "Failed", dict(row)
    assert solana_node.balance(destination) == 0 and await shop.balance() == net
    assert await shop.ledger_ok()


async def test_rent_rules_refuse_before_signing(solana_node, make_config, make_client):
    shop = await open_chain_shop(SolanaDriver(solana_node), make_config, make_client)
    sender = shop.adapter
    rent = solana_node.svm.minimum_balance_for_rent_exemption(0)
    solana_node.airdrop(hot_wallet_address(shop.gateway), 10**8)
    with pytest.raises(BroadcastError, match="at least") as fresh:
        await sender.sign_payout(PayoutOrder("po_small", "SOL", str(Keypair().pubkey()), rent - 1))
    assert fresh.value.permanent
    # The hot wallet would keep a balance below the rent-exempt minimum: the runtime refuses that.
    with pytest.raises(BroadcastError, match="rent-exempt") as stranded:
        await sender.sign_payout(PayoutOrder("po_strand", "SOL", str(Keypair().pubkey()), 10**8 - 5000 - 1000))
    assert not stranded.value.permanent
    # Emptying it to exactly zero is allowed (the account closes).
    signed = await sender.sign_payout(PayoutOrder("po_all", "SOL", str(Keypair().pubkey()), 10**8 - 5000))
    await sender.broadcast(signed)
    solana_node.produce(1)
    assert solana_node.balance(hot_wallet_address(shop.gateway)) == 0


async def test_a_payout_the_runtime_fails_pays_only_its_fee(solana_node, make_config, make_client):
    """Two payouts signed against a hot wallet that covers one: both pass preflight, the block runs the second
    into insufficient funds. That one lands failed (fee charged by the runtime), fails and is re-credited."""
    shop = await open_chain_shop(SolanaDriver(solana_node), make_config, make_client)
    _, net = await shop.paid_deposit()
    amount = shop.units("0.3")
    hot = hot_wallet_address(shop.gateway)
    solana_node.airdrop(hot, amount + 10**6)  # one payout, its fee, and rent to spare
    destinations = [str(Keypair().pubkey()), str(Keypair().pubkey())]
    payouts = [await shop.payout(d) for d in destinations]
    await shop.work_payouts()
    assert len(solana_node.mempool) == 2
    rows = [await shop.confirm_payout(p["track_id"]) for p in payouts]
    assert sorted(r["status"] for r in rows) == ["Confirmed", "Failed"], [dict(r) for r in rows]
    failed = next(r for r in rows if r["status"] == "Failed")
    meta = solana_node.handle("getTransaction", [failed["tx_hash"], {"commitment": "confirmed"}])["meta"]
    assert meta["err"] is not None and meta["fee"] == 5000  # the runtime's verdict: failed, fee charged
    assert sorted(solana_node.balance(d) for d in destinations) == [0, amount]
    assert await shop.balance() == net - amount  # the failed one re-credited
    fees = await ledger.balance(shop.gateway.db, NETWORK_FEES, "SOL")
    assert fees == -2 * 5000  # both fees were paid on chain, and both are booked
    assert solana_node.balance(hot) == amount + 10**6 - amount - 2 * 5000
    assert await shop.ledger_ok()
