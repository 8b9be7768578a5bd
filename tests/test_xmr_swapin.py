"""XMR swap-in end to end (plugins/swaps/swapin.py): a real monerod in regtest, the devnet venue, both databases.

A payer's real transaction to the payment's subaddress is detected by the
gateway's view-only wallet, confirmed by the node, credited into the monero
plugin's swap-in account, taken once by the swaps job, converted by the
devnet venue and credited to the merchant in BTC; the payment goes Paid.

Worked out by hand, not by the code: 1.5 XMR at 0.004 BTC per XMR is
0.006 BTC, less the venue's 0.5 % fee = 0.00597 BTC delivered; the platform's
1 % (the core's fee on the XMR deposit, charged once on the delivery) is
0.0000597 BTC, so the merchant is credited 0.0059103 BTC.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from orbchain.chains.monero import swapin as monero_swapin
from orbchain.core.ledger import book as ledger
from orbchain.core.watching.scanner import scan_chain
from orbchain.plugins.swaps import engine, store
from orbchain.plugins.swaps.engine import run_swaps
from orbchain.plugins.swaps.service import SWAPIN_HELD
from orbchain.plugins.swaps.venue_registry import venues_of
from orbchain.web.keys import GATEWAY

from .support import advance_clock, api, signup
from .xmr_support import MerchantReads

PICONERO = 10**12
CONFIRMATIONS = 10
AMOUNT = int(Decimal("1.5") * PICONERO)
DELIVERED = 597_000      # satoshi: 1.5 * 0.004 * 0.995
FEE = 5_970              # 1 % of the delivery
CREDITED = "0.0059103"   # DELIVERED - FEE, in BTC
SETTINGS = "/dashboard/settings/settlement-coin"


class Shop(MerchantReads):
    def __init__(self, client, merchant, regtest) -> None:
        self.client, self.merchant, self.regtest = client, merchant, regtest
        self.gateway = client.app[GATEWAY]
        self.db = self.gateway.db
        self.adapter = self.gateway.chains.get("monero")
        self.venue = venues_of(self.gateway)["devnet"]

    async def scan(self) -> None:
        await scan_chain(self.gateway, self.adapter)

    async def mine(self, blocks: int) -> None:
        self.regtest.mine(blocks)
        await self.scan()

    async def pay_and_confirm(self, amount: str = "1.5") -> tuple[str, str]:
        """A white-label XMR payment, paid by the payer's wallet and confirmed 10 times: (track_id, txid)."""
        status, body = await api(self.client, "POST", "/v1/payment/white-label", self.merchant.merchant_key,
                                 json={"currency": "XMR", "amount": amount})
        assert status == 200, body
        txid = self.regtest.pay(body["data"]["address"], int(Decimal(amount) * PICONERO))
        mined_at = self.regtest.mine_including(txid)
        await self.mine(CONFIRMATIONS - (self.regtest.height() - mined_at))
        view = await self.payment(body["data"]["track_id"])
        assert view["status"] == "Paying" and view["transactions"][0]["status"] == "CONFIRMED", view
        return body["data"]["track_id"], txid

    async def swaps(self) -> list[dict]:
        status, body = await api(self.client, "GET", "/dashboard/swaps", self.merchant.jwt)
        assert status == 200, body
        return body["data"]["swaps"]

    async def xmr_on_the_books(self) -> dict[str, int]:
        """Every non-world account's XMR balance that is not zero (XMR must never rest anywhere)."""
        rows = await self.db.fetch_all("SELECT account, balance FROM ledger_balances WHERE coin = 'XMR'")
        return {r["account"]: self.db.to_int(r["balance"]) for r in rows
                if self.db.to_int(r["balance"]) and not r["account"].startswith("world:")}

    async def clean(self) -> None:
        report = await ledger.check_ledger(self.db)
        assert report.ok, report
        assert "XMR" not in await self.balances()


@pytest.fixture
async def shop(make_client, make_config, monero_regtest):
    client = await make_client(make_config(scheduler={"enabled": False},
                                           plugin={"monero": monero_regtest.plugin_block()}))
    merchant = await signup(client)
    # The merchant's own steps, through the API: the settlement coin first, then XMR accepted.
    status, body = await api(client, "PUT", SETTINGS, merchant.jwt, json={"default_settlement_coin": "btc"})
    assert status == 200 and body["data"] == {"default_settlement_coin": "BTC"}, body
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt,
                             json={"accepted_coins": ["BTC", "XMR"]})
    assert status == 200, body
    shop = Shop(client, merchant, monero_regtest)
    shop.venue.knobs.rates = {"XMR/BTC": Decimal("0.004")}
    shop.venue.knobs.fee_bps = 50
    await shop.scan()  # the scanner starts at the current tip
    return shop


async def test_an_xmr_payment_is_paid_in_the_settlement_coin(shop):
    track_id, txid = await shop.pay_and_confirm()
    assert await ledger.balance(shop.db, monero_swapin.SWAP_IN_ACCOUNT, "XMR") == AMOUNT
    assert await shop.balances() == {}

    await asyncio.gather(run_swaps(shop.gateway), run_swaps(shop.gateway))  # two workers at once

    view = await shop.payment(track_id)
    assert view["status"] == "Paid" and view["transactions"][0]["status"] == "CREDITED", view
    assert view["transactions"][0]["tx_hash"] == txid
    assert shop.venue.create_calls == 1
    assert await shop.balances() == {"BTC": CREDITED}
    [swap] = await shop.swaps()
    assert swap["from_coin"] == "XMR" and swap["to_coin"] == "BTC" and swap["status"] == "CONFIRMED", swap
    assert swap["from_amount"] == "1.5" and swap["actual_to_amount"] == "0.00597"
    [paid] = await shop.paid_webhooks(track_id)
    assert paid["settled_coin"] == "BTC" and paid["settled_amount"] == CREDITED and paid["swap_fallback"] is False
    # The XMR left the books through the venue; the BTC came from it; the fee once, in BTC.
    assert await shop.xmr_on_the_books() == {}
    assert await ledger.balance(shop.db, ledger.world("venue-devnet"), "XMR") == AMOUNT
    assert await ledger.balance(shop.db, ledger.world("venue-devnet"), "BTC") == -DELIVERED
    assert await ledger.balance(shop.db, ledger.PLATFORM_FEES, "BTC") == FEE
    assert await ledger.balance(shop.db, ledger.PLATFORM_FEES, "XMR") == 0
    await shop.clean()

    # The job again, and again: nothing moves twice, the venue is not asked for a second order.
    calls = shop.venue.create_calls
    await run_swaps(shop.gateway)
    await run_swaps(shop.gateway)
    assert shop.venue.create_calls == calls and len(await shop.swaps()) == 1
    assert await shop.balances() == {"BTC": CREDITED} and len(await shop.paid_webhooks(track_id)) == 1
    await shop.clean()


async def test_a_venue_failure_holds_the_xmr_and_retries_until_it_converts(shop):
    track_id, _ = await shop.pay_and_confirm()

    # 1. The exchange fails after taking the order: refunded, the XMR back in the holding account.
    shop.venue.knobs.fail_exchange = True
    await run_swaps(shop.gateway)
    [first] = await shop.swaps()
    assert first["status"] == "FAILED" and "exchange failed" in first["failure_reason"], first
    assert await shop.xmr_on_the_books() == {SWAPIN_HELD: AMOUNT}
    view = await shop.payment(track_id)
    assert view["status"] == "Paying" and view["transactions"][0]["status"] == "CONFIRMED"
    await shop.clean()

    # 2. Not before the backoff; then a fresh attempt (a new swap id), refused by the venue: held again.
    shop.venue.knobs.fail_exchange, shop.venue.knobs.refuse_create = False, True
    await run_swaps(shop.gateway)
    assert len(await shop.swaps()) == 1
    advance_clock(shop.gateway, 60)
    await run_swaps(shop.gateway)
    second = (await shop.swaps())[0]
    assert second["swap_id"] != first["swap_id"] and second["status"] == "FAILED", second
    assert second["failure_reason"].startswith("venue_refused")
    assert await shop.xmr_on_the_books() == {SWAPIN_HELD: AMOUNT}
    assert (await shop.payment(track_id))["status"] == "Paying" and await shop.paid_webhooks(track_id) == []
    await shop.clean()

    # 3. The venue is back: the third attempt converts, the payment is Paid in BTC, never in XMR.
    shop.venue.knobs.refuse_create = False
    advance_clock(shop.gateway, 60)
    await run_swaps(shop.gateway)
    swaps = await shop.swaps()
    assert [s["status"] for s in swaps] == ["CONFIRMED", "FAILED", "FAILED"]
    assert (await shop.payment(track_id))["status"] == "Paid"
    assert await shop.balances() == {"BTC": CREDITED}
    [paid] = await shop.paid_webhooks(track_id)
    assert paid["settled_coin"] == "BTC" and paid["settled_amount"] == CREDITED and paid["swap_fallback"] is False
    assert await shop.xmr_on_the_books() == {}
    await shop.clean()


async def test_a_reorg_before_the_take_leaves_nothing_to_convert(shop):
    track_id, txid = await shop.pay_and_confirm("0.5")
    shop.regtest.reorg_dropping_pool(CONFIRMATIONS)  # the transaction is gone before the job ran
    await shop.scan()
    view = await shop.payment(track_id)
    assert view["status"] == "Paying" and view["transactions"][0]["status"] == "PENDING", view

    await run_swaps(shop.gateway)

    assert await shop.swaps() == [] and shop.venue.orders == {}
    assert await shop.xmr_on_the_books() == {}
    assert (await shop.payment(track_id))["status"] == "Paying"
    await shop.clean()


async def test_a_crash_inside_the_take_rolls_it_back_and_a_crash_after_it_resumes(shop, monkeypatch):
    track_id, _ = await shop.pay_and_confirm()

    # A crash between the take and the attempt's insert: the take is rolled back with it.
    real_insert = store.insert_swap

    async def crash_insert(gateway, row):
        raise RuntimeError("killed between the take and the conversion")

    monkeypatch.setattr(store, "insert_swap", crash_insert)
    await run_swaps(shop.gateway)
    assert [w.track_id for w in await monero_swapin.awaiting(shop.gateway)] == [track_id]
    assert await shop.xmr_on_the_books() == {monero_swapin.SWAP_IN_ACCOUNT: AMOUNT}
    monkeypatch.setattr(store, "insert_swap", real_insert)

    # A crash after the take committed, before the venue was asked: the next run resumes by swap id.
    real_advance = engine.advance

    async def crash_advance(gateway, row):
        raise RuntimeError("killed after the take")

    monkeypatch.setattr(engine, "advance", crash_advance)
    await run_swaps(shop.gateway)
    [swap] = await shop.swaps()
    assert swap["status"] == "QUOTED" and await monero_swapin.awaiting(shop.gateway) == []
    assert await shop.xmr_on_the_books() == {"swap:devnet": AMOUNT}
    assert shop.venue.create_calls == 0
    await shop.clean()
    monkeypatch.setattr(engine, "advance", real_advance)

    await run_swaps(shop.gateway)
    await run_swaps(shop.gateway)
    [swap] = await shop.swaps()
    assert swap["status"] == "CONFIRMED" and shop.venue.create_calls == 1
    assert (await shop.payment(track_id))["status"] == "Paid"
    assert await shop.balances() == {"BTC": CREDITED}
    assert await shop.xmr_on_the_books() == {}
    await shop.clean()


async def test_without_a_settlement_coin_the_xmr_waits_untaken(shop):
    track_id, _ = await shop.pay_and_confirm("0.5")
    status, body = await api(shop.client, "PUT", SETTINGS, shop.merchant.jwt, json={"default_settlement_coin": None})
    assert status == 200, body
    await run_swaps(shop.gateway)
    assert await shop.swaps() == [] and len(await monero_swapin.awaiting(shop.gateway)) == 1
    assert await shop.xmr_on_the_books() == {monero_swapin.SWAP_IN_ACCOUNT: int(Decimal("0.5") * PICONERO)}
    status, body = await api(shop.client, "PUT", SETTINGS, shop.merchant.jwt, json={"default_settlement_coin": "BTC"})
    await run_swaps(shop.gateway)
    assert (await shop.payment(track_id))["status"] == "Paid"
    assert await shop.xmr_on_the_books() == {}
    await shop.clean()


async def test_on_the_devnet_without_a_wallet_xmr_says_why_it_is_unavailable(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client)
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt,
                             json={"accepted_coins": ["BTC", "XMR"]})
    assert status == 400 and "default_settlement_coin" in body["error"]["detail"]["accepted_coins"], body
    assert (await api(client, "PUT", SETTINGS, merchant.jwt, json={"default_settlement_coin": "BTC"}))[0] == 200
    status, body = await api(client, "GET", "/dashboard/account", merchant.jwt)
    assert body["data"]["account"]["default_settlement_coin"] == "BTC"  # one field: the account's
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt,
                             json={"accepted_coins": ["BTC", "XMR"]})
    assert status == 200, body
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "XMR", "amount": "1"})
    assert status == 400 and body["error"]["code"] == "xmr_receive_unsupported", body
    assert "monero plugin's wallet" in body["message"] and "none is configured" in body["message"], body
    status, body = await api(client, "GET", "/dashboard/payments", merchant.jwt)
    assert body["data"]["payments"] == []
