"""Dashboard API keys (SPEC 4.9, 2.14): list, create, revoke, rotate, on both databases."""

from __future__ import annotations

import hashlib

import pytest
from aiohttp import web

from orbchain.core.accounts import merchants as accounts, api_keys
from orbchain.core.accounts.auth import find_api_key, key_problem
from orbchain.core.accounts.key_powers import ACCOUNT_HOLDER
from orbchain.web.app import create_app
from orbchain.web.auth import principal_of, requires
from orbchain.web.envelope import envelope
from orbchain.web.keys import GATEWAY

from .support import bearer
from .support import signup_data as signup

ROW_FIELDS = {"id", "label", "prefix", "scopes", "coin_allowlist", "ip_allowlist", "webhook_url", "rate_limit_rpm",
              "last_used_at", "revoked_at", "expires_at", "created_at", "is_legacy", "brand_id", "issued_by"}


@pytest.fixture
async def owner(client):
    return await signup(client)


async def create(client, token, **fields):
    body = {"label": "shop backend", "scopes": ["payment:create"], **fields}
    response = await client.post("/dashboard/api-keys", json=body, headers=bearer(token))
    return response.status, await response.json()


async def key_usable(client, plaintext):
    """Whether the auth layer accepts ``plaintext`` now (as a request would)."""
    gateway = client.app[GATEWAY]
    match = await find_api_key(gateway.db, plaintext)
    return match is not None and key_problem(match, gateway.now()) is None


async def test_list_shows_masked_legacy_keys_and_rows(client, owner):
    response = await client.get("/dashboard/api-keys", headers=bearer(owner["token"]))
    data = (await response.json())["data"]
    assert response.status == 200
    for name, plaintext in owner["api_keys"].items():
        assert data[name].endswith(plaintext[-8:]) and data[name] != plaintext  # SPEC 4.9: last 8 visible
        assert plaintext[:-8] not in data[name] and plaintext[-9:] not in data[name]
    assert len(data["keys"]) == 3 and all(set(row) == ROW_FIELDS for row in data["keys"])
    assert all(row["is_legacy"] and row["id"].startswith("legacy_") for row in data["keys"])
    text = await response.text()
    assert "key_hash" not in text and "previous_hash" not in text


async def test_masked_legacy_key_follows_rotation(client, owner):
    """The masked form shows the tail of the key in use now, not of the one it replaced (SPEC 4.9)."""
    rotated = await client.post("/dashboard/settings/rotate-key", json={"key_type": "payoutApiKey"},
                                headers=bearer(owner["token"]))
    new_key = (await rotated.json())["data"]["new_key"]
    data = (await (await client.get("/dashboard/api-keys", headers=bearer(owner["token"]))).json())["data"]
    assert data["payout_api_key"] == "*" * 12 + new_key[-8:]
    assert data["merchant_api_key"].endswith(owner["api_keys"]["merchant_api_key"][-8:])


async def test_list_needs_a_token(client):
    assert (await client.get("/dashboard/api-keys")).status == 401
    assert (await client.post("/dashboard/api-keys", json={"label": "x", "scopes": ["payment:read"]})).status == 401
    assert (await client.post("/dashboard/api-keys/key_x/revoke")).status == 401
    assert (await client.post("/dashboard/api-keys/key_x/rotate")).status == 401


async def test_create_scoped_key(client, owner):
    gateway = client.app[GATEWAY]
    expires = gateway.now() + 3600
    brand = await client.post("/dashboard/brands", headers=bearer(owner["token"]), json={"name": "Shop"})
    brand_id = (await brand.json())["data"]["id"]  # a key may only name a brand of its account
    status, body = await create(client, owner["token"], scopes=["payment:create", "payment:read", "payment:read"],
                                coin_allowlist=["btc", "USDT_TRC20"], ip_allowlist=["192.168.1.7", "10.0.0.0/8"],
                                webhook_url="https://shop.example.com/key-hook", rate_limit_rpm=120,
                                expires_at=expires, brand_id=brand_id)
    data = body["data"]
    assert status == 200
    assert {"api_key", "id", "label", "prefix", "scopes", "created_at"} <= set(data)
    assert data["api_key"].startswith("ok_s_") and data["prefix"] == data["api_key"][:8]
    assert data["scopes"] == ["payment:create", "payment:read"] and len(data["webhook_secret"]) == 64
    row = await gateway.db.fetch_one("SELECT * FROM api_keys WHERE id = :id", {"id": data["id"]})
    assert row["key_hash"] == hashlib.sha256(data["api_key"].encode()).hexdigest()
    assert data["api_key"] not in " ".join(str(v) for v in row.values())
    listed = (await (await client.get("/dashboard/api-keys", headers=bearer(owner["token"]))).json())["data"]
    view = next(k for k in listed["keys"] if k["id"] == data["id"])
    assert view["coin_allowlist"] == ["BTC", "USDT_TRC20"] and view["ip_allowlist"] == ["192.168.1.7/32", "10.0.0.0/8"]
    assert view["rate_limit_rpm"] == 120 and view["expires_at"] == expires and view["is_legacy"] is False
    assert view["webhook_url"] == "https://shop.example.com/key-hook" and view["revoked_at"] is None
    assert view["brand_id"] == brand_id
    target = await accounts.webhook_target(gateway.db, owner["merchant_id"], data["id"])
    assert target == ("https://shop.example.com/key-hook", data["webhook_secret"])


async def test_create_bad_input(client, owner):
    gateway = client.app[GATEWAY]
    cases = [
        ({"label": ""}, "label"),
        ({"label": "x" * 81}, "label"),
        ({"scopes": []}, "scopes"),
        ({"scopes": ["admin"]}, "scopes"),
        ({"scopes": "payment:create"}, "scopes"),
        ({"coin_allowlist": ["NOPE"]}, "coin_allowlist"),
        ({"ip_allowlist": ["10.0.0.0/33"]}, "ip_allowlist"),
        ({"ip_allowlist": ["not-an-ip"]}, "ip_allowlist"),
        ({"webhook_url": "ftp://example.com"}, "webhook_url"),
        ({"rate_limit_rpm": 0}, "rate_limit_rpm"),
        ({"rate_limit_rpm": 10_001}, "rate_limit_rpm"),
        ({"expires_at": gateway.now() - 1}, "expires_at"),
        ({"expires_at": "soon"}, "expires_at"),
    ]
    for extra, field in cases:
        status, body = await create(client, owner["token"], **extra)
        assert status == 400 and field in body["error"]["detail"], extra
    response = await client.post("/dashboard/api-keys", json={"scopes": ["payment:read"]},
                                 headers=bearer(owner["token"]))
    assert response.status == 400 and "label" in (await response.json())["error"]["detail"]


async def test_private_key_webhook_refused(make_client, make_config):
    client = await make_client(make_config(webhooks={"allow_private_urls": False}))
    owner = await signup(client)
    status, body = await create(client, owner["token"], webhook_url="http://192.168.0.10/hook")
    assert status == 400 and "webhook_url" in body["error"]["detail"]


async def test_soft_limit_of_fifty_active_keys(client, owner):
    gateway = client.app[GATEWAY]
    for i in range(api_keys.SCOPED_KEY_SOFT_LIMIT):
        await api_keys.create_scoped_key(gateway, owner["merchant_id"],
                                         api_keys.ScopedKeyRequest(label=f"k{i}", scopes=["payment:read"]),
                                         issuer=ACCOUNT_HOLDER)
    status, body = await create(client, owner["token"])
    assert status == 400 and "50" in body["message"]
    # Revoking one makes room again.
    victim = await gateway.db.fetch_val("SELECT id FROM api_keys WHERE merchant_id = :m AND is_legacy = :f LIMIT 1",
                                        {"m": owner["merchant_id"], "f": False})
    assert (await client.post(f"/dashboard/api-keys/{victim}/revoke", headers=bearer(owner["token"]))).status == 200
    assert (await create(client, owner["token"]))[0] == 200


async def test_revoke(client, owner):
    _, body = await create(client, owner["token"])
    key = body["data"]
    assert await key_usable(client, key["api_key"])
    response = await client.post(f"/dashboard/api-keys/{key['id']}/revoke", headers=bearer(owner["token"]))
    data = (await response.json())["data"]
    assert response.status == 200 and data["ok"] is True and data["already_revoked"] is False
    assert not await key_usable(client, key["api_key"])  # immediately
    again = await client.post(f"/dashboard/api-keys/{key['id']}/revoke", headers=bearer(owner["token"]))
    assert again.status == 200 and (await again.json())["data"] == {
        "ok": True, "already_revoked": True, "id": key["id"], "revoked_at": data["revoked_at"]}


async def test_revoke_and_rotate_refuse_legacy_and_foreign_keys(client, owner):
    legacy_id = f"legacy_merchant_{owner['merchant_id']}"
    for action in ("revoke", "rotate"):
        response = await client.post(f"/dashboard/api-keys/{legacy_id}/{action}", headers=bearer(owner["token"]))
        assert response.status == 400
        missing = await client.post(f"/dashboard/api-keys/key_missing/{action}", headers=bearer(owner["token"]))
        assert missing.status == 404
    other = await signup(client, email="other@example.com")
    _, body = await create(client, other["token"])
    for action in ("revoke", "rotate"):
        foreign = await client.post(f"/dashboard/api-keys/{body['data']['id']}/{action}",
                                    headers=bearer(owner["token"]))
        assert foreign.status == 404 and (await foreign.json())["message"] == "not found"
    assert await key_usable(client, body["data"]["api_key"])


async def test_rotate_keeps_the_old_secret_for_thirty_minutes(client, owner):
    gateway = client.app[GATEWAY]
    start = gateway.now()
    gateway.clock = lambda: start
    _, body = await create(client, owner["token"])
    old = body["data"]
    response = await client.post(f"/dashboard/api-keys/{old['id']}/rotate", headers=bearer(owner["token"]))
    data = (await response.json())["data"]
    assert response.status == 200 and data["id"] == old["id"] and data["api_key"] != old["api_key"]
    assert data["previous_valid_until"] == start + 30 * 60
    assert await key_usable(client, old["api_key"]) and await key_usable(client, data["api_key"])
    gateway.clock = lambda: start + 30 * 60 - 1
    assert await key_usable(client, old["api_key"])
    gateway.clock = lambda: start + 30 * 60
    assert not await key_usable(client, old["api_key"])
    assert await key_usable(client, data["api_key"])


async def test_every_rotated_out_secret_keeps_its_own_grace(client, owner):
    """Rotating twice does not cut the first secret's grace short; revoking ends them all."""
    gateway = client.app[GATEWAY]
    start = gateway.now()
    gateway.clock = lambda: start
    _, body = await create(client, owner["token"])
    first = body["data"]
    gateway.clock = lambda: start + 10 * 60
    second = (await (await client.post(f"/dashboard/api-keys/{first['id']}/rotate",
                                       headers=bearer(owner["token"]))).json())["data"]
    gateway.clock = lambda: start + 20 * 60
    third = (await (await client.post(f"/dashboard/api-keys/{first['id']}/rotate",
                                      headers=bearer(owner["token"]))).json())["data"]
    assert third["previous_valid_until"] == start + 50 * 60
    for secret in (first["api_key"], second["api_key"], third["api_key"]):
        assert await key_usable(client, secret)
    gateway.clock = lambda: start + 40 * 60 - 1  # the first secret's own grace is still running
    assert await key_usable(client, first["api_key"]) and await key_usable(client, second["api_key"])
    gateway.clock = lambda: start + 40 * 60
    assert not await key_usable(client, first["api_key"])
    assert await key_usable(client, second["api_key"]) and await key_usable(client, third["api_key"])
    revoked = await client.post(f"/dashboard/api-keys/{first['id']}/revoke", headers=bearer(owner["token"]))
    assert revoked.status == 200
    for secret in (first["api_key"], second["api_key"], third["api_key"]):
        assert not await key_usable(client, secret)


probe_routes = web.RouteTableDef()


@probe_routes.get("/probe/payments")
@requires("merchant_key", scope="payment:read")
async def probe_payments(request):
    return envelope({"key_id": principal_of(request).key_id})


async def test_rotated_out_key_is_401_over_http(aiohttp_client, config):
    """End to end through a key route: the old secret works in the grace window, then 401."""
    app = create_app(config)
    app.router.add_routes(probe_routes)
    client = await aiohttp_client(app)
    owner = await signup(client)
    gateway = client.app[GATEWAY]
    start = gateway.now()
    gateway.clock = lambda: start
    _, body = await create(client, owner["token"], scopes=["payment:read"])
    old = body["data"]
    rotated = await client.post(f"/dashboard/api-keys/{old['id']}/rotate", headers=bearer(owner["token"]))
    new_key = (await rotated.json())["data"]["api_key"]
    for key in (old["api_key"], new_key):
        response = await client.get("/probe/payments", headers={"merchant_api_key": key})
        assert response.status == 200 and (await response.json())["data"]["key_id"] == old["id"]
    gateway.clock = lambda: start + 30 * 60 + 1
    response = await client.get("/probe/payments", headers={"merchant_api_key": old["api_key"]})
    assert response.status == 401 and (await response.json())["message"] == "API key rotated"
    assert (await client.get("/probe/payments", headers={"merchant_api_key": new_key})).status == 200
    # Revocation is immediate for the current secret.
    await client.post(f"/dashboard/api-keys/{old['id']}/revoke", headers=bearer(owner["token"]))
    assert (await client.get("/probe/payments", headers={"merchant_api_key": new_key})).status == 401


async def test_rotating_a_revoked_key_is_refused(client, owner):
    _, body = await create(client, owner["token"])
    key_id = body["data"]["id"]
    await client.post(f"/dashboard/api-keys/{key_id}/revoke", headers=bearer(owner["token"]))
    response = await client.post(f"/dashboard/api-keys/{key_id}/rotate", headers=bearer(owner["token"]))
    assert response.status == 400
