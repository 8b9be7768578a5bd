"""Abuse that must not slip past a limit (issue 10): coin allowlists, rate-limit identity,
TOTP and login lockouts, framework leaks. Both databases."""

from __future__ import annotations

from typing import Any

import pytest

from orbchain.web.keys import GATEWAY
from tests.support import GatewayTestServer, bearer, raw_exchange, signup


async def scoped_key(client: Any, token: str, **fields: Any) -> str:
    body = {"label": "abuse", "scopes": ["payment:create", "payment:read"], **fields}
    response = await client.post("/dashboard/api-keys", json=body, headers=bearer(token))
    assert response.status == 200, await response.text()
    return (await response.json())["data"]["api_key"]


@pytest.fixture
async def quiet_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


# -- class 6: the coin allowlist bounds every coin a payment can be paid in ----------------


async def test_fiat_invoice_of_an_eth_only_key_is_payable_in_eth_only(quiet_client):
    client = quiet_client
    owner = await signup(client)
    headers = {"merchant_api_key": await scoped_key(client, owner.token, coin_allowlist=["ETH"])}
    refused = await client.post("/v1/payment/white-label", json={"currency": "BTC", "amount": "0.1"}, headers=headers)
    assert refused.status == 403 and (await refused.json())["error"]["code"] == "coin_not_allowed"

    response = await client.post("/v1/payment/invoice", json={"amount": "10", "currency": "USD"}, headers=headers)
    invoice = (await response.json())["data"]
    assert response.status == 200, invoice
    assert invoice["pay_currency"] == "ETH" and invoice["accepted_coins"] == ["ETH"]
    html = await (await client.get(f"/pay/{invoice['track_id']}")).text()
    assert 'name="pay_currency"' not in html and '<option value="BTC"' not in html  # no picker beyond ETH
    switched = await client.get(f"/pay/{invoice['track_id']}?pay_currency=BTC", allow_redirects=False)
    assert switched.status == 303
    after = await client.get(f"/v1/payment/{invoice['track_id']}", headers=headers)
    data = (await after.json())["data"]
    assert data["pay_currency"] == "ETH" and data["address"] == invoice["address"]


async def test_picker_of_an_allowlisted_invoice_offers_only_allowed_coins(quiet_client):
    client = quiet_client
    owner = await signup(client)
    headers = {"merchant_api_key": await scoped_key(client, owner.token, coin_allowlist=["ETH", "LTC"])}
    response = await client.post("/v1/payment/invoice", json={"amount": "10", "currency": "USD"}, headers=headers)
    invoice = (await response.json())["data"]
    assert response.status == 200 and sorted(invoice["accepted_coins"]) == ["ETH", "LTC"]
    html = await (await client.get(f"/pay/{invoice['track_id']}")).text()
    assert '<option value="LTC"' in html and '<option value="ETH"' in html and '<option value="BTC"' not in html
    for coin in ("BTC", "SOL", "USDT_ERC20"):
        await client.get(f"/pay/{invoice['track_id']}?pay_currency={coin}", allow_redirects=False)
        data = (await (await client.get(f"/v1/payment/{invoice['track_id']}", headers=headers)).json())["data"]
        assert data["pay_currency"] in ("ETH", "LTC")
    await client.get(f"/pay/{invoice['track_id']}?pay_currency=LTC", allow_redirects=False)
    data = (await (await client.get(f"/v1/payment/{invoice['track_id']}", headers=headers)).json())["data"]
    assert data["pay_currency"] == "LTC"


async def test_explicit_coins_outside_the_allowlist_are_403(quiet_client):
    client = quiet_client
    owner = await signup(client)
    headers = {"merchant_api_key": await scoped_key(client, owner.token, coin_allowlist=["ETH"])}
    for body in ({"amount": "10", "currency": "USD", "accepted_coins": ["ETH", "BTC"]},
                 {"amount": "10", "currency": "USD", "pay_currency": "BTC"},
                 {"amount": "0.1", "currency": "BTC"}):
        response = await client.post("/v1/payment/invoice", json=body, headers=headers)
        assert response.status == 403, body
        assert (await response.json())["error"]["code"] == "coin_not_allowed"
    # The legacy key has no allowlist: the same fiat invoice offers every accepted coin.
    response = await client.post("/v1/payment/invoice", json={"amount": "10", "currency": "USD"},
                                 headers=owner.merchant_key)
    assert "BTC" in (await response.json())["data"]["accepted_coins"]


async def test_an_allowlist_sharing_no_coin_with_the_account_is_403(quiet_client):
    client = quiet_client
    owner = await signup(client)
    headers = {"merchant_api_key": await scoped_key(client, owner.token, coin_allowlist=["ETH"])}
    changed = await client.put("/dashboard/settings/coins", json={"accepted_coins": ["BTC"]}, headers=owner.jwt)
    assert changed.status == 200
    response = await client.post("/v1/payment/invoice", json={"amount": "10", "currency": "USD"}, headers=headers)
    assert response.status == 403 and (await response.json())["error"]["code"] == "coin_not_allowed"


# -- class 3: rate limits count the authenticated principal ------------------------------------


def one_window(client: Any) -> int:
    """Pin the gateway clock to the start of a window; returns that start."""
    gateway = client.app[GATEWAY]
    start = gateway.now() - gateway.now() % 60 + 60
    gateway.clock = lambda: start + 1
    return start


def junk() -> dict[str, str]:
    import secrets

    return {"merchant_api_key": "ok_m_" + secrets.token_hex(16)}


async def statuses(client: Any, method: str, path: str, headers_for: Any, n: int, **kwargs: Any) -> list[int]:
    return [(await client.request(method, path, headers=headers_for(), **kwargs)).status for _ in range(n)]


@pytest.mark.parametrize("credential", ["payout_key", "general_key", "jwt"])
async def test_junk_key_headers_do_not_buy_fresh_read_buckets(make_client, make_config, credential):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"read_per_minute": 3}))
    owner = await signup(client)
    one_window(client)
    path = {"payout_key": "/v1/payout/nope", "general_key": "/v1/general/account/balance",
            "jwt": "/dashboard/account"}[credential]
    own = getattr(owner, credential)
    seen = await statuses(client, "GET", path, lambda: {**own, **junk()}, 4)
    assert seen[3] == 429 and 429 not in seen[:3], seen


async def test_junk_key_headers_do_not_buy_fresh_write_buckets(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"write_per_minute": 3}))
    owner = await signup(client)
    one_window(client)
    seen = await statuses(client, "POST", "/v1/payout", lambda: {**owner.payout_key, **junk()}, 4, json={})
    assert seen == [400, 400, 400, 429]
    # JWT writes (the TOTP endpoints among them) count per merchant, whatever else is sent.
    seen = await statuses(client, "POST", "/dashboard/mfa/disable", lambda: {**owner.jwt, **junk()}, 4,
                          json={"code": "123456"})
    assert seen == [403, 403, 403, 429]  # totp_setup_required: this account has no 2FA to disable


async def test_each_key_of_a_merchant_has_its_own_bucket(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"read_per_minute": 2}))
    owner = await signup(client)
    scoped = {"merchant_api_key": await scoped_key(client, owner.token)}
    one_window(client)
    assert await statuses(client, "GET", "/v1/payment", lambda: owner.merchant_key, 3) == [200, 200, 429]
    assert await statuses(client, "GET", "/v1/payment", lambda: scoped, 3) == [200, 200, 429]


async def test_failed_authentication_is_counted_per_ip_then_blocks_the_ip(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"auth_failures_per_minute": 5}))
    owner = await signup(client)
    start = one_window(client)
    seen = await statuses(client, "POST", "/v1/payout", lambda: {"payout_api_key": junk()["merchant_api_key"]}, 6,
                          json={})
    assert seen == [401] * 5 + [429]
    # Reads, other credentials and bad tokens from that IP are refused too, until the window ends.
    blocked = await client.get("/dashboard/account", headers=owner.jwt)
    body = await blocked.json()
    assert blocked.status == 429 and body["error"]["type"] == "rate_limit"
    assert 0 < int(blocked.headers["Retry-After"]) <= 60
    assert (await client.get("/v1/payment", headers={"merchant_api_key": "nope"})).status == 429
    # Public routes are not authentication and stay open.
    assert (await client.get("/v1/common/currencies")).status == 200
    client.app[GATEWAY].clock = lambda: start + 61
    assert (await client.get("/dashboard/account", headers=owner.jwt)).status == 200


async def test_bad_tokens_count_as_failed_authentication(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"auth_failures_per_minute": 3}))
    one_window(client)
    seen = await statuses(client, "GET", "/dashboard/account", lambda: bearer("not-a-token"), 4)
    assert seen == [401, 401, 401, 429]


async def test_per_key_override_still_applies_to_writes(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"write_per_minute": 2}))
    owner = await signup(client)
    generous = {"merchant_api_key": await scoped_key(client, owner.token, rate_limit_rpm=4)}
    one_window(client)
    seen = await statuses(client, "POST", "/v1/payment/invoice",
                          lambda: {**generous, "payout_api_key": junk()["merchant_api_key"]}, 5, json={})
    assert seen == [400] * 4 + [429]


# -- class 3: TOTP lockout shared by every endpoint that takes a code -----------------------------


async def enable_mfa(client: Any, owner: Any, now: list[int]) -> Any:
    import pyotp

    secret = (await (await client.post("/dashboard/mfa/setup", headers=owner.jwt)).json())["data"]["secret"]
    totp = pyotp.TOTP(secret)
    response = await client.post("/dashboard/mfa/verify", json={"code": totp.at(now[0])}, headers=owner.jwt)
    assert response.status == 200, await response.text()
    now[0] += 30
    return totp


def wrong(totp: Any, now: int) -> str:
    right = {totp.at(now + d) for d in (-30, 0, 30)}
    return next(c for c in ("000000", "111111", "222222", "333333") if c not in right)


@pytest.fixture
async def mfa_client(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"enabled": False}))
    owner = await signup(client)
    now = [client.app[GATEWAY].now()]
    client.app[GATEWAY].clock = lambda: now[0]
    return client, owner, now, await enable_mfa(client, owner, now)


async def test_five_bad_totp_codes_lock_every_code_endpoint(mfa_client):
    from tests.support import Devnet
    from tests.test_transfers import account_id, fund

    client, owner, now, totp = mfa_client
    payee = await account_id(client, await signup(client, "payee@example.com"))
    await fund(client, Devnet(client), owner)

    def transfer(code: str) -> dict[str, Any]:
        return {"to_account_id": payee, "coin": "BTC", "amount": "0.001", "totp_code": code}

    for _ in range(3):
        response = await client.post("/dashboard/mfa/disable", json={"code": wrong(totp, now[0])}, headers=owner.jwt)
        assert response.status == 401
    for _ in range(2):  # transfers take the same code and share the count
        response = await client.post("/dashboard/transfer", json=transfer(wrong(totp, now[0])), headers=owner.jwt)
        assert response.status == 401, await response.text()
    locked = await client.post("/dashboard/mfa/disable", json={"code": totp.at(now[0])}, headers=owner.jwt)
    body = await locked.json()
    assert locked.status == 429 and body["error"]["type"] == "rate_limit", body
    assert int(locked.headers["Retry-After"]) == 15 * 60
    for path, headers in (("/dashboard/transfer", owner.jwt), ("/v1/transfer", owner.merchant_key)):
        response = await client.post(path, json=transfer(totp.at(now[0])), headers=headers)
        assert response.status == 429, (path, await response.text())
    now[0] += 15 * 60 - 1
    assert (await client.post("/dashboard/mfa/disable", json={"code": totp.at(now[0])},
                              headers=owner.jwt)).status == 429
    now[0] += 1
    sent = await client.post("/v1/transfer", json=transfer(totp.at(now[0])), headers=owner.merchant_key)
    assert sent.status == 200, await sent.text()
    now[0] += 30
    unlocked = await client.post("/dashboard/mfa/disable", json={"code": totp.at(now[0])}, headers=owner.jwt)
    assert unlocked.status == 200, await unlocked.text()


async def test_a_right_code_forgives_earlier_failures(mfa_client):
    client, owner, now, totp = mfa_client
    for _ in range(4):
        assert (await client.post("/dashboard/mfa/disable", json={"code": wrong(totp, now[0])},
                                  headers=owner.jwt)).status == 401
    from orbchain.core.accounts import merchants as accounts

    assert await accounts.verify_totp(client.app[GATEWAY].db, owner.merchant_id, totp.at(now[0]), now=now[0])
    now[0] += 30
    for _ in range(5):
        assert (await client.post("/dashboard/mfa/disable", json={"code": wrong(totp, now[0])},
                                  headers=owner.jwt)).status == 401
    assert (await client.post("/dashboard/mfa/disable", json={"code": totp.at(now[0])},
                              headers=owner.jwt)).status == 429


async def test_parallel_totp_guesses_cannot_outrun_the_lockout(mfa_client):
    import asyncio

    client, owner, now, totp = mfa_client
    codes = [f"{n:06d}" for n in range(40) if f"{n:06d}" not in {totp.at(now[0] + d) for d in (-30, 0, 30)}][:30]
    results = await asyncio.gather(*(client.post("/dashboard/mfa/disable", json={"code": c}, headers=owner.jwt)
                                     for c in codes))
    seen = sorted(r.status for r in results)
    assert seen.count(401) == 5 and seen.count(429) == len(codes) - 5, seen


# -- class 3: login per-account throttle -----------------------------------------------------


@pytest.mark.parametrize("email", ["owner@example.com", "nobody@example.com"])
async def test_login_failures_lock_the_account_without_revealing_it(make_client, make_config, email):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"auth_per_minute": 1000}))
    await signup(client, "owner@example.com", "right-password")
    gateway = client.app[GATEWAY]
    now = [gateway.now()]
    gateway.clock = lambda: now[0]
    for _ in range(10):
        response = await client.post("/dashboard/auth/login", json={"email": email, "password": "wrong-password"})
        assert response.status == 401
    for password in ("wrong-password", "right-password"):
        response = await client.post("/dashboard/auth/login", json={"email": email.upper(), "password": password})
        body = await response.json()
        assert response.status == 429 and body["error"]["type"] == "rate_limit"
        assert body["message"] == "too many failed sign-ins; try again later"  # same for unknown e-mails
    other = await signup(client, "third@example.com", "right-password")  # other accounts are unaffected
    assert other.token
    now[0] += 15 * 60
    response = await client.post("/dashboard/auth/login", json={"email": email, "password": "right-password"})
    assert response.status == (200 if email == "owner@example.com" else 401)


async def test_password_change_shares_the_login_lockout(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"enabled": False}))
    owner = await signup(client, "owner@example.com", "right-password")
    for _ in range(10):
        response = await client.post("/dashboard/settings/change-password", headers=owner.jwt,
                                    json={"current_password": "nope-nope", "new_password": "another-pass"})
        assert response.status == 401, await response.text()
    response = await client.post("/dashboard/auth/login", json={"email": "owner@example.com",
                                                                "password": "right-password"})
    assert response.status == 429


# -- class 9: framework leaks (raw sockets against a real server) ------------------------------


@pytest.fixture
async def raw_server(config):
    """The app behind ``GatewayAppRunner`` (what ``orbchain serve`` runs) on a free port."""
    from orbchain.web.app import create_app

    server = GatewayTestServer(create_app(config))
    await server.start_server()
    try:
        yield server
    finally:
        await server.close()


def assert_envelope_400(status: int, headers: dict[str, str], body: bytes, *echo: bytes) -> None:
    import json

    assert status == 400, body
    assert headers["content-type"].startswith("application/json")
    payload = json.loads(body)
    assert payload["status"] == 400 and payload["data"] is None
    assert payload["error"]["type"] == "invalid_request" and payload["version"]
    for fragment in echo:
        assert fragment not in body, fragment
    assert headers["server"] == "orbchain"


async def test_oversized_header_gets_the_envelope_without_echo(raw_server):
    marker = b"ECHOME" * 17_000  # about 100 KB
    request = b"GET /v1/common/currencies HTTP/1.1\r\nHost: gw\r\nX-Big: " + marker + b"\r\n\r\n"
    status, headers, body = await raw_exchange(raw_server, request)
    assert_envelope_400(status, headers, body, b"ECHOME", b"X-Big")


async def test_oversized_request_line_gets_the_envelope(raw_server):
    request = b"GET /v1/payment/" + b"P" * 100_000 + b" HTTP/1.1\r\nHost: gw\r\n\r\n"
    status, headers, body = await raw_exchange(raw_server, request)
    assert_envelope_400(status, headers, body, b"PPPP")


async def test_oversized_request_line_to_a_page_gets_the_error_page(raw_server):
    """A page's address (here /pay/<id>) answers as a page even when the line is too long to parse (issue 29:
    it answered the API's JSON); never echoing the input."""
    request = b"GET /pay/" + b"P" * 100_000 + b" HTTP/1.1\r\nHost: gw\r\n\r\n"
    status, headers, body = await raw_exchange(raw_server, request)
    assert status == 400 and headers["content-type"].startswith("text/html"), body[:300]
    assert b"<title>Request refused" in body and b"PPPP" not in body and headers["server"] == "orbchain"


def test_the_path_of_a_refused_request_is_read_only_from_what_the_parser_kept():
    """web/server.py answers a page's address with the error page: the path comes from the parser's error,
    and anything that is not plainly a path (a header, an authority, nothing) gives None (the envelope)."""
    from aiohttp.http_exceptions import BadHttpMessage, InvalidURLError, LineTooLong

    from orbchain.web.server import requested_path

    assert requested_path(LineTooLong(b"/pay/P%41?x=1", 8190)) == "/pay/PA"
    assert requested_path(LineTooLong(b"/pay/" + b"P" * 95 + b"...", 8190)) == "/pay/" + "P" * 95
    assert requested_path(InvalidURLError("Invalid char in url:\n\n  b'GET /pay/x?q=\\xff HTTP/1.1'\n  ^")) == "/pay/x"
    for unknown in (LineTooLong(b"X-Big: value", 8190), LineTooLong(b"//host:99999999/x", 8190),
                    LineTooLong("text", 8190), InvalidURLError("no line quoted"), BadHttpMessage("bad"), None):
        assert requested_path(unknown) is None, unknown


@pytest.mark.parametrize("length", [b"-5", b"12abc<script>", b"1, 2", b"99999999999999999999999999"])
async def test_bad_content_length_gets_the_envelope_without_echo(raw_server, length):
    request = (b"POST /dashboard/auth/login HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
               b"Content-Length: " + length + b"\r\n\r\n{}")
    status, headers, body = await raw_exchange(raw_server, request)
    assert_envelope_400(status, headers, body, length)


async def test_no_version_banner_on_any_response(raw_server, client):
    for path in (b"/health", b"/v1/common/currencies", b"/missing", b"/pay/unknown-track"):
        status, headers, _ = await raw_exchange(
            raw_server, b"GET " + path + b" HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n")
        assert headers["server"] == "orbchain", (path, headers)
        assert not any("aiohttp" in v or "Python" in v for v in headers.values()), headers
    # The app sets it itself, also behind aiohttp's stock runner (the test client).
    response = await client.get("/health")
    assert response.headers["Server"] == "orbchain"
