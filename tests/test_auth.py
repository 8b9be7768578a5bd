"""Credentials (core/accounts/auth.py) and the auth middleware (web/auth.py) on both databases."""

from __future__ import annotations

import hashlib

import jwt
import pytest
from aiohttp import web

from orbchain.core.accounts import auth
from orbchain.core.types.errors import Forbidden, Unauthorized
from orbchain.web.app import create_app
from orbchain.web.auth import Principal, ensure_coin_allowed, principal_of, requires
from orbchain.web.envelope import envelope, read_json
from orbchain.web.keys import GATEWAY

from .support import bearer
from .support import signup_data as signup

# -- pure helpers ------------------------------------------------------------------------


def test_password_hash_round_trip_and_format():
    stored = auth.hash_password("correct horse battery")
    scheme, n, r, p, salt, digest = stored.split("$")
    assert scheme == "scrypt" and int(n) >= 2**14 and salt and digest
    assert "correct horse" not in stored
    assert auth.verify_password("correct horse battery", stored)
    assert not auth.verify_password("correct horse batterY", stored)
    assert auth.hash_password("correct horse battery") != stored  # per-hash salt
    assert not auth.verify_password("x", "garbage") and not auth.verify_password("x", "md5$1$2$3$a$b")


def test_weaker_parameters_ask_for_a_rehash():
    assert not auth.needs_rehash(auth.hash_password("pw123456"))
    assert auth.needs_rehash("scrypt$1024$8$1$c2FsdA$aGFzaA")
    assert auth.needs_rehash("nonsense")


def test_generated_keys_are_prefixed_and_hashed():
    for kind, prefix in auth.KEY_PREFIXES.items():
        key = auth.generate_api_key(kind)
        assert key.plaintext.startswith(prefix) and len(key.plaintext) >= 45
        assert key.prefix == key.plaintext[:8]
        assert key.key_hash == hashlib.sha256(key.plaintext.encode()).hexdigest()
        assert key.plaintext not in repr(key)


def test_dashboard_token_claims_and_expiry():
    secret = b"s" * 40
    token = auth.issue_dashboard_token(secret, "mer_1", 3, now=1_000)
    claims = auth.decode_dashboard_token(secret, token, now=1_000 + 24 * 3600 - 1)
    assert claims["sub"] == "mer_1" and claims["tv"] == 3 and claims["exp"] - claims["iat"] == 24 * 3600
    with pytest.raises(Unauthorized):
        auth.decode_dashboard_token(secret, token, now=1_000 + 24 * 3600)
    with pytest.raises(Unauthorized):
        auth.decode_dashboard_token(b"t" * 40, token, now=1_000)
    # A mini-app token (no dashboard audience) is not a dashboard session.
    miniapp = jwt.encode({"m": "mer_1", "sub": "mer_1", "src": "tgapp", "iat": 1_000, "exp": 9_999}, secret,
                         algorithm="HS256")
    with pytest.raises(Unauthorized):
        auth.decode_dashboard_token(secret, miniapp, now=1_000)
    unsigned = jwt.encode({"sub": "mer_1", "aud": "dashboard", "iat": 1_000, "exp": 9_999}, None, algorithm="none")
    with pytest.raises(Unauthorized):
        auth.decode_dashboard_token(secret, unsigned, now=1_000)


def test_totp_code_normalisation_and_matching():
    assert auth.normalize_totp_code("123456") == "123456"
    assert auth.normalize_totp_code(42) == "000042"
    assert auth.normalize_totp_code("12345") is None and auth.normalize_totp_code("abcdef") is None
    assert auth.normalize_totp_code(True) is None
    import pyotp

    secret = auth.new_totp_secret()
    now = 1_700_000_000
    code = pyotp.TOTP(secret).at(now)
    assert auth.matching_totp_step(secret, code, now) == now // 30
    assert auth.matching_totp_step(secret, code, now + 30) == now // 30  # one step of drift
    assert auth.matching_totp_step(secret, code, now + 120) is None


def test_requires_rejects_unknown_kinds():
    with pytest.raises(ValueError):
        requires("merchant")
    with pytest.raises(ValueError):
        requires()


def test_ensure_coin_allowed():
    open_key = Principal(merchant_id="m", via="scoped_key")
    ensure_coin_allowed(open_key, "DOGE")  # empty allowlist: everything accepted
    narrow = Principal(merchant_id="m", via="scoped_key", coin_allowlist=("BTC", "LTC"))
    ensure_coin_allowed(narrow, "BTC")
    with pytest.raises(Forbidden) as err:
        ensure_coin_allowed(narrow, "ETH")
    assert err.value.code == "coin_not_allowed" and err.value.status == 403


# -- middleware, through a few test routes -------------------------------------------------

probe_routes = web.RouteTableDef()


def _describe(request: web.Request) -> web.Response:
    p = principal_of(request)
    return envelope({"merchant_id": p.merchant_id, "via": p.via, "key_id": p.key_id, "scopes": sorted(p.scopes)})


@probe_routes.get("/probe/pay")
@requires("merchant_key", scope="payment:create")
async def probe_pay(request):
    return _describe(request)


@probe_routes.get("/probe/balance")
@requires("general_key", scope="balance:read")
async def probe_balance(request):
    return _describe(request)


@probe_routes.get("/probe/payout")
@requires("payout_key", scope="payout:create")
async def probe_payout(request):
    return _describe(request)


@probe_routes.get("/probe/legacy")
@requires("merchant_key")
async def probe_legacy(request):
    return _describe(request)


@probe_routes.post("/probe/coin")
@requires("merchant_key", scope="payment:create")
async def probe_coin(request):
    body = await read_json(request)
    ensure_coin_allowed(principal_of(request), body["coin"])
    return _describe(request)


@probe_routes.get("/probe/either")
@requires("jwt", "merchant_key", scope="payment:read")
async def probe_either(request):
    return _describe(request)


@pytest.fixture
async def app_client(aiohttp_client, config):
    app = create_app(config)
    app.router.add_routes(probe_routes)
    return await aiohttp_client(app)


async def create_key(client, token, **fields):
    body = {"label": "test key", "scopes": ["payment:create"], **fields}
    response = await client.post("/dashboard/api-keys", json=body, headers=bearer(token))
    assert response.status == 200, await response.text()
    return (await response.json())["data"]


async def test_legacy_keys_work_only_in_their_own_header(app_client):
    keys = (await signup(app_client))["api_keys"]
    ok = await app_client.get("/probe/pay", headers={"merchant_api_key": keys["merchant_api_key"]})
    data = (await ok.json())["data"]
    assert ok.status == 200 and data["via"] == "merchant_key" and data["key_id"].startswith("legacy_merchant_")
    # The core's three, plus what plugins gave the merchant key (register_scopes legacy_keys: subscriptions).
    granted = app_client.app[GATEWAY].scopes.legacy_grants("merchant")
    assert data["scopes"] == sorted({"payment:create", "payment:read", "transfer:create", *granted})
    assert (await app_client.get("/probe/balance", headers={"general_api_key": keys["general_api_key"]})).status == 200
    assert (await app_client.get("/probe/payout", headers={"payout_api_key": keys["payout_api_key"]})).status == 200
    # The payout key in the merchant header, or the merchant key in the general header: 401.
    wrong = await app_client.get("/probe/pay", headers={"merchant_api_key": keys["payout_api_key"]})
    assert wrong.status == 401
    body = await wrong.json()
    assert body["data"] is None and body["error"]["type"] == "authentication"
    assert (await app_client.get("/probe/balance", headers={"general_api_key": keys["merchant_api_key"]})).status == 401
    # Sending all three headers (as some SDKs do) picks the route's own.
    all_three = await app_client.get("/probe/payout", headers=keys)
    assert all_three.status == 200 and (await all_three.json())["data"]["via"] == "payout_key"
    # A legacy key of another kind alone is not a credential for this route.
    assert (await app_client.get("/probe/pay", headers={"general_api_key": keys["general_api_key"]})).status == 401


async def test_missing_and_unknown_keys_are_401(app_client):
    assert (await app_client.get("/probe/pay")).status == 401
    unknown = await app_client.get("/probe/pay", headers={"merchant_api_key": "ok_m_notarealkey"})
    assert unknown.status == 401
    assert (await unknown.json())["message"] == "invalid API key"
    # A dashboard JWT is not a credential for a key-only route.
    token = (await signup(app_client))["token"]
    assert (await app_client.get("/probe/pay", headers=bearer(token))).status == 401


async def test_every_credential_401_carries_the_code_unauthorized(app_client):
    """SPEC 7 names ``unauthorized``: missing, unknown, expired or wrong-kind keys and bad tokens all carry it."""
    data = await signup(app_client)
    gateway = app_client.app[GATEWAY]
    key = await create_key(app_client, data["token"], expires_at=gateway.now() + 60)
    start = gateway.now()
    gateway.clock = lambda: start + 61
    attempts = [
        ("/probe/pay", {}),
        ("/probe/either", {}),
        ("/probe/pay", {"merchant_api_key": "ok_m_notarealkey"}),
        ("/probe/pay", {"merchant_api_key": data["api_keys"]["payout_api_key"]}),
        ("/probe/pay", {"merchant_api_key": key["api_key"]}),
        ("/probe/either", bearer("not.a.jwt")),
        ("/dashboard/api-keys", {}),
    ]
    for path, headers in attempts:
        response = await app_client.get(path, headers=headers)
        body = await response.json()
        assert response.status == 401 and body["error"]["code"] == "unauthorized", (path, headers, body)
    wrong = await app_client.post("/dashboard/auth/login", json={"email": "nobody@example.com", "password": "x" * 10})
    assert wrong.status == 401 and (await wrong.json())["error"]["code"] == "unauthorized"


async def test_scoped_key_in_any_header_and_scope_checked(app_client):
    token = (await signup(app_client))["token"]
    key = await create_key(app_client, token, scopes=["payment:create", "balance:read"])
    for header in ("merchant_api_key", "payout_api_key", "general_api_key"):
        response = await app_client.get("/probe/pay", headers={header: key["api_key"]})
        data = (await response.json())["data"]
        assert response.status == 200 and data["via"] == "scoped_key" and data["key_id"] == key["id"]
    assert (await app_client.get("/probe/balance", headers={"merchant_api_key": key["api_key"]})).status == 200
    denied = await app_client.get("/probe/payout", headers={"payout_api_key": key["api_key"]})
    assert denied.status == 403 and (await denied.json())["error"]["type"] == "forbidden"
    # Routes without a scope take legacy keys only.
    assert (await app_client.get("/probe/legacy", headers={"merchant_api_key": key["api_key"]})).status == 403


async def test_jwt_or_key_route(app_client):
    data = await signup(app_client)
    via_jwt = await app_client.get("/probe/either", headers=bearer(data["token"]))
    assert via_jwt.status == 200 and (await via_jwt.json())["data"]["via"] == "jwt"
    via_key = await app_client.get("/probe/either", headers={"merchant_api_key": data["api_keys"]["merchant_api_key"]})
    assert via_key.status == 200
    assert (await app_client.get("/probe/either", headers=bearer("not.a.jwt"))).status == 401
    assert (await app_client.get("/probe/either")).status == 401


async def test_expired_key_is_401(app_client):
    gateway = app_client.app[GATEWAY]
    token = (await signup(app_client))["token"]
    key = await create_key(app_client, token, expires_at=gateway.now() + 60)
    assert (await app_client.get("/probe/pay", headers={"merchant_api_key": key["api_key"]})).status == 200
    start = gateway.now()
    gateway.clock = lambda: start + 61
    expired = await app_client.get("/probe/pay", headers={"merchant_api_key": key["api_key"]})
    assert expired.status == 401 and (await expired.json())["message"] == "API key expired"


async def test_ip_allowlist(app_client):
    token = (await signup(app_client))["token"]
    outside = await create_key(app_client, token, ip_allowlist=["10.0.0.0/8", "2001:db8::/32"])
    refused = await app_client.get("/probe/pay", headers={"merchant_api_key": outside["api_key"]})
    body = await refused.json()
    assert refused.status == 401 and body["error"]["code"] == "ip_not_allowed"
    inside = await create_key(app_client, token, ip_allowlist=["127.0.0.0/8"])
    assert (await app_client.get("/probe/pay", headers={"merchant_api_key": inside["api_key"]})).status == 200


async def test_coin_allowlist_through_a_route(app_client):
    token = (await signup(app_client))["token"]
    key = await create_key(app_client, token, coin_allowlist=["btc"])
    headers = {"merchant_api_key": key["api_key"]}
    assert (await app_client.post("/probe/coin", json={"coin": "BTC"}, headers=headers)).status == 200
    refused = await app_client.post("/probe/coin", json={"coin": "ETH"}, headers=headers)
    assert refused.status == 403 and (await refused.json())["error"]["code"] == "coin_not_allowed"


async def test_disabled_merchant_is_403(app_client):
    data = await signup(app_client)
    gateway = app_client.app[GATEWAY]
    await gateway.db.execute("UPDATE merchants SET enabled = :f WHERE id = :id",
                             {"f": False, "id": data["merchant_id"]})
    response = await app_client.get("/probe/pay", headers={"merchant_api_key": data["api_keys"]["merchant_api_key"]})
    assert response.status == 403 and (await response.json())["error"]["code"] == "merchant_disabled"
    assert (await app_client.get("/dashboard/account", headers=bearer(data["token"]))).status == 403


async def test_last_used_at_is_recorded_at_most_once_a_minute(app_client):
    gateway = app_client.app[GATEWAY]
    data = await signup(app_client)
    headers = {"merchant_api_key": data["api_keys"]["merchant_api_key"]}
    key_id = f"legacy_merchant_{data['merchant_id']}"
    start = gateway.now()
    gateway.clock = lambda: start
    await app_client.get("/probe/pay", headers=headers)
    first = await gateway.db.fetch_val("SELECT last_used_at FROM api_keys WHERE id = :id", {"id": key_id})
    assert first == start
    gateway.clock = lambda: start + 30
    await app_client.get("/probe/pay", headers=headers)
    assert await gateway.db.fetch_val("SELECT last_used_at FROM api_keys WHERE id = :id", {"id": key_id}) == start
    gateway.clock = lambda: start + 61
    await app_client.get("/probe/pay", headers=headers)
    assert await gateway.db.fetch_val("SELECT last_used_at FROM api_keys WHERE id = :id", {"id": key_id}) == start + 61


async def test_per_key_write_rate_limit(app_client):
    token = (await signup(app_client))["token"]
    key = await create_key(app_client, token, rate_limit_rpm=2)
    headers = {"merchant_api_key": key["api_key"]}
    gateway = app_client.app[GATEWAY]
    start = gateway.now() - gateway.now() % 60  # all three requests inside one window
    gateway.clock = lambda: start + 1
    statuses = [(await app_client.post("/probe/coin", json={"coin": "BTC"}, headers=headers)).status
                for _ in range(3)]
    assert statuses == [200, 200, 429]


async def test_key_rate_limit_overrides_the_default_write_limit(aiohttp_client, make_config):
    """rate_limit_rpm replaces the default per-key write limit, higher as well as lower."""
    app = create_app(make_config(rate_limits={"write_per_minute": 2}))
    app.router.add_routes(probe_routes)
    client = await aiohttp_client(app)
    token = (await signup(client))["token"]
    generous = {"merchant_api_key": (await create_key(client, token, rate_limit_rpm=5))["api_key"]}
    gateway = client.app[GATEWAY]
    start = gateway.now() - gateway.now() % 60
    gateway.clock = lambda: start + 1  # one window for every request below
    statuses = [(await client.post("/probe/coin", json={"coin": "BTC"}, headers=generous)).status for _ in range(6)]
    assert statuses == [200] * 5 + [429]
    legacy = {"merchant_api_key": (await signup(client, "second@example.com"))["api_keys"]["merchant_api_key"]}
    statuses = [(await client.post("/probe/coin", json={"coin": "BTC"}, headers=legacy)).status for _ in range(3)]
    assert statuses == [200, 200, 429]  # no override: the default applies
