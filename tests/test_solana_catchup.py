"""Catch-up over pruned slots: deposits made while the gateway was down, found by address history.

The LiteSVM node (``tests/solana_node.py``) forgets old blocks with the real
"missing" errors and keeps its address history; the runtime decides what
each transaction did. "Down" means the gateway does not scan while the node
produces blocks; "restart" is a new adapter on the same database.
"""

from __future__ import annotations

import logging
from typing import AsyncIterator

import pytest
import pytest_asyncio
from solders.keypair import Keypair

from orbchain.chains.solana.adapter import SolanaAdapter
from orbchain.chains.solana.settings import read_settings
from orbchain.core.types.chains import BlocksPruned, ChainUnavailable
from orbchain.core.infra.config import ConfigError
from orbchain.core.watching.scanner import scan_chain

from .solana_node import FINALITY, SolanaNode, open_solana_shop, running_node


@pytest_asyncio.fixture
async def solana_node() -> AsyncIterator[SolanaNode]:
    async with running_node() as node:
        yield node


def _down_then_pruned(node: SolanaNode, code: str = "snapshot") -> int:
    """Blocks pass while the gateway is down; then the node forgets all it rooted. Returns its first slot."""
    node.produce(FINALITY + 8)
    node.prune(node.finalized().slot, code)
    return node.first_available


async def _restart(shop):
    """A new adapter on the same database: all the scanner knows is what it stored."""
    adapter = SolanaAdapter(shop.gateway, shop.adapter.settings, "SOL")
    try:
        return await scan_chain(shop.gateway, adapter)
    finally:
        await adapter.close()


def _searched(node: SolanaNode) -> list[str]:
    return [params[0] for method, params in node.calls if method == "getSignaturesForAddress"]


async def _deposits(shop) -> list[tuple[str, int, str]]:
    rows = await shop.gateway.db.fetch_all("SELECT tx_hash, amount, status FROM deposits ORDER BY tx_hash")
    return [(r["tx_hash"], int(r["amount"]), r["status"]) for r in rows]


@pytest.mark.parametrize("code", ["snapshot", "long_term", "cleaned"])
async def test_a_deposit_in_pruned_slots_is_credited_once(solana_node, make_config, make_client, code):
    shop = await open_solana_shop(solana_node, make_config, make_client)
    payment = await shop.payment()
    units = shop.units("1")
    tx = solana_node.pay(payment["address"], units)
    solana_node.produce(1)
    deposit_slot = solana_node.tip.slot
    first = _down_then_pruned(solana_node, code)
    assert first > deposit_slot

    report = await _restart(shop)
    assert report.scanned_tip == solana_node.tip.slot and report.disconnected == 0
    assert _searched(solana_node) == [payment["address"]]
    view = await shop.view(payment["track_id"])
    assert view["status"] == "Paid" and [t["tx_hash"] for t in view["transactions"]] == [tx]
    assert await shop.balance() == await shop.net_of(units)

    solana_node.calls.clear()
    await shop.mine(3)
    await _restart(shop)
    assert _searched(solana_node) == []  # the gap is remembered: never searched again
    assert await _deposits(shop) == [(tx, units, "CREDITED")]
    assert await shop.balance() == await shop.net_of(units) and await shop.ledger_ok()


async def test_a_genuinely_skipped_slot_above_the_first_available_is_not_a_gap(solana_node, make_config,
                                                                             make_client):
    """-32007 means "skipped, or missing": only below getFirstAvailableBlock is it missing."""
    shop = await open_solana_shop(solana_node, make_config, make_client)
    solana_node.produce(FINALITY + 2)
    solana_node.prune(solana_node.finalized().slot)
    await shop.scan()  # passes the gap
    solana_node.calls.clear()
    solana_node.skip(2)
    report = await shop.mine(1)
    assert report.blocks == 3 and _searched(solana_node) == []
    adapter = shop.adapter
    with pytest.raises(BlocksPruned) as pruned:
        await adapter.block(solana_node.first_available - 1)
    assert pruned.value.first_available == solana_node.first_available


async def test_a_failed_transaction_in_pruned_slots_is_not_credited(solana_node, make_config, make_client):
    shop = await open_solana_shop(solana_node, make_config, make_client)
    payment = await shop.payment()
    failed = solana_node.pay(payment["address"], 1000, skip_preflight=True)  # below rent: the runtime fails it
    solana_node.produce(1)
    good = solana_node.pay(payment["address"], shop.units("0.4"))
    solana_node.produce(1)
    _down_then_pruned(solana_node)
    assert solana_node.handle("getTransaction", [failed, {}])["meta"]["err"] is not None

    await _restart(shop)
    assert await _deposits(shop) == [(good, shop.units("0.4"), "CREDITED")]
    fetched = [params[0] for method, params in solana_node.calls if method == "getTransaction"]
    assert fetched == [good]
    assert (await shop.view(payment["track_id"]))["status"] == "Paying"  # 0.4 of 1 SOL: underpaid
    assert await shop.ledger_ok()


async def test_signatures_are_paged_and_newer_ones_passed_over(solana_node, make_config, make_client):
    shop = await open_solana_shop(solana_node, make_config, make_client, history_page_size=2)
    payment = await shop.payment("2.5")  # paid by the five in the gap
    sent = []
    for _ in range(5):
        sent.append(solana_node.pay(payment["address"], shop.units("0.5")))
        solana_node.produce(1)
    first = _down_then_pruned(solana_node)
    for _ in range(2):  # after the gap: a normal block scan finds these
        sent.append(solana_node.pay(payment["address"], shop.units("0.5")))
        solana_node.produce(1)
    assert first < solana_node.tip.slot

    await _restart(shop)
    pages = [params[1] for method, params in solana_node.calls if method == "getSignaturesForAddress"]
    assert len(pages) == 4 and all(p["limit"] == 2 for p in pages)  # 7 signatures, newest first, 2 a page
    assert "before" not in pages[0] and all("before" in p for p in pages[1:])
    fetched = [params[0] for method, params in solana_node.calls if method == "getTransaction"]
    assert sorted(fetched) == sorted(sent[:5])  # only the gap's; the newer two came from their blocks
    assert sorted(tx for tx, _, _ in await _deposits(shop)) == sorted(sent)
    assert (await shop.view(payment["track_id"]))["status"] == "Paid" and await shop.ledger_ok()


async def test_pages_beyond_the_bound_are_logged_and_not_fetched(solana_node, make_config, make_client, caplog):
    shop = await open_solana_shop(solana_node, make_config, make_client, history_page_size=2, history_pages=1)
    payment = await shop.payment("5")
    sent = []
    for _ in range(3):
        sent.append(solana_node.pay(payment["address"], shop.units("0.5")))
        solana_node.produce(1)
    _down_then_pruned(solana_node)
    with caplog.at_level(logging.WARNING):
        await _restart(shop)
    assert sorted(tx for tx, _, _ in await _deposits(shop)) == sorted(sent[1:])  # the newest page only
    assert "were not searched (history_pages)" in caplog.text


async def test_only_addresses_of_open_payments_are_searched(solana_node, make_config, make_client, caplog):
    shop = await open_solana_shop(solana_node, make_config, make_client, history_max_addresses=1)
    paid, _ = await shop.paid_deposit()  # no longer open: a late deposit to it is not searched for
    older = await shop.payment()
    shop.advance_clock(5)
    newer = await shop.payment()
    late = solana_node.pay(paid["address"], shop.units("0.2"))
    on_time = solana_node.pay(older["address"], shop.units("1"))
    beyond = solana_node.pay(newer["address"], shop.units("1"))  # beyond history_max_addresses
    solana_node.produce(1)
    _down_then_pruned(solana_node)
    with caplog.at_level(logging.WARNING):
        await _restart(shop)
    assert _searched(solana_node) == [older["address"]]
    found = {tx for tx, _, _ in await _deposits(shop)}
    assert on_time in found and late not in found and beyond not in found
    assert "1 of 2 addresses with open payments searched" in caplog.text
    assert (await shop.view(older["track_id"]))["status"] == "Paid"
    assert (await shop.view(newer["track_id"]))["status"] == "Waiting"


async def test_a_payment_that_expired_while_the_gateway_was_down_is_still_searched(solana_node, make_config,
                                                                                  make_client):
    """The expiry job may run at restart before the scan reaches the gap: the payer paid in time."""
    from orbchain.core.payments.status import expire_payments

    shop = await open_solana_shop(solana_node, make_config, make_client)
    payment = await shop.payment()
    units = shop.units("1")
    tx = solana_node.pay(payment["address"], units)
    solana_node.produce(1)
    _down_then_pruned(solana_node)
    shop.advance_clock(2 * 86_400)
    assert await expire_payments(shop.gateway) == 1
    await _restart(shop)
    assert _searched(solana_node) == [payment["address"]]
    assert await _deposits(shop) == [(tx, units, "CREDITED")]  # a late deposit: the merchant's, in full
    assert await shop.balance() == await shop.net_of(units) and await shop.ledger_ok()


async def test_a_later_block_scan_of_the_same_slots_does_not_credit_twice(solana_node, make_config, make_client):
    """The node gets its ledger back (an archive node) and the scanner re-reads the slots block by block."""
    shop = await open_solana_shop(solana_node, make_config, make_client)
    start = solana_node.tip.slot + 1
    payment = await shop.payment()
    units = shop.units("1")
    tx = solana_node.pay(payment["address"], units)
    solana_node.produce(1)
    _down_then_pruned(solana_node)
    await _restart(shop)
    assert await shop.balance() == await shop.net_of(units)
    credited = await shop.events("deposit.credited")

    solana_node.prune(0)  # everything available again
    await shop.gateway.db.execute("DELETE FROM chain_blocks WHERE chain = 'solana' AND height >= :h", {"h": start})
    solana_node.calls.clear()
    report = await _restart(shop)
    assert report.blocks > FINALITY and _searched(solana_node) == []  # block by block this time
    block_hash = await shop.gateway.db.fetch_val("SELECT block_hash FROM deposits WHERE tx_hash = :h", {"h": tx})
    assert not block_hash.startswith("history:")  # the deposit now names its real block
    assert await _deposits(shop) == [(tx, units, "CREDITED")]
    assert await shop.balance() == await shop.net_of(units)
    assert await shop.events("deposit.credited") == credited and await shop.ledger_ok()


async def test_a_signature_the_node_cannot_return_stops_the_scan_at_the_gap(solana_node, make_config, make_client):
    """Never pass a gap with a deposit unread: the catch-up is retried until the node answers."""
    shop = await open_solana_shop(solana_node, make_config, make_client)
    payment = await shop.payment()
    solana_node.pay(payment["address"], shop.units("1"))
    solana_node.produce(1)
    _down_then_pruned(solana_node)
    real = solana_node.handle
    solana_node.handle = lambda method, params: None if method == "getTransaction" else real(method, params)
    with pytest.raises(ChainUnavailable, match="catch-up is retried"):
        await _restart(shop)
    solana_node.handle = real
    await _restart(shop)
    assert (await shop.view(payment["track_id"]))["status"] == "Paid"


def test_history_settings_are_bounded():
    settings = read_settings({"rpc_url": "http://x"})
    assert settings is not None
    assert (settings.history_max_addresses, settings.history_pages, settings.history_page_size) == (1000, 10, 1000)
    with pytest.raises(ConfigError, match=r"plugin\.solana\.history_page_size"):
        read_settings({"rpc_url": "http://x", "history_page_size": 1001})
    with pytest.raises(ConfigError, match=r"plugin\.solana\.history_pages"):
        read_settings({"rpc_url": "http://x", "history_pages": 0})


def test_the_node_pages_signatures_newest_first():
    """The stand-in's own semantics, checked against the RPC's documented ones."""
    node = SolanaNode()
    target = str(Keypair().pubkey())
    sent = []
    for _ in range(3):
        sent.append(node.pay(target, 10**9))
        node.produce(1)
    assert node.handle("getSignaturesForAddress", [target, {}]) == []  # the default commitment is finalized

    def signatures(**options):
        return [e["signature"] for e in node.handle("getSignaturesForAddress",
                                                    [target, {"commitment": "confirmed", **options}])]

    assert signatures() == sent[::-1]
    assert signatures(limit=1, before=sent[2]) == [sent[1]]
    assert signatures(until=sent[0]) == [sent[2], sent[1]]
    with pytest.raises(Exception, match="Minimum context slot"):
        signatures(minContextSlot=node.tip.slot + 1)
