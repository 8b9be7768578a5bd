"""Captcha plugin (SPEC 4.7, 5.3) against a local siteverify stand-in speaking Turnstile's format."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from orbchain.core.accounts.auth import hash_password
from orbchain.core.accounts.lockout import LOGIN_POLICY
from orbchain.core.infra.config import ConfigError
from orbchain.core.types.errors import Forbidden
from orbchain.core.startup import build_gateway
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl

from orbchain.web.keys import GATEWAY

from .support import config_from_environment

SECRET = "0x4AAAAAAA-test-secret"
GOOD = "good-token"
PASSWORD = "s3cret-pass-9"


class SiteVerify:
    """Turnstile's siteverify: form-encoded secret/response/remoteip in, JSON success + error-codes out."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.calls: list[dict[str, str]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        assert request.content_type == "application/x-www-form-urlencoded"
        form = dict(await request.post())
        self.calls.append({k: str(v) for k, v in form.items()})
        if self.mode == "down":
            return web.Response(status=502, text="bad gateway")
        if self.mode == "slow":
            await asyncio.sleep(2)
        if self.mode == "garbage":
            return web.Response(text="<html>maintenance</html>", content_type="text/html")
        if form.get("secret") != SECRET:
            return web.json_response({"success": False, "error-codes": ["invalid-input-secret"]})
        if form.get("response") != GOOD:
            return web.json_response({"success": False, "error-codes": ["invalid-input-response"]})
        return web.json_response({"success": True, "error-codes": [], "challenge_ts": "2026-11-23T01:00:00.000Z",
                                  "hostname": "localhost", "action": "", "cdata": ""})

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/turnstile/v0/siteverify", self.handle)
        return app


@pytest.fixture
async def provider():
    fake = SiteVerify()
    async with TestServer(fake.app()) as server:
        fake.url = str(server.make_url("/turnstile/v0/siteverify"))
        yield fake


@pytest.fixture
def captcha_client(make_client, make_config, provider):
    async def make(**block):
        settings = {"secret": SECRET, "siteverify_url": provider.url, "timeout_seconds": 0.5, **block}
        return await make_client(make_config(plugin={"captcha": settings}))
    return make


async def _signup(client, email, **extra):
    return await client.post("/dashboard/auth/signup", json={"email": email, "password": PASSWORD, **extra})


async def _login(client, email, password=PASSWORD, **extra):
    return await client.post("/dashboard/auth/login", json={"email": email, "password": password, **extra})


async def _refused(response):
    body = await response.json()
    assert response.status == 403, body
    assert body["error"]["type"] == "forbidden" and body["error"]["code"] == "captcha_failed"


async def test_good_token_signs_up_and_logs_in(captcha_client, provider):
    client = await captcha_client()
    response = await _signup(client, "a@example.com", turnstile_token=GOOD)
    assert response.status == 200, await response.text()
    response = await _login(client, "a@example.com", turnstile_token=GOOD)
    assert response.status == 200 and (await response.json())["data"]["email"] == "a@example.com"
    assert len(provider.calls) == 2
    assert provider.calls[0] == {"secret": SECRET, "response": GOOD, "remoteip": "127.0.0.1"}


async def test_missing_or_bad_token_refused_and_no_account_created(captcha_client, provider):
    client = await captcha_client()
    await _refused(await _signup(client, "b@example.com"))
    await _refused(await _signup(client, "b@example.com", turnstile_token=""))
    assert provider.calls == []  # no token: refused without asking the provider
    await _refused(await _signup(client, "b@example.com", turnstile_token="forged"))
    assert provider.calls[-1]["response"] == "forged"
    # None of the refusals created the account: the e-mail is still free.
    assert (await _signup(client, "b@example.com", turnstile_token=GOOD)).status == 200


async def test_login_needs_the_token_before_the_password_is_checked(captcha_client, provider):
    client = await captcha_client()
    assert (await _signup(client, "c@example.com", turnstile_token=GOOD)).status == 200
    await _refused(await _login(client, "c@example.com"))
    await _refused(await _login(client, "c@example.com", turnstile_token="forged"))
    # Wrong password: the captcha passes first, then the usual 401.
    assert (await _login(client, "c@example.com", "wrong-pass-1", turnstile_token=GOOD)).status == 401


async def test_wrong_secret_is_refused(captcha_client, provider, caplog):
    client = await captcha_client(secret="not-the-secret")
    with caplog.at_level(logging.ERROR, logger="orbchain.plugins.captcha"):
        await _refused(await _signup(client, "d@example.com", turnstile_token=GOOD))
    assert "invalid-input-secret" in caplog.text


@pytest.mark.parametrize("mode", ["down", "slow", "garbage"])
async def test_outage_fails_closed_by_default(captcha_client, provider, mode):
    client = await captcha_client()
    provider.mode = mode
    await _refused(await _signup(client, "e@example.com", turnstile_token=GOOD))
    provider.mode = "ok"
    assert (await _signup(client, "e@example.com", turnstile_token=GOOD)).status == 200


async def test_outage_with_fail_open_lets_sign_in_through_and_warns(captcha_client, provider, caplog):
    client = await captcha_client(fail_open=True)
    provider.mode = "down"
    with caplog.at_level(logging.WARNING, logger="orbchain.plugins.captcha"):
        assert (await _signup(client, "f@example.com", turnstile_token=GOOD)).status == 200
        assert (await _login(client, "f@example.com", turnstile_token=GOOD)).status == 200
    assert "fail_open" in caplog.text
    warned = [r for r in caplog.records if r.name == "orbchain.plugins.captcha"]
    assert warned and all(r.levelno == logging.WARNING for r in warned)
    # fail_open covers outages only: a provider answering "no" still refuses, and so does no token.
    provider.mode = "ok"
    await _refused(await _login(client, "f@example.com", turnstile_token="forged"))
    await _refused(await _login(client, "f@example.com"))


async def test_wrong_passwords_from_anyone_ask_a_captcha_instead_of_locking_the_person_out(make_client, make_config,
                                                                                            provider):
    """Issue 42 item 8: on main, ten wrong passwords from anyone locked the holder (and a member) out for the
    window, the right password with a solved captcha refused 429. With a captcha on every try the lock asks
    the captcha instead: a confirmed token and the right password sign in. A token no provider confirmed
    (``fail_open`` during an outage) does not pass the lock, which then refuses as before."""
    settings = {"secret": SECRET, "siteverify_url": provider.url, "timeout_seconds": 0.5, "fail_open": True}
    client = await make_client(make_config(plugin={"captcha": settings}, rate_limits={"auth_per_minute": 1000}))
    gateway = client.app[GATEWAY]
    signup = await _signup(client, "holder@example.com", turnstile_token=GOOD)
    merchant_id = (await signup.json())["data"]["merchant_id"]
    await gateway.db.execute(
        "INSERT INTO team_members (id, merchant_id, email, role, password_hash, created_at)"
        " VALUES ('mbr_captcha01', :m, 'member@example.com', 'viewer', :h, :now)",
        {"m": merchant_id, "h": hash_password(PASSWORD), "now": gateway.now()})
    for email in ("holder@example.com", "member@example.com"):
        for _ in range(LOGIN_POLICY.max_failures + 2):  # past the lock: each wrong one is still just wrong
            assert (await _login(client, email, "wrong-pass-1", turnstile_token=GOOD)).status == 401
        response = await _login(client, email, turnstile_token=GOOD)
        assert response.status == 200, await response.text()
        await _refused(await _login(client, email))  # the captcha is still asked of every sign-in
    locks = await gateway.db.fetch_all("SELECT details, alert FROM security_events WHERE kind = 'sign_in_locked'", {})
    assert len(locks) == 2 and all(json.loads(r["details"])["then"] == "challenge" and r["alert"] for r in locks)

    for _ in range(LOGIN_POLICY.max_failures + 1):
        await _login(client, "holder@example.com", "wrong-pass-1", turnstile_token=GOOD)
    provider.mode = "down"  # fail_open lets the token through unchecked: no challenge was passed
    response = await _login(client, "holder@example.com", turnstile_token=GOOD)
    assert response.status == 429, await response.text()
    provider.mode = "ok"
    assert (await _login(client, "holder@example.com", turnstile_token=GOOD)).status == 200


async def test_unconfigured_captcha_does_nothing(make_client, make_config, provider):
    client = await make_client(make_config(plugin={"captcha": {"siteverify_url": provider.url}}))
    assert (await _signup(client, "g@example.com")).status == 200
    assert (await _login(client, "g@example.com")).status == 200
    assert provider.calls == []


async def test_a_secret_set_in_the_environment_closes_sign_up_without_a_token(make_client, make_config, provider):
    """Issue 29 item 6: ORBCHAIN_PLUGIN__CAPTCHA__SECRET was dropped, so sign-up stayed open. The timeout
    arrives as the number 0.5 (a TOML literal), which the plugin's own check requires."""
    config = config_from_environment(make_config, ORBCHAIN_PLUGIN__CAPTCHA__SECRET=SECRET,
                                     ORBCHAIN_PLUGIN__CAPTCHA__SITEVERIFY_URL=provider.url,
                                     ORBCHAIN_PLUGIN__CAPTCHA__TIMEOUT_SECONDS="0.5")
    client = await make_client(config)
    await _refused(await _signup(client, "h@example.com"))
    await _refused(await _signup(client, "h@example.com", turnstile_token="forged"))
    assert (await _signup(client, "h@example.com", turnstile_token=GOOD)).status == 200
    assert provider.calls[-1]["secret"] == SECRET


@pytest.mark.parametrize("block, key", [
    ({"secret": SECRET, "fail_opne": True}, "plugin.captcha.fail_opne"),
    ({"secret": SECRET, "fail_open": "yes"}, "plugin.captcha.fail_open"),
    ({"secret": SECRET, "timeout_seconds": 0}, "plugin.captcha.timeout_seconds"),
    ({"secret": SECRET, "timeout_seconds": "5"}, "plugin.captcha.timeout_seconds"),
    ({"secret": 42}, "plugin.captcha.secret"),
    ({"secret": SECRET, "siteverify_url": "ftp://example.com/x"}, "plugin.captcha.siteverify_url"),
])
def test_bad_config_stops_startup(make_config, block, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        build_gateway(make_config(plugin={"captcha": block}), get_plugin_manager())


def test_plain_http_siteverify_needs_the_private_urls_switch(make_config):
    block = {"secret": SECRET, "siteverify_url": "http://127.0.0.1:9/siteverify"}
    build_gateway(make_config(plugin={"captcha": block}), get_plugin_manager())
    with pytest.raises(ConfigError, match="must be an https URL"):
        build_gateway(make_config(plugin={"captcha": block}, webhooks={"allow_private_urls": False}),
                      get_plugin_manager())


class DenyList:
    """A third-party check_sign_in implementation (sync): refuses one address before any account work."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    @hookimpl
    def check_sign_in(self, action, body, client_ip):
        self.seen.append((action, body.get("email"), client_ip))
        if body.get("email") == "blocked@example.com":
            raise Forbidden("sign-in refused", code="denied_by_policy")


async def test_check_sign_in_hook_refuses_before_account_work(make_client, make_config):
    deny = DenyList()
    client = await make_client(make_config(), get_plugin_manager([("denylist", deny)]))
    response = await _signup(client, "blocked@example.com")
    assert response.status == 403 and (await response.json())["error"]["code"] == "denied_by_policy"
    assert (await _login(client, "blocked@example.com")).status == 403
    assert (await _signup(client, "ok@example.com")).status == 200
    assert (await _login(client, "ok@example.com")).status == 200
    assert deny.seen == [("signup", "blocked@example.com", "127.0.0.1"), ("login", "blocked@example.com", "127.0.0.1"),
                         ("signup", "ok@example.com", "127.0.0.1"), ("login", "ok@example.com", "127.0.0.1")]


async def _subscription_plan(client):
    signed = await (await _signup(client, "shop@example.com", turnstile_token=GOOD)).json()
    headers = {"Authorization": f"Bearer {signed['data']['token']}"}
    response = await client.post("/dashboard/plans", headers=headers, json={
        "label": "Pro", "amount_usd": "5", "interval_sec": 2592000, "accepted_coins": ["BTC"]})
    assert response.status == 200, await response.text()
    return (await response.json())["data"]["id"], headers


async def test_the_subscription_form_is_guarded_by_the_captcha(captcha_client, provider):
    """Issue 29 item 5 (hook ``check_public_form``). Break caught: with a captcha configured, anyone (a script)
    could still enrol at ``/subscribe/<plan>``; now the form shows the widget and refuses a missing or forged
    token with the form again (403), creating nothing."""
    client = await captcha_client(site_key="0x4AAAAAAA-site")
    plan_id, headers = await _subscription_plan(client)
    page = await client.get(f"/subscribe/{plan_id}")
    html, policy = await page.text(), page.headers["Content-Security-Policy"]
    assert 'data-sitekey="0x4AAAAAAA-site"' in html and "https://challenges.cloudflare.com" in policy
    assert "frame-src https://challenges.cloudflare.com" in policy and "script-src 'nonce-" in policy
    calls = len(provider.calls)
    for form in ({}, {"cf-turnstile-response": "forged"}):
        refused = await client.post(f"/subscribe/{plan_id}", data=form, allow_redirects=False)
        assert refused.status == 403 and 'id="form-error"' in await refused.text(), form
    listed = await client.get("/dashboard/subscriptions", headers=headers)
    assert (await listed.json())["data"]["total"] == 0
    assert [c["response"] for c in provider.calls[calls:]] == ["forged"]  # no token: refused without asking
    accepted = await client.post(f"/subscribe/{plan_id}", data={"cf-turnstile-response": GOOD},
                                 allow_redirects=False)
    assert accepted.status == 303 and "/pay/" in accepted.headers["Location"]
    assert provider.calls[-1] == {"secret": SECRET, "response": GOOD, "remoteip": "127.0.0.1"}


class SubscribeDenyList:
    """A third-party check_public_form implementation: sees the form's name and the caller."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    @hookimpl
    def check_public_form(self, form, body, client_ip):
        self.seen.append((form, client_ip))
        raise Forbidden("not from here", code="denied_by_policy")


async def test_check_public_form_hook_refuses_before_anything_is_written(make_client, make_config):
    deny = SubscribeDenyList()
    client = await make_client(make_config(), get_plugin_manager([("denylist", deny)]))
    plan_id, headers = await _subscription_plan(client)
    refused = await client.post(f"/subscribe/{plan_id}", data={}, allow_redirects=False)
    assert refused.status == 403 and deny.seen == [("subscribe", "127.0.0.1")]
    assert (await (await client.get("/dashboard/subscriptions", headers=headers)).json())["data"]["total"] == 0
