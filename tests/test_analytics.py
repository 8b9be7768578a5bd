"""Analytics (plugins/analytics, SPEC 4.7), on both databases, on devnet.

The report is 30 UTC days of credited deposits and confirmed payouts in USD
with counts, derived from the ledger: it reconciles with the merchant's
balance, a reversed deposit leaves it, a crash between the ledger commit and
the hook is caught up exactly once, and other merchants never show.
"""

from __future__ import annotations

from datetime import datetime, UTC

import pytest

import orbchain.plugins.analytics as plugin
from orbchain.core.ledger import book as ledger
from orbchain.plugins.analytics import counting
from orbchain.plugins.analytics.report import window

from .support import api, signup
from .test_payouts import create, devnet_txs, fund, payout_env, payout_row, work


@pytest.fixture
async def env(make_client, make_config):
    return await payout_env(make_client, make_config)


async def report(client, merchant):
    status, body = await api(client, "GET", "/dashboard/analytics", merchant.jwt)
    assert status == 200, body
    return body["data"]


def today(gateway):
    return datetime.fromtimestamp(gateway.now(), tz=UTC).date().isoformat()


async def test_thirty_zero_days_for_a_new_merchant(env):
    client, merchant, devnet = env
    data = await report(client, merchant)
    assert len(data["daily"]) == 30 and data["daily"][-1]["date"] == today(devnet.gateway)
    assert [d["date"] for d in data["daily"]] == sorted(d["date"] for d in data["daily"])
    assert all(d == {"date": d["date"], "deposits_usd": "0", "payouts_usd": "0", "deposit_count": 0,
                     "payout_count": 0} for d in data["daily"])
    assert data["totals"] == {"total_deposits_usd": "0", "total_payouts_usd": "0", "total_deposit_count": 0,
                              "total_payout_count": 0}


async def test_deposits_and_payouts_counted_from_the_ledger_and_reconciled(env):
    client, merchant, devnet = env
    gw = devnet.gateway
    await fund(client, merchant, devnet, "0.01")
    await fund(client, merchant, devnet, "0.002")
    status, body = await create(client, merchant, "0.004")
    assert status == 200, body
    await work(gw)
    await devnet.mine(1)
    await work(gw)
    row = await payout_row(gw, body["data"]["track_id"])
    assert row["status"] == "Confirmed" and await devnet_txs(gw, row["tx_hash"])

    data = await report(client, merchant)
    last = data["daily"][-1]
    # 0.012 BTC in at 60,000 USD/BTC, 0.004 BTC out.
    assert last == {"date": today(gw), "deposits_usd": "720", "payouts_usd": "240", "deposit_count": 2,
                    "payout_count": 1}
    assert data["totals"] == {"total_deposits_usd": "720", "total_payouts_usd": "240", "total_deposit_count": 2,
                              "total_payout_count": 1}
    # Reconciles with the balance: in minus fees minus out is what the merchant holds.
    balance = await ledger.balance(gw.db, ledger.merchant_available(merchant.merchant_id), "BTC")
    fees = await ledger.balance(gw.db, ledger.PLATFORM_FEES, "BTC")
    assert 1_200_000 - fees - 400_000 == balance
    # Another merchant sees none of it.
    other = await signup(client, email="other@example.com")
    assert (await report(client, other))["totals"]["total_deposit_count"] == 0


async def test_a_reversed_deposit_leaves_the_report(env):
    client, merchant, devnet = env
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01"})
    tx = await devnet.pay("BTC", body["data"]["address"], "0.01")
    await devnet.mine(2)
    assert (await report(client, merchant))["totals"]["total_deposit_count"] == 1
    await devnet.chain.reorg(2, drop=[tx])
    await devnet.scan()
    data = await report(client, merchant)
    assert data["totals"] == {"total_deposits_usd": "0", "total_payouts_usd": "0", "total_deposit_count": 0,
                              "total_payout_count": 0}
    assert await counting.catch_up(devnet.gateway) == 0  # nothing left to count twice


async def test_what_the_hook_missed_is_caught_up_once(env, monkeypatch):
    client, merchant, devnet = env

    async def crashed(gateway, txn):
        return None

    monkeypatch.setattr(plugin, "on_posted", crashed)
    await fund(client, merchant, devnet, "0.01")
    assert (await report(client, merchant))["totals"]["total_deposit_count"] == 0
    monkeypatch.undo()
    assert await counting.catch_up(devnet.gateway) == 1
    assert await counting.catch_up(devnet.gateway) == 0
    totals = (await report(client, merchant))["totals"]
    assert totals["total_deposit_count"] == 1 and totals["total_deposits_usd"] == "600"


async def test_unknown_prices_count_as_zero_usd_but_still_count(env):
    client, merchant, devnet = env

    class NoPrices:
        async def price(self, symbol):
            from decimal import Decimal
            return Decimal(0)

    devnet.gateway.services["prices"] = NoPrices()
    await fund(client, merchant, devnet, "0.01")
    totals = (await report(client, merchant))["totals"]
    assert totals["total_deposit_count"] == 1 and totals["total_deposits_usd"] == "0"


def test_window_is_thirty_days_ending_today():
    days = window(int(datetime(2026, 3, 1, 12, tzinfo=UTC).timestamp()))
    assert days[0] == "2026-01-31" and days[-1] == "2026-03-01" and len(days) == 30
