"""Dashboard settings, password change, legacy key rotation and two-factor (SPEC 4.8) on both databases."""

from __future__ import annotations

import pyotp
import pytest

from orbchain.core.accounts import merchants as accounts
from orbchain.web.keys import GATEWAY

from .support import bearer
from .support import signup_data as signup


@pytest.fixture
async def owner(client):
    return await signup(client)


async def put(client, path, body, token):
    response = await client.put(path, json=body, headers=bearer(token) if token else {})
    return response.status, await response.json()


async def post(client, path, body, token):
    response = await client.post(path, json=body, headers=bearer(token) if token else {})
    return response.status, await response.json()


# -- webhook -------------------------------------------------------------------------------


async def test_webhook_url_and_secret_shown_once(client, owner):
    status, body = await put(client, "/dashboard/settings/webhook", {"webhook_url": "https://shop.example.com/hook"},
                             owner["token"])
    data = body["data"]
    assert status == 200 and data["webhook_url"] == "https://shop.example.com/hook"
    assert len(data["webhook_secret"]) == 64 and data["account"]["webhook_url"] == data["webhook_url"]
    secret = data["webhook_secret"]
    status, body = await put(client, "/dashboard/settings/webhook", {"webhook_url": "https://shop.example.com/v2"},
                             owner["token"])
    assert status == 200 and "webhook_secret" not in body["data"]
    db = client.app[GATEWAY].db
    assert await accounts.webhook_target(db, owner["merchant_id"]) == ("https://shop.example.com/v2", secret)
    status, body = await put(client, "/dashboard/settings/webhook",
                             {"webhook_url": "https://shop.example.com/v2", "rotate_secret": True}, owner["token"])
    assert status == 200 and body["data"]["webhook_secret"] not in (None, secret)
    assert "webhook_secret" not in body["data"]["account"]


async def test_webhook_target_is_none_without_a_url(gateway):
    result = await accounts.sign_up(gateway, "t@example.com", "s3cret-pass")
    assert await accounts.webhook_target(gateway.db, result.merchant_id) is None
    assert await accounts.webhook_target(gateway.db, "mer_missing") is None


async def test_webhook_bad_input(client, owner):
    for body in ({}, {"webhook_url": "ftp://example.com/x"}, {"webhook_url": "https://e.com/" + "a" * 500},
                 {"webhook_url": 5}):
        status, answer = await put(client, "/dashboard/settings/webhook", body, owner["token"])
        assert status == 400 and "webhook_url" in answer["error"]["detail"], body


async def test_webhook_private_addresses_refused(make_client, make_config):
    client = await make_client(make_config(webhooks={"allow_private_urls": False}))
    owner = await signup(client)
    for url in ("http://127.0.0.1:8080/hook", "http://10.1.2.3/hook", "http://localhost/x", "http://[::1]/x"):
        status, body = await put(client, "/dashboard/settings/webhook", {"webhook_url": url}, owner["token"])
        assert status == 400 and body["error"]["type"] == "validation", url
        assert "private" in body["error"]["detail"]["webhook_url"]


async def test_settings_need_a_token(client):
    for path, body in [("/dashboard/settings/webhook", {"webhook_url": "https://e.com"}),
                       ("/dashboard/settings/coins", {"accepted_coins": ["BTC"]}),
                       ("/dashboard/settings/confirmations", {"BTC": 3}),
                       ("/dashboard/settings/customer-static-mode", {"enabled": True})]:
        assert (await put(client, path, body, None))[0] == 401
        assert (await put(client, path, body, "bad.token.here"))[0] == 401
    for path, body in [("/dashboard/settings/change-password", {"current_password": "a" * 8, "new_password": "b" * 8}),
                       ("/dashboard/settings/rotate-key", {"key_type": "merchantApiKey"}),
                       ("/dashboard/mfa/setup", {}), ("/dashboard/mfa/verify", {"code": "123456"}),
                       ("/dashboard/mfa/disable", {"code": "123456"})]:
        assert (await post(client, path, body, None))[0] == 401


# -- coins and confirmations -----------------------------------------------------------------


async def test_accepted_coins(client, owner):
    status, body = await put(client, "/dashboard/settings/coins", {"accepted_coins": ["btc", "BTC_LN", "SOL", "BTC"]},
                             owner["token"])
    account = body["data"]["account"]
    assert status == 200 and account["accepted_coins"] == ["BTC", "BTC_LN", "SOL"]
    assert account["confirmations"] == {"BTC": 2, "BTC_LN": 0, "SOL": 32}


async def test_accepted_coins_bad_input(client, owner):
    for body in ({}, {"accepted_coins": []}, {"accepted_coins": ["NOPE"]}, {"accepted_coins": "BTC"},
                 {"accepted_coins": ["XMR"]}):
        status, answer = await put(client, "/dashboard/settings/coins", body, owner["token"])
        assert status == 400 and "accepted_coins" in answer["error"]["detail"], body
    status, answer = await put(client, "/dashboard/settings/coins", {"accepted_coins": ["XMR"]}, owner["token"])
    assert "default_settlement_coin" in answer["message"]


async def test_xmr_accepted_with_a_settlement_coin(client, owner):
    await client.app[GATEWAY].db.execute("UPDATE merchants SET default_settlement_coin = 'BTC' WHERE id = :id",
                                         {"id": owner["merchant_id"]})
    status, body = await put(client, "/dashboard/settings/coins", {"accepted_coins": ["BTC", "XMR"]}, owner["token"])
    assert status == 200 and body["data"]["account"]["accepted_coins"] == ["BTC", "XMR"]


async def test_confirmations_merge_and_floors(client, owner):
    status, body = await put(client, "/dashboard/settings/confirmations", {"BTC": 3, "usdt_trc20": 25},
                             owner["token"])
    assert status == 200 and body["data"]["account"]["confirmations"]["BTC"] == 3
    status, body = await put(client, "/dashboard/settings/confirmations", {"confirmations": {"ETH": 20}},
                             owner["token"])
    confirmations = body["data"]["account"]["confirmations"]
    assert confirmations["BTC"] == 3 and confirmations["USDT_TRC20"] == 25 and confirmations["ETH"] == 20
    # The minimum is the platform floor (3 for TRC-20), not the default (19).
    status, _ = await put(client, "/dashboard/settings/confirmations", {"USDT_TRC20": 3}, owner["token"])
    assert status == 200


async def test_confirmations_bad_input(client, owner):
    cases = [({"BTC": 1}, "BTC"), ({"SOL": 31}, "SOL"), ({"NOPE": 5}, "NOPE"), ({"ETH": 1001}, "ETH"),
             ({"LTC": "7"}, "LTC"), ({"LTC": 6.5}, "LTC"), ({"LTC": True}, "LTC"), ({}, "confirmations"),
             ({"BTC_LN": 1}, "BTC_LN")]
    for body, field in cases:
        status, answer = await put(client, "/dashboard/settings/confirmations", body, owner["token"])
        assert status == 400 and field in answer["error"]["detail"], body
        assert answer["error"]["type"] == "validation"


async def test_customer_static_mode(client, owner):
    status, body = await put(client, "/dashboard/settings/customer-static-mode", {"enabled": True}, owner["token"])
    assert status == 200 and body["data"]["account"]["customer_static_mode"] is True
    status, body = await put(client, "/dashboard/settings/customer-static-mode", {"enabled": False}, owner["token"])
    assert body["data"]["account"]["customer_static_mode"] is False
    for bad in ({}, {"enabled": "yes"}, {"enabled": 1}):
        status, answer = await put(client, "/dashboard/settings/customer-static-mode", bad, owner["token"])
        assert status == 400 and "enabled" in answer["error"]["detail"]


# -- password and legacy keys -----------------------------------------------------------------


async def test_change_password_invalidates_older_tokens(client, owner):
    old_token = owner["token"]
    status, body = await post(client, "/dashboard/settings/change-password",
                              {"current_password": "s3cret-pass", "new_password": "brand-new-pass"}, old_token)
    assert status == 200 and body["data"]["ok"] is True
    assert (await client.get("/dashboard/account", headers=bearer(old_token))).status == 401
    assert (await client.get("/dashboard/account", headers=bearer(body["data"]["token"]))).status == 200
    old_login = await client.post("/dashboard/auth/login",
                                  json={"email": "owner@example.com", "password": "s3cret-pass"})
    assert old_login.status == 401
    new_login = await client.post("/dashboard/auth/login",
                                  json={"email": "owner@example.com", "password": "brand-new-pass"})
    assert new_login.status == 200


async def test_change_password_failures(client, owner):
    status, body = await post(client, "/dashboard/settings/change-password",
                              {"current_password": "wrong-pass", "new_password": "brand-new-pass"}, owner["token"])
    assert status == 401 and body["error"]["type"] == "authentication"
    status, body = await post(client, "/dashboard/settings/change-password",
                              {"current_password": "s3cret-pass", "new_password": "short"}, owner["token"])
    assert status == 400 and "new_password" in body["error"]["detail"]
    status, body = await post(client, "/dashboard/settings/change-password", {}, owner["token"])
    assert status == 400 and {"current_password", "new_password"} <= set(body["error"]["detail"])
    # Nothing changed: the token still works.
    assert (await client.get("/dashboard/account", headers=bearer(owner["token"]))).status == 200


async def test_rotate_key_invalidates_the_old_key_at_once(client, owner):
    old_key = owner["api_keys"]["merchant_api_key"]
    status, body = await post(client, "/dashboard/settings/rotate-key", {"key_type": "merchantApiKey"},
                              owner["token"])
    data = body["data"]
    assert status == 200 and data["key_type"] == "merchantApiKey" and data["new_key"].startswith("ok_m_")
    db = client.app[GATEWAY].db
    from orbchain.core.accounts.auth import find_api_key

    assert await find_api_key(db, old_key) is None
    assert (await find_api_key(db, data["new_key"])).row["id"] == f"legacy_merchant_{owner['merchant_id']}"
    # The other two legacy keys are untouched.
    assert await find_api_key(db, owner["api_keys"]["payout_api_key"]) is not None
    listed = await client.get("/dashboard/api-keys", headers=bearer(owner["token"]))
    assert (await listed.json())["data"]["merchant_api_key"].endswith(data["new_key"][-8:])


async def test_rotate_key_bad_input(client, owner):
    for body in ({}, {"key_type": "adminApiKey"}, {"key_type": "merchant"}):
        status, answer = await post(client, "/dashboard/settings/rotate-key", body, owner["token"])
        assert status == 400 and "key_type" in answer["error"]["detail"]


# -- two-factor ---------------------------------------------------------------------------------


async def test_mfa_setup_verify_disable(client, owner):
    gateway = client.app[GATEWAY]
    now = 1_800_000_000
    gateway.clock = lambda: now
    # Sign in again so the token is issued on the fixed clock.
    login = await client.post("/dashboard/auth/login", json={"email": "owner@example.com", "password": "s3cret-pass"})
    token = (await login.json())["data"]["token"]
    status, body = await post(client, "/dashboard/mfa/setup", {}, token)
    data = body["data"]
    assert status == 200 and data["otpauth_url"].startswith("otpauth://totp/")
    assert data["qr_code"].startswith("data:image/svg+xml") and len(data["secret"]) == 32
    totp = pyotp.TOTP(data["secret"])
    account = (await (await client.get("/dashboard/account", headers=bearer(token))).json())["data"]["account"]
    assert account["totp_enabled"] is False  # off until verified
    status, body = await post(client, "/dashboard/mfa/verify", {"code": "000000" if totp.at(now) != "000000"
                                                                else "111111"}, token)
    assert status == 401 and body["message"] == "invalid TOTP code" and body["error"]["code"] == "totp_invalid"
    status, body = await post(client, "/dashboard/mfa/verify", {"code": totp.at(now)}, token)
    assert status == 200 and body["data"]["totp_enabled"] is True
    status, _ = await post(client, "/dashboard/mfa/setup", {}, token)
    assert status == 400  # the secret cannot be swapped while MFA is on
    # The same code cannot be used a second time (replay guard).
    status, _ = await post(client, "/dashboard/mfa/disable", {"code": totp.at(now)}, token)
    assert status == 401
    gateway.clock = lambda: now + 30
    status, body = await post(client, "/dashboard/mfa/disable", {"code": totp.at(now + 30)}, token)
    assert status == 200 and body["data"]["totp_enabled"] is False
    status, body = await post(client, "/dashboard/mfa/disable", {"code": totp.at(now + 30)}, token)
    assert status == 403 and body["error"]["code"] == "totp_setup_required"


async def test_mfa_bad_input(client, owner):
    for path in ("/dashboard/mfa/verify", "/dashboard/mfa/disable"):
        for body in ({}, {"code": "12345"}, {"code": "abcdef"}, {"code": "1234567"}):
            status, answer = await post(client, path, body, owner["token"])
            assert status == 400 and "code" in answer["error"]["detail"], (path, body)
    status, answer = await post(client, "/dashboard/mfa/verify", {"code": "123456"}, owner["token"])
    assert status == 403 and "setup" in answer["message"] and answer["error"]["code"] == "totp_setup_required"


async def test_verify_totp_helper_for_step_up(gateway):
    result = await accounts.sign_up(gateway, "stepup@example.com", "s3cret-pass")
    mid, now = result.merchant_id, 1_800_000_000
    assert not await accounts.verify_totp(gateway.db, mid, "123456", now=now)  # MFA not set up
    gateway.clock = lambda: now
    secret, _ = await accounts.start_totp_setup(gateway, mid)
    totp = pyotp.TOTP(secret)
    assert not await accounts.verify_totp(gateway.db, mid, totp.at(now), now=now)  # pending, not enabled
    await accounts.enable_totp(gateway, mid, totp.at(now))
    later = now + 60
    assert await accounts.verify_totp(gateway.db, mid, totp.at(later), now=later)
    assert not await accounts.verify_totp(gateway.db, mid, totp.at(later), now=later)  # replay
    assert not await accounts.verify_totp(gateway.db, mid, totp.at(later - 30), now=later)  # older step
    assert await accounts.verify_totp(gateway.db, mid, totp.at(later + 30), now=later + 30)
    assert not await accounts.verify_totp(gateway.db, mid, "not a code", now=later + 60)
