"""``AdapterConformance``: the tests every chain adapter must pass, for its authors to subclass.

A chain package runs the suite in its own repository::

    from orbchain.testing import AdapterConformance

    class TestMyChain(AdapterConformance):
        @pytest.fixture
        def chain_driver(self, my_node):
            return MyChainDriver(my_node)

Each test gets a fresh gateway (on SQLite, and on PostgreSQL when
``ORBCHAIN_TEST_PG_DSN`` is set) configured by the driver, with one merchant,
and checks one promise of the adapter contract end to end: the scanner sees
the deposit, counts confirmations on the best chain, survives reorganisations
before and after crediting, catches up over blocks the node pruned
(``HISTORY``), the node's notification stream announces what the
driver does (``PUSH``), and the payout worker signs, broadcasts and
confirms payouts, re-broadcasting the stored bytes after a crash; after
that payout, an adapter declaring ``CUSTODY`` reports holdings that cover
what the ledger owes. A test
whose capability the adapter does not declare is reported as not
applicable (``capabilities.requires``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, AsyncIterator, Callable

import pytest
import pytest_asyncio

from .capabilities import (CUSTODY, DEPOSITS, HISTORY, MEMPOOL, PAYOUTS, PUSH, REORGS, requires,
                           skip_unless_applicable, supports)
from .driver import ChainDriver
from .harness import ChainShop, open_chain_shop


# Bounds that only catch a hang (a stream that never announces, a push() that ignores its cancellation).
PUSH_HANG_SECONDS = 30.0
# How long one block mined to prove the stream is subscribed is waited for before mining another.
PUSH_PRIME_SECONDS = 1.0
PUSH_KINDS = frozenset({"tx", "block"})


class SimulatedCrash(BaseException):
    """Raised at a payout worker fault point: unwinds like a killed process (no ``except Exception`` stops it)."""


class AdapterConformance:
    """Subclass in a ``test_*.py`` module and provide the ``chain_driver`` fixture (any scope)."""

    @pytest.fixture
    def chain_driver(self) -> ChainDriver:
        pytest.fail("AdapterConformance needs a `chain_driver` fixture returning your ChainDriver", pytrace=False)

    @pytest_asyncio.fixture
    async def chain_shop(self, request: pytest.FixtureRequest, chain_driver: ChainDriver,
                         make_config: Callable[..., Any], make_client: Callable) -> AsyncIterator[ChainShop]:
        shop = await open_chain_shop(chain_driver, make_config, make_client)
        try:
            skip_unless_applicable(request, shop.adapter)
            yield shop
        finally:
            await shop.adapter.close()  # a node may wait for open RPC connections before it stops

    # -- deposits --------------------------------------------------------------------------------

    @requires(DEPOSITS)
    async def test_deposit_seen_then_paid_at_the_threshold(self, chain_shop: ChainShop) -> None:
        shop = chain_shop
        payment = await shop.payment()
        units = shop.units(shop.driver.deposit_amount)
        tx_hash = await shop.driver.send(payment["address"], units)
        await shop.scan()
        if supports(shop.adapter, MEMPOOL):
            view = await shop.view(payment["track_id"])
            assert view["status"] == "Paying", view
            assert [(t["tx_hash"], t["confirmations"]) for t in view["transactions"]] == [(tx_hash, 0)]

        await shop.mine(1)
        threshold = await shop.threshold(tx_hash)
        assert threshold >= shop.gateway.coins.require(shop.driver.coin).confirmations
        if threshold > 1:  # below the threshold: seen, counted, not credited
            view = await shop.view(payment["track_id"])
            assert view["status"] == "Paying", view
            assert [(t["tx_hash"], t["confirmations"]) for t in view["transactions"]] == [(tx_hash, 1)]
            if threshold > 2:
                await shop.mine(threshold - 2)
            view = await shop.view(payment["track_id"])
            assert view["status"] == "Paying" and view["transactions"][0]["confirmations"] == threshold - 1, view
            assert await shop.balance() == 0
            await shop.mine(1)

        view = await shop.view(payment["track_id"])
        assert view["status"] == "Paid", view
        (tx,) = view["transactions"]
        assert tx["status"] == "CREDITED" and tx["confirmations"] == threshold
        assert shop.units(tx["amount"]) == units
        assert await shop.balance() == await shop.net_of(units)
        credited = await shop.events("deposit.credited")
        assert [(e["tx_hash"], shop.units(e["amount"])) for e in credited] == [(tx_hash, units)]
        assert len(await shop.events("payment.paid")) == 1
        assert await shop.ledger_ok()

    @requires(DEPOSITS, HISTORY)
    async def test_deposit_in_pruned_blocks_is_credited_once(self, chain_shop: ChainShop) -> None:
        """Paid while the gateway was down, and the node forgot those blocks: found by address history."""
        shop = chain_shop
        payment = await shop.payment()
        units = shop.units(shop.driver.deposit_amount)
        tx_hash = await shop.driver.send(payment["address"], units)
        await shop.driver.mine(1)
        paid_at = await shop.driver.height()
        await shop.driver.mine(await shop.coin_threshold() + 8)  # deep and final, never scanned
        assert await shop.driver.prune() > paid_at, "the driver must prune the deposit's block"
        await shop.scan()
        await shop.scan()  # the gap is passed once
        view = await shop.view(payment["track_id"])
        assert view["status"] == "Paid" and [t["tx_hash"] for t in view["transactions"]] == [tx_hash]
        assert await shop.balance() == await shop.net_of(units) and await shop.ledger_ok()

    @requires(DEPOSITS)
    async def test_confirmations_follow_the_best_chain(self, chain_shop: ChainShop) -> None:
        """A deposit mined, then more blocks: the count is tip - block + 1 at every scan, never cached."""
        shop = chain_shop
        payment = await shop.payment()
        tx_hash = await shop.driver.send(payment["address"], shop.units(shop.driver.deposit_amount))
        await shop.mine(1)
        threshold = await shop.threshold(tx_hash)
        mined_at = await shop.driver.height()
        # Checked at least once, also when the threshold is 1 and the loop below has nothing to do.
        assert (await shop.view(payment["track_id"]))["transactions"][0]["confirmations"] == 1
        for _ in range(min(3, threshold - 1)):
            await shop.mine(1)
            expected = await shop.driver.height() - mined_at + 1
            assert (await shop.view(payment["track_id"]))["transactions"][0]["confirmations"] == expected

    @requires(DEPOSITS, REORGS)
    async def test_reorg_before_credit_takes_the_deposit_back(self, chain_shop: ChainShop) -> None:
        shop = chain_shop
        payment = await shop.payment()
        tx_hash = await shop.driver.send(payment["address"], shop.units(shop.driver.deposit_amount))
        await shop.mine(1)
        threshold = await shop.threshold(tx_hash)
        assert threshold >= 2, "a reorg before crediting needs a threshold of at least 2 confirmations"
        depth = min(2, threshold - 1)
        if depth > 1:
            await shop.mine(depth - 1)
        assert (await shop.view(payment["track_id"]))["transactions"][0]["confirmations"] == depth

        report = await shop.reorg(depth)
        assert report.disconnected == depth, report
        view = await shop.view(payment["track_id"])
        assert view["status"] == "Paying", view  # known, unconfirmed: waiting for a block again
        (tx,) = view["transactions"]
        assert tx["tx_hash"] == tx_hash and tx["confirmations"] == 0 and tx["status"] == "PENDING"
        assert await shop.balance() == 0
        assert await shop.events("deposit.credited") == [] and await shop.events("deposit.reversed") == []
        assert await shop.ledger_ok()

    @requires(DEPOSITS, REORGS)
    async def test_reorg_after_credit_reverses_with_an_event(self, chain_shop: ChainShop) -> None:
        shop = chain_shop
        payment = await shop.payment()
        units = shop.units(shop.driver.deposit_amount)
        tx_hash = await shop.driver.send(payment["address"], units)
        await shop.mine(1)
        threshold = await shop.threshold(tx_hash)
        if threshold > 1:
            await shop.mine(threshold - 1)
        assert (await shop.view(payment["track_id"]))["status"] == "Paid"
        assert await shop.balance() == await shop.net_of(units)

        report = await shop.reorg(threshold)  # the deposit's block leaves the best chain
        assert report.disconnected == threshold, report
        view = await shop.view(payment["track_id"])
        assert view["status"] == "Paying", view
        assert view["transactions"][0]["confirmations"] == 0
        assert await shop.balance() == 0
        reversed_ = await shop.events("deposit.reversed")
        assert [e["tx_hash"] for e in reversed_] == [tx_hash]
        assert await shop.ledger_ok()

    # -- push ------------------------------------------------------------------------------------

    @requires(DEPOSITS, PUSH)
    async def test_push_announces_a_transfer_and_its_block(self, chain_shop: ChainShop) -> None:
        """``push(heard)`` follows the node: once subscribed (proved by a block it announced), a transfer and
        the block mining it are heard, only as "tx" or "block"; cancelling ``push`` ends it."""
        shop = chain_shop
        heard: list[str] = []
        news = asyncio.Event()

        def on(kind: str) -> None:
            heard.append(kind)
            news.set()

        stream = asyncio.create_task(shop.adapter.push(on))
        try:
            await self._until_heard(shop, news, stream)
            news.clear()
            since = len(heard)
            payment = await shop.payment()
            await shop.driver.send(payment["address"], shop.units(shop.driver.deposit_amount))
            await shop.driver.mine(1)
            await asyncio.wait_for(news.wait(), PUSH_HANG_SECONDS)
            assert len(heard) > since and not stream.done()
            assert set(heard) <= PUSH_KINDS, heard
        finally:
            stream.cancel()
            await asyncio.wait({stream}, timeout=PUSH_HANG_SECONDS)
        assert stream.done(), "push() must end when cancelled (closing its connection)"
        if not stream.cancelled() and stream.exception() is not None:
            raise AssertionError("push() raised when cancelled") from stream.exception()

    @staticmethod
    async def _until_heard(shop: ChainShop, news: asyncio.Event, stream: asyncio.Task) -> None:
        """Mine one block at a time until the stream announces one: then it is subscribed."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + PUSH_HANG_SECONDS
        while not news.is_set():
            assert not stream.done(), f"push() ended before announcing anything: {stream!r}"
            assert loop.time() < give_up, f"push() announced none of the blocks mined in {PUSH_HANG_SECONDS} s"
            await shop.driver.mine(1)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(news.wait(), PUSH_PRIME_SECONDS)

    # -- payouts ---------------------------------------------------------------------------------

    @requires(DEPOSITS, PAYOUTS)
    async def test_payout_signed_broadcast_and_confirmed(self, chain_shop: ChainShop) -> None:
        shop = chain_shop
        _, net = await shop.paid_deposit()
        amount = shop.units(shop.driver.payout_amount)
        await shop.driver.fund_hot_wallet(shop.gateway, amount)
        destination = shop.driver.external_address()
        payout = await shop.payout(destination)
        assert await shop.balance() == net - amount  # reserved at once

        await shop.work_payouts()
        row = await shop.payout_row(payout["track_id"])
        assert row["stage"] in ("broadcast", "confirmed"), row["last_error"]
        final = await shop.confirm_payout(payout["track_id"])
        assert final["status"] == "Confirmed", dict(final)
        assert await shop.balance() == net - amount
        assert await shop.driver.received(destination) == amount
        await self._check_network_fee(shop, final)
        assert len(await shop.events("payout.confirmed")) == 1 and await shop.events("payout.failed") == []
        assert await shop.ledger_ok()
        if supports(shop.adapter, CUSTODY):
            await self._check_custody(shop)

    async def _check_custody(self, shop: ChainShop) -> None:
        """After a deposit and a payout the node covers what the ledger owes (more: the driver's funding)."""
        from ..core.custody.check import check_custody
        from ..core.custody.report import OK, SURPLUS

        coin = (await check_custody(shop.gateway, [shop.adapter])).by_coin()[shop.driver.coin]
        assert coin.status in (OK, SURPLUS), coin
        assert coin.holdings and all(type(h.amount) is int and h.coin == shop.driver.coin for h in coin.holdings)

    @requires(DEPOSITS, PAYOUTS)
    @pytest.mark.parametrize("crash_point", ["after_sign", "after_broadcast"])
    async def test_crash_rebroadcasts_the_stored_transaction(self, chain_shop: ChainShop, crash_point: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
        """The worker dies between signing and recording the broadcast; a new tick sends the stored bytes."""
        from ..core.payouts import worker as payout_worker
        from ..core.types.chains import SignedPayout
        from ..core.payouts.service import sender_of

        shop = chain_shop
        _, net = await shop.paid_deposit()
        amount = shop.units(shop.driver.payout_amount)
        await shop.driver.fund_hot_wallet(shop.gateway, amount)
        destination = shop.driver.external_address()
        payout = await shop.payout(destination)

        sender = sender_of(shop.adapter)
        assert sender is not None, f"{shop.adapter.name} does not declare payouts"
        signatures: list[str] = []
        sign = sender.sign_payout

        async def counted_sign(order: Any) -> Any:
            signatures.append(order.payout_id)
            return await sign(order)

        def crash(point: str) -> None:
            if point == crash_point:
                raise SimulatedCrash(point)

        monkeypatch.setattr(sender, "sign_payout", counted_sign)
        with monkeypatch.context() as faulty:
            faulty.setattr(payout_worker, "_fault", crash)
            with pytest.raises(SimulatedCrash):
                await shop.work_payouts()
        crashed = await shop.payout_row(payout["track_id"])
        assert crashed["stage"] == "signed" and crashed["tx_hash"] and crashed["raw_tx"]
        stored = SignedPayout(crashed["tx_hash"], crashed["raw_tx"])
        await shop.driver.settle()
        assert (await sender.payout_status(stored)).found is (crash_point == "after_broadcast")

        await shop.work_payouts(payout_worker.LEASE_SECONDS + 1)  # the dead worker's claim has run out
        resumed = await shop.payout_row(payout["track_id"])
        assert resumed["stage"] in ("broadcast", "confirmed"), resumed["last_error"]
        assert (resumed["tx_hash"], resumed["raw_tx"]) == (crashed["tx_hash"], crashed["raw_tx"])
        final = await shop.confirm_payout(payout["track_id"])
        assert final["status"] == "Confirmed" and final["tx_hash"] == crashed["tx_hash"], dict(final)
        assert signatures == [crashed["id"]]  # signed once, never again
        assert await shop.driver.received(destination) == amount  # paid once
        assert len(await shop.events("payout.confirmed")) == 1 and await shop.events("payout.failed") == []
        assert await shop.balance() == net - amount
        assert await shop.ledger_ok()

    @staticmethod
    async def _check_network_fee(shop: ChainShop, final: Any) -> None:
        """A mined payout books its network fee: platform network fees -> the chain's world account."""
        from ..core.ledger import book as ledger
        from ..core.ledger.accounts import NETWORK_FEES
        from ..core.payouts.service import fee_coin

        booked = await ledger.find_transaction(shop.gateway.db, f"payout:{final['id']}:network_fee")
        if not shop.driver.charges_network_fee:
            assert booked is None
            return
        assert booked is not None, "a confirmed payout booked no network fee"
        coin = fee_coin(shop.gateway, shop.gateway.coins.require(shop.driver.coin))
        fee = sum(p.amount for p in booked.postings if p.account == NETWORK_FEES and p.coin == coin)
        assert fee < 0, booked
        assert await ledger.balance(shop.gateway.db, NETWORK_FEES, coin) == fee
