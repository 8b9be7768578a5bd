"""What a team member may do is cached per process, and every change to it is in force everywhere at once (issue 47).

Two app instances on one PostgreSQL database stand for two ``orbchain serve``
processes (tests/cross_process.py). A member's request in B caches their
answer (``decide_member``: role, permissions); then A removes them, keeps
their keys, turns the team's 2FA rule on, or an operator demotes them in
psql, and B's next request obeys. B hears its notifications 0.3 s late where
the change goes through the plugin, so only the wait before A answers
(``cache_changed_everywhere``) can make B right; the psql change is covered by
the tables' triggers (teams m0004). Inside a transaction nothing is served
from the cache (a key written under the account lock reads the member fresh:
tests/test_key_powers.py's removal race).
"""

from __future__ import annotations

from orbchain.core.accounts.auth_cache import auth_cache
from orbchain.plugins.teams.members import CACHE_TABLE
from orbchain.web.keys import GATEWAY

from .approvals_support import add_member
from .cross_process import CROSS_PROCESS, two_processes
from .support import api, signup

pytestmark = CROSS_PROCESS

LATE = 0.3  # B hears notifications this late, as a process on a busy machine may
READ = "/dashboard/payouts"
WRITE_ROUTE = "/dashboard/api-keys"


def member_cached(client, merchant_id: str, member_id: str) -> bool:
    return auth_cache(client.app[GATEWAY]).get("plugin:" + CACHE_TABLE, (merchant_id, member_id)) is not None


async def member_in_b(a, b, email: str, role: str = "admin"):
    """The holder (made in A), a member's JSON headers, the member's id; the member's answer cached in B."""
    holder = await signup(a, f"holder-{email}")
    gateway = a.app[GATEWAY]
    headers = await add_member(a, gateway, holder.merchant_id, email, role)
    member_id = await gateway.db.fetch_val("SELECT id FROM team_members WHERE email = :e", {"e": email})
    for _ in range(2):
        assert (await api(b, "GET", READ, headers))[0] == 200
    assert member_cached(b, holder.merchant_id, member_id)
    return holder, headers, member_id


async def test_a_removed_member_is_refused_at_once_in_the_other_process(make_client, config):
    pair = await two_processes(make_client, config, b_hears_late=LATE)
    holder, headers, member_id = await member_in_b(pair.a, pair.b, "gone@example.com")
    status, body = await api(pair.a, "POST", f"/dashboard/team/members/{member_id}/remove", holder.jwt,
                             json={"api_keys": "keep"})  # no key revoked: only the member cache is told
    assert status == 200, body
    status, body = await api(pair.b, "GET", READ, headers)
    assert status == 401 and body["error"]["code"] == "member_removed", body


async def test_the_team_2fa_rule_limits_a_member_at_once_in_the_other_process(make_client, config):
    pair = await two_processes(make_client, config, b_hears_late=LATE)
    holder, headers, _ = await member_in_b(pair.a, pair.b, "no2fa@example.com")
    status, _ = await api(pair.b, "POST", WRITE_ROUTE, headers, json={"label": "k", "scopes": ["payment:read"]})
    assert status == 200
    from orbchain.plugins.teams import policy
    await policy.set_require_2fa(pair.a.app[GATEWAY], holder.merchant_id, True)
    status, body = await api(pair.b, "POST", WRITE_ROUTE, headers, json={"label": "k2", "scopes": ["payment:read"]})
    assert status == 403, body
    assert (await api(pair.b, "GET", READ, headers))[0] == 200  # reads still allowed


async def test_a_demotion_in_psql_reaches_the_other_process_through_the_trigger(make_client, config):
    pair = await two_processes(make_client, config)
    holder, headers, member_id = await member_in_b(pair.a, pair.b, "psql@example.com")

    async def demote(db):
        await db.execute("UPDATE team_members SET role = 'viewer' WHERE id = :id", {"id": member_id})

    await pair.barrier(demote)  # committed, and B has heard everything up to it
    assert not member_cached(pair.b, holder.merchant_id, member_id)
    status, body = await api(pair.b, "POST", WRITE_ROUTE, headers, json={"label": "k", "scopes": ["payment:read"]})
    assert status == 403, body
