"""Who may mint or rotate an API key (issue 42 item 3), on SQLite and PostgreSQL, over JSON and the dashboard's forms.

A person may create or rotate only a key whose every scope they hold; the holder's payout key is the holder's
alone; every key records who issued it (created or last rotated it); removing a member revokes the keys they
issued unless the remover keeps them, and either is in the activity log. The table walks every role over every
key-minting route, through both doors.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass

import pytest

from orbchain.core.accounts.api_keys import ScopedKeyRequest, create_scoped_key, rotate_scoped_key
from orbchain.core.accounts.key_powers import KeyIssuer
from orbchain.core.accounts.merchants import rotate_legacy_key
from orbchain.core.types.errors import Forbidden, Unauthorized
from orbchain.core.infra.migrate import migrate
from orbchain.core.gateway import collect_migrations
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.infra.db import Database
from orbchain.plugins.teams import roles

from .approvals_support import PASSWORD, add_member, holder_account
from .dashboard_support import Visitor
from .support import api

HOLDER_PASSWORD = "s3cret-pass"  # orbchain.testing's sign-up password
CUSTOM = "integrator"
CUSTOM_SCOPES = ["key:manage", "payment:create", "payment:read", "balance:read"]
ROLES = ("holder", "owner", "admin", "finance", "developer", "viewer", CUSTOM)


@dataclass(frozen=True)
class Case:
    """One key-minting request: a scoped key created with ``scopes``, a scoped key with ``scopes`` (made by the
    holder) rotated, or a legacy key rotated (``legacy``)."""

    name: str
    kind: str  # "create", "rotate", "legacy"
    scopes: tuple[str, ...] = ()
    legacy: str = ""


CASES = [
    Case("create payment:read", "create", ("payment:read",)),
    Case("create payout:create", "create", ("payout:create",)),
    Case("create payout+transfer", "create", ("payout:create", "transfer:create")),
    Case("rotate a payout:create key", "rotate", ("payout:create",)),
    Case("rotate a payment:read key", "rotate", ("payment:read",)),
    Case("rotate the merchant key", "legacy", legacy="merchant"),
    Case("rotate the payout key", "legacy", legacy="payout"),
    Case("rotate the general key", "legacy", legacy="general"),
]
OK, NO_ROLE, NOT_HELD, HOLDER_ONLY = "ok", "missing_scope", "scope_not_held", "holder_only"
# Rows: CASES in order; columns: ROLES in order. Owners and admins hold every scope, yet the holder's payout
# key stays the holder's; the developer (no payout:create, no transfer:create) mints payment keys only; the
# custom role holds key:manage with payment and balance reads.
EXPECTED = {
    "create payment:read": (OK, OK, OK, NO_ROLE, OK, NO_ROLE, OK),
    "create payout:create": (OK, OK, OK, NO_ROLE, NOT_HELD, NO_ROLE, NOT_HELD),
    "create payout+transfer": (OK, OK, OK, NO_ROLE, NOT_HELD, NO_ROLE, NOT_HELD),
    "rotate a payout:create key": (OK, OK, OK, NO_ROLE, NOT_HELD, NO_ROLE, NOT_HELD),
    "rotate a payment:read key": (OK, OK, OK, NO_ROLE, OK, NO_ROLE, OK),
    "rotate the merchant key": (OK, OK, OK, NO_ROLE, NOT_HELD, NO_ROLE, NOT_HELD),
    "rotate the payout key": (OK, HOLDER_ONLY, HOLDER_ONLY, NO_ROLE, HOLDER_ONLY, NO_ROLE, HOLDER_ONLY),
    "rotate the general key": (OK, OK, OK, NO_ROLE, OK, NO_ROLE, OK),
}
KEY_TYPES = {"merchant": "merchantApiKey", "payout": "payoutApiKey", "general": "generalApiKey"}
SECRET = re.compile(r'<code class="secret" id="([\w-]+)"[^>]*>([^<]+)</code>')


@pytest.fixture
async def team(make_client, make_config):
    """An account with one member of every role (and a custom one); the client, holder, gateway, member tokens."""
    client, holder, gateway = await holder_account(make_client, make_config)
    await roles.create_custom_role(gateway, holder.merchant_id, CUSTOM, CUSTOM_SCOPES)
    tokens = {"holder": holder.jwt}
    for role in ROLES[1:]:
        tokens[role] = await add_member(client, gateway, holder.merchant_id, f"{role}@example.com", role=role)
    return client, holder, gateway, tokens


async def person_of(gateway, role):
    if role == "holder":
        return "holder"
    member_id = await gateway.db.fetch_val("SELECT id FROM team_members WHERE email = :e", {"e": f"{role}@example.com"})
    return f"member:{member_id}"


async def key_rows(gateway, merchant_id):
    rows = await gateway.db.fetch_all("SELECT id, key_hash, revoked_at FROM api_keys WHERE merchant_id = :m",
                                      {"m": merchant_id})
    return {row["id"]: (row["key_hash"], row["revoked_at"]) for row in rows}


async def holder_key(client, holder, scopes, label="target"):
    status, body = await api(client, "POST", "/dashboard/api-keys", holder.jwt,
                             json={"label": label, "scopes": list(scopes)})
    assert status == 200, body
    return body["data"]["id"]


async def json_attempt(client, headers, case, target):
    """The case through the JSON API: (status, error code or None, body)."""
    if case.kind == "create":
        status, body = await api(client, "POST", "/dashboard/api-keys", headers,
                                 json={"label": "mine", "scopes": list(case.scopes)})
    elif case.kind == "rotate":
        status, body = await api(client, "POST", f"/dashboard/api-keys/{target}/rotate", headers)
    else:
        status, body = await api(client, "POST", "/dashboard/settings/rotate-key", headers,
                                 json={"key_type": KEY_TYPES[case.legacy]})
    return status, (body.get("error") or {}).get("code"), body


async def html_attempt(visitor, case, target):
    """The case through the dashboard's forms (the CSRF token of the session's every form): (status, page)."""
    token = _csrf(await visitor.get("/app/security"))  # a page every signed-in person may open
    if case.kind == "create":
        path, data = "/app/keys", {"label": "mine", "scopes": list(case.scopes)}
    elif case.kind == "rotate":
        path, data = f"/app/keys/{target}/rotate", {}
    else:
        path, data = "/app/settings/rotate-key", {"key_type": KEY_TYPES[case.legacy]}
    response = await visitor.client.post(path, data={"csrf_token": token, **data}, allow_redirects=False)
    return response.status, await response.text()


def _csrf(page):
    found = re.search(r'name="csrf_token" value="([^"]*)"', page)
    assert found, page[:500]
    return found.group(1)


async def target_for(client, holder, gateway, case):
    if case.kind == "rotate":
        return await holder_key(client, holder, case.scopes)
    if case.kind == "legacy":
        return f"legacy_{case.legacy}_{holder.merchant_id}"
    return None


async def outcome(gateway, holder, case, before, target, allowed):
    """What the request did to the keys: the key made or rotated (allowed), or None when nothing changed."""
    after = await key_rows(gateway, holder.merchant_id)
    if not allowed:
        assert after == before, f"{case.name}: a refused request changed keys"
        return None
    if case.kind == "create":
        made = set(after) - set(before)
        assert len(made) == 1, case.name
        return made.pop()
    assert after[target][0] != before[target][0], f"{case.name}: no new secret"
    return target


async def check_issuers(gateway, issued):
    """Every key made or rotated is recorded as the person who did it last (``issued``: key id -> role)."""
    for key_id, role in issued.items():
        recorded = await gateway.db.fetch_val("SELECT issued_by FROM api_keys WHERE id = :id", {"id": key_id})
        assert recorded == await person_of(gateway, role), (role, key_id)


def expected_table():
    return {(role, case.name): EXPECTED[case.name][i] for case in CASES for i, role in enumerate(ROLES)}


async def test_every_role_on_every_key_minting_json_route(team):
    client, holder, gateway, tokens = team
    seen, issued = {}, {}
    for case in CASES:
        for role in ROLES:
            target = await target_for(client, holder, gateway, case)
            before = await key_rows(gateway, holder.merchant_id)
            status, code, body = await json_attempt(client, tokens[role], case, target)
            assert status in (200, 403), (role, case.name, body)
            seen[role, case.name] = OK if status == 200 else code
            key_id = await outcome(gateway, holder, case, before, target, status == 200)
            if key_id is not None:
                issued[key_id] = role
            if code == NOT_HELD and case.kind == "create":
                assert set(body["error"]["detail"]["scopes"]) <= set(case.scopes), body
    assert seen == expected_table()
    await check_issuers(gateway, issued)


def refusal_in(page):
    """Which refusal a 403 page shows."""
    if "Not allowed" in page:
        return NO_ROLE
    if "your role does not give you" in page:
        return NOT_HELD
    if "only the account holder may rotate" in page.lower():
        return HOLDER_ONLY
    raise AssertionError(re.findall(r'role="alert"[^>]*>(.*?)</', page, re.S) or page[-3000:])


async def test_every_role_on_every_key_minting_form(team):
    client, holder, gateway, _ = team
    seen, issued = {}, {}
    for role in ROLES:
        client.session.cookie_jar.clear()
        visitor = Visitor(client)
        await visitor.sign_in(f"{role}@example.com", HOLDER_PASSWORD if role == "holder" else PASSWORD)
        for case in CASES:
            target = await target_for(client, holder, gateway, case)
            before = await key_rows(gateway, holder.merchant_id)
            status, page = await html_attempt(visitor, case, target)
            assert status in (200, 403), (role, case.name, page[:800])
            seen[role, case.name] = OK if status == 200 else refusal_in(page)
            if status == 200:
                assert SECRET.search(page), (role, case.name)  # the new plaintext, shown once
            key_id = await outcome(gateway, holder, case, before, target, status == 200)
            if key_id is not None:
                issued[key_id] = role
    assert seen == expected_table()
    await check_issuers(gateway, issued)


async def test_a_developer_gets_no_payout_power(team):
    """The issue's attack: the developer role (no payout:create) rotates the payout key and mints payout and
    transfer keys. Each is refused, the holder's payout key keeps working, and no key is made."""
    client, holder, gateway, tokens = team
    dev = tokens["developer"]
    status, body = await api(client, "POST", "/dashboard/settings/rotate-key", dev, json={"key_type": "payoutApiKey"})
    assert status == 403 and body["error"]["code"] == "holder_only" and "new_key" not in (body["data"] or {})
    status, body = await api(client, "POST", "/dashboard/api-keys", dev,
                             json={"label": "x", "scopes": ["payout:create", "transfer:create"]})
    assert status == 403 and body["error"]["code"] == "scope_not_held"
    assert body["error"]["detail"] == {"scopes": ["payout:create", "transfer:create"]}
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM api_keys WHERE merchant_id = :m AND is_legacy = :f",
                                      {"m": holder.merchant_id, "f": False}) == 0
    status, body = await api(client, "GET", "/v1/payout/no-such-payout", holder.payout_key)
    assert status == 404, body  # the holder's payout key still authenticates: unchanged
    # The forms offer what the developer may do, no more: no payout checkbox to tick, no payout key to rotate.
    client.session.cookie_jar.clear()
    visitor = Visitor(client)
    await visitor.sign_in("developer@example.com")
    page = await visitor.get("/app/keys")
    assert re.search(r'id="scope-payout-create" disabled', page) and 'id="scopes-not-held"' in page
    assert not re.search(r'id="scope-payment-read" disabled', page)
    settings = await visitor.get("/app/settings")
    assert 'value="generalApiKey"' in settings and 'value="payoutApiKey"' not in settings
    assert 'value="merchantApiKey"' not in settings  # it carries transfer:create


async def test_every_key_says_who_issued_it(team):
    client, holder, gateway, tokens = team
    made = await api(client, "POST", "/dashboard/api-keys", tokens["developer"],
                     json={"label": "ci", "scopes": ["payment:read"]})
    assert made[0] == 200 and made[1]["data"]["issued_by"] == await person_of(gateway, "developer")
    status, listed = await api(client, "GET", "/dashboard/api-keys", holder.jwt)
    by_id = {key["id"]: key["issued_by"] for key in listed["data"]["keys"]}
    assert by_id[made[1]["data"]["id"]] == await person_of(gateway, "developer")
    assert by_id[f"legacy_payout_{holder.merchant_id}"] == "holder"
    # Rotated by the holder, the key becomes the holder's.
    status, body = await api(client, "POST", f"/dashboard/api-keys/{made[1]['data']['id']}/rotate", holder.jwt)
    assert status == 200 and body["data"]["issued_by"] == "holder"
    client.session.cookie_jar.clear()
    visitor = Visitor(client)
    await visitor.sign_in("holder@example.com", HOLDER_PASSWORD)
    await api(client, "POST", "/dashboard/api-keys", tokens["admin"], json={"label": "ops", "scopes": ["payout:read"]})
    page = await visitor.get("/app/keys")
    assert 'class="key-issuer">member admin@example.com</td>' in page
    assert 'class="key-issuer">account holder</td>' in page
    # The activity log has the grant: who, which key, which powers.
    events = await gateway.db.fetch_all("SELECT actor, details FROM security_events WHERE kind = 'api_key_created'"
                                        " ORDER BY id")
    assert any(e["actor"] == "member admin@example.com" and json.loads(e["details"])["scopes"] == "payout:read"
               for e in events)


# -- removing a member ----------------------------------------------------------------------------------------


async def member_with_keys(client, holder, gateway, tokens, role="admin"):
    """The member's own scoped key (plaintext) and the general key they rotated (plaintext)."""
    status, body = await api(client, "POST", "/dashboard/api-keys", tokens[role],
                             json={"label": f"{role}-key", "scopes": ["payment:read"]})
    assert status == 200, body
    scoped = body["data"]["api_key"]
    status, body = await api(client, "POST", "/dashboard/settings/rotate-key", tokens[role],
                             json={"key_type": "generalApiKey"})
    assert status == 200, body
    return scoped, body["data"]["new_key"]


async def works(client, scoped, general):
    first = (await api(client, "GET", "/v1/payment/accepted-currencies", {"merchant_api_key": scoped}))[0]
    second = (await api(client, "GET", "/v1/general/account/balance", {"general_api_key": general}))[0]
    return first, second


async def activity(gateway, kind):
    rows = await gateway.db.fetch_all("SELECT actor, details FROM security_events WHERE kind = :k ORDER BY id",
                                      {"k": kind})
    return [(row["actor"], json.loads(row["details"])) for row in rows]


async def test_removing_a_member_revokes_the_keys_they_issued(team):
    client, holder, gateway, tokens = team
    scoped, general = await member_with_keys(client, holder, gateway, tokens)
    assert await works(client, scoped, general) == (200, 200)
    admin_id = (await person_of(gateway, "admin")).split(":")[1]
    status, listed = await api(client, "GET", "/dashboard/team/members", tokens["owner"])
    assert status == 200 and len(next(m for m in listed["data"]["members"] if m["id"] == admin_id)["api_keys"]) == 2
    status, body = await api(client, "POST", f"/dashboard/team/members/{admin_id}/remove", tokens["owner"], json={})
    assert status == 200 and body["data"]["api_keys"] == "revoke" and len(body["data"]["keys"]) == 2, body
    assert await works(client, scoped, general) == (401, 401)
    revoked = await activity(gateway, "api_key_revoked")
    assert len(revoked) == 2 and all(actor == "member owner@example.com" and "removed member admin@example.com"
                                     in details["reason"] for actor, details in revoked)
    assert (await activity(gateway, "member_removed"))[0][1]["api_keys"] == "2 revoked"
    # The holder brings the general key back by rotating it: theirs from now on.
    status, body = await api(client, "POST", "/dashboard/settings/rotate-key", holder.jwt,
                             json={"key_type": "generalApiKey"})
    assert status == 200 and (await works(client, scoped, body["data"]["new_key"]))[1] == 200


async def test_the_remover_may_keep_the_keys_and_the_log_says_so(team):
    client, holder, gateway, tokens = team
    scoped, general = await member_with_keys(client, holder, gateway, tokens, role="developer")
    dev_id = (await person_of(gateway, "developer")).split(":")[1]
    for bad in ("delete", 1, ["keep"]):
        status, body = await api(client, "POST", f"/dashboard/team/members/{dev_id}/remove", tokens["admin"],
                                 json={"api_keys": bad})
        assert status == 400 and "api_keys" in body["error"]["detail"], body
    assert await person_of(gateway, "developer") == f"member:{dev_id}"  # still a member
    status, body = await api(client, "POST", f"/dashboard/team/members/{dev_id}/remove", tokens["admin"],
                             json={"api_keys": "keep"})
    assert status == 200 and body["data"]["api_keys"] == "keep" and len(body["data"]["keys"]) == 2
    assert await works(client, scoped, general) == (200, 200)
    kept = await activity(gateway, "member_keys_kept")
    assert kept[0][0] == "member admin@example.com" and kept[0][1]["member"] == "developer@example.com"
    assert kept[0][1]["count"] == "2"
    assert (await activity(gateway, "member_removed"))[0][1]["api_keys"] == "2 kept"
    assert await activity(gateway, "api_key_revoked") == []
    status, body = await api(client, "GET", "/dashboard/activity", holder.jwt)
    assert any("Kept the API keys of removed member developer@example.com" in e["description"]
               for e in body["data"]["events"])


async def test_the_team_page_asks_what_becomes_of_the_keys(team):
    client, holder, gateway, tokens = team
    scoped, _ = await member_with_keys(client, holder, gateway, tokens, role=CUSTOM)
    client.session.cookie_jar.clear()
    visitor = Visitor(client)
    await visitor.sign_in("holder@example.com", HOLDER_PASSWORD)
    custom_id, dev_id = [(await person_of(gateway, r)).split(":")[1] for r in (CUSTOM, "developer")]
    # The Remove button as it was (no choice sent): the member's keys stop working with them.
    await visitor.get("/app/team")
    await visitor.submit("/app/team", {"action": "remove", "member_id": custom_id})
    assert (await works(client, scoped, scoped))[0] == 401
    scoped_dev, general_dev = await member_with_keys(client, holder, gateway, tokens, role="developer")
    page = await visitor.get("/app/team")
    assert f'<select id="remove-keys-{dev_id}" name="api_keys"><option value="revoke" selected>' in page
    assert f'<label for="remove-keys-{dev_id}">API keys they issued (2)</label>' in page
    await visitor.submit("/app/team", {"action": "remove", "member_id": dev_id, "api_keys": "sideways"}, expect=400)
    assert "API keys they issued</a>: Choose revoke or keep." in visitor.page
    assert await person_of(gateway, "developer") == f"member:{dev_id}"  # nothing changed
    await visitor.get("/app/team")
    await visitor.submit("/app/team", {"action": "remove", "member_id": dev_id, "api_keys": "keep"})
    assert await works(client, scoped_dev, general_dev) == (200, 200)
    assert [d["member"] for _, d in await activity(gateway, "member_keys_kept")] == ["developer@example.com"]
    assert [d["api_keys"] for _, d in await activity(gateway, "member_removed")] == ["2 revoked", "2 kept"]


async def test_a_request_authenticated_before_the_removal_mints_nothing(team):
    """The member's create or rotate was authenticated, then they were removed (or demoted) before it wrote:
    the key's transaction asks who they are now. Racing a removal, no working key of theirs survives it."""
    client, holder, gateway, tokens = team
    dev = await person_of(gateway, "developer")
    as_they_were = KeyIssuer(dev, frozenset(roles.BUILT_IN["developer"]))
    target = await holder_key(client, holder, ["payment:read"])
    await api(client, "POST", f"/dashboard/team/members/{dev.split(':')[1]}/remove", tokens["owner"], json={})
    before = await key_rows(gateway, holder.merchant_id)
    for attempt in (create_scoped_key(gateway, holder.merchant_id, ScopedKeyRequest("late", ["payment:read"]),
                                      issuer=as_they_were),
                    rotate_scoped_key(gateway, holder.merchant_id, target, issuer=as_they_were),
                    rotate_legacy_key(gateway, holder.merchant_id, "general", issuer=as_they_were)):
        with pytest.raises(Unauthorized) as refused:
            await attempt
        assert refused.value.code == "member_removed"
    assert await key_rows(gateway, holder.merchant_id) == before
    # Demoted to viewer after authenticating as admin: the admin's powers are gone too.
    admin = await person_of(gateway, "admin")
    await gateway.db.execute("UPDATE team_members SET role = 'viewer' WHERE id = :id", {"id": admin.split(":")[1]})
    with pytest.raises(Forbidden):
        await create_scoped_key(gateway, holder.merchant_id, ScopedKeyRequest("late", ["payout:create"]),
                                issuer=KeyIssuer(admin, frozenset(roles.grantable(gateway))))
    # A removal racing a member's creations: whichever commits first, none of their keys works afterwards.
    custom = await person_of(gateway, CUSTOM)
    issuer = KeyIssuer(custom, frozenset(CUSTOM_SCOPES))

    async def create(label):
        try:
            await create_scoped_key(gateway, holder.merchant_id, ScopedKeyRequest(label, ["payment:read"]),
                                    issuer=issuer)
        except Unauthorized:
            pass

    await asyncio.gather(create("a"), create("b"), api(client, "POST", f"/dashboard/team/members/"
                                                        f"{custom.split(':')[1]}/remove", tokens["owner"], json={}),
                         create("c"), create("d"))
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM api_keys WHERE issued_by = :p AND revoked_at IS NULL",
                                      {"p": custom}) == 0


# -- keys made before issue 42 ----------------------------------------------------------------------------------


async def test_keys_and_requests_from_before_are_the_holders(db_url, make_config, make_client):
    """Upgrading: keys made before this change are the holder's, and so are payouts and holds recorded as
    ``key:<id>`` (their key stays named)."""
    db = Database(db_url)
    await db.connect()
    try:
        every = collect_migrations(get_plugin_manager())
        # The schema as it was before core m0025: later plugin migrations too (activity m0003, swaps m0004 and
        # subscriptions m0005 count their rows in core m0056's kept counts).
        before = [m for m in every if not (m.namespace == "core" and m.version >= 25)
                  and not (m.namespace == "approvals" and m.version >= 2)
                  and not (m.namespace == "activity" and m.version >= 3)
                  and not (m.namespace == "swaps" and m.version >= 4)
                  and not (m.namespace == "subscriptions" and m.version >= 5)]
        await migrate(db, before)
        await db.execute("INSERT INTO merchants (id, account_id, email, password_hash, key_account, accepted_coins,"
                         " confirmations, created_at, updated_at) VALUES ('mer_old', 'ORB-old', 'old@example.com',"
                         " 'x', 1, '[]', '{}', 1, 1)")
        await db.execute("INSERT INTO api_keys (id, merchant_id, kind, prefix, key_hash, scopes, is_legacy,"
                         " created_at) VALUES ('key_old', 'mer_old', 'scoped', 'ok_s_abc', 'h', '[\"payout:create\"]',"
                         " :f, 1)", {"f": False})
        await db.execute("INSERT INTO api_key_secrets (key_hash, key_id, valid_until, created_at)"
                         " VALUES ('h2', 'key_old', 10, 1)")
        await db.execute("INSERT INTO approval_spend (subject_id, merchant_id, requested_by, day, usd)"
                         " VALUES ('po_1', 'mer_old', 'key:key_old', '2024-01-01', 1)")
        await db.execute("INSERT INTO approval_spend (subject_id, merchant_id, requested_by, day, usd)"
                         " VALUES ('po_2', 'mer_old', 'member:mbr_x', '2024-01-01', 1)")
        await migrate(db, every)
        assert await db.fetch_val("SELECT issued_by FROM api_keys WHERE id = 'key_old'") == "holder"
        assert await db.fetch_val("SELECT issued_by FROM api_key_secrets WHERE key_hash = 'h2'") == "holder"
        spend = {r["subject_id"]: (r["requested_by"], r["key_id"])
                 for r in await db.fetch_all("SELECT * FROM approval_spend")}
        assert spend == {"po_1": ("holder", "key_old"), "po_2": ("member:mbr_x", None)}
    finally:
        await db.disconnect()
