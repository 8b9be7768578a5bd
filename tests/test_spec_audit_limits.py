"""SPEC 8 conformance for the plugin routes: every limit is accepted at its edge and refused one past it.

The per-plugin tests refuse the value one past each limit; these add the
accepted edge (a limit enforced one too early fails here), the list sizes
of the subscription and swap lists, and which rate bucket a route counts
in (SPEC 8: swap quote a read; swap commit and transfers writes; the
public subscription pages 60 a minute per IP). Both databases.
"""

from __future__ import annotations

import pytest

from orbchain.core.infra.ratelimit import MemoryRateLimiter
from orbchain.plugins.autowithdraw.check import run_autowithdraw
from orbchain.plugins.schedules.tick import run_schedules
from orbchain.plugins.subscriptions.billing import billing_job
from orbchain.testing.fixtures import open_shop

from .support import api
from .test_payouts import BTC_DEST

FROZEN = 6_000_030.0  # one frozen rate window: a boundary mid-test would reset the counts


@pytest.fixture
async def shop(make_config, make_client):
    return await open_shop(make_config, make_client)


async def accepted(shop, method, path, body, headers=None):
    status, answer = await api(shop.client, method, path, headers or shop.merchant.jwt, json=body)
    assert status == 200, (path, body, answer)
    return answer["data"]


async def refused(shop, method, path, body, field, headers=None):
    status, answer = await api(shop.client, method, path, headers or shop.merchant.jwt, json=body)
    assert status == 400 and answer["error"]["type"] == "validation", (path, body, answer)
    assert field in answer["error"]["detail"], answer


# -- strings and intervals at their edges -------------------------------------------------------------


async def test_brand_fields_at_their_edges(shop):
    path = "/dashboard/brands"
    brand = await accepted(shop, "POST", path, {"name": "n" * 80, "slug": "s" * 40, "webhook_secret": "k" * 16})
    assert brand["slug"] == "s" * 40
    await accepted(shop, "PUT", f"{path}/{brand['id']}", {"webhookSecret": "k" * 128, "themeMode": "DARK",
                                                          "brandColor": "#A1b2C3", "logoUrl": "https://cdn.example.com/l.png"})
    shown = await accepted(shop, "GET", f"{path}/{brand['id']}", None)
    assert (shown["theme_mode"], shown["logo_url"]) == ("DARK", "https://cdn.example.com/l.png")  # camelCase honored
    await refused(shop, "POST", path, {"name": "Other", "slug": "default"}, "slug")  # "default is reserved"


async def test_payment_link_fields_at_their_edges(shop):
    path = "/dashboard/payment-links"
    for lifetime in (1, 43200):
        link = await accepted(shop, "POST", path, {"coin": "BTC", "amount": "0.001", "lifetime": lifetime,
                                                   "description": "d" * 500})
        assert len(link["slug"]) == 12
    await refused(shop, "POST", path, {"coin": "BTC", "lifetime": 0}, "lifetime")
    await refused(shop, "POST", path, {"coin": "BTC", "lifetime": 43201}, "lifetime")
    await refused(shop, "POST", path, {"coin": "BTC", "amount_fiat": "5"}, "fiat_currency")


async def test_schedule_and_plan_intervals_at_their_edges(shop):
    for interval in (3600, 2592000):
        await accepted(shop, "POST", "/dashboard/payout-schedules",
                       {"coin": "BTC", "destination": BTC_DEST, "min_amount": "0.001", "interval_sec": interval})
    for interval in (3600, 31536000):
        await accepted(shop, "POST", "/dashboard/plans",
                       {"label": "p" * 80, "amount_usd": "5", "interval_sec": interval, "accepted_coins": ["BTC"]})


async def test_subscription_customer_ref_and_list_limits(shop):
    plan = await accepted(shop, "POST", "/dashboard/plans",
                          {"label": "Pro", "amount_usd": "5", "interval_sec": 3600, "accepted_coins": ["BTC"]})
    key = shop.merchant.merchant_key
    sub = await accepted(shop, "POST", "/v1/subscription", {"plan_id": plan["id"], "customer_ref": "r" * 128}, key)
    assert sub["customer_ref"] == "r" * 128
    await refused(shop, "POST", "/v1/subscription", {"plan_id": plan["id"], "customer_ref": "r" * 129},
                  "customer_ref", key)
    status, answer = await api(shop.client, "GET", "/v1/subscription?limit=200", key)
    assert status == 200 and answer["data"]["limit"] == 200 and answer["data"]["total"] == 1, answer
    for query in ("limit=201", "limit=0", "offset=-1", "status=GONE"):
        status, answer = await api(shop.client, "GET", f"/v1/subscription?{query}", key)
        assert status == 400 and answer["error"]["type"] == "validation", (query, answer)


async def test_api_key_label_and_rate_override_at_their_edges(shop):
    for label, rpm in (("l" * 80, 1), ("k", 10000)):
        key = await accepted(shop, "POST", "/dashboard/api-keys",
                             {"label": label, "scopes": ["payment:read"], "rate_limit_rpm": rpm})
        assert key["label"] == label


async def test_swap_list_defaults_to_50_and_allows_200(shop):
    status, answer = await api(shop.client, "GET", "/dashboard/swaps", shop.merchant.jwt)
    assert status == 200 and answer["data"]["limit"] == 50 and answer["data"]["offset"] == 0, answer
    status, answer = await api(shop.client, "GET", "/dashboard/swaps?limit=200", shop.merchant.jwt)
    assert status == 200 and answer["data"]["limit"] == 200, answer


# -- which bucket a route counts in ------------------------------------------------------------------


async def test_swap_quote_counts_as_a_read_commit_and_transfer_as_writes(make_config, make_client):
    shop = await open_shop(make_config, make_client, rate_limits={"write_per_minute": 2, "read_per_minute": 300})
    shop.gateway.services["rate_limiter"] = MemoryRateLimiter(clock=lambda: FROZEN)
    body = {"from_coin": "BTC", "to_coin": "ETH", "amount": "0.005"}
    for _ in range(4):  # past the write limit: a quote is a read
        status, _ = await api(shop.client, "POST", "/dashboard/swap/quote", shop.merchant.jwt, json=body)
        assert status != 429
    statuses = [(await api(shop.client, "POST", "/dashboard/swap", shop.merchant.jwt, json=body))[0]
                for _ in range(3)]
    assert 429 not in statuses[:2] and statuses[2] == 429, statuses
    transfer = {"to_account_id": "nobody", "coin": "BTC", "amount": "0.001"}
    statuses = [(await api(shop.client, "POST", "/v1/transfer", shop.merchant.merchant_key, json=transfer))[0]
                for _ in range(3)]
    assert 429 not in statuses[:2] and statuses[2] == 429, statuses


async def test_subscription_pages_are_limited_to_60_per_minute_per_ip(shop):
    plan = await accepted(shop, "POST", "/dashboard/plans",
                          {"label": "Pro", "amount_usd": "5", "interval_sec": 3600, "accepted_coins": ["BTC"]})
    shop.gateway.services["rate_limiter"] = MemoryRateLimiter(clock=lambda: FROZEN)
    statuses = [(await shop.client.get(f"/subscribe/{plan['id']}")).status for _ in range(61)]
    assert statuses == [200] * 60 + [429]


# -- cadences ------------------------------------------------------------------------------------------


async def test_plugin_jobs_run_at_the_spec_cadence(gateway):
    """SPEC 8: schedules checked every minute, billing tick and auto-withdraw check every 5 minutes."""
    seconds = {job.func: job.seconds for job in gateway.jobs}
    assert (seconds[run_schedules], seconds[billing_job], seconds[run_autowithdraw]) == (60, 300, 300)


async def test_subscription_list_is_newest_first(shop):
    """SPEC 4.5: GET /v1/subscription, newest first (a second apart, so no tie decides the order)."""
    plan = await accepted(shop, "POST", "/dashboard/plans",
                          {"label": "Pro", "amount_usd": "5", "interval_sec": 3600, "accepted_coins": ["BTC"]})
    gateway, made = shop.gateway, []
    start = gateway.now()
    for n in range(4):
        gateway.clock = lambda t=start + n: t
        sub = await accepted(shop, "POST", "/v1/subscription", {"plan_id": plan["id"], "customer_ref": f"c{n}"},
                             shop.merchant.merchant_key)
        made.append(sub["subscription_id"])
    status, answer = await api(shop.client, "GET", "/v1/subscription", shop.merchant.merchant_key)
    assert status == 200 and [s["subscription_id"] for s in answer["data"]["subscriptions"]] == made[::-1], answer


async def test_swap_idempotency_key_is_8_to_128_chars(shop):
    """SPEC 8: idempotency_key 8-128 chars, on the swap commit too (transfers: test_transfers)."""
    body = {"from_coin": "BTC", "to_coin": "ETH", "amount": "0.005"}
    for key in ("k" * 7, "k" * 129):
        await refused(shop, "POST", "/dashboard/swap", {**body, "idempotency_key": key}, "idempotency_key")
    status, answer = await api(shop.client, "POST", "/dashboard/swap", shop.merchant.jwt,
                               json={**body, "idempotency_key": "k" * 128})
    assert (status, answer["error"]["code"]) == (400, "insufficient_balance"), answer  # the key itself passed
