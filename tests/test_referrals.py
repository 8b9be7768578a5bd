"""Referrals (plugins/referrals, SPEC 2.16 and 4.7), on both databases, on devnet.

The referrer earns 2000 bps of each referee's platform fee for 12 months
after the referee's sign-up, as a ledger posting from ``platform:fees``;
only credited deposits count, a reversed deposit reverses the earning, a
crash between the credit and the hook is caught up exactly once, disabled
referees stay listed and bad ``ref`` values are ignored at sign-up.
"""

from __future__ import annotations

from datetime import datetime, UTC

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import PLATFORM_FEES, merchant_available
from orbchain.plugins.referrals import earnings
from orbchain.plugins.referrals.terms import earning_units, eligibility_ends_at

from .support import Devnet, api, signup_data
from .support import signup as signup_merchant

DAY = 86_400


@pytest.fixture
async def env(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    referrer = await signup_merchant(client, email="referrer@example.com")
    account = (await api(client, "GET", "/dashboard/account", referrer.jwt))[1]["data"]["account"]
    data = await signup_data(client, email="referee@example.com", ref=account["account_id"])
    return client, referrer, account["account_id"], data, Devnet(client)


def key(data):
    return {"merchant_api_key": data["api_keys"]["merchant_api_key"]}


async def pay(client, devnet, data, amount="0.01"):
    status, body = await api(client, "POST", "/v1/payment/white-label", key(data),
                             json={"currency": "BTC", "amount": amount})
    assert status == 200, body
    tx = await devnet.pay("BTC", body["data"]["address"], amount)
    await devnet.mine(2)
    return tx


async def stats(client, merchant):
    status, body = await api(client, "GET", "/dashboard/referrals", merchant.jwt)
    assert status == 200, body
    return body["data"]


async def test_referrer_earns_a_fifth_of_the_platform_fee_as_a_ledger_posting(env):
    client, referrer, account_id, referee, devnet = env
    db = devnet.gateway.db
    await pay(client, devnet, referee)  # 0.01 BTC, 1 % fee = 1,000,000 * 1 % = 10,000 sat
    assert await ledger.balance(db, merchant_available(referrer.merchant_id), "BTC") == 2_000
    assert await ledger.balance(db, PLATFORM_FEES, "BTC") == 8_000
    assert await ledger.balance(db, merchant_available(referee["merchant_id"]), "BTC") == 990_000
    assert (await ledger.check_ledger(db)).ok
    txn = await ledger.find_transaction(db, f"referral:deposit:{(await _deposit_id(devnet))}:credit:1")
    assert txn is not None and {(p.account, p.amount) for p in txn.postings} == {
        (PLATFORM_FEES, -2_000), (merchant_available(referrer.merchant_id), 2_000)}

    data = await stats(client, referrer)
    assert data["referral_rate_bps"] == 2000 and data["eligibility_months"] == 12
    assert data["referral_link"].endswith(f"/app/signup?ref={account_id}")
    assert data["referees_count"] == 1
    (row,) = data["referees"]
    assert row["enabled"] is True and row["fees_usd"] == "6" and row["your_earnings_usd"] == "1.2"  # 60,000 USD/BTC
    assert row["eligibility_ends_at"] == eligibility_ends_at(row["signed_up_at"])
    assert data["total_earnings_usd"] == "1.2"
    # The referee sees nobody referred by it.
    status, body = await api(client, "GET", "/dashboard/referrals",
                             {"Authorization": f"Bearer {referee['token']}"})
    assert status == 200 and body["data"]["referees"] == [] and body["data"]["total_earnings_usd"] == "0"


async def _deposit_id(devnet):
    from orbchain import api as services
    (deposit,) = [d for d in await services.recent_deposits(devnet.gateway, await _referee_id(devnet), 5)]
    return deposit.id


async def _referee_id(devnet):
    row = await devnet.gateway.db.fetch_one("SELECT id FROM merchants WHERE email = 'referee@example.com'")
    return row["id"]


async def test_a_reversed_deposit_reverses_the_earning(env):
    client, referrer, _, referee, devnet = env
    db = devnet.gateway.db
    tx = await pay(client, devnet, referee)
    assert await ledger.balance(db, merchant_available(referrer.merchant_id), "BTC") == 2_000
    await devnet.chain.reorg(2, drop=[tx])
    await devnet.scan()
    assert await ledger.balance(db, merchant_available(referrer.merchant_id), "BTC") == 0
    assert await ledger.balance(db, PLATFORM_FEES, "BTC") == 0
    assert (await ledger.check_ledger(db)).ok
    data = await stats(client, referrer)
    assert data["total_earnings_usd"] == "0" and data["referees"][0]["fees_usd"] == "0"
    # Catching up again changes nothing: reversal and earning are each applied once.
    assert await earnings.catch_up(devnet.gateway) == 0
    assert await ledger.balance(db, merchant_available(referrer.merchant_id), "BTC") == 0


async def test_a_credit_the_hook_missed_is_caught_up_exactly_once(env, monkeypatch):
    client, referrer, _, referee, devnet = env
    db = devnet.gateway.db

    async def crashed(gateway, txn):
        return None  # the process died after the credit committed, before the hook ran

    monkeypatch.setattr(earnings, "on_posted", crashed)
    import orbchain.plugins.referrals as plugin
    monkeypatch.setattr(plugin, "on_posted", crashed)
    await pay(client, devnet, referee)
    assert await ledger.balance(db, merchant_available(referrer.merchant_id), "BTC") == 0
    assert await earnings.catch_up(devnet.gateway) == 1
    assert await earnings.catch_up(devnet.gateway) == 0
    assert await ledger.balance(db, merchant_available(referrer.merchant_id), "BTC") == 2_000
    assert (await stats(client, referrer))["total_earnings_usd"] == "1.2"


async def test_nothing_after_twelve_months_and_disabled_referees_stay_listed(env):
    client, referrer, _, referee, devnet = env
    db = devnet.gateway.db
    await db.execute("UPDATE merchants SET created_at = :t, enabled = FALSE WHERE id = :id",
                     {"t": devnet.gateway.now() - 400 * DAY, "id": referee["merchant_id"]})
    await db.execute("UPDATE merchants SET enabled = TRUE WHERE id = :id", {"id": referee["merchant_id"]})
    await pay(client, devnet, referee)
    assert await ledger.balance(db, merchant_available(referrer.merchant_id), "BTC") == 0
    assert await ledger.balance(db, PLATFORM_FEES, "BTC") == 10_000
    await db.execute("UPDATE merchants SET enabled = FALSE WHERE id = :id", {"id": referee["merchant_id"]})
    data = await stats(client, referrer)
    assert data["referees_count"] == 1 and data["referees"][0]["enabled"] is False


@pytest.mark.parametrize("ref", ["nobody", "", " ", 12345, None, ["x"], {"a": 1}, "x" * 300, "ab\u00e9"])
async def test_bad_referrer_values_are_ignored_at_sign_up(client, ref):
    data = await signup_data(client, email="someone@example.com", ref=ref)
    assert data["merchant_id"]
    status, body = await api(client, "GET", "/dashboard/referrals", {"Authorization": f"Bearer {data['token']}"})
    assert status == 200 and body["data"]["referees_count"] == 0


def test_twelve_calendar_months_clamp_to_the_month_end():
    def at(*args):
        return int(datetime(*args, tzinfo=UTC).timestamp())

    assert eligibility_ends_at(at(2026, 1, 31, 10, 0)) == at(2027, 1, 31, 10, 0)
    assert eligibility_ends_at(at(2024, 2, 29, 0, 0)) == at(2025, 2, 28, 0, 0)
    assert eligibility_ends_at(at(2026, 3, 31, 0, 0), months=1) == at(2026, 4, 30, 0, 0)


@given(st.integers(min_value=0, max_value=10**30))
def test_the_referrer_share_never_exceeds_the_rate(fee):
    share = earning_units(fee)
    assert 0 <= share * 10_000 <= fee * 2000
    assert fee * 2000 - share * 10_000 < 10_000  # rounded down by less than one unit
