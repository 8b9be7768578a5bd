"""Whether an account has an approval policy is cached per process, and a change is in force everywhere (issue 47).

Every transfer and payout asks ``decide_hold_quote`` before its transaction;
almost no account has a policy, so the answer comes from the process's cache
(plugins/approvals/policy.py ``load_cached``). The decision inside the
transaction reads the row again, so a stale "no policy" could only hold a
transfer it need not (no price: the policy fails closed), never let one
through; these tests make sure it is not stale either: a policy saved in
process A is seen by B's next quote even when B hears notifications late
(``cache_changed_everywhere``), and one written in psql reaches B through
the table's trigger (approvals m0003).
"""

from __future__ import annotations

from decimal import Decimal

from orbchain.core.accounts.auth_cache import auth_cache
from orbchain.plugins.approvals import holds
from orbchain.plugins.approvals.policy import CACHE_TABLE

from .approvals_support import set_policy
from .cross_process import CROSS_PROCESS, two_processes
from .support import signup

pytestmark = CROSS_PROCESS

PRICE = Decimal(60_000)


class FixedPrice:
    async def price(self, symbol: str) -> Decimal:
        return PRICE


def policy_cached(gateway, merchant_id: str) -> bool:
    return auth_cache(gateway).get("plugin:" + CACHE_TABLE, merchant_id) is not None


async def no_policy_cached_in_b(pair):
    """A merchant (made in A) whose "no policy" answer B has cached."""
    holder = await signup(pair.a, "policy-holder@example.com")
    _, gw_b = pair.gateways
    gw_b.services["prices"] = FixedPrice()
    assert await holds.quote(gw_b, holder.merchant_id, "BTC") is None
    assert policy_cached(gw_b, holder.merchant_id)
    return holder.merchant_id


async def test_a_policy_saved_in_one_process_is_quoted_at_once_in_the_other(make_client, config):
    pair = await two_processes(make_client, config, b_hears_late=0.3)
    merchant_id = await no_policy_cached_in_b(pair)
    gw_a, gw_b = pair.gateways
    await set_policy(gw_a, merchant_id, threshold_BTC="100000")
    assert not policy_cached(gw_b, merchant_id)
    assert await holds.quote(gw_b, merchant_id, "BTC") == PRICE


async def test_a_policy_written_in_psql_reaches_the_other_process_through_the_trigger(make_client, config):
    pair = await two_processes(make_client, config)
    merchant_id = await no_policy_cached_in_b(pair)

    async def insert(db):
        await db.execute("INSERT INTO approval_policies (merchant_id, thresholds, expiry_hours, updated_at)"
                         " VALUES (:m, '{}', 24, 0)", {"m": merchant_id})

    await pair.barrier(insert)  # committed, and B has heard everything up to it
    assert not policy_cached(pair.gateways[1], merchant_id)
    assert await holds.quote(pair.gateways[1], merchant_id, "BTC") == PRICE
