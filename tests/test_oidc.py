"""Identity-provider sign-in (plugins/oidc, SPEC 4.7, 5.3) against a local OpenID Connect provider.

The stand-in (tests/oidc_standin.py) checks PKCE, client authentication and
the redirect URI itself and signs its ID tokens with ``cryptography``
directly, so nothing here is judged by the code under test.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import socket
from typing import Any, AsyncIterator

import aiohttp
import pyotp
import pytest
from aiohttp.test_utils import TestServer
from yarl import URL

from orbchain.core.infra.config import ConfigError
from orbchain.api import AccountSession
from orbchain.plugins.oidc import payload
from orbchain.plugins.oidc.settings import parse_settings
from orbchain.web.app import create_app
from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor, csrf_of

from .oidc_standin import CLIENT_ID, CLIENT_SECRET, OidcProvider, start_provider
from .support import RATE_LIMIT_TABLES, advance_clock, database_rows

CALLBACK = "/dashboard/auth/google/callback"
STEP = "/dashboard/auth/google/2fa"
REDIRECT_URI = "http://gateway.test" + CALLBACK
PASSWORD = "s3cret-pass-9"


@pytest.fixture
async def provider():
    fake, server = await start_provider()
    fake.redirect_uri = REDIRECT_URI
    yield fake
    await server.close()


def oidc_block(provider: OidcProvider, **extra: Any) -> dict[str, Any]:
    return {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
            "discovery_url": provider.issuer + "/.well-known/openid-configuration",
            "redirect_uri": provider.redirect_uri, **extra}


@pytest.fixture
def oidc_client(make_client, make_config, provider):
    async def make(**sections):
        return await make_client(make_config(plugin={"oidc": oidc_block(provider)}, **sections))
    return make


async def begin(client) -> str:
    """GET /dashboard/auth/google; returns the provider URL it redirects to."""
    response = await client.get("/dashboard/auth/google", allow_redirects=False)
    assert response.status == 302, await response.text()
    return response.headers["Location"]


async def consent(location: str) -> URL:
    """The browser at the provider: the user consents; returns the callback URL it is sent to."""
    async with aiohttp.ClientSession() as browser:
        async with browser.get(location, allow_redirects=False) as response:
            assert response.status == 302, await response.text()
            return URL(response.headers["Location"])


async def finish(client, callback: URL) -> aiohttp.ClientResponse:
    return await client.get(callback.path_qs, allow_redirects=False)


async def sign_in(client) -> dict[str, Any]:
    response = await finish(client, await consent(await begin(client)))
    assert response.status == 302, await response.text()
    location = response.headers["Location"]
    path, _, fragment = location.partition("#")
    assert path == "/app" and fragment.startswith("google-auth=")
    return payload.decode(fragment.removeprefix("google-auth="))


def landed_payload(response) -> dict[str, Any]:
    """The object of the ``google-auth`` payload a callback redirected with."""
    location = response.headers.get("Location", "")
    assert response.status == 302 and "#google-auth=" in location, (response.status, location)
    return payload.decode(location.split("#google-auth=")[1])


async def refused_page(response, status: int, words: str) -> str:
    text = await response.text()
    assert response.status == status, text
    assert response.content_type == "text/html"
    assert words in text.lower()
    return text


async def link_holder(client, token: str, password: str = PASSWORD) -> aiohttp.ClientResponse:
    """The account holder links their identity (issue 42: never by e-mail): the callback's answer."""
    response = await client.post("/dashboard/auth/google/link", json={"password": password},
                                 headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200, await response.text()
    return await finish(client, await consent((await response.json())["data"]["authorization_url"]))


async def account(client, token: str) -> dict[str, Any]:
    response = await client.get("/dashboard/account", headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200, await response.text()
    return (await response.json())["data"]["account"]


# -- the happy paths ---------------------------------------------------------------------------------


async def test_new_account_gets_keys_in_the_fragment_and_can_use_them(oidc_client, provider):
    client = await oidc_client()
    location = URL(await begin(client))
    query = location.query
    assert str(location.with_query(None)) == provider.issuer + "/o/authorize"
    assert query["client_id"] == CLIENT_ID and query["redirect_uri"] == REDIRECT_URI
    assert query["code_challenge_method"] == "S256" and set(query["scope"].split()) == {"openid", "email", "profile"}
    callback = await consent(str(location))
    response = await finish(client, callback)
    assert response.status == 302
    assert response.headers["Cache-Control"] == "no-store" and response.headers["Referrer-Policy"] == "no-referrer"
    assert "#google-auth=" in response.headers["Location"]
    data = payload.decode(response.headers["Location"].split("#google-auth=")[1])
    assert data["new_account"] is True and data["email"] == "ada@example.com"
    assert set(data["api_keys"]) == {"merchant_api_key", "payout_api_key", "general_api_key"}
    # The token and the keys work; the stand-in saw PKCE and client_secret_basic (it refuses otherwise).
    assert (await account(client, data["token"]))["id"] == data["merchant_id"]
    balance = await client.get("/v1/general/account/balance",
                               headers={"general_api_key": data["api_keys"]["general_api_key"]})
    assert balance.status == 200
    assert len(provider.token_requests) == 1 and provider.token_requests[0]["code_verifier"]
    # No password was set: a password login with that e-mail is refused like any wrong credential.
    login = await client.post("/dashboard/auth/login", json={"email": "ada@example.com", "password": PASSWORD})
    assert login.status == 401
    # Signing in again finds the same account, with no keys this time.
    again = await sign_in(client)
    assert again["merchant_id"] == data["merchant_id"] and again["new_account"] is False
    assert "api_keys" not in again


async def test_the_dashboard_lands_the_payload_and_signs_the_browser_in(oidc_client, provider):
    """Callback -> /app#google-auth=...: the dashboard takes the payload (posted by its script or pasted)."""
    client = await oidc_client()
    response = await finish(client, await consent(await begin(client)))
    location = response.headers["Location"]
    value = location.split("#google-auth=")[1]
    data = payload.decode(value)
    visitor = Visitor(client)
    await visitor.get("/app", expect=303)  # signed out: the browser goes to log in, the fragment rides along
    await visitor.get("/app/login")
    await visitor.submit("/app/fragment", {"kind": "google-auth", "value": value}, expect=200)
    shown = dict(re.findall(r'<code class="secret" id="(\w+_api_key)"[^>]*>([^<]+)</code>', visitor.page))
    assert shown == data["api_keys"]  # the new account's keys, shown this once
    home = await visitor.get("/app")
    assert "ada@example.com" in home and "payout_api_key" not in home
    await visitor.submit("/app/logout")
    # Signing in again (an existing account, no keys): without script the visitor pastes the whole address.
    again = await finish(client, await consent(await begin(client)))
    await visitor.get("/app/login")
    await visitor.submit("/app/fragment", {"value": "http://gateway.test" + again.headers["Location"]})
    assert "payout_api_key" not in await visitor.get("/app")
    await visitor.submit("/app/logout")
    # A payload whose merchant_id is not its token's, or not the plugin's format, signs nobody in.
    third = payload.decode((await finish(client, await consent(await begin(client)))).headers["Location"]
                           .split("#google-auth=")[1])
    forged = payload.encode(AccountSession("mer_other", data["email"], third["token"], None), False, third["landing"])
    for bad, status in ((forged, 400), (data["token"], 400)):
        await visitor.get("/app/login")
        await visitor.submit("/app/fragment", {"kind": "google-auth", "value": bad}, expect=status)
        await visitor.get("/app", expect=303)


async def test_a_verified_email_never_takes_an_account_its_holder_links_themselves(oidc_client, provider):
    """Issue 42: a password sign-up proves nobody holds its address, so a provider sign-in with that verified
    e-mail used to land in whatever account had registered it. It is refused now; the holder links their
    identity themselves (signed in, with their password), after which it signs in to their account."""
    client = await oidc_client()
    signup = await client.post("/dashboard/auth/signup", json={"email": "Ada@Example.com", "password": PASSWORD})
    merchant_id = (await signup.json())["data"]["merchant_id"]
    await refused_page(await finish(client, await consent(await begin(client))), 409, "not linked to that sign-in")
    assert await client.app[GATEWAY].db.fetch_val("SELECT COUNT(*) FROM oidc_identities", {}) == 0
    data = landed_payload(await link_holder(client, (await signup.json())["data"]["token"]))
    assert data["merchant_id"] == merchant_id and data["new_account"] is False and "api_keys" not in data
    assert (await sign_in(client))["merchant_id"] == merchant_id
    # Once linked, the identity keeps its account even after the e-mail changes at the provider.
    provider.user = {**provider.user, "email": "ada.lovelace@example.org", "email_verified": False}
    assert (await sign_in(client))["merchant_id"] == merchant_id
    login = await client.post("/dashboard/auth/login", json={"email": "ada@example.com", "password": PASSWORD})
    assert login.status == 200  # the password still works


@pytest.mark.parametrize("verified", [False, "false", None])
async def test_unverified_email_never_links_or_creates(oidc_client, provider, verified):
    client = await oidc_client()
    signup = await client.post("/dashboard/auth/signup", json={"email": "ada@example.com", "password": PASSWORD})
    assert signup.status == 200
    provider.user = {"sub": "777", "email": "ada@example.com", "email_verified": verified}
    await refused_page(await finish(client, await consent(await begin(client))), 403, "not verified")
    provider.user = {"sub": "778", "email": "grace@example.com", "email_verified": verified}
    await refused_page(await finish(client, await consent(await begin(client))), 403, "not verified")
    # Nothing was created or linked: grace@ is still free, and ada@'s holder can still link the identity.
    fresh = await client.post("/dashboard/auth/signup", json={"email": "grace@example.com", "password": PASSWORD})
    assert fresh.status == 200
    provider.user = {"sub": "777", "email": "ada@example.com", "email_verified": True}
    linked = landed_payload(await link_holder(client, (await signup.json())["data"]["token"]))
    assert linked["merchant_id"] == (await signup.json())["data"]["merchant_id"]


async def test_a_disabled_account_is_refused(oidc_client, provider):
    client = await oidc_client()
    first = await sign_in(client)
    await client.app[GATEWAY].db.execute("UPDATE merchants SET enabled = :f WHERE id = :id",
                                         {"f": False, "id": first["merchant_id"]})
    await refused_page(await finish(client, await consent(await begin(client))), 403, "disabled")
    signup = await client.post("/dashboard/auth/signup", json={"email": "bob@example.com", "password": PASSWORD})
    provider.user = {"sub": "2", "email": "bob@example.com", "email_verified": True}
    landed_payload(await link_holder(client, (await signup.json())["data"]["token"]))
    await client.app[GATEWAY].db.execute("UPDATE merchants SET enabled = :f WHERE id = :id",
                                         {"f": False, "id": (await signup.json())["data"]["merchant_id"]})
    await refused_page(await finish(client, await consent(await begin(client))), 403, "disabled")


async def test_the_holders_2fa_is_asked_after_the_provider_before_any_session(oidc_client, provider):
    """Issue 42: with the holder's 2FA on, the provider alone gave a session (main); now the code page comes
    first, the same pending sign-in the password page uses, and a recovery code passes it too."""
    client = await oidc_client(rate_limits={"auth_per_minute": 1000})
    gateway = client.app[GATEWAY]
    first = await sign_in(client)
    holder = {"Authorization": f"Bearer {first['token']}"}
    secret = (await (await client.post("/dashboard/mfa/setup", headers=holder)).json())["data"]["secret"]
    totp = pyotp.TOTP(secret)
    verified = await client.post("/dashboard/mfa/verify", headers=holder, json={"code": totp.at(gateway.now())})
    codes = (await verified.json())["data"]["recovery_codes"]

    response = await finish(client, await consent(await begin(client)))
    assert response.status == 302 and response.headers["Location"] == STEP, response.headers  # no payload
    step = response.cookies["orbchain_oidc_2fa"]
    assert step["httponly"] and step["samesite"] == "Strict" and step["path"] == STEP
    await refused_page(await client.post(STEP, data={"totp_code": ""}, allow_redirects=False), 401,
                       "authenticator app")
    await refused_page(await client.post(STEP, data={"totp_code": "000000" if totp.at(gateway.now()) != "000000"
                                                     else "111111"}, allow_redirects=False), 401, "invalid totp")
    advance_clock(gateway, 30)
    response = await client.post(STEP, data={"totp_code": totp.at(gateway.now())}, allow_redirects=False)
    landed = payload.decode(response.headers["Location"].split("#google-auth=")[1])
    assert landed["merchant_id"] == first["merchant_id"]
    again = await client.post(STEP, data={"totp_code": codes[0]}, allow_redirects=False)
    await refused_page(again, 400, "sign in again")  # the step works once

    response = await finish(client, await consent(await begin(client)))
    assert response.headers["Location"] == STEP
    response = await client.post(STEP, data={"totp_code": codes[0]}, allow_redirects=False)
    assert payload.decode(response.headers["Location"].split("#google-auth=")[1])["merchant_id"] == \
        first["merchant_id"]
    rows = await gateway.db.fetch_all("SELECT kind, details FROM security_events WHERE kind = :k ORDER BY id",
                                      {"k": "sign_in"})
    assert [json.loads(r["details"]).get("second_factor") for r in rows][-2:] == ["totp", "recovery_code"]


# -- ID tokens that must be refused ---------------------------------------------------------------


@pytest.mark.parametrize("tamper", ["wrong_key", "wrong_audience", "expired", "wrong_nonce", "wrong_issuer"])
async def test_a_bad_id_token_is_refused_and_creates_nothing(oidc_client, provider, tamper):
    client = await oidc_client()
    provider.tamper = tamper
    await refused_page(await finish(client, await consent(await begin(client))), 401, "could not be verified")
    # The e-mail is still free: no account was made from the refused token.
    signup = await client.post("/dashboard/auth/signup", json={"email": "ada@example.com", "password": PASSWORD})
    assert signup.status == 200


async def test_keys_rotated_at_the_provider_are_fetched_once_on_an_unknown_kid(oidc_client, provider):
    client = await oidc_client()
    await sign_in(client)
    await sign_in(client)
    assert provider.jwks_fetches == 1 and provider.discovery_fetches == 1  # cached
    provider.rotate()
    assert (await sign_in(client))["new_account"] is False
    assert provider.jwks_fetches == 2
    provider.tamper = "wrong_key"  # a known kid with a bad signature does not refetch
    await refused_page(await finish(client, await consent(await begin(client))), 401, "could not be verified")
    assert provider.jwks_fetches == 2


# -- state, code and provider failures ------------------------------------------------------------------


async def test_a_replayed_state_is_refused(oidc_client, provider):
    client = await oidc_client()
    callback = await consent(await begin(client))
    cookie = client.session.cookie_jar.filter_cookies(client.make_url(CALLBACK))["orbchain_oidc"].value
    assert (await finish(client, callback)).status == 302
    replay = await client.get(callback.path_qs, allow_redirects=False, headers={"Cookie": f"orbchain_oidc={cookie}"})
    await refused_page(replay, 400, "already used")
    assert len(provider.token_requests) == 1  # the replay never reached the provider


async def test_concurrent_callbacks_with_one_state_succeed_once(oidc_client, provider):
    client = await oidc_client()
    callback = await consent(await begin(client))
    responses = await asyncio.gather(*(finish(client, callback) for _ in range(3)))
    assert sorted(r.status for r in responses) == [302, 400, 400]


async def test_a_callback_in_another_browser_is_refused_and_the_real_one_still_works(oidc_client, provider):
    client = await oidc_client()
    callback = await consent(await begin(client))
    async with aiohttp.ClientSession() as other_browser:  # no state cookie: login CSRF
        async with other_browser.get(client.make_url(callback.path_qs), allow_redirects=False) as response:
            await refused_page(response, 400, "another browser")
        forged = f"{callback.query['state']}.9999999999.{'0' * 64}"
        async with other_browser.get(client.make_url(callback.path_qs), allow_redirects=False,
                                     headers={"Cookie": f"orbchain_oidc={forged}"}) as response:
            await refused_page(response, 400, "another browser")
    assert (await finish(client, callback)).status == 302


async def test_an_expired_code_is_refused(oidc_client, provider):
    client = await oidc_client()
    callback = await consent(await begin(client))
    provider.expire_codes()
    await refused_page(await finish(client, callback), 401, "refused this sign-in")


async def test_an_expired_state_is_refused(oidc_client, provider):
    client = await oidc_client()
    callback = await consent(await begin(client))
    gateway = client.app[GATEWAY]
    real_now = gateway.now
    gateway.now = lambda: real_now() + 601  # type: ignore[method-assign]
    try:
        await refused_page(await finish(client, callback), 400, "please start again")
    finally:
        gateway.now = real_now  # type: ignore[method-assign]


async def test_the_user_declining_at_the_provider(oidc_client, provider):
    client = await oidc_client()
    callback = await consent(await begin(client))
    declined = callback.with_query(error="access_denied", state=callback.query["state"])
    await refused_page(await finish(client, declined), 401, "cancelled or refused")
    assert provider.token_requests == []


async def test_provider_down_gives_a_clear_page_never_a_500(oidc_client, provider):
    client = await oidc_client()
    provider.down = True
    response = await client.get("/dashboard/auth/google", allow_redirects=False)
    await refused_page(response, 503, "cannot be reached")
    provider.down = False
    callback = await consent(await begin(client))
    provider.down = True  # down between the redirect and the callback: the token endpoint answers 503 HTML
    await refused_page(await finish(client, callback), 503, "cannot be reached")
    provider.down = False
    assert (await sign_in(client))["new_account"] is True


async def test_provider_unreachable_gives_a_clear_page(make_client, make_config, provider):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    block = oidc_block(provider, discovery_url=f"http://127.0.0.1:{port}/.well-known/openid-configuration",
                       timeout_seconds=2)
    client = await make_client(make_config(plugin={"oidc": block}))
    await refused_page(await client.get("/dashboard/auth/google", allow_redirects=False), 503, "cannot be reached")


async def test_discovery_for_another_issuer_is_refused(make_client, make_config, provider):
    # A discovery document naming another issuer (a mix-up) is not trusted.
    block = oidc_block(provider, discovery_url=provider.issuer.replace("127.0.0.1", "localhost")
                       + "/.well-known/openid-configuration")
    client = await make_client(make_config(plugin={"oidc": block}))
    await refused_page(await client.get("/dashboard/auth/google", allow_redirects=False), 503, "cannot be reached")


async def test_unconfigured_routes_answer_503_and_are_documented(client):
    for path in ("/dashboard/auth/google", CALLBACK + "?code=x&state=y"):
        await refused_page(await client.get(path, allow_redirects=False), 503, "not configured")
    document = await (await client.get("/openapi.json")).json()
    assert "get" in document["paths"]["/dashboard/auth/google"]
    assert "302" in document["paths"][CALLBACK]["get"]["responses"]


async def test_sign_in_routes_count_in_the_auth_rate_limit(oidc_client, provider):
    client = await oidc_client(rate_limits={"enabled": True, "auth_per_minute": 3})
    for _ in range(3):
        await begin(client)
    response = await client.get("/dashboard/auth/google", allow_redirects=False)
    assert response.status == 429 and response.headers["Retry-After"]
    response = await client.get(CALLBACK + "?code=a&state=b", allow_redirects=False)
    assert response.status == 429


async def test_state_survives_a_second_worker(make_config, aiohttp_client, provider):
    """Two app processes on one database (``serve --workers 2``): start on one, finish on the other."""
    config = make_config(plugin={"oidc": oidc_block(provider)})
    first, second = await aiohttp_client(create_app(config)), await aiohttp_client(create_app(config))
    callback = await consent(await begin(first))
    cookie = first.session.cookie_jar.filter_cookies(first.make_url(CALLBACK))["orbchain_oidc"].value
    response = await second.get(callback.path_qs, allow_redirects=False,
                                headers={"Cookie": f"orbchain_oidc={cookie}"})
    assert response.status == 302 and "#google-auth=" in response.headers["Location"]
    replay = await first.get(callback.path_qs, allow_redirects=False)
    await refused_page(replay, 400, "already used")


# -- every answer of the browser routes is a page (issue 29) -----------------------------------------------


HOSTILE_QUERIES = ["state=a%00b&code=x", "state=%FF%FE&code=x", "state=abc&code=%00", "error=%00&state=x",
                   "%FF=1", "state=x&state=y&code=1&code=2", "state=" + "s" * 6000, "code=" + "c" * 6000,
                   "error=" + "e" * 6000 + "&state=x", "state=%E2%80%AE&code=%F0%9F%92%A5", "state=\u00e9"]


@pytest.mark.parametrize("path", ["/dashboard/auth/google", CALLBACK])
async def test_the_browser_routes_answer_every_hostile_input_with_a_page(oidc_client, provider, path):
    """NUL, non-UTF-8, repeated and long parameters, and methods the routes lack: always the HTML error page
    (never the API's JSON, never a 500). The 405s answered JSON before."""
    client = await oidc_client()
    for query in HOSTILE_QUERIES:
        response = await client.get(f"{path}?{query}", allow_redirects=False)
        assert response.status in (302, 400), (query, response.status)  # start ignores its query: 302
        assert response.status == 302 or response.content_type == "text/html", (query, await response.text())
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        response = await client.request(method, path + "?state=x", allow_redirects=False)
        assert (response.status, response.content_type) == (405, "text/html"), method
        assert "<title>Request refused" in await response.text()


async def test_a_request_line_too_long_for_the_server_still_gets_a_page(make_config, provider):
    """Served as ``orbchain serve`` serves (GatewayAppRunner): a callback whose state (or code, or error) is
    10 kB or 100 kB is refused by the HTTP parser before any route runs. It answered the API's JSON envelope;
    the address is a page's, so the answer is the error page, never echoing the input."""
    from .support import GatewayTestServer, raw_exchange

    server = GatewayTestServer(create_app(make_config(plugin={"oidc": oidc_block(provider)})))
    await server.start_server()
    try:
        for target in (CALLBACK + "?state=" + "S" * 10_000 + "&code=x", CALLBACK + "?code=" + "S" * 100_000,
                       CALLBACK + "?error=access_denied&state=" + "S" * 10_000,
                       "/dashboard/auth/google?x=" + "S" * 10_000):
            status, headers, body = await raw_exchange(server, f"GET {target} HTTP/1.1\r\nHost: gw\r\n\r\n".encode())
            assert status == 400 and headers["content-type"].startswith("text/html"), (target[:60], body[:200])
            assert b"<title>Request refused" in body and b"SSSS" not in body
        # Raw bytes that are not UTF-8 (or NUL) in the request line, which browsers would percent-encode: a page.
        for raw in (b"?state=\xff\xfe&code=x", b"?state=a\x00b", b"?code=\x01"):
            status, headers, body = await raw_exchange(server, b"GET " + CALLBACK.encode() + raw
                                                       + b" HTTP/1.1\r\nHost: gw\r\n\r\n")
            assert status == 400 and headers["content-type"].startswith("text/html"), (raw, body[:200])
        # The API's addresses keep the JSON envelope.
        status, headers, body = await raw_exchange(
            server, b"GET /v1/payment/" + b"S" * 10_000 + b" HTTP/1.1\r\nHost: gw\r\n\r\n")
        assert status == 400 and headers["content-type"].startswith("application/json")
    finally:
        await server.close()


# -- the landing: a payload counts in the browser that started its sign-in, once (issue 29) ----------


@contextlib.asynccontextmanager
async def another_browser(client) -> AsyncIterator[aiohttp.ClientSession]:
    """A second browser on the same server: its own cookie jar, nothing shared with ``client``'s."""
    async with aiohttp.ClientSession(base_url=str(client.make_url("/")),
                                     cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
        yield browser


async def own_payload(client) -> str:
    """Sign in at the provider in ``client``'s browser; the ``google-auth`` value it is redirected with."""
    response = await finish(client, await consent(await begin(client)))
    assert response.status == 302, await response.text()
    return response.headers["Location"].split("#google-auth=")[1]


async def land(visitor: Visitor, value: str, *, page: str = "/app/login", expect: int) -> Any:
    """Post a payload from a dashboard page (what its script does with the fragment)."""
    await visitor.get(page)
    return await visitor.submit("/app/fragment", {"kind": "google-auth", "value": value}, expect=expect)


async def test_an_attackers_payload_opened_by_a_signed_out_victim_signs_nobody_in(oidc_client, provider):
    """Login CSRF, issue 29: the attacker signs in to their own account and sends the victim the link
    ``/app#google-auth=<their payload>``. Before, the victim's browser was signed in to the attacker's account
    (303 to /app): anything entered next (webhook URL, payout addresses) landed with the attacker."""
    client = await oidc_client()
    started = await client.get("/dashboard/auth/google", allow_redirects=False)
    cookie = started.cookies["orbchain_oidc_landing"]  # the browser key: HttpOnly, on the app's path only
    assert cookie["path"] == "/app" and cookie["httponly"] and cookie["samesite"] == "Lax"
    value = await own_payload(client)  # the attacker's browser
    async with another_browser(client) as browser:
        victim = Visitor(browser)
        await land(victim, value, expect=403)
        assert "not started in this browser" in victim.page and "nothing changed" in victim.page
        await victim.get("/app", expect=303)  # still signed out
        await victim.get("/app/login")  # without script: the victim pastes the address, with the same answer
        await victim.submit("/app/fragment", {"value": f"http://gateway.test/app#google-auth={value}"}, expect=403)
        await victim.get("/app", expect=303)
        # A victim who started a sign-in of their own holds a browser key, but not the attacker's.
        assert (await browser.get("/dashboard/auth/google", allow_redirects=False)).status == 302
        await land(victim, value, expect=403)
        await victim.get("/app", expect=303)
    # Refused means nothing changed, not even the landing: in the attacker's own browser it still works
    # (a new account: its keys are shown this once).
    attacker = Visitor(client)
    await land(attacker, value, expect=200)
    assert 'id="payout_api_key"' in attacker.page


async def test_an_attackers_payload_opened_by_a_signed_in_victim_keeps_the_victims_session(oidc_client, provider):
    """Issue 29, the signed-in half: before, the payload replaced the victim's session with the attacker's."""
    client = await oidc_client()
    value = await own_payload(client)
    async with another_browser(client) as browser:
        victim = Visitor(browser)
        await victim.sign_up("victim@example.com")
        await land(victim, value, page="/app", expect=403)
        assert "not started in this browser" in victim.page and "victim@example.com" in victim.page
        home = await victim.get("/app")
        assert "victim@example.com" in home and "ada@example.com" not in home


async def test_a_payload_lands_once_and_not_after_it_expires(oidc_client, provider):
    """Single use: posted four times at once, one signs in; posted again after signing out, refused.
    Before, the same payload signed the browser in every time, for as long as its token lived."""
    client = await oidc_client()
    value = await own_payload(client)
    visitor = Visitor(client)
    await visitor.get("/app/login")
    form = {"csrf_token": csrf_of(visitor.page), "kind": "google-auth", "value": value}
    answers = await asyncio.gather(*(client.post("/app/fragment", data=form, allow_redirects=False)
                                     for _ in range(4)))
    assert sorted(a.status for a in answers) == [200, 400, 400, 400]  # 200: a new account's keys, shown once
    await visitor.get("/app")
    await visitor.submit("/app/logout")
    await land(visitor, value, expect=400)
    assert "already used or has expired" in visitor.page
    await visitor.get("/app", expect=303)
    # A landing not used within login_ttl_seconds (default 600) has expired.
    late = await own_payload(client)
    gateway = client.app[GATEWAY]
    real_now = gateway.now
    gateway.now = lambda: real_now() + 601  # type: ignore[method-assign]
    try:
        await land(visitor, late, expect=400)
    finally:
        gateway.now = real_now  # type: ignore[method-assign]
    await visitor.get("/app", expect=303)


async def test_a_payload_lands_once_across_two_workers(make_config, aiohttp_client, provider):
    """Two app processes on one database (``serve --workers 2``): the same browser posts the payload to both
    at once; ``DELETE ... RETURNING`` hands the landing to one request."""
    config = make_config(plugin={"oidc": oidc_block(provider)})
    first, second = await aiohttp_client(create_app(config)), await aiohttp_client(create_app(config))
    value = await own_payload(first)
    visitor = Visitor(first)
    await visitor.get("/app/login")
    form = {"csrf_token": csrf_of(visitor.page), "kind": "google-auth", "value": value}
    cookies = "; ".join(f"{c.key}={c.value}" for c in first.session.cookie_jar)  # this browser, at any worker
    answers = await asyncio.gather(
        first.post("/app/fragment", data=form, allow_redirects=False),
        *(second.post("/app/fragment", data=form, headers={"Cookie": cookies}, allow_redirects=False)
          for _ in range(3)))
    assert sorted(a.status for a in answers) == [200, 400, 400, 400]  # 200: a new account's keys, shown once


async def test_a_payload_binds_its_token_and_needs_the_landing(oidc_client, provider):
    """The landing covers the exact token issued: a payload with another token of the same account (one the
    attacker got by password) is refused and spends nothing; a payload in the old shape (no landing) is refused."""
    client = await oidc_client()
    signup = await client.post("/dashboard/auth/signup", json={"email": "ada@example.com", "password": PASSWORD})
    password_token = (await signup.json())["data"]["token"]
    landed_payload(await link_holder(client, password_token))
    value = await own_payload(client)
    data = payload.decode(value)
    swapped = payload.encode(AccountSession(data["merchant_id"], data["email"], password_token, None), False,
                             data["landing"])
    old_shape = base64.urlsafe_b64encode(json.dumps({key: data[key] for key in data if key != "landing"})
                                         .encode()).rstrip(b"=").decode()
    visitor = Visitor(client)
    await land(visitor, swapped, expect=403)
    await land(visitor, old_shape, expect=400)
    await visitor.get("/app", expect=303)
    await land(visitor, value, expect=303)  # the genuine payload was not spent by either


async def test_a_payload_is_refused_where_sign_in_is_not_configured(client):
    """Without the oidc plugin configured no landing service exists: any payload is refused with a page (503)."""
    fake = payload.encode(AccountSession("mer_1", "a@example.com", "a.b.c", None), False, "x" * 43)
    visitor = Visitor(client)
    await land(visitor, fake, expect=503)
    assert "not enabled" in visitor.page


@pytest.mark.parametrize("block, key", [
    ({"client_id": "x"}, "client_secret"),
    ({"client_id": "x", "client_secret": "y", "discovery_url": "ftp://x"}, "discovery_url"),
    ({"client_id": "x", "client_secret": "y", "redirect_uri": "https://g.example/elsewhere"}, "redirect_uri"),
    ({"client_id": "x", "client_secret": "y", "scopes": ["profile"]}, "scopes"),
    ({"client_id": "x", "client_secret": "y", "timeout_seconds": 0}, "timeout_seconds"),
    ({"client_id": "x", "client_secret": "y", "app_path": "https://evil.example/"}, "app_path"),
    ({"client_secret": "y", "clientid": "x"}, "clientid"),
])
def test_bad_config_blocks_name_the_key(block, key):
    with pytest.raises(ConfigError, match=f"plugin.oidc.{key}"):
        parse_settings(block, base_url="https://pay.example", allow_plain_http=False)


def test_defaults_point_at_google_and_this_server():
    settings = parse_settings({"client_id": "x", "client_secret": "s3cr3t-value"}, base_url="https://pay.example/",
                              allow_plain_http=False)
    assert settings.discovery_url == "https://accounts.google.com/.well-known/openid-configuration"
    assert settings.redirect_uri == "https://pay.example/dashboard/auth/google/callback"
    assert "s3cr3t-value" not in repr(settings)
    with pytest.raises(ConfigError, match="discovery_url"):
        parse_settings({"discovery_url": "http://idp.local/.well-known/openid-configuration"},
                       base_url="https://pay.example", allow_plain_http=False)


async def test_server_start_refuses_a_bad_block(make_config, aiohttp_client):
    with pytest.raises(ConfigError, match="plugin.oidc.client_secret"):
        await aiohttp_client(create_app(make_config(plugin={"oidc": {"client_id": "x"}})))


def test_payload_round_trip_is_url_safe():
    from orbchain.api import AccountSession
    session = AccountSession("mer_1", "a@example.com", "tok.en.x", {"merchant_api_key": "ok_m_+/="})
    encoded = payload.encode(session, True, "landing-value")
    assert set(encoded) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    decoded = payload.decode(encoded)
    assert decoded["api_keys"] == {"merchant_api_key": "ok_m_+/="} and decoded["landing"] == "landing-value"


async def test_the_redirect_chain_in_headless_chromium(make_config, provider, tmp_path):
    """A real browser: gateway -> provider -> callback -> /app#google-auth=... -> the dashboard's script
    posts the fragment -> signed in, the new account's keys shown once; the payload never rode a URL."""
    from aiohttp import web

    from .browser import Browser

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    provider.redirect_uri = base + CALLBACK
    config = make_config(server={"base_url": base}, plugin={"oidc": oidc_block(provider)})
    app = create_app(config)
    seen: list[str] = []

    @web.middleware
    async def record(request, handler):
        seen.append(str(request.rel_url))
        return await handler(request)

    app.middlewares.insert(0, record)
    server = TestServer(app, host="127.0.0.1", port=port)
    await server.start_server()
    try:
        async with Browser.launch(tmp_path, javascript=True) as browser:
            await browser.goto(base + "/dashboard/auth/google")
            keys: dict[str, str] = {}
            for _ in range(100):  # the script submits the fragment form: a second navigation
                try:
                    keys = await browser.evaluate(
                        "Object.fromEntries([...document.querySelectorAll('code.secret')].map(e => [e.id,"
                        " e.textContent.trim()]))") or {}
                except Exception:  # noqa: BLE001 - evaluating mid-navigation
                    keys = {}
                if keys:
                    break
                await asyncio.sleep(0.1)
            assert set(keys) == {"merchant_api_key", "payout_api_key", "general_api_key"}, await browser.html()
            assert "#" not in await browser.url()
            await browser.goto(base + "/app")
            assert "ada@example.com" in await browser.html() and "payout_api_key" not in await browser.html()
        posted = [url for url in seen if url.startswith("/app")]
        assert "/app" in posted and "/app/fragment" in posted
        assert all("google-auth" not in url and "eyJ" not in url for url in seen), seen
        # Without JavaScript: the same journey; the visitor pastes the address bar into the page's form.
        async with Browser.launch(tmp_path / "js-off") as browser:
            await browser.goto(base + "/dashboard/auth/google")
            address = await browser.url()  # /app sent the browser to /app/login; the fragment stays in the bar
            assert "/app/login" in address and "#google-auth=" in address
            await browser.evaluate(f"document.querySelector('#fragment-value').value = {json.dumps(address)}")
            await browser.click("#fragment-fallback button[type=submit]")
            await browser.goto(base + "/app")
            assert await browser.text("#who") == "ada@example.com"
        # The attack (issue 29) in a real browser: another person's payload, sent as a link, opened with
        # the script on. The script posts it; the browser stays signed out and the page says why.
        provider.user = {"sub": "666", "email": "mallory@example.com", "email_verified": True}
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as attacker:  # an IP host
            async with attacker.get(base + "/dashboard/auth/google", allow_redirects=False) as started:
                callback = await consent(started.headers["Location"])
            async with attacker.get(callback, allow_redirects=False) as landed:
                link = base + landed.headers["Location"]
        async with Browser.launch(tmp_path / "victim", javascript=True) as browser:
            await browser.goto(link)
            for _ in range(100):  # the script posts the fragment: one more navigation
                if await browser.text("#form-error"):
                    break
                await asyncio.sleep(0.1)
            assert "not started in this browser" in (await browser.text("#form-error") or "")
            await browser.goto(base + "/app")
            assert await browser.text("#who") is None
    finally:
        await server.close()


async def test_maintenance_mode_signs_in_but_creates_no_account(oidc_client, provider):
    client = await oidc_client()
    first = await sign_in(client)
    client.app[GATEWAY].maintenance = True
    assert (await sign_in(client))["merchant_id"] == first["merchant_id"]
    provider.user = {"sub": "99", "email": "new@example.com", "email_verified": True}
    # The devnet chain's background scan may mine its genesis and record it at any moment, and the scheduler
    # records each job's tick; those rows are the chain's and the scheduler's, not the sign-in's, so they are
    # left out of the comparison.
    skip = RATE_LIMIT_TABLES | {"devnet_blocks", "devnet_txs", "chain_blocks", "job_ticks"}
    before = await database_rows(client.app[GATEWAY].db, skip)  # the pending sign-in is written and spent between
    await refused_page(await finish(client, await consent(await begin(client))), 503, "maintenance")
    assert await database_rows(client.app[GATEWAY].db, skip) == before


@pytest.mark.parametrize("cookie", [
    "state.\u00b2.{mac}",             # isdigit() passed it, then int() raised: a 500 on the callback
    "state.1" + "0" * 5000 + ".{mac}",  # int() of over 4,300 digits raises
    "state.{expires}.\u00e9" + "0" * 63,  # compare_digest refuses non-ASCII text (TypeError)
    "state.{expires}.{mac}x",
    "\udcff.{expires}.{mac}",
])
async def test_a_forged_login_cookie_is_simply_not_ours(gateway, cookie):
    """The login-state cookie is the browser's to write: any shape but ours reads as "no cookie", never raises."""
    from orbchain.core.keys.secrets import load_secrets
    from orbchain.plugins.oidc import logins

    gateway.secrets = gateway.secrets or load_secrets(gateway.config)
    expires = gateway.now() + 600
    mac = logins._mac(gateway, "state", expires)
    assert logins.cookie_matches(gateway, f"state.{expires}.{mac}", "state")
    assert not logins.cookie_matches(gateway, cookie.format(expires=expires, mac=mac), "state")
