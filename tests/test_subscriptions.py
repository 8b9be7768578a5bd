"""Subscriptions (plugins/subscriptions, SPEC 2.13, 3.4, 4.5, 4.10, 6.3-6.4, 8), on both databases.

Time moves through ``gateway.clock``; the billing tick is called directly
and invoices are paid on the devnet, so a year of monthly billing runs in
seconds. Webhooks are read from the core's outbox, where they are sealed.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from orbchain.core.ledger.check import check_ledger
from orbchain.core.payments.status import expire_payments
from orbchain import api as services
from orbchain.core.contract.registries import ScopeRegistry, StartupError
from orbchain.plugins.subscriptions import billing, enrolment
from orbchain.plugins.subscriptions.billing import run_billing
from orbchain.web.keys import GATEWAY

from .support import Devnet, advance_clock, api, freeze_clock, hold_concurrent_reads, signup

MONTH = 30 * 86400
PLANS, SUBS = "/dashboard/plans", "/v1/subscription"


@pytest.fixture
async def env(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client)
    return client, merchant, Devnet(client)


async def make_plan(client, merchant, **fields):
    body = {"label": "Pro", "amount_usd": "12.50", "interval_sec": MONTH, "accepted_coins": ["BTC"], **fields}
    status, answer = await api(client, "POST", PLANS, merchant.jwt, json=body)
    assert status == 200, answer
    return answer["data"]


async def frozen_subscription(client, merchant, gateway):
    """The clock stopped, a plan and one subscription to it: (the stopped time, plan, subscription id)."""
    start = freeze_clock(gateway)
    plan = await make_plan(client, merchant)
    return start, plan, (await subscribe(client, merchant, plan["id"]))["subscription_id"]


def rfc3339(timestamp):
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


async def due_later(client, merchant, plan_id, gateways, count=1):
    """``count`` subscriptions starting a minute from now, then the clocks a minute on: due, none minted yet,
    so the tick's own minting is what a test sees (an enrolment starting now opens its invoice itself)."""
    now = gateways[0].now()
    ids = [(await subscribe(client, merchant, plan_id, start_at=rfc3339(now + 60)))["subscription_id"]
           for _ in range(count)]
    for gateway in gateways:
        gateway.clock = lambda t=now + 60: t
    return ids


async def subscribe(client, merchant, plan_id, **fields):
    status, answer = await api(client, "POST", SUBS, merchant.merchant_key, json={"plan_id": plan_id, **fields})
    assert status == 200, answer
    assert set(answer) == {"data"}  # SPEC 2.1: subscriptions answer data only
    return answer["data"]


async def show(client, merchant, sid):
    status, answer = await api(client, "GET", f"{SUBS}/{sid}", merchant.merchant_key)
    assert status == 200, answer
    return answer["data"]


async def outbox(gateway, event_type):
    rows = await gateway.db.fetch_all(
        "SELECT body FROM webhook_events WHERE event_type = :t ORDER BY created_at, event_id", {"t": event_type})
    return [json.loads(r["body"]) for r in rows]


async def payments_of(client, merchant):
    status, answer = await api(client, "GET", "/v1/payment?limit=200", merchant.merchant_key)
    assert status == 200, answer
    return answer["data"]["payments"]


async def pay(client, merchant, devnet, track_id):
    """Pay the invoice's exact amount on the devnet and confirm it."""
    status, answer = await api(client, "GET", f"/v1/payment/{track_id}", merchant.merchant_key)
    assert status == 200, answer
    payment = answer["data"]
    await devnet.pay(payment["pay_currency"], payment["address"], payment["pay_amount"])
    await devnet.mine(devnet.gateway.coins.require(payment["pay_currency"]).confirmations)
    return payment


async def payment_status(client, merchant, track_id):
    return (await api(client, "GET", f"/v1/payment/{track_id}", merchant.merchant_key))[1]["data"]["status"]


# -- plans ------------------------------------------------------------------------------------------


async def test_plans_create_list_patch(env):
    client, merchant, _ = env
    plan = await make_plan(client, merchant, amount_usd="9.5", accepted_coins=["btc", "LTC", "BTC"])
    assert plan["amount_usd"] == "9.50" and plan["interval_sec"] == MONTH and plan["enabled"] is True
    assert plan["accepted_coins"] == ["BTC", "LTC"] and plan["subscribe_url"].endswith(f"/subscribe/{plan['id']}")
    status, body = await api(client, "GET", PLANS, merchant.jwt)
    assert status == 200 and body["data"]["plans"] == [plan]
    status, body = await api(client, "PATCH", f"{PLANS}/{plan['id']}", merchant.jwt,
                             json={"enabled": False, "amount_usd": "20", "label": "Pro+"})
    assert status == 200, body
    assert body["data"]["enabled"] is False and body["data"]["amount_usd"] == "20.00"
    assert body["data"]["label"] == "Pro+" and body["data"]["accepted_coins"] == ["BTC", "LTC"]


@pytest.mark.parametrize("fields, field", [
    ({"interval_sec": 3599}, "interval_sec"),
    ({"interval_sec": 31536001}, "interval_sec"),
    ({"interval_sec": 1.5}, "interval_sec"),
    ({"amount_usd": "0"}, "amount_usd"),
    ({"amount_usd": "-5"}, "amount_usd"),
    ({"amount_usd": "1.001"}, "amount_usd"),
    ({"amount_usd": "1000000.01"}, "amount_usd"),
    ({"amount_usd": "abc"}, "amount_usd"),
    ({"label": ""}, "label"),
    ({"label": "x" * 81}, "label"),
    ({"accepted_coins": "BTC"}, "accepted_coins"),
    ({"accepted_coins": ["NOPE"]}, "accepted_coins"),
    # Issue 42 item 8: a price below the smallest payment of a coin its invoices offer (BTC at 60000: 0.60 USD),
    # of the plan's coins or, with none, of every coin the merchant accepts (BTC among them).
    ({"amount_usd": "0.59"}, "amount_usd"),
    ({"amount_usd": "0.01", "accepted_coins": []}, "amount_usd"),
])
async def test_bad_plans_are_a_400_envelope_and_create_nothing(env, fields, field):
    client, merchant, _ = env
    body = {"label": "Pro", "amount_usd": "12.50", "interval_sec": MONTH, **fields}
    status, answer = await api(client, "POST", PLANS, merchant.jwt, json=body)
    assert status == 400, answer
    assert answer["data"] is None and answer["error"]["type"] == "validation" and field in answer["error"]["detail"]
    assert (await api(client, "GET", PLANS, merchant.jwt))[1]["data"]["plans"] == []


async def test_a_plan_price_buys_at_least_the_smallest_payment_of_its_coins(env):
    """Issue 42 item 8. Break caught: a 0.01 USD plan was accepted, and every period's invoice asked for 17
    satoshi, below BTC's dust floor (no wallet sends it). The price is checked against each coin the plan's
    invoices offer, when it is set and when its price or coins change."""
    client, merchant, _ = env
    status, answer = await api(client, "POST", PLANS, merchant.jwt,
                               json={"label": "x", "amount_usd": "0.10", "interval_sec": MONTH,
                                     "accepted_coins": ["LTC", "BTC"]})
    assert status == 400 and answer["error"]["detail"] == {
        "amount_usd": "must be at least 0.60 USD at the current rate: a BTC payment must be at least 0.00001 BTC"}
    plan = await make_plan(client, merchant, amount_usd="0.10", accepted_coins=["LTC"])  # LTC's floor: 0.008 USD
    for change in ({"accepted_coins": ["LTC", "BTC"]}, {"amount_usd": "0.005"}):
        status, answer = await api(client, "PATCH", f"{PLANS}/{plan['id']}", merchant.jwt, json=change)
        assert status == 400 and "amount_usd" in answer["error"]["detail"], (change, answer)
    [kept] = (await api(client, "GET", PLANS, merchant.jwt))[1]["data"]["plans"]
    assert kept == plan
    status, answer = await api(client, "PATCH", f"{PLANS}/{plan['id']}", merchant.jwt,
                               json={"amount_usd": "0.60", "accepted_coins": ["LTC", "BTC"]})
    assert status == 200 and answer["data"]["amount_usd"] == "0.60", answer


async def test_plan_coins_must_be_accepted_and_patches_are_checked(env):
    client, merchant, _ = env
    status, answer = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt,
                               json={"accepted_coins": ["BTC"]})
    assert status == 200, answer
    status, answer = await api(client, "POST", PLANS, merchant.jwt,
                               json={"label": "x", "amount_usd": "1", "interval_sec": 3600, "accepted_coins": ["LTC"]})
    assert status == 400 and answer["error"]["code"] == "currency_not_accepted"
    plan = await make_plan(client, merchant)
    for change in ({}, {"interval_sec": 10}, {"enabled": "no"}, {"accepted_coins": ["LTC"]}, {"amount_usd": "0"}):
        status, answer = await api(client, "PATCH", f"{PLANS}/{plan['id']}", merchant.jwt, json=change)
        assert status == 400, (change, answer)
    assert (await api(client, "GET", PLANS, merchant.jwt))[1]["data"]["plans"] == [plan]


async def test_plans_are_the_merchants_own(env):
    client, merchant, _ = env
    plan = await make_plan(client, merchant)
    other = await signup(client, "other@example.com")
    assert (await api(client, "GET", PLANS, other.jwt))[1]["data"]["plans"] == []
    assert (await api(client, "PATCH", f"{PLANS}/{plan['id']}", other.jwt, json={"enabled": False}))[0] == 404
    status, answer = await api(client, "POST", SUBS, other.merchant_key, json={"plan_id": plan["id"]})
    assert status == 400 and answer["error"]["code"] == "plan_not_found_or_disabled"
    assert (await api(client, "GET", PLANS, merchant.merchant_key))[0] == 401


# -- the subscriptions API ------------------------------------------------------------------------------


async def test_create_show_list_and_cancel(env):
    client, merchant, devnet = env
    now = freeze_clock(devnet.gateway)
    plan = await make_plan(client, merchant)
    sub = await subscribe(client, merchant, plan["id"], customer_ref="cust-1", customer_email="Ann@Example.com")
    assert sub["status"] == "ACTIVE" and sub["plan_id"] == plan["id"] and sub["plan_label"] == "Pro"
    assert sub["amount_usd"] == "12.50" and sub["interval_sec"] == MONTH and sub["customer_ref"] == "cust-1"
    assert sub["customer_email"] == "ann@example.com" and sub["next_billing_at"] == now
    assert "/subscribe/manage/" in sub["manage_url"]
    assert await show(client, merchant, sub["subscription_id"]) == sub
    second = await subscribe(client, merchant, plan["id"], customer_ref="cust-2")
    status, answer = await api(client, "GET", SUBS, merchant.merchant_key)
    assert status == 200 and answer["data"]["total"] == 2
    assert [s["subscription_id"] for s in answer["data"]["subscriptions"]] in (
        [second["subscription_id"], sub["subscription_id"]], [sub["subscription_id"], second["subscription_id"]])
    status, answer = await api(client, "GET", f"{SUBS}?customer_ref=cust-2&status=active&limit=1",
                               merchant.merchant_key)
    assert answer["data"]["subscriptions"] == [second] and answer["data"]["limit"] == 1

    status, answer = await api(client, "POST", f"{SUBS}/{sub['subscription_id']}/cancel", merchant.merchant_key)
    assert status == 200, answer
    cancelled = answer["data"]
    assert cancelled["status"] == "CANCELLED" and cancelled["next_billing_at"] is None
    assert cancelled["manage_url"] != sub["manage_url"]  # the magic token rotated
    again = (await api(client, "POST", f"{SUBS}/{sub['subscription_id']}/cancel", merchant.merchant_key))[1]["data"]
    assert again == cancelled  # idempotent
    status, answer = await api(client, "GET", f"{SUBS}?status=CANCELLED", merchant.merchant_key)
    assert [s["subscription_id"] for s in answer["data"]["subscriptions"]] == [sub["subscription_id"]]


async def test_foreign_and_unknown_ids_are_404_and_keys_are_checked(env):
    client, merchant, _ = env
    plan = await make_plan(client, merchant)
    sub = await subscribe(client, merchant, plan["id"])
    other = await signup(client, "other@example.com")
    sid = sub["subscription_id"]
    assert (await api(client, "GET", f"{SUBS}/{sid}", other.merchant_key))[0] == 404
    assert (await api(client, "POST", f"{SUBS}/{sid}/cancel", other.merchant_key))[0] == 404
    assert (await api(client, "GET", f"{SUBS}/sub_nope", merchant.merchant_key))[0] == 404
    assert (await api(client, "GET", SUBS, other.merchant_key))[1]["data"]["total"] == 0
    assert (await api(client, "GET", SUBS, {}))[0] == 401
    assert (await api(client, "GET", SUBS, merchant.payout_key))[0] == 401
    assert (await show(client, merchant, sid))["status"] == "ACTIVE"


async def test_scoped_keys_need_the_subscription_scopes(env):
    client, merchant, _ = env
    plan = await make_plan(client, merchant)
    status, answer = await api(client, "POST", "/dashboard/api-keys", merchant.jwt,
                               json={"label": "reader", "scopes": ["subscription:read"]})
    assert status == 200, answer
    reader = {"merchant_api_key": answer["data"]["api_key"]}
    assert (await api(client, "GET", SUBS, reader))[0] == 200
    status, answer = await api(client, "POST", SUBS, reader, json={"plan_id": plan["id"]})
    assert status == 403, answer
    assert (await api(client, "GET", SUBS, merchant.merchant_key))[1]["data"]["total"] == 0


@pytest.mark.parametrize("body, field", [
    ({}, "plan_id"),
    ({"plan_id": 5}, "plan_id"),
    ({"customer_ref": "x" * 129}, "customer_ref"),
    ({"customer_email": "not-an-email"}, "customer_email"),
    ({"start_at": "tomorrow"}, "start_at"),
    ({"start_at": "2030-01-01T00:00:00"}, "start_at"),  # no time zone
    ({"start_at": "2030-01-01"}, "start_at"),
    # Issue 29 item 8, breaks caught: year 0001 was read as "now", 9999 was accepted (billing in 8,000
    # years), and an offset pushing either out of range raised OverflowError (a 500).
    ({"start_at": "0001-01-01T00:00:00Z"}, "start_at"),
    ({"start_at": "0001-01-01T00:00:00+01:00"}, "start_at"),
    ({"start_at": "9999-12-31T23:59:59Z"}, "start_at"),
    ({"start_at": "9999-12-31T23:59:59-01:00"}, "start_at"),
])
async def test_bad_subscription_input_is_a_400_and_creates_nothing(env, body, field):
    client, merchant, _ = env
    plan = await make_plan(client, merchant)
    sent = body if not body or "plan_id" in body else {"plan_id": plan["id"], **body}
    status, answer = await api(client, "POST", SUBS, merchant.merchant_key, json=sent)
    assert status == 400, answer
    assert answer["error"]["type"] == "validation" and field in answer["error"]["detail"]
    assert (await api(client, "GET", SUBS, merchant.merchant_key))[1]["data"]["total"] == 0


async def test_a_disabled_or_unknown_plan_refuses_enrolment(env):
    client, merchant, _ = env
    plan = await make_plan(client, merchant)
    await api(client, "PATCH", f"{PLANS}/{plan['id']}", merchant.jwt, json={"enabled": False})
    for plan_id in (plan["id"], "plan_unknown"):
        status, answer = await api(client, "POST", SUBS, merchant.merchant_key, json={"plan_id": plan_id})
        assert status == 400 and answer["error"]["code"] == "plan_not_found_or_disabled", answer
        status, answer = await api(client, "POST", "/dashboard/subscriptions", merchant.jwt, json={"plan_id": plan_id})
        assert status == 400 and answer["error"]["code"] == "plan_not_found_or_disabled", answer


async def test_dashboard_twins_and_summary_with_exact_mrr(env):
    client, merchant, devnet = env
    monthly = await make_plan(client, merchant, amount_usd="10.00")
    weekly = await make_plan(client, merchant, amount_usd="1.00", interval_sec=7 * 86400)
    yearly = await make_plan(client, merchant, amount_usd="100", interval_sec=365 * 86400)
    ids = []
    for plan in (monthly, weekly, weekly, weekly, yearly):
        status, answer = await api(client, "POST", "/dashboard/subscriptions", merchant.jwt,
                                   json={"plan_id": plan["id"]})
        assert status == 200 and answer["message"] == "OK", answer
        ids.append(answer["data"]["subscription_id"])
    status, answer = await api(client, "GET", "/dashboard/subscriptions", merchant.jwt)
    assert status == 200 and answer["data"]["total"] == 5
    await api(client, "POST", f"{SUBS}/{ids[4]}/cancel", merchant.merchant_key)
    status, answer = await api(client, "GET", "/dashboard/subscriptions/summary", merchant.jwt)
    # Issue 32 item 5, break caught: MRR counted subscriptions that never paid. Nothing is paid yet: 0.
    assert status == 200 and answer["data"]["active"] == 4 and answer["data"]["mrr_usd"] == "0.00", answer
    await run_billing(devnet.gateway)
    for sid in ids[:4]:
        await pay(client, merchant, devnet, (await show(client, merchant, sid))["pay_url"].rsplit("/", 1)[1])
    status, answer = await api(client, "GET", "/dashboard/subscriptions/summary", merchant.jwt)
    assert status == 200, answer
    # 10 + 3 * 1.00 * 30/7 = 22.857142... -> 22.86 (exact fractions, rounded once)
    assert answer["data"] == {"active": 4, "paused": 0, "failed": 0, "cancelled": 1, "pending": 0, "expired": 0,
                              "mrr_usd": "22.86"}
    assert (await api(client, "GET", "/dashboard/subscriptions/summary", merchant.merchant_key))[0] == 401


# -- the billing tick -----------------------------------------------------------------------------------


async def test_a_year_of_monthly_billing(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    start = freeze_clock(gateway)
    plan = await make_plan(client, merchant)
    sub = await subscribe(client, merchant, plan["id"], customer_ref="c1", customer_email="c@example.com")
    sid = sub["subscription_id"]
    assert sub["pay_url"] is not None  # the first period's invoice is open at enrolment (issue 32)
    for month in range(12):
        report = await run_billing(gateway)
        assert report.minted == (0 if month == 0 else 1), (month, report)
        assert (await run_billing(gateway)).minted == 0  # one invoice per period
        invoiced = (await outbox(gateway, "subscription.invoiced"))[-1]
        assert invoiced["subscription_id"] == sid and invoiced["grace_count"] == 0
        assert invoiced["amount_usd"] == "12.50" and invoiced["customer_email"] == "c@example.com"
        assert invoiced["pay_url"].endswith(f"/pay/{invoiced['payment_track_id']}")
        assert (await show(client, merchant, sid))["pay_url"] == invoiced["pay_url"]
        advance_clock(gateway, 3600 + month * 600)  # paid late, by a varying amount
        payment = await pay(client, merchant, devnet, invoiced["payment_track_id"])
        assert Decimal(payment["amount_fiat"]) == Decimal("12.50") and payment["fiat_currency"] == "USD"
        paid = (await outbox(gateway, "subscription.paid"))[-1]
        assert paid["invoice_track_id"] == invoiced["payment_track_id"] and paid["paid_coin"] == "BTC"
        assert paid["paid_amount"] == payment["pay_amount"] and paid["plan_label"] == "Pro"
        assert paid["current_period_start"] == start + month * MONTH  # from the period, not the payment
        assert paid["current_period_end"] == start + (month + 1) * MONTH and paid["interval_sec"] == MONTH
        now = await show(client, merchant, sid)
        assert now["next_billing_at"] == start + (month + 1) * MONTH and now["pay_url"] is None
        assert (await run_billing(gateway)).minted == 0  # not due before the period ends
        gateway.clock = lambda t=start + (month + 1) * MONTH: t
    assert len(await outbox(gateway, "subscription.invoiced")) == 12
    assert len(await outbox(gateway, "subscription.paid")) == 12
    assert len(await payments_of(client, merchant)) == 12
    assert (await show(client, merchant, sid))["status"] == "ACTIVE"
    assert (await check_ledger(gateway.db)).ok  # every invoice's money went through the ledger


async def test_start_at_in_the_future_delays_the_first_invoice(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    freeze_clock(gateway)
    plan = await make_plan(client, merchant)
    later = gateway.now() + 86400
    sub = await subscribe(client, merchant, plan["id"], start_at=rfc3339(later))
    assert sub["next_billing_at"] == later and sub["pay_url"] is None  # nothing opened before it starts
    assert (await run_billing(gateway)).minted == 0
    advance_clock(gateway, 86400 - 1)
    assert (await run_billing(gateway)).minted == 0
    advance_clock(gateway, 1)
    assert (await run_billing(gateway)).minted == 1


async def test_start_at_takes_a_bounded_window_around_now(env):
    """A day in the past reads as now; more is refused, and so is more than 366 days ahead (issue 29)."""
    client, merchant, devnet = env
    gateway = devnet.gateway
    now = freeze_clock(gateway)
    plan = await make_plan(client, merchant)

    def rfc3339(moment: int) -> str:
        return datetime.fromtimestamp(moment, UTC).isoformat()

    sub = await subscribe(client, merchant, plan["id"], start_at=rfc3339(now - enrolment.START_AT_PAST))
    assert sub["next_billing_at"] == now
    sub = await subscribe(client, merchant, plan["id"], start_at=rfc3339(now + enrolment.START_AT_AHEAD))
    assert sub["next_billing_at"] == now + 366 * 86400
    for moment, problem in ((now - enrolment.START_AT_PAST - 1, "in the past"),
                            (now + enrolment.START_AT_AHEAD + 1, "366 days ahead")):
        status, answer = await api(client, "POST", SUBS, merchant.merchant_key,
                                   json={"plan_id": plan["id"], "start_at": rfc3339(moment)})
        assert status == 400 and problem in answer["error"]["detail"]["start_at"], answer


async def test_two_consecutive_expired_invoices_fail_the_subscription(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    freeze_clock(gateway)
    plan = await make_plan(client, merchant)
    sub = await subscribe(client, merchant, plan["id"])
    sid = sub["subscription_id"]
    await run_billing(gateway)
    [first] = await outbox(gateway, "subscription.invoiced")
    advance_clock(gateway, billing.DEFAULT_LIFETIME_MINUTES * 60 + 1)
    assert await expire_payments(gateway) == 1  # the core's expiry job fires payment_expired
    assert (await show(client, merchant, sid))["status"] == "ACTIVE"
    assert (await run_billing(gateway)).minted == 1  # the same period, invoiced again
    second = (await outbox(gateway, "subscription.invoiced"))[-1]
    assert second["grace_count"] == 1 and second["payment_track_id"] != first["payment_track_id"]
    advance_clock(gateway, billing.DEFAULT_LIFETIME_MINUTES * 60 + 1)
    await expire_payments(gateway)
    failed = await show(client, merchant, sid)
    assert failed["status"] == "FAILED" and failed["next_billing_at"] is None
    [event] = await outbox(gateway, "subscription.failed")
    assert event == {**event, "subscription_id": sid, "plan_id": plan["id"], "last_invoice_id":
                     second["payment_track_id"], "reason": "two_consecutive_invoices_expired"}
    assert (await run_billing(gateway)).minted == 0
    again = await subscribe(client, merchant, plan["id"])  # the customer may re-enrol
    assert again["status"] == "ACTIVE"


async def test_a_paid_retry_resets_the_grace_and_keeps_the_period(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    start, plan, sid = await frozen_subscription(client, merchant, gateway)
    await run_billing(gateway)
    advance_clock(gateway, billing.DEFAULT_LIFETIME_MINUTES * 60 + 1)
    await expire_payments(gateway)
    await run_billing(gateway)
    retry = (await outbox(gateway, "subscription.invoiced"))[-1]
    await pay(client, merchant, devnet, retry["payment_track_id"])
    [paid] = await outbox(gateway, "subscription.paid")
    assert paid["current_period_start"] == start and paid["current_period_end"] == start + MONTH
    gateway.clock = lambda: start + MONTH
    await run_billing(gateway)
    advance_clock(gateway, billing.DEFAULT_LIFETIME_MINUTES * 60 + 1)
    await expire_payments(gateway)  # one expiry after a paid invoice: not yet failed
    assert (await show(client, merchant, sid))["status"] == "ACTIVE"


async def test_a_late_payment_after_expiry_is_credited_but_revives_nothing(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    _, plan, sid = await frozen_subscription(client, merchant, gateway)
    await run_billing(gateway)
    invoiced = (await outbox(gateway, "subscription.invoiced"))[-1]
    advance_clock(gateway, billing.DEFAULT_LIFETIME_MINUTES * 60 + 1)
    await expire_payments(gateway)
    await run_billing(gateway)
    advance_clock(gateway, billing.DEFAULT_LIFETIME_MINUTES * 60 + 1)
    await expire_payments(gateway)
    assert (await show(client, merchant, sid))["status"] == "FAILED"
    await pay(client, merchant, devnet, invoiced["payment_track_id"])  # the first invoice, paid late
    assert await payment_status(client, merchant, invoiced["payment_track_id"]) == "Expired"
    balances = (await api(client, "GET", "/v1/general/account/balance", merchant.general_key))[1]["data"]["balances"]
    assert any(b["coin"] == "BTC" and Decimal(b["amount"]) > 0 for b in balances)  # the money is credited
    await run_billing(gateway)
    assert (await show(client, merchant, sid))["status"] == "FAILED"
    assert await outbox(gateway, "subscription.paid") == []


async def test_pause_and_resume_reset_next_billing_to_now(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    start = freeze_clock(gateway)
    plan = await make_plan(client, merchant)
    sub = await subscribe(client, merchant, plan["id"])
    sid = sub["subscription_id"]
    await run_billing(gateway)
    await pay(client, merchant, devnet, (await outbox(gateway, "subscription.invoiced"))[-1]["payment_track_id"])
    await enrolment.pause(gateway, sid)
    gateway.clock = lambda: start + 3 * MONTH
    assert (await run_billing(gateway)).minted == 0  # paused: nothing is billed
    assert (await show(client, merchant, sid))["status"] == "PAUSED"
    resumed_at = advance_clock(gateway, 1234)
    await enrolment.resume(gateway, sid)
    resumed = await show(client, merchant, sid)
    assert resumed["status"] == "ACTIVE" and resumed["next_billing_at"] == resumed_at
    assert (await run_billing(gateway)).minted == 1
    latest = (await outbox(gateway, "subscription.invoiced"))[-1]
    assert latest["period_start"] == resumed_at


async def test_two_concurrent_ticks_mint_one_invoice(env, monkeypatch):
    client, merchant, devnet = env
    gateway = devnet.gateway
    freeze_clock(gateway)
    plan = await make_plan(client, merchant)
    await due_later(client, merchant, plan["id"], [gateway], count=3)
    readers = hold_concurrent_reads(monkeypatch, billing.store, "due_subscriptions")  # both hold the due rows
    reports = await asyncio.gather(run_billing(gateway), run_billing(gateway))
    assert sum(r.minted for r in reports) == 3 and all(len(rows) == 3 for rows in readers)
    assert len(await payments_of(client, merchant)) == 3
    assert len(await outbox(gateway, "subscription.invoiced")) == 3


async def test_two_processes_on_one_database_mint_once(env, make_client, make_config, monkeypatch):
    """A second app (another process) on the same database ticks at the same moment as the first."""
    client, merchant, devnet = env
    other = await make_client(make_config(scheduler={"enabled": False}))
    gateways = [devnet.gateway, other.app[GATEWAY]]
    now = freeze_clock(gateways[0])
    gateways[1].clock = lambda: now
    plan = await make_plan(client, merchant)
    await due_later(client, merchant, plan["id"], gateways, count=4)
    readers = hold_concurrent_reads(monkeypatch, billing.store, "due_subscriptions")
    reports = await asyncio.gather(*(run_billing(g) for g in gateways))
    assert sum(r.minted for r in reports) == 4 and all(len(rows) == 4 for rows in readers)
    assert len(await payments_of(client, merchant)) == 4
    assert len(await outbox(gateways[0], "subscription.invoiced")) == 4


@pytest.mark.parametrize("crash_point", ["before_create", "after_create"])
async def test_a_crash_mid_tick_never_bills_twice(env, monkeypatch, crash_point):
    client, merchant, devnet = env
    gateway = devnet.gateway
    freeze_clock(gateway)
    [sid] = await due_later(client, merchant, (await make_plan(client, merchant))["id"], [gateway])
    real_create = billing.create_invoice

    async def crash(*args, **kwargs):
        if crash_point == "after_create":
            await real_create(*args, **kwargs)  # the payment is made, then the process dies
        raise KeyboardInterrupt

    monkeypatch.setattr(billing, "create_invoice", crash)
    with pytest.raises(KeyboardInterrupt):
        await run_billing(gateway)
    monkeypatch.undo()
    assert len(await payments_of(client, merchant)) == (1 if crash_point == "after_create" else 0)
    assert await outbox(gateway, "subscription.invoiced") == []
    report = await run_billing(gateway)  # the restarted process finishes the claimed period
    assert report.minted == 1
    assert (await run_billing(gateway)).minted == 0
    [payment] = await payments_of(client, merchant)
    [event] = await outbox(gateway, "subscription.invoiced")
    assert event["payment_track_id"] == payment["track_id"] and event["subscription_id"] == sid


async def test_a_lost_paid_hook_is_settled_by_the_tick(env, monkeypatch):
    client, merchant, devnet = env
    gateway = devnet.gateway
    start, plan, sid = await frozen_subscription(client, merchant, gateway)
    await run_billing(gateway)
    invoiced = (await outbox(gateway, "subscription.invoiced"))[-1]

    async def lost(*args, **kwargs):
        return None  # the process died after the payment committed, before the hook ran

    monkeypatch.setattr(billing, "payment_changed", lost)
    await pay(client, merchant, devnet, invoiced["payment_track_id"])
    monkeypatch.undo()
    assert await outbox(gateway, "subscription.paid") == []
    advance_clock(gateway, billing.DEFAULT_LIFETIME_MINUTES * 60 + 1)  # the tick looks once the invoice's time is up
    report = await run_billing(gateway)
    assert report.paid == 1
    [paid] = await outbox(gateway, "subscription.paid")
    assert paid["current_period_start"] == start and (await show(client, merchant, sid))["next_billing_at"] == \
        start + MONTH


async def test_a_failed_mint_is_recorded_and_retried(env):
    """The enrolment's own mint fails (the plan's coin is no longer accepted): the subscription is stored
    with the reason, and the tick opens the same period once the coin is back."""
    client, merchant, devnet = env
    gateway = devnet.gateway
    freeze_clock(gateway)
    plan = await make_plan(client, merchant)
    await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt, json={"accepted_coins": ["LTC"]})
    sub = await subscribe(client, merchant, plan["id"])
    sid = sub["subscription_id"]
    assert sub["status"] == "ACTIVE" and sub["pay_url"] is None and sub["last_error"] == "currency_not_accepted"
    assert (await run_billing(gateway)).minted == 0
    assert (await show(client, merchant, sid))["last_error"] == "currency_not_accepted"
    assert await payments_of(client, merchant) == []
    await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt,
              json={"accepted_coins": ["BTC", "LTC"]})
    assert (await run_billing(gateway)).minted == 1
    after = await show(client, merchant, sid)
    assert after["last_error"] is None and after["pay_url"] is not None


async def test_an_enrolment_opens_its_first_invoice_at_once_and_only_once(env, monkeypatch):
    """Issue 32 item 5, break caught: an API enrolment was ACTIVE with no invoice until the next 5-minute tick."""
    client, merchant, devnet = env
    gateway = devnet.gateway
    start = freeze_clock(gateway)
    plan = await make_plan(client, merchant)
    sub = await subscribe(client, merchant, plan["id"], customer_ref="c1")
    [payment] = await payments_of(client, merchant)
    assert sub["status"] == "ACTIVE" and sub["pay_url"].endswith(f"/pay/{payment['track_id']}")
    [invoiced] = await outbox(gateway, "subscription.invoiced")
    assert invoiced["pay_url"] == sub["pay_url"] and invoiced["subscription_id"] == sub["subscription_id"]
    assert (await run_billing(gateway)).minted == 0  # the tick sees the period claimed: no second invoice
    status, answer = await api(client, "POST", "/dashboard/subscriptions", merchant.jwt, json={"plan_id": plan["id"]})
    assert status == 200 and answer["data"]["pay_url"] is not None  # the dashboard twin too
    await pay(client, merchant, devnet, payment["track_id"])
    assert (await show(client, merchant, sub["subscription_id"]))["current_period_start"] == start
    # An enrolment cut short after its claim (the process died before the payment was made):
    # the tick finishes that period under the claimed track id, once.
    monkeypatch.setattr(billing, "mint_guarded", lambda *args: asyncio.sleep(0, 0))
    cut = await subscribe(client, merchant, plan["id"])
    monkeypatch.undo()
    assert cut["pay_url"] is None and len(await payments_of(client, merchant)) == 2
    assert (await run_billing(gateway)).minted == 1 and (await run_billing(gateway)).minted == 0
    assert (await show(client, merchant, cut["subscription_id"]))["pay_url"] is not None
    assert len(await payments_of(client, merchant)) == 3 and len(await outbox(gateway, "subscription.invoiced")) == 3


async def test_a_retried_enrolment_with_its_idempotency_key_enrols_once(env):
    """Review of issue 36: a merchant's retry (a lost answer, a timeout) enrolled and billed the customer twice."""
    client, merchant, _ = env
    gateway = client.app[GATEWAY]
    plan = await make_plan(client, merchant)
    body = {"plan_id": plan["id"], "customer_ref": "c1", "idempotency_key": "enrol-c1"}
    answers = await asyncio.gather(*(api(client, "POST", SUBS, merchant.merchant_key, json=body) for _ in range(4)))
    assert {status for status, _ in answers} == {200}, answers
    assert len({answer["data"]["subscription_id"] for _, answer in answers}) == 1
    again = await subscribe(client, merchant, plan["id"], customer_ref="c1", idempotency_key="enrol-c1")
    assert again["subscription_id"] == answers[0][1]["data"]["subscription_id"]
    assert len(await payments_of(client, merchant)) == 1 and len(await outbox(gateway, "subscription.invoiced")) == 1
    status, answer = await api(client, "POST", SUBS, merchant.merchant_key, json={**body, "customer_ref": "c2"})
    assert (status, answer["error"]["code"]) == (409, "idempotency_key_reused"), answer
    # Keys are the merchant's own: another merchant's same key enrols its own customer.
    other = await signup(client, "other@example.com")
    other_plan = await make_plan(client, other)
    theirs = await subscribe(client, other, other_plan["id"], customer_ref="c1", idempotency_key="enrol-c1")
    assert theirs["subscription_id"] != again["subscription_id"]
    # Without a key every request is a new enrolment, as SPEC 4.5 has it.
    plain = [await subscribe(client, merchant, plan["id"], customer_ref="c3") for _ in range(2)]
    assert plain[0]["subscription_id"] != plain[1]["subscription_id"]
    status, answer = await api(client, "POST", SUBS, merchant.merchant_key, json={**body, "idempotency_key": "k" * 129})
    assert status == 400 and "idempotency_key" in json.dumps(answer), answer


async def test_the_invoice_service_is_idempotent_per_track_id(env):
    client, merchant, devnet = env
    gateway = devnet.gateway
    track_id = services.new_track_id()
    first = await services.create_invoice(gateway, merchant.merchant_id, track_id=track_id, amount=Decimal("5"),
                                          currency="USD", coins=["BTC"])
    again = await services.create_invoice(gateway, merchant.merchant_id, track_id=track_id, amount=Decimal("5"),
                                          currency="USD", coins=["BTC"])
    assert not first.replay and again.replay and again.track_id == first.track_id == track_id
    assert again.pay_amount == first.pay_amount and again.payment_url == first.payment_url
    assert len(await payments_of(client, merchant)) == 1
    other = await signup(client, "other@example.com")
    with pytest.raises(ValueError):
        await services.create_invoice(gateway, other.merchant_id, track_id=track_id, amount=Decimal("5"),
                                      currency="USD")


def test_a_scope_can_be_given_to_legacy_keys_by_kind():
    registry = ScopeRegistry()
    registry.add("thing:read", "Read things.", legacy_keys=("merchant",))
    assert registry.legacy_grants("merchant") == {"thing:read"}
    registry.add("thing:write", "Write things.")
    assert registry.legacy_grants("merchant") == {"thing:read"} and registry.legacy_grants("payout") == frozenset()
    with pytest.raises(StartupError, match="admin"):
        registry.add("thing:other", "Other.", legacy_keys=("admin",))


async def test_the_tick_is_a_five_minute_job_and_the_lifetime_is_checked(env, make_config):
    from orbchain.core.infra.config import ConfigError
    from orbchain.core.startup import build_gateway
    _, _, devnet = env
    job = devnet.gateway.jobs["subscriptions.billing"]
    assert job.seconds == 300 and job.func is billing.billing_job  # SPEC 8
    for bad in (0, 43201, "1440", True):
        with pytest.raises(ConfigError, match="invoice_lifetime_minutes"):
            build_gateway(make_config(plugin={"subscriptions": {"invoice_lifetime_minutes": bad}}))
    built = build_gateway(make_config(plugin={"subscriptions": {"invoice_lifetime_minutes": 30}}))
    assert billing.invoice_lifetime(built) == 30
