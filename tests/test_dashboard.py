"""The dashboard at /app over HTTP, on SQLite and PostgreSQL: session cookie, CSRF, idle timeout, pages.

A browser is a cookie jar and forms here (``tests/dashboard_support.py``);
tests/test_dashboard_browser.py drives the same pages in Chromium.
"""

from __future__ import annotations

import pytest
from yarl import URL

from orbchain.web.keys import GATEWAY

from .dashboard_support import PASSWORD, Visitor, csrf_of


@pytest.fixture
async def app_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


def _set_cookies(response) -> dict[str, str]:
    return {h.split("=", 1)[0]: h for h in response.headers.getall("Set-Cookie", [])}


async def test_signup_shows_keys_once_and_sets_a_locked_down_cookie(app_client):
    visitor = Visitor(app_client)
    await visitor.get("/app/signup")
    response = await visitor.submit("/app/signup", {"email": "a@example.com", "password": PASSWORD}, expect=200)
    cookie = _set_cookies(response)["orb_session"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/app" in cookie
    assert "Secure" not in cookie  # plain http here; see the https test
    assert "merchant_api_key" in visitor.page
    home = await visitor.get("/app")
    assert "a@example.com" in home and "Balances" in home
    # The keys were shown once: nothing on the dashboard shows them again.
    keys = await app_client.get("/app")
    assert "payout_api_key" not in await keys.text()


async def test_secure_cookie_when_served_over_https(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False},
                                           server={"base_url": "https://pay.example.com"}))
    response = await client.get("/app/signup")
    cookie = _set_cookies(response)["orb_pre"]
    assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    # The test client speaks plain http, so the browser-side jar keeps the Secure cookie to itself.
    assert not [c for c in client.session.cookie_jar.filter_cookies(client.make_url("/app/signup"))]


async def test_signed_out_pages_redirect_to_login(app_client):
    response = await app_client.get("/app/payments?status=PAID", allow_redirects=False)
    assert response.status == 303
    location = URL(response.headers["Location"])
    assert location.path == "/app/login" and location.query["next"] == "/app/payments?status=PAID"


async def test_login_logout_and_a_bad_password(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("b@example.com")
    await visitor.get("/app")
    await visitor.submit("/app/logout")
    await visitor.get("/app", expect=303)
    await visitor.get("/app/login")
    await visitor.submit("/app/login", {"email": "b@example.com", "password": "wrong password!"}, expect=401)
    assert "Invalid credentials" in visitor.page and 'value="b@example.com"' in visitor.page
    await visitor.get("/app", expect=303)
    await visitor.sign_in("b@example.com")
    await visitor.get("/app")


async def test_login_goes_back_where_it_was_asked_and_never_off_site(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("n@example.com")
    await visitor.submit("/app/logout")
    for target, landing in (("/app/payments", "/app/payments"), ("https://evil.example/", "/app"),
                            ("//evil.example", "/app")):
        await visitor.get("/app/login")
        response = await visitor.submit("/app/login", {"email": "n@example.com", "password": PASSWORD,
                                                       "next": target})
        assert response.headers["Location"] == landing
        await visitor.get("/app")
        await visitor.submit("/app/logout")


async def test_forms_without_the_csrf_token_are_refused_and_change_nothing(app_client):
    gateway = app_client.app[GATEWAY]
    visitor = Visitor(app_client)
    await visitor.sign_up("c@example.com")
    await visitor.get("/app/payments/new")
    form = {"type": "invoice", "amount": "5", "currency": "BTC"}
    await visitor.submit("/app/payments/new", form, token="", expect=403)
    await visitor.get("/app/payments/new")
    token = csrf_of(visitor.page)
    await visitor.submit("/app/payments/new", form, token=token + "x", expect=403)
    # A cross-site POST carries the browser's cookie but another Origin: refused even with a token.
    response = await app_client.post("/app/payments/new", data={**form, "csrf_token": token},
                                     headers={"Origin": "https://evil.example"}, allow_redirects=False)
    assert response.status == 403
    merchant_id = (await gateway.db.fetch_one("SELECT id FROM merchants WHERE email = 'c@example.com'"))["id"]
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM payments WHERE merchant_id = :m",
                                      {"m": merchant_id}) == 0
    await visitor.submit("/app/logout", token="", expect=403)  # sign-out is a form like any other
    await visitor.submit("/app/payments/new", form, token=token)  # the real token still works
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM payments WHERE merchant_id = :m",
                                      {"m": merchant_id}) == 1
    # The sign-in forms too (login CSRF): without the token of the page, no session.
    app_client.session.cookie_jar.clear()
    await visitor.get("/app/login")
    await visitor.submit("/app/login", {"email": "c@example.com", "password": PASSWORD}, token="nope", expect=403)
    await visitor.get("/app", expect=303)


async def test_the_cookie_never_authenticates_the_json_api(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("d@example.com")
    await visitor.get("/app")
    for path in ("/dashboard/account", "/dashboard/balances", "/dashboard/api-keys"):
        response = await app_client.get(path)
        assert response.status == 401, path
    response = await app_client.post("/dashboard/create-payment", json={"type": "invoice", "amount": "1"})
    assert response.status == 401


async def test_idle_session_ends_and_activity_keeps_it(app_client):
    gateway = app_client.app[GATEWAY]
    start = gateway.now()
    visitor = Visitor(app_client)
    await visitor.sign_up("e@example.com")
    gateway.clock = lambda: start + 25 * 60
    await visitor.get("/app")  # activity moves the idle clock (the cookie is rewritten)
    gateway.clock = lambda: start + 50 * 60
    await visitor.get("/app")
    gateway.clock = lambda: start + 81 * 60  # 31 minutes without a request
    response = await app_client.get("/app", allow_redirects=False)
    assert response.status == 303 and response.headers["Location"] == "/app/login?notice=idle"
    page = await visitor.get("/app/login?notice=idle")
    assert "inactivity" in page


async def test_idle_minutes_is_configurable_and_checked(make_client, make_config):
    from orbchain.core.config import ConfigError
    from orbchain.plugins.dashboard.settings import parse_settings

    assert parse_settings({"idle_minutes": 5}).idle_seconds == 300
    for bad in ({"idle_minutes": 0}, {"idle_minutes": "5"}, {"idle": 5}):
        with pytest.raises(ConfigError):
            parse_settings(bad)
    client = await make_client(make_config(scheduler={"enabled": False}, plugin={"dashboard": {"idle_minutes": 1}}))
    gateway = client.app[GATEWAY]
    start = gateway.now()
    visitor = Visitor(client)
    await visitor.sign_up("f@example.com")
    gateway.clock = lambda: start + 2 * 60
    await visitor.get("/app", expect=303)


async def test_a_tampered_cookie_is_no_session(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("g@example.com")
    cookie = next(c for c in app_client.session.cookie_jar if c.key == "orb_session")
    token, seen, mac = cookie.value.split("~")
    jar = app_client.session.cookie_jar
    for value, status in ((f"{token}~{seen}~{mac}", 200), (f"{token}~{int(seen) + 3600}~{mac}", 303),
                          (f"{token}~{seen}~{mac[:-2]}", 303), (token, 303)):
        jar.clear()
        jar.update_cookies({"orb_session": value}, app_client.make_url("/app"))
        response = await app_client.get("/app", allow_redirects=False)
        assert response.status == status, value
