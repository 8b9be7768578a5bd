"""XMR swap-in through a deposit venue (plugins/swaps/venuein.py) against ChangeNOW's wire format, both databases.

The payer pays XMR to the deposit address of a ChangeNOW exchange the
gateway opened when the payment was created; the stand-in (ChangeNOW API v2
as documented, tests/test_venue_changenow.py) simulates the XMR arriving
on Monero and pays the converted BTC out, for real, on the devnet chain to
the merchant's address the core derived. The gateway's own Monero wallet
is configured at an address where nothing answers: this route never uses
it (it is view-only and could not send anyway). The payout is attached to the
payment by the ``decide_deposit_payment`` hook and pays it through ``decide_payment_covered``;
``decide_payment_held_open`` keeps it open past its lifetime once the venue has the XMR.

Worked out by hand, not by the code: 1.5 XMR at 0.004 BTC per XMR is
0.006 BTC, less the stand-in's 0.5 % fee = 0.00597 BTC promised; the
platform's 1 % on the BTC deposit is 0.0000597, so the merchant is credited
0.0059103 BTC. A short delivery of 0.005 BTC (over 1 % below the promise)
credits 0.00495 BTC with swap_fallback true.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.payments.status import expire_payments
from orbchain.plugins.swaps.engine import run_swaps

from .support import Devnet, advance_clock, api, signup
from .test_payouts import BTC_DEST
from .test_venue_changenow import API_KEY, XMR_PAYIN, stand_in  # noqa: F401 - the stand-in fixture
from .xmr_support import MerchantReads

SETTINGS = "/dashboard/settings/settlement-coin"
XMR_REFUND = "44AFFq5kSiGBoZ4NMDwYtN18obc8AemS33DBLWs3H7otXft3XjrpDtQGv7SqSsaBYBb98uNbr2VBBEt7f2wfn3RVGQBEP3A"
DEAD = "http://127.0.0.1:9"  # nothing listens here: the gateway's Monero wallet is never asked


class Shop(MerchantReads):
    def __init__(self, client, merchant, server) -> None:
        self.client, self.merchant, self.server = client, merchant, server
        self.devnet = Devnet(client)
        self.gateway = self.devnet.gateway
        self.db = self.gateway.db

    async def create(self, amount: str = "1.5", **extra) -> dict:
        status, body = await api(self.client, "POST", "/v1/payment/white-label", self.merchant.merchant_key,
                                 json={"currency": "XMR", "amount": amount, "lifetime": 60, **extra})
        assert status == 200, body
        return body["data"]

    async def tick(self) -> None:
        """The swaps job, once its backoff for the venue's last answer ran out."""
        advance_clock(self.gateway, 300)
        await run_swaps(self.gateway)

    async def swap(self, swap_id: str) -> dict:
        status, body = await api(self.client, "GET", f"/dashboard/swap/{swap_id}", self.merchant.jwt)
        assert status == 200, body
        return body["data"]

    async def clean(self) -> None:
        assert (await ledger.check_ledger(self.db)).ok
        assert "XMR" not in await self.balances()
        # The XMR never touched the books: no posting in XMR at all.
        assert await self.db.fetch_val("SELECT COUNT(*) FROM ledger_postings WHERE coin = 'XMR'") == 0


def config(make_config, server, **swaps):
    return make_config(scheduler={"enabled": False}, plugin={
        "changenow": {"api_key": API_KEY, "base_url": server.url, "timeout_seconds": 2},
        "swaps": {"venue": "changenow", **swaps},
        "devnet_venue": {"enabled": False},
        "monero": {"daemon_url": DEAD, "wallet_rpc_url": DEAD, "network": "regtest"},
    })


async def open_shop(make_client, cfg, server) -> Shop:
    client = await make_client(cfg)
    merchant = await signup(client)
    status, body = await api(client, "PUT", SETTINGS, merchant.jwt, json={"default_settlement_coin": "BTC"})
    assert status == 200, body
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt,
                             json={"accepted_coins": ["BTC", "XMR"]})
    assert status == 200, body
    return Shop(client, merchant, server)


@pytest.fixture
async def shop(make_client, make_config, stand_in):  # noqa: F811 - the fixture, passed on
    return await open_shop(make_client, config(make_config, stand_in), stand_in)


async def test_the_payer_pays_the_venue_and_the_payout_pays_the_payment(shop):
    data = await shop.create()
    track_id = data["track_id"]
    # The payer sees the venue's deposit address and the XMR amount the order expects.
    assert data["address"] == XMR_PAYIN and data["pay_amount"] == "1.5" and data["pay_currency"] == "XMR"
    assert data["swap"]["venue"] == "changenow" and data["swap"]["settlement_coin"] == "BTC"
    assert data["swap"]["settlement_amount_quoted"] == "0.00597"
    [exchange_id] = list(shop.server.exchanges)
    exchange = shop.server.exchanges[exchange_id]
    assert exchange["from"] == Decimal("1.5") and exchange["pair"] == ("xmr", "xmr", "btc", "btc")
    # The payout address is the merchant's own, derived and watched by the core.
    owner = await shop.db.fetch_one("SELECT merchant_id FROM deposit_addresses WHERE address = :a",
                                    {"a": exchange["address"]})
    assert owner is not None and owner["merchant_id"] == shop.merchant.merchant_id
    swap_id = data["swap"]["swap_id"]
    assert (await shop.swap(swap_id))["status"] == "PENDING"

    await run_swaps(shop.gateway)  # the venue has nothing yet
    shop.server.receive(exchange_id, payin_hash="aa" * 32)
    await shop.tick()
    assert (await shop.swap(swap_id))["payin_hash"] == "aa" * 32
    assert (await shop.payment(track_id))["status"] == "Waiting"

    txid = await shop.server.pay_out(exchange_id, shop.devnet)
    view = await shop.payment(track_id)
    assert view["status"] == "Paying" and view["transactions"][0]["tx_hash"] == txid, view
    await shop.devnet.mine(shop.gateway.coins.require("BTC").confirmations)
    view = await shop.payment(track_id)
    assert view["status"] == "Paid" and view["transactions"][0]["status"] == "CREDITED", view
    assert view["transactions"][0]["amount"] == "0.00597"
    [paid] = await shop.paid_webhooks(track_id)
    assert (paid["settled_coin"], paid["settled_amount"], paid["swap_fallback"]) == ("BTC", "0.0059103", False)
    assert await shop.balances() == {"BTC": "0.0059103"}

    await shop.tick()  # the venue's report of the payout is recorded
    swap = await shop.swap(swap_id)
    assert swap["status"] == "CONFIRMED" and swap["payout_hash"] == txid and swap["actual_to_amount"] == "0.00597"
    await shop.tick()
    assert len(await shop.paid_webhooks(track_id)) == 1
    await shop.clean()


async def test_xmr_paid_in_time_keeps_the_payment_open_until_the_payout(shop):
    data = await shop.create()
    [exchange_id] = list(shop.server.exchanges)
    shop.server.receive(exchange_id)
    await shop.tick()  # the venue reports the payin
    advance_clock(shop.gateway, 3600)  # past the payment's lifetime while the venue converts
    await expire_payments(shop.gateway)
    assert (await shop.payment(data["track_id"]))["status"] == "Waiting"
    await shop.server.pay_out(exchange_id, shop.devnet)
    await shop.devnet.mine(shop.gateway.coins.require("BTC").confirmations)
    assert (await shop.payment(data["track_id"]))["status"] == "Paid"
    assert await shop.balances() == {"BTC": "0.0059103"}
    await shop.clean()


async def test_a_short_delivery_pays_with_swap_fallback(shop):
    data = await shop.create()
    [exchange_id] = list(shop.server.exchanges)
    shop.server.receive(exchange_id)
    await shop.server.pay_out(exchange_id, shop.devnet, Decimal("0.005"))
    await shop.devnet.mine(shop.gateway.coins.require("BTC").confirmations)
    assert (await shop.payment(data["track_id"]))["status"] == "Paid"
    [paid] = await shop.paid_webhooks(data["track_id"])
    assert (paid["settled_coin"], paid["settled_amount"], paid["swap_fallback"]) == ("BTC", "0.00495", True)
    swap = await shop.swap(data["swap"]["swap_id"])
    assert swap["status"] == "CONFIRMED" and swap["failure_reason"] == "venue_short"
    assert await shop.balances() == {"BTC": "0.00495"}
    await shop.clean()


async def test_a_failed_exchange_is_refunded_and_the_payment_expires(make_client, make_config, stand_in):  # noqa: F811
    shop = await open_shop(make_client, config(make_config, stand_in, refund_addresses={"XMR": XMR_REFUND}),
                           stand_in)
    data = await shop.create()
    [exchange_id] = list(stand_in.exchanges)
    assert stand_in.exchanges[exchange_id]["refund"] == XMR_REFUND
    stand_in.receive(exchange_id)
    stand_in.exchanges[exchange_id]["status"] = "failed"
    await shop.tick()
    # Asked once, to the configured address.
    assert stand_in.exchanges[exchange_id]["status"] == "refunded"
    assert stand_in.exchanges[exchange_id]["refunded_to"] == XMR_REFUND
    swap = await shop.swap(data["swap"]["swap_id"])
    assert swap["status"] == "FAILED" and swap["failure_reason"] == "venue_failed", swap
    assert (await shop.payment(data["track_id"]))["status"] == "Waiting"
    advance_clock(shop.gateway, 3600)
    await expire_payments(shop.gateway)
    assert (await shop.payment(data["track_id"]))["status"] == "Expired"
    refunds = [r for r in stand_in.requests if r == ("POST", "/v2/exchange/refund")]
    await shop.tick()
    assert [r for r in stand_in.requests if r == ("POST", "/v2/exchange/refund")] == refunds
    assert await shop.balances() == {}
    await shop.clean()


async def test_the_payers_refund_address_gets_the_refund(shop):
    data = await shop.create(refund_address=XMR_REFUND)
    [exchange_id] = list(shop.server.exchanges)
    shop.server.receive(exchange_id)
    shop.server.exchanges[exchange_id]["status"] = "failed"
    await shop.tick()
    assert shop.server.exchanges[exchange_id]["refunded_to"] == XMR_REFUND
    swap = await shop.swap(data["swap"]["swap_id"])
    assert swap["status"] == "FAILED" and swap["failure_reason"] == "venue_failed"


async def test_a_bad_refund_address_is_400_and_changes_nothing(shop):
    for value, payment in ((BTC_DEST, {"currency": "XMR", "amount": "1.5"}), (12, {"currency": "XMR", "amount": "1"}),
                           (XMR_REFUND, {"currency": "BTC", "amount": "0.01"})):
        status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                                 json={**payment, "refund_address": value})
        assert status == 400 and "refund_address" in json.dumps(body["error"]), body
    assert await shop.db.fetch_val("SELECT COUNT(*) FROM payments") == 0
    assert shop.server.exchanges == {}


async def test_a_refund_reported_by_the_venue_ends_the_swap(shop):
    data = await shop.create()
    [exchange_id] = list(shop.server.exchanges)
    shop.server.receive(exchange_id, status="refunded")
    await shop.tick()
    swap = await shop.swap(data["swap"]["swap_id"])
    assert swap["status"] == "FAILED" and swap["failure_reason"] == "venue_refunded"
    assert swap["refund_hash"] == "rf" + exchange_id
    assert (await shop.payment(data["track_id"]))["status"] == "Waiting"
    await shop.clean()


async def test_the_venues_deposit_window_expiring_ends_the_swap(shop):
    data = await shop.create()
    [exchange_id] = list(shop.server.exchanges)
    shop.server.exchanges[exchange_id]["status"] = "expired"
    await shop.tick()
    swap = await shop.swap(data["swap"]["swap_id"])
    assert swap["status"] == "FAILED" and swap["failure_reason"] == "venue_expired"
    asked = len(shop.server.requests)
    await shop.tick()
    assert len(shop.server.requests) == asked  # a final order is not asked about again
    advance_clock(shop.gateway, 3600)
    await expire_payments(shop.gateway)
    assert (await shop.payment(data["track_id"]))["status"] == "Expired"
    await shop.clean()


async def test_a_restart_mid_way_resumes_by_swap_id(make_client, make_config, stand_in):  # noqa: F811
    cfg = config(make_config, stand_in)
    shop = await open_shop(make_client, cfg, stand_in)
    data = await shop.create()
    [exchange_id] = list(stand_in.exchanges)
    stand_in.receive(exchange_id)
    # The process dies here; a new one starts on the same database.
    await shop.client.close()
    client = await make_client(cfg)
    again = Shop(client, shop.merchant, stand_in)
    await again.tick()
    assert (await again.swap(data["swap"]["swap_id"]))["payin_hash"] == "xmr" + exchange_id
    await stand_in.pay_out(exchange_id, again.devnet)
    await again.devnet.mine(again.gateway.coins.require("BTC").confirmations)
    await again.tick()
    await again.tick()
    assert (await again.payment(data["track_id"]))["status"] == "Paid"
    assert stand_in.created == 1 and list(stand_in.exchanges) == [exchange_id]  # one exchange, never a second
    assert len(await again.paid_webhooks(data["track_id"])) == 1
    assert await again.balances() == {"BTC": "0.0059103"}
    await again.clean()


async def test_the_venue_down_at_creation_is_503_and_changes_nothing(shop):
    shop.server.fail_with = 503
    status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                             json={"currency": "XMR", "amount": "1.5"})
    assert status == 503 and body["error"]["code"] == "venue_unavailable", body
    assert await shop.db.fetch_val("SELECT COUNT(*) FROM payments") == 0
    assert await shop.db.fetch_val("SELECT COUNT(*) FROM swaps") == 0
