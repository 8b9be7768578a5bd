"""SPEC 6.3-6.4 conformance of the subscription events: each kind is emitted with every field SPEC lists.

test_subscriptions.py checks values along the billing paths; this pins the
field sets, so a field dropped from a body fails here by name.
"""

from __future__ import annotations

from orbchain.core.payments.status import expire_payments
from orbchain.plugins.subscriptions import billing
from orbchain.plugins.subscriptions.billing import run_billing

from .support import advance_clock, freeze_clock
from .test_subscriptions import env, make_plan, outbox, pay, subscribe  # noqa: F401 - env is a fixture

ENVELOPE = {"event_id", "event_type", "event_timestamp"}
INVOICED = {"event_type", "type", "subscription_id", "plan_id", "customer_email", "payment_track_id", "amount_usd",
            "grace_count", "pay_url"}
PAID = {"event_type", "type", "subscription_id", "plan_id", "plan_label", "amount_usd", "interval_sec", "customer_ref",
        "customer_email", "invoice_track_id", "paid_amount", "paid_coin", "current_period_start",
        "current_period_end"}
FAILED = {"event_type", "subscription_id", "plan_id", "reason", "last_invoice_id"}


def assert_fields(body, expected, event_type):
    missing = (expected | ENVELOPE) - set(body)
    assert not missing, f"{event_type} lacks {sorted(missing)}"
    assert body["event_type"] == event_type and len(body["event_id"]) == 26
    assert body.get("type", "subscription") == "subscription"


async def test_invoiced_and_paid_bodies_carry_every_spec_field(env):  # noqa: F811 - the imported fixture
    client, merchant, devnet = env
    gateway = devnet.gateway
    start = freeze_clock(gateway)
    plan = await make_plan(client, merchant)
    sub = await subscribe(client, merchant, plan["id"], customer_ref="c-1", customer_email="c@example.com")
    await run_billing(gateway)
    [invoiced] = await outbox(gateway, "subscription.invoiced")
    assert_fields(invoiced, INVOICED, "subscription.invoiced")
    payment = await pay(client, merchant, devnet, invoiced["payment_track_id"])
    [paid] = await outbox(gateway, "subscription.paid")
    assert_fields(paid, PAID, "subscription.paid")
    assert (paid["subscription_id"], paid["customer_ref"], paid["paid_coin"]) == (sub["subscription_id"], "c-1", "BTC")
    assert paid["current_period_end"] == start + paid["interval_sec"]  # "start plus interval_sec"
    # "The linked payment.paid also fires; deduplicate on event_id."
    linked = [b for b in await outbox(gateway, "payment.paid") if b["track_id"] == payment["track_id"]]
    assert len(linked) == 1 and linked[0]["event_id"] != paid["event_id"]


async def test_failed_body_carries_every_spec_field(env):  # noqa: F811 - the imported fixture
    client, merchant, devnet = env
    gateway = devnet.gateway
    freeze_clock(gateway)
    plan = await make_plan(client, merchant)
    await subscribe(client, merchant, plan["id"])
    for _ in range(2):
        await run_billing(gateway)
        advance_clock(gateway, billing.DEFAULT_LIFETIME_MINUTES * 60 + 1)
        await expire_payments(gateway)
    [failed] = await outbox(gateway, "subscription.failed")
    assert_fields(failed, FAILED, "subscription.failed")
    last = (await outbox(gateway, "subscription.invoiced"))[-1]
    assert failed["last_invoice_id"] == last["payment_track_id"]
