"""SPEC 2.13, 2.16, 4.11-4.12 conformance: every record a plugin returns carries every field SPEC names.

The per-plugin tests check values; these pin the field sets (extra fields
are allowed, a missing one fails by name). Both databases.
"""

from __future__ import annotations

from decimal import Decimal

from orbchain.plugins.swaps.engine import run_swaps

from .support import api
from .test_payouts import BTC_DEST
from .test_swaps import BODY, env  # noqa: F401 - env is a fixture

LINK = {"id", "slug", "url", "coin", "amount_fiat", "fiat_currency", "enabled", "uses"}
SCHEDULE = {"id", "coin", "destination", "min_amount", "interval_sec", "enabled", "last_run_at", "last_error",
            "next_run_at"}
RULE = {"coin", "threshold_native", "destination"}
SWAP = {"swap_id", "from_coin", "from_amount", "to_coin", "to_amount_quoted", "status", "actual_to_amount",
        "payin_hash", "payout_hash", "refund_hash", "failure_reason"}
QUOTE = {"venue", "from_amount", "to_amount", "rate", "min_from_amount", "valid_until", "floating_rate"}
PLAN = {"label", "amount_usd", "interval_sec", "accepted_coins", "enabled"}
SUBSCRIPTION = {"subscription_id", "status", "plan_id", "plan_label", "amount_usd", "interval_sec", "customer_ref",
                "next_billing_at", "manage_url"}
BRAND = {"name", "slug", "logo_url", "theme_mode", "brand_color", "webhook_url"}
PORTFOLIO, PORTFOLIO_LINE = {"account_id", "total_usd", "per_coin"}, {"coin", "amount", "spot_usd",
                                                                         "change_24h_pct", "value_usd"}
REFERRAL = {"referral_link", "referral_rate_bps", "eligibility_months", "referees_count", "total_earnings_usd",
            "referees"}


def has_fields(record, expected):
    missing = expected - set(record)
    assert not missing, f"missing {sorted(missing)} in {record}"


async def ok(client, method, path, headers, body=None):
    status, answer = await api(client, method, path, headers, json=body)
    assert status == 200, (path, answer)
    return answer["data"]


async def test_dashboard_records_carry_their_spec_fields(env):  # noqa: F811 - the imported fixture
    client, merchant, gateway, _ = env
    link = await ok(client, "POST", "/dashboard/payment-links", merchant.jwt, {"coin": "BTC", "amount": "0.001"})
    has_fields(link, LINK)
    assert isinstance(link["uses"], int) and link["enabled"] is True
    [listed] = (await ok(client, "GET", "/dashboard/payment-links", merchant.jwt))["links"]
    has_fields(listed, LINK)
    embed = await ok(client, "GET", f"/dashboard/payment-links/{link['id']}/embed?label=Give", merchant.jwt)
    has_fields(embed, {"slug", "url", "snippet"})
    assert "orbchain-donate" in embed["snippet"] and 'data-label="Give"' in embed["snippet"]

    schedule = {"coin": "BTC", "destination": BTC_DEST, "min_amount": "0.001", "interval_sec": 3600}
    has_fields(await ok(client, "POST", "/dashboard/payout-schedules", merchant.jwt, schedule), SCHEDULE)
    rules = {"rules": [{"coin": "BTC", "threshold_native": "0.005", "destination": BTC_DEST}]}
    [rule] = (await ok(client, "PUT", "/dashboard/settings/auto-withdraw", merchant.jwt, rules))["rules"]
    has_fields(rule, RULE)
    assert isinstance(rule["threshold_native"], str)

    brand = await ok(client, "POST", "/dashboard/brands", merchant.jwt, {"name": "Acme"})
    has_fields(brand, BRAND)
    assert "webhook_secret" not in brand  # a secret is never echoed (decisions: brands)

    portfolio = (await ok(client, "GET", "/dashboard/portfolio", merchant.jwt))["portfolio"]
    has_fields(portfolio, PORTFOLIO)
    for line in portfolio["per_coin"]:
        has_fields(line, PORTFOLIO_LINE)
    has_fields(await ok(client, "GET", "/dashboard/referrals", merchant.jwt), REFERRAL)


async def test_plan_and_subscription_carry_their_spec_fields(env):  # noqa: F811 - the imported fixture
    client, merchant, _, _ = env
    plan = await ok(client, "POST", "/dashboard/plans", merchant.jwt,
                    {"label": "Pro", "amount_usd": "5.00", "interval_sec": 3600, "accepted_coins": ["BTC"]})
    has_fields(plan, PLAN)
    status, answer = await api(client, "POST", "/v1/subscription", merchant.merchant_key, json={"plan_id": plan["id"]})
    assert status == 200, answer
    has_fields(answer["data"], SUBSCRIPTION)
    assert isinstance(answer["data"]["next_billing_at"], int) and "/subscribe/manage/" in answer["data"]["manage_url"]


async def test_quote_carries_its_spec_fields(env):  # noqa: F811 - the imported fixture
    client, merchant, _, _ = env
    quote = await ok(client, "POST", "/dashboard/swap/quote", merchant.jwt, BODY)
    has_fields(quote, QUOTE)
    assert isinstance(quote["floating_rate"], bool)


async def test_swap_record_carries_its_spec_fields_through_to_confirmed(env):  # noqa: F811 - the imported fixture
    client, merchant, gateway, _ = env
    started = await ok(client, "POST", "/dashboard/swap", merchant.jwt, BODY)
    has_fields(started, {"swap_id", "from_coin", "from_amount", "to_coin", "to_amount_quoted", "status"})
    await run_swaps(gateway)
    await run_swaps(gateway)
    shown = await ok(client, "GET", f"/dashboard/swap/{started['swap_id']}", merchant.jwt)
    has_fields(shown, SWAP)
    [listed] = (await ok(client, "GET", "/dashboard/swaps", merchant.jwt))["swaps"]
    has_fields(listed, SWAP)


async def test_a_schedule_patch_refuses_the_fields_fixed_at_creation(env):  # noqa: F811 - the imported fixture
    """SPEC 4.11: PATCH takes any of enabled, min_amount, interval_sec; a new destination is not silently dropped."""
    client, merchant, _, _ = env
    body = {"coin": "BTC", "destination": BTC_DEST, "min_amount": "0.001", "interval_sec": 3600}
    made = await ok(client, "POST", "/dashboard/payout-schedules", merchant.jwt, body)
    other = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
    for change, field in (({"enabled": False, "destination": other}, "destination"), ({"coin": "LTC"}, "coin")):
        status, answer = await api(client, "PATCH", f"/dashboard/payout-schedules/{made['id']}", merchant.jwt,
                                   json=change)
        assert status == 400 and field in answer["error"]["detail"], answer
    [kept] = (await ok(client, "GET", "/dashboard/payout-schedules", merchant.jwt))["schedules"]
    assert kept == made


async def test_not_shown_list_shapes_are_the_recorded_ones(env):  # noqa: F811 - the imported fixture
    """SPEC 4.14's "response bodies: not shown" lists: the shapes docs/decisions.md records (SPEC audit)."""
    client, merchant, _, _ = env
    paged = {"total", "limit", "offset"}
    shapes = {"/dashboard/transfers": {"transfers"} | paged, "/dashboard/swaps": {"swaps"} | paged,
              "/dashboard/payout-schedules": {"schedules"}, "/dashboard/settings/auto-withdraw": {"rules"},
              "/dashboard/brands": {"brands"}, "/dashboard/plans": {"plans"},
              "/dashboard/subscriptions": {"subscriptions"} | paged,
              "/dashboard/subscriptions/summary": {"active", "paused", "failed", "cancelled", "pending", "expired",
                                                   "mrr_usd"}}
    for path, keys in shapes.items():
        assert set(await ok(client, "GET", path, merchant.jwt)) == keys, path


# -- strict decoding of SPEC's types (issue 42 item 9: the audit's two findings that broke such a client) ----------

SPEC_SUBSCRIPTION_STATUSES = {"ACTIVE", "PAUSED", "CANCELLED", "FAILED"}  # SPEC 3.4


async def test_every_currency_row_has_spec_26s_types(env):  # noqa: F811 - the imported fixture
    """SPEC 2.6: confirmations (integer), min_payout (string). XMR and BTC_LN answered null for both."""
    client, _, _, _ = env
    rows = (await ok(client, "GET", "/v1/common/currencies", {}))
    for row in rows:
        assert type(row["symbol"]) is str and type(row["name"]) is str and type(row["network"]) is str, row
        assert type(row["decimals"]) is int and type(row["confirmations"]) is int, row
        assert type(row["min_payout"]) is str and Decimal(row["min_payout"]) >= 0, row


async def test_the_subscriptions_api_shows_only_spec_34s_statuses(env):  # noqa: F811 - the imported fixture
    """SPEC 3.4 and 4.5: a customer's unpaid page enrolment (PENDING, later EXPIRED) is not a subscription: no list,
    no look-up, no filter, no webhook names it; paid, it joins the list ACTIVE."""
    client, merchant, gateway, _ = env
    plan = await ok(client, "POST", "/dashboard/plans", merchant.jwt,
                    {"label": "Pro", "amount_usd": "5.00", "interval_sec": 3600, "accepted_coins": ["BTC"]})
    await ok(client, "POST", "/dashboard/subscriptions", merchant.jwt, {"plan_id": plan["id"]})
    for ref in ("a", "b"):
        response = await client.post(f"/subscribe/{plan['id']}", data={"customer_ref": ref}, allow_redirects=False)
        assert response.status == 303
    unpaid = [r["id"] for r in await gateway.db.fetch_all("SELECT id FROM subscriptions WHERE status = 'PENDING'")]
    assert len(unpaid) == 2
    listed = (await ok(client, "GET", "/v1/subscription", merchant.merchant_key))["subscriptions"]
    assert len(listed) == 1 and {s["status"] for s in listed} <= SPEC_SUBSCRIPTION_STATUSES
    for subscription_id in unpaid:
        status, _ = await api(client, "GET", f"/v1/subscription/{subscription_id}", merchant.merchant_key)
        assert status == 404
    for bad in ("PENDING", "EXPIRED"):
        status, answer = await api(client, "GET", "/v1/subscription", merchant.merchant_key, params={"status": bad})
        assert status == 400 and "status" in answer["error"]["detail"], answer
    bodies = [r["body"] for r in await gateway.db.fetch_all(
        "SELECT body FROM webhook_events WHERE event_type LIKE 'subscription.%'")]
    assert not any(subscription_id in body for body in bodies for subscription_id in unpaid)
