"""The account activity log (plugins/activity; issue 29 item 1) and the ``security_event_occurred`` hook, on both databases.

The core and the telegram plugin announce sign-ins, lockouts, password, 2FA, API-key and chat changes where
they happen; the plugin appends them (append-only in the database, the key audit log's mechanism), lists
them newest first on ``/app/activity`` and ``GET /dashboard/activity`` with the request's IP and user
agent, shows alerts on the home page until dismissed, and never holds a secret. Blocked, nothing else
changes. Against the old code there was no hook, no plugin and no route: every test here fails.
"""

from __future__ import annotations

import json

import pyotp
import pytest

from orbchain.core.accounts import lockout
from orbchain import api as services
from orbchain.core.types.pages import DashboardNotice
from orbchain.core.contract.plugins import hookimpl
from orbchain.plugins.activity.describe import describe
from orbchain.plugins.teams import roles
from orbchain.web.keys import GATEWAY

from orbchain.testing.api import Merchant

from .approvals_support import PASSWORD, add_member
from .dashboard_support import Visitor
from .support import advance_clock, api, bearer, signup
from .telegram_support import (
    CHAT, MERCHANT_PASSWORD, enable_totp, link_via_bot, next_code, open_session, telegram_config,
)

UA = {"User-Agent": "ActivityTest/1.0 (security journey)"}


async def activity(client, merchant, **query):
    """``GET /dashboard/activity`` as ``merchant`` (must succeed); its ``data``."""
    status, body = await api(client, "GET", "/dashboard/activity", merchant.jwt, params=query)
    assert status == 200, body
    return body["data"]


@pytest.fixture
async def env(make_client, make_config, standin):
    """A shop with the telegram plugin; sign-in bursts here count against the account, not the IP's budget."""
    client = await make_client(make_config(**telegram_config(standin, mfa_cooling_off_seconds=0),
                                           rate_limits={"auth_per_minute": 1000}))
    return client, await signup(client, password=MERCHANT_PASSWORD), client.app[GATEWAY]


async def test_every_security_change_is_listed_newest_first_with_ip_and_user_agent(env, standin):
    """Sign-ins (password, identity provider, mini-app), password change, 2FA on and off and from where, scoped
    and legacy keys, chat linked and unlinked: each one event, newest first, with who asked and nothing secret."""
    client, merchant, gateway = env
    secrets_seen = [MERCHANT_PASSWORD, "an0ther-passw0rd", merchant.token, *merchant.keys.values()]
    response = await client.post("/dashboard/auth/login", headers=UA,
                                 json={"email": "merchant@example.com", "password": MERCHANT_PASSWORD})
    secrets_seen.append((await response.json())["data"]["token"])
    status, body = await api(client, "POST", "/dashboard/settings/change-password", {**merchant.jwt, **UA},
                             json={"current_password": MERCHANT_PASSWORD, "new_password": "an0ther-passw0rd"})
    assert status == 200, body
    merchant = Merchant(body["data"]["token"], merchant.merchant_id, merchant.keys)  # older tokens ended
    jwt = merchant.jwt
    secrets_seen.append(merchant.token)
    _, body = await api(client, "POST", "/dashboard/api-keys", jwt, json={"label": "shop", "scopes": ["payment:read"]})
    key = body["data"]
    secrets_seen.append(key["api_key"])
    _, body = await api(client, "POST", f"/dashboard/api-keys/{key['id']}/rotate", jwt)
    secrets_seen.append(body["data"]["api_key"])
    await api(client, "POST", f"/dashboard/api-keys/{key['id']}/revoke", jwt)
    _, body = await api(client, "POST", "/dashboard/settings/rotate-key", jwt, json={"key_type": "payoutApiKey"})
    secrets_seen.append(body["data"]["new_key"])
    token = await link_via_bot(client, gateway, standin, merchant, password="an0ther-passw0rd")
    secrets_seen.append(token)
    mini = await open_session(client, gateway)
    secrets_seen.append(mini["token"])
    secret = await enable_totp(client, gateway, bearer(mini["token"]))
    secrets_seen.append(secret)
    advance_clock(gateway, 30)
    status, body = await api(client, "POST", "/dashboard/mfa/disable", jwt,
                             json={"code": pyotp.TOTP(secret).at(gateway.now())})
    assert status == 200, body
    await api(client, "POST", "/dashboard/tg/unlink", jwt)
    session = await services.sign_in_account(gateway, merchant.merchant_id)
    secrets_seen.append(session.token)

    data = await activity(client, merchant)
    kinds = [(e["kind"], e["details"].get("method") or e["details"].get("via") or e["details"].get("key_id"))
             for e in data["events"]]
    assert kinds == [
        ("sign_in", "identity_provider"), ("chat_unlinked", "dashboard"), ("totp_disabled", "dashboard"),
        ("totp_enabled", "miniapp"), ("sign_in", "miniapp"), ("chat_linked", None),
        ("api_key_rotated", f"legacy_payout_{merchant.merchant_id}"), ("api_key_revoked", key["id"]),
        ("api_key_rotated", key["id"]), ("api_key_created", key["id"]), ("password_changed", None),
        ("sign_in", "password")], kinds
    assert data["total"] == 12 and data["limit"] == 50 and data["offset"] == 0
    by_kind = {e["kind"]: e for e in reversed(data["events"])}  # the newest of each kind
    assert by_kind["chat_linked"]["description"] == "Telegram chat Ada Lovelace (@ada_l) linked"
    assert by_kind["chat_linked"]["details"] == {"chat_id": str(CHAT), "chat_name": "Ada Lovelace",
                                                 "chat_username": "ada_l"}
    assert by_kind["totp_enabled"]["alert"] is True and by_kind["totp_disabled"]["alert"] is False
    assert by_kind["totp_enabled"]["description"] == "Two-factor authentication turned on from the Telegram mini-app"
    assert by_kind["api_key_created"]["description"] == \
        f"API key \u201cshop\u201d ({key['id']}) created (scopes payment:read)"  # the power it grants (issue 42)
    oldest = data["events"][-1]
    assert (oldest["client_ip"], oldest["user_agent"]) == ("127.0.0.1", UA["User-Agent"])
    assert oldest["request_id"] and oldest["description"] == "Signed in with the password"
    assert data["events"][0]["client_ip"] is None  # announced outside any request
    # No secret anywhere in what was stored.
    stored = json.dumps([dict(r) for r in await gateway.db.fetch_all("SELECT * FROM security_events")], default=str)
    leaked = [s for s in secrets_seen if s and s in stored]
    assert not leaked, leaked

    page = await activity(client, merchant, limit=2, offset=1)
    assert [e["kind"] for e in page["events"]] == ["chat_unlinked", "totp_disabled"] and page["total"] == 12
    for bad in ({"limit": 0}, {"limit": 201}, {"offset": -1}):
        status, body = await api(client, "GET", "/dashboard/activity", jwt, params=bad)
        assert status == 400 and body["error"]["type"] == "validation", bad
    assert (await api(client, "GET", "/dashboard/activity", {}))[0] == 401
    assert (await api(client, "GET", "/dashboard/activity", {"merchant_api_key": merchant.keys[
        "merchant_api_key"]}))[0] == 401
    friend = await signup(client, "friend@example.com")
    assert (await activity(client, friend))["events"] == []  # another account's log is its own (empty)


async def test_a_burst_of_wrong_passwords_is_one_alert(env):
    """The sign-in lockout starting is announced once (an alert), not once per wrong password."""
    client, merchant, gateway = env
    for _ in range(lockout.LOGIN_POLICY.max_failures + 3):
        await client.post("/dashboard/auth/login", json={"email": "merchant@example.com", "password": "nope-nope"})
    events = (await activity(client, merchant))["events"]
    assert [e["kind"] for e in events] == ["sign_in_locked"]
    assert events[0]["alert"] is True
    assert events[0]["description"] == "Sign-in locked for 15 minutes after 10 wrong passwords"


async def test_the_page_lists_pages_and_the_home_alert_is_dismissed_once(env):
    """/app/activity in the navigation, 50 a page with an Older link; an alert shows on the home page until
    its Dismiss (CSRF-checked) is posted, then only on the activity page."""
    client, merchant, gateway = env
    for _ in range(lockout.LOGIN_POLICY.max_failures + 1):
        await client.post("/dashboard/auth/login", json={"email": "merchant@example.com", "password": "nope-nope"})
    advance_clock(gateway, lockout.LOGIN_POLICY.lock_seconds)
    browser = Visitor(client)
    await browser.sign_in("merchant@example.com", MERCHANT_PASSWORD)
    for _ in range(55):  # another plugin's kind: listed by name and details
        await services.announce_security_event(gateway, merchant.merchant_id, "widget_paired", {"widget": "w1"})
    await browser.get("/app")
    assert 'href="/app/activity"' in browser.page and "Sign-in locked for 15 minutes" in browser.page
    await browser.get("/app/activity")
    assert browser.page.count('data-kind="widget_paired"') == 50 and "Widget paired (widget: w1)" in browser.page
    assert 'id="activity-older"' in browser.page
    await browser.get("/app/activity?offset=50")
    assert 'data-kind="sign_in_locked"' in browser.page and 'id="activity-newer"' in browser.page
    event_id = (await activity(client, merchant, limit=200))["events"][-1]["id"]
    await browser.submit("/app/activity", {"action": "dismiss", "event_id": str(event_id)}, token="forged",
                         expect=403)
    await browser.get("/app/activity?offset=50")
    await browser.submit("/app/activity", {"action": "dismiss", "event_id": "999999999"}, expect=404)
    await browser.submit("/app/activity", {"action": "dismiss", "event_id": "x"}, expect=400)
    # Digits str.isdigit passes but int refuses (a 500 before: "²", Arabic-Indic), in the form and the query.
    for digits in ("\u00b2", "\u0661\u0662"):
        await browser.submit("/app/activity", {"action": "dismiss", "event_id": digits}, expect=400)
        await browser.get(f"/app/activity?offset={digits}")
        assert 'data-kind="widget_paired"' in browser.page  # read as the first page
    await browser.get("/app/activity?offset=50")
    await browser.submit("/app/activity", {"action": "dismiss", "event_id": str(event_id)})
    await browser.get("/app")
    assert "Sign-in locked" not in browser.page
    listed = (await activity(client, merchant, limit=200))["events"]
    assert listed[-1]["kind"] == "sign_in_locked" and listed[-1]["dismissed"] is True
    # Another account cannot dismiss it (nor see it).
    await browser.submit("/app/logout")
    await browser.sign_up("other@example.com")
    await browser.get("/app/activity")
    assert "Sign-in locked" not in browser.page and "widget" not in browser.page.lower()
    await browser.submit("/app/activity", {"action": "dismiss", "event_id": str(event_id)}, expect=404)


async def test_the_log_is_append_only_in_the_database(env):
    client, merchant, gateway = env
    await services.announce_security_event(gateway, merchant.merchant_id, "widget_paired", alert=True)
    event_id = (await activity(client, merchant))["events"][0]["id"]
    browser = Visitor(client)
    await browser.sign_in("merchant@example.com", MERCHANT_PASSWORD)
    await browser.get("/app/activity")
    await browser.submit("/app/activity", {"action": "dismiss", "event_id": str(event_id)})
    db = gateway.db
    for table in ("security_events", "security_event_dismissals"):
        with pytest.raises(Exception, match="append-only"):
            await db.execute(f"UPDATE {table} SET merchant_id = 'x'")
        with pytest.raises(Exception, match="append-only"):
            await db.execute(f"DELETE FROM {table}")
        if db.is_postgres:
            with pytest.raises(Exception, match="append-only"):
                await db.execute(f"TRUNCATE {table}")
    assert [e["kind"] for e in (await activity(client, merchant))["events"]][:2] == ["sign_in", "widget_paired"]


async def test_announcing_refuses_secret_looking_details_and_a_failing_plugin_changes_nothing(
        make_client, make_config):
    """A detail named like a secret is a programming error; a plugin raising in ``security_event_occurred`` is logged
    and the sign-in it was told about still succeeds; one raising in ``extra_dashboard_notices`` leaves the home
    page up with the other plugins' notices."""

    class Broken:
        PLUGIN_NAME = "broken_listener"

        @hookimpl
        def security_event_occurred(self, gateway, event):
            raise RuntimeError("listener down")

        @hookimpl
        async def extra_dashboard_notices(self, gateway, merchant_id):
            raise RuntimeError("notices down")

    from orbchain.core.contract.plugins import get_plugin_manager

    client = await make_client(make_config(scheduler={"enabled": False}), get_plugin_manager([Broken()]))
    gateway = client.app[GATEWAY]
    await signup(client, "owner@example.com", "right-password")
    response = await client.post("/dashboard/auth/login", json={"email": "owner@example.com",
                                                                "password": "right-password"})
    assert response.status == 200
    merchant_id = (await response.json())["data"]["merchant_id"]
    for name in ("password", "api_token", "totp_code", "Bad Name", "seed_words"):
        with pytest.raises(ValueError):
            await services.announce_security_event(gateway, merchant_id, "widget_paired", {name: "x"})
    with pytest.raises(ValueError):
        await services.announce_security_event(gateway, merchant_id, "Not A Kind")
    assert describe("widget_paired", {}) == "Widget paired"
    await services.announce_security_event(gateway, merchant_id, "widget_paired", alert=True)
    browser = Visitor(client)
    await browser.sign_in("owner@example.com", "right-password")
    await browser.get("/app")
    assert "Widget paired" in browser.page  # the activity plugin's notice, despite the broken one
    with pytest.raises(ValueError):
        DashboardNotice("x", "https://evil.example/app/")


async def test_a_blocked_activity_plugin_breaks_nothing(make_client, make_config, standin):
    """Without the plugin: sign-in, keys, 2FA and chat linking work, the home page renders, the routes are gone."""
    config = make_config(**telegram_config(standin, mfa_cooling_off_seconds=0), plugins={"blocked": ["activity"]})
    client = await make_client(config)
    gateway = client.app[GATEWAY]
    assert gateway.pm.get_plugin("activity") is None
    merchant = await signup(client, password=MERCHANT_PASSWORD)
    await link_via_bot(client, gateway, standin, merchant)
    mini = bearer((await open_session(client, gateway))["token"])
    secret = await enable_totp(client, gateway, mini)
    status, _ = await api(client, "POST", "/dashboard/api-keys", merchant.jwt,
                          json={"label": "k", "scopes": ["payment:read"]})
    assert status == 200
    browser = Visitor(client)
    await browser.sign_in("merchant@example.com", MERCHANT_PASSWORD, code=next_code(gateway, secret))
    await browser.get("/app")
    assert 'href="/app/activity"' not in browser.page and 'role="alert"' not in browser.page
    await browser.get("/app/activity", expect=404)
    assert (await api(client, "GET", "/dashboard/activity", merchant.jwt))[0] == 404


async def test_an_identity_provider_sign_in_is_listed_with_its_ip_and_browser(make_client, make_config):
    """The OIDC callback's sign-in (through ``services.sign_in_account``/``create_account``) is an event of the
    browser's request: method identity_provider, its IP and user agent. The oidc plugin itself announces nothing."""
    import aiohttp

    from orbchain.plugins.oidc import payload

    from .oidc_standin import CLIENT_ID, CLIENT_SECRET, start_provider

    provider, server = await start_provider()
    provider.redirect_uri = "http://gateway.test/dashboard/auth/google/callback"
    try:
        client = await make_client(make_config(scheduler={"enabled": False}, plugin={"oidc": {
            "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "redirect_uri": provider.redirect_uri,
            "discovery_url": provider.issuer + "/.well-known/openid-configuration"}}))
        for _ in range(2):  # a new account, then a returning one
            start = await client.get("/dashboard/auth/google", allow_redirects=False)
            async with aiohttp.ClientSession() as browser:
                async with browser.get(start.headers["Location"], allow_redirects=False) as consent:
                    callback = consent.headers["Location"]
            done = await client.get(callback.split("gateway.test", 1)[1], headers=UA, allow_redirects=False)
            assert done.status == 302, await done.text()
    finally:
        await server.close()
    token = payload.decode(done.headers["Location"].split("#google-auth=")[1])["token"]
    events = (await activity(client, Merchant(token, "", {})))["events"]
    assert [(e["kind"], e["details"], e["client_ip"], e["user_agent"]) for e in events] == [
        ("sign_in", {"method": "identity_provider"}, "127.0.0.1", UA["User-Agent"])] * 2


# -- who reads what (issue 42 item 7) ---------------------------------------------------------------------


async def test_a_member_without_activity_read_sees_only_their_own_entries(make_client, make_config):
    """Break: a viewer read everyone's sign-in IPs and user agents on GET /dashboard/activity and /app/activity.

    The holder, owners and admins (and a custom role given ``activity:read``) read the whole log; a viewer,
    a developer or a finance member reads only what they did, on the JSON list, the page, the home page's
    alerts, and cannot dismiss an alert they may not read."""
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"auth_per_minute": 1000}))
    gateway = client.app[GATEWAY]
    holder = await signup(client, "holder@example.com", MERCHANT_PASSWORD)
    response = await client.post("/dashboard/auth/login", headers={"User-Agent": "HolderPhone/1"},
                                 json={"email": "holder@example.com", "password": MERCHANT_PASSWORD})
    assert response.status == 200
    await roles.create_custom_role(gateway, holder.merchant_id, "auditor", ["activity:read"])
    members = {role: await add_member(client, gateway, holder.merchant_id, f"{role}@example.com", role)
               for role in ("viewer", "developer", "finance", "admin", "auditor")}
    status, body = await api(client, "POST", "/dashboard/api-keys", members["developer"],
                             json={"label": "ci", "scopes": ["payment:read"]})
    assert status == 200, body
    await services.announce_security_event(gateway, holder.merchant_id, "widget_paired", alert=True)

    whole = await activity(client, holder, limit=200)
    assert any(e["user_agent"] == "HolderPhone/1" for e in whole["events"])
    actors = {e["actor"] for e in whole["events"]}
    assert {None, "member viewer@example.com", "member developer@example.com"} <= actors
    for role in ("admin", "auditor"):
        status, body = await api(client, "GET", "/dashboard/activity", members[role], params={"limit": 200})
        assert status == 200 and body["data"]["total"] == whole["total"], (role, body)
    for role, kinds in (("viewer", ["sign_in"]), ("finance", ["sign_in"]),
                        ("developer", ["api_key_created", "sign_in"])):
        status, body = await api(client, "GET", "/dashboard/activity", members[role], params={"limit": 200})
        assert status == 200, body
        own = body["data"]["events"]
        assert [e["kind"] for e in own] == kinds and body["data"]["total"] == len(kinds), (role, own)
        assert {e["actor"] for e in own} == {f"member {role}@example.com"}
        assert "HolderPhone/1" not in str(body)

    browser = Visitor(client)
    await browser.sign_in("developer@example.com", PASSWORD)
    page = await browser.get("/app/activity")
    # Their two sign-ins (JSON, this browser) and their key: nothing of anyone else's.
    assert "3 security events of yours" in page and "HolderPhone/1" not in page and "Widget paired" not in page
    assert page.count('class="activity-actor" data-label="Who">member developer@example.com') == 3
    home = await browser.get("/app")
    assert "Widget paired" not in home  # the holder's alert is not theirs to read
    alert = next(e for e in whole["events"] if e["kind"] == "widget_paired")
    await browser.get("/app/activity")
    await browser.submit("/app/activity", {"action": "dismiss", "event_id": str(alert["id"])}, expect=404)
    assert not (await activity(client, holder))["events"][0]["dismissed"]

    await browser.submit("/app/logout")
    await browser.sign_in("admin@example.com", PASSWORD)
    page = await browser.get("/app/activity")
    assert f"{whole['total'] + 2} security events on this account" in page and "HolderPhone/1" in page
    assert "Widget paired" in await browser.get("/app")
