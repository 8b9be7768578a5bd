"""Sign-up, sign-in and the account record (SPEC 4.7, 2.15) on both databases."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re

from orbchain.core.accounts import merchants as accounts
from orbchain.web.keys import GATEWAY

from .support import bearer
from .support import signup_data as signup

ACCOUNT_ID = re.compile(r"^ORB-[1-9A-HJ-NP-Za-km-z]{20}$")


async def test_signup_creates_a_merchant_with_three_legacy_keys(client):
    response = await client.post("/dashboard/auth/signup",
                                 json={"email": "Owner@Example.com", "password": "s3cret-pass",
                                       "turnstile_token": "ignored-without-captcha"})
    body = await response.json()
    assert response.status == 200 and body["message"] == "OK" and body["version"] == "2.0.0"
    data = body["data"]
    assert set(data) == {"token", "merchant_id", "email", "api_keys"}
    assert data["email"] == "owner@example.com" and data["merchant_id"].startswith("mer_")
    keys = data["api_keys"]
    assert keys["merchant_api_key"].startswith("ok_m_")
    assert keys["payout_api_key"].startswith("ok_p_")
    assert keys["general_api_key"].startswith("ok_g_")
    row = await client.app[GATEWAY].db.fetch_one("SELECT * FROM merchants WHERE id = :id", {"id": data["merchant_id"]})
    assert ACCOUNT_ID.match(row["account_id"]) and row["key_account"] == 1 and row["fee_percent"] is None
    second = await signup(client, email="second@example.com")
    row2 = await client.app[GATEWAY].db.fetch_one("SELECT key_account FROM merchants WHERE id = :id",
                                                  {"id": second["merchant_id"]})
    assert row2["key_account"] == 2


async def test_signup_bad_input(client):
    cases = [
        ({"password": "s3cret-pass"}, "email"),
        ({"email": "not-an-email", "password": "s3cret-pass"}, "email"),
        ({"email": "a@example.com", "password": "short"}, "password"),
        ({"email": "a@example.com", "password": "x" * 129}, "password"),
        ({"email": "a@example.com", "password": 12345678}, "password"),
        ({"email": "a@example.com", "password": "12345678"}, "password"),  # among the most common
        ({"email": "a@example.com", "password": " " * 8}, "password"),
    ]
    for payload, field in cases:
        response = await client.post("/dashboard/auth/signup", json=payload)
        body = await response.json()
        assert response.status == 400, payload
        assert body["error"]["type"] == "validation" and field in body["error"]["detail"]
    not_json = await client.post("/dashboard/auth/signup", data=b"{nope", headers={"Content-Type": "application/json"})
    assert not_json.status == 400


async def test_duplicate_email_is_409_case_insensitive(client):
    await signup(client, email="dup@example.com")
    response = await client.post("/dashboard/auth/signup", json={"email": "DUP@example.COM", "password": "another-pw"})
    body = await response.json()
    assert response.status == 409 and body["message"] == "email already registered"


async def test_referrer_is_stored_when_valid_and_ignored_otherwise(client):
    db = client.app[GATEWAY].db
    referrer = await signup(client, email="ref@example.com")
    account_id = await db.fetch_val("SELECT account_id FROM merchants WHERE id = :id", {"id": referrer["merchant_id"]})
    referee = await signup(client, email="referee@example.com", ref=account_id)
    assert await db.fetch_val("SELECT referrer_id FROM merchants WHERE id = :id",
                              {"id": referee["merchant_id"]}) == referrer["merchant_id"]
    for bad in ("ORB-unknown", 42, ["x"], "x" * 500):
        other = await signup(client, email=f"bad{len(str(bad))}{type(bad).__name__}@example.com", ref=bad)
        assert await db.fetch_val("SELECT referrer_id FROM merchants WHERE id = :id",
                                  {"id": other["merchant_id"]}) is None


async def test_concurrent_signups_with_one_email(make_client, make_config):
    client = await make_client(make_config(rate_limits={"enabled": False}))

    async def attempt():
        response = await client.post("/dashboard/auth/signup", json={"email": "race@example.com",
                                                                     "password": "s3cret-pass"})
        return response.status

    statuses = await asyncio.gather(*(attempt() for _ in range(10)))
    assert sorted(statuses) == [200] + [409] * 9
    db = client.app[GATEWAY].db
    assert await db.fetch_val("SELECT COUNT(*) FROM merchants") == 1
    assert await db.fetch_val("SELECT COUNT(*) FROM api_keys") == 3


async def test_key_accounts_are_unique_under_concurrency(make_client, make_config):
    client = await make_client(make_config(rate_limits={"enabled": False}))
    await asyncio.gather(*(signup(client, email=f"m{i}@example.com") for i in range(8)))
    rows = await client.app[GATEWAY].db.fetch_all("SELECT key_account FROM merchants")
    assert sorted(r["key_account"] for r in rows) == list(range(1, 9))


async def test_login(client):
    created = await signup(client, email="login@example.com", password="pass word 1")
    response = await client.post("/dashboard/auth/login",
                                 json={"email": "LOGIN@example.com", "password": "pass word 1"})
    data = (await response.json())["data"]
    assert response.status == 200 and set(data) == {"token", "merchant_id", "email"}
    assert data["merchant_id"] == created["merchant_id"] and data["email"] == "login@example.com"
    assert (await client.get("/dashboard/account", headers=bearer(data["token"]))).status == 200


async def test_login_failures_share_one_message(client):
    await signup(client, email="login@example.com")
    wrong_pw = await client.post("/dashboard/auth/login", json={"email": "login@example.com", "password": "wrong-pass"})
    unknown = await client.post("/dashboard/auth/login", json={"email": "nobody@example.com", "password": "wrong-pass"})
    assert wrong_pw.status == unknown.status == 401
    assert (await wrong_pw.json())["message"] == (await unknown.json())["message"] == "invalid credentials"
    missing = await client.post("/dashboard/auth/login", json={"email": "login@example.com"})
    assert missing.status == 400 and "password" in (await missing.json())["error"]["detail"]


async def test_login_to_a_disabled_account_is_403(client):
    data = await signup(client, email="off@example.com")
    await client.app[GATEWAY].db.execute("UPDATE merchants SET enabled = :f WHERE id = :id",
                                         {"f": False, "id": data["merchant_id"]})
    response = await client.post("/dashboard/auth/login", json={"email": "off@example.com", "password": "s3cret-pass"})
    assert response.status == 403


async def test_auth_endpoints_are_rate_limited_per_ip(client):
    client.app[GATEWAY].clock = lambda: 1_800_000_001.0  # all attempts inside one window
    body = {"email": "x@example.com", "password": "whatever1"}
    statuses = [(await client.post("/dashboard/auth/login", json=body)).status for _ in range(11)]
    assert statuses[:10] == [401] * 10 and statuses[10] == 429


async def test_account_record(client):
    data = await signup(client)
    response = await client.get("/dashboard/account", headers=bearer(data["token"]))
    account = (await response.json())["data"]["account"]
    assert response.status == 200
    assert set(account) == {"id", "account_id", "email", "webhook_url", "fee_percent", "accepted_coins",
                            "confirmations", "totp_enabled", "enabled", "created_at", "default_settlement_coin",
                            "customer_static_mode"}
    assert account["id"] == data["merchant_id"] and ACCOUNT_ID.match(account["account_id"])
    assert account["fee_percent"] == "1" and account["webhook_url"] is None
    assert account["accepted_coins"] == ["BTC", "LTC", "ETH", "USDT_ERC20", "USDT_TRC20", "SOL"]
    assert account["confirmations"] == {"BTC": 2, "LTC": 6, "ETH": 12, "USDT_ERC20": 12, "USDT_TRC20": 19, "SOL": 32}
    assert account["totp_enabled"] is False and account["enabled"] is True
    assert account["customer_static_mode"] is False and isinstance(account["created_at"], int)


async def test_account_shows_the_operator_fee_and_a_merchant_rate(make_client, make_config):
    client = await make_client(make_config(fees={"default_fee_percent": "0.75"}))
    data = await signup(client)
    account = (await (await client.get("/dashboard/account", headers=bearer(data["token"]))).json())["data"]["account"]
    assert account["fee_percent"] == "0.75"
    await client.app[GATEWAY].db.execute("UPDATE merchants SET fee_percent = '0.5' WHERE id = :id",
                                         {"id": data["merchant_id"]})
    account = (await (await client.get("/dashboard/account", headers=bearer(data["token"]))).json())["data"]["account"]
    assert account["fee_percent"] == "0.5"


async def test_account_requires_a_valid_token(client):
    data = await signup(client)
    assert (await client.get("/dashboard/account")).status == 401
    assert (await client.get("/dashboard/account", headers=bearer("garbage"))).status == 401
    key_as_token = await client.get("/dashboard/account",
                                    headers={"merchant_api_key": data["api_keys"]["merchant_api_key"]})
    assert key_as_token.status == 401
    gateway = client.app[GATEWAY]
    start = gateway.now()
    gateway.clock = lambda: start + 24 * 3600 + 1
    expired = await client.get("/dashboard/account", headers=bearer(data["token"]))
    assert expired.status == 401 and (await expired.json())["error"]["type"] == "authentication"


async def test_stored_rows_hold_only_hashes(client):
    data = await signup(client, password="plain-text-pw")
    db = client.app[GATEWAY].db
    rows = await db.fetch_all("SELECT * FROM api_keys WHERE merchant_id = :m ORDER BY id", {"m": data["merchant_id"]})
    expected = sorted(f"legacy_{k}_{data['merchant_id']}" for k in ("general", "merchant", "payout"))
    assert [r["id"] for r in rows] == expected
    for row in rows:
        plaintext = data["api_keys"][f"{row['kind']}_api_key"]
        assert row["key_hash"] == hashlib.sha256(plaintext.encode()).hexdigest()
        assert re.fullmatch(r"[0-9a-f]{64}", row["key_hash"]) and row["prefix"] == plaintext[:8]
        assert bool(row["is_legacy"]) is True
    merchant = await db.fetch_one("SELECT * FROM merchants WHERE id = :id", {"id": data["merchant_id"]})
    stored = " ".join(str(v) for row in [merchant, *rows] for v in row.values())
    for secret in [*data["api_keys"].values(), "plain-text-pw"]:
        assert secret not in stored
    assert merchant["password_hash"].startswith("scrypt$")


async def test_no_secret_reaches_the_logs(client, caplog):
    caplog.set_level(logging.DEBUG)
    data = await signup(client, email="logs@example.com", password="log-me-not-pw")
    login = await client.post("/dashboard/auth/login", json={"email": "logs@example.com", "password": "log-me-not-pw"})
    token = (await login.json())["data"]["token"]
    rotated = await client.post("/dashboard/settings/rotate-key", json={"key_type": "payoutApiKey"},
                                headers=bearer(token))
    new_key = (await rotated.json())["data"]["new_key"]
    created = await client.post("/dashboard/api-keys", json={"label": "l", "scopes": ["payment:read"]},
                                headers=bearer(token))
    scoped = (await created.json())["data"]["api_key"]
    text = caplog.text + " ".join(str(r.args) for r in caplog.records)
    assert "signed up" in text  # the log is captured at all
    for secret in [*data["api_keys"].values(), "log-me-not-pw", token, data["token"], new_key, scoped]:
        assert secret not in text


async def test_find_by_account_id(gateway):
    result = await accounts.sign_up(gateway, "svc@example.com", "s3cret-pass")
    row = await accounts.get_merchant(gateway.db, result.merchant_id)
    assert (await accounts.find_by_account_id(gateway.db, row["account_id"]))["id"] == result.merchant_id
    assert await accounts.find_by_account_id(gateway.db, "ORB-nope") is None
    assert result.api_keys["merchant_api_key"] not in repr(result)
