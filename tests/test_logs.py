"""Logs (issue 22): plain text by default, one JSON object per line when configured, never a secret.

The secret scan runs a whole journey (sign-up, keys, webhook secret, TOTP,
a paid payment with its webhook delivered, a payout, a transfer, key rotation,
password change, failed sign-ins and bad keys) with the access log on and
every logger at DEBUG, then looks for every secret the journey created or
the gateway holds (API keys, JWTs, webhook secret, passwords, TOTP secret,
HD seed, JWT secret, receipt key) in everything that was logged, in both formats.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import time

import pyotp
import pytest

from orbchain.core.infra.config import LoggingConfig
from orbchain.core.infra.logs import configure_logging
from orbchain.core.events.webhooks import deliver_due
from orbchain.web.keys import GATEWAY

from .support import Devnet, WebhookReceiver, api, signup

BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"


@pytest.fixture
def captured():
    """Everything logged during the test, through the gateway's own handler."""
    buffer = io.StringIO()
    root = logging.getLogger()
    level = root.level

    def start(fmt: str) -> io.StringIO:
        configure_logging(LoggingConfig(format=fmt, access_log=True), verbose=True, stream=buffer)
        return buffer

    yield start
    for handler in [h for h in root.handlers if getattr(h, "_orbchain_handler", False)]:
        root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


async def test_text_is_the_default_and_json_lines_carry_the_request(make_client, make_config, captured):
    assert LoggingConfig().format == "text" and LoggingConfig().access_log is False
    buffer = captured("json")
    client = await make_client(make_config(scheduler={"enabled": False}, logging={"access_log": True,
                                                                                   "format": "json"}))
    merchant = await signup(client, "json@example.com")
    response = await client.get("/v1/payment/unknown-track", headers=merchant.merchant_key)
    assert response.status == 404
    request_id = response.headers["X-Request-Id"]
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]  # every line is one JSON object
    access = [e for e in lines if e["logger"] == "orbchain.access" and e.get("request_id") == request_id]
    assert len(access) == 1
    entry = access[0]
    assert entry["route"] == "/v1/payment/{track_id}" and entry["status"] == 404 and entry["method"] == "GET"
    assert entry["merchant_id"] == merchant.merchant_id and entry["duration_ms"] >= 0
    assert entry["level"] == "INFO" and entry["time"].endswith("Z")
    # Outside a request no request fields are made up.
    logging.getLogger("orbchain.test").info("no request here")
    last = json.loads(buffer.getvalue().splitlines()[-1])
    assert last["message"] == "no request here" and "request_id" not in last


async def test_text_format_access_line(make_client, make_config, captured):
    buffer = captured("text")
    client = await make_client(make_config(scheduler={"enabled": False}, logging={"access_log": True}))
    response = await client.get("/health")
    line = [x for x in buffer.getvalue().splitlines() if "orbchain.access" in x][-1]
    assert " INFO orbchain.access: GET /health 200 " in line
    assert line.endswith(f"[request {response.headers['X-Request-Id']}]")
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)


async def test_access_log_is_off_unless_configured(make_client, make_config, captured):
    buffer = captured("text")
    client = await make_client(make_config(scheduler={"enabled": False}))
    await client.get("/health")
    assert "orbchain.access" not in buffer.getvalue()


@pytest.mark.parametrize("fmt", ["text", "json"])
async def test_no_secret_in_the_logs_of_a_whole_journey(fmt, make_client, make_config, captured, receiver):
    buffer = captured(fmt)
    client = await make_client(make_config(scheduler={"enabled": False}, logging={"access_log": True, "format": fmt}))
    gateway = client.app[GATEWAY]
    devnet = Devnet(client)
    created: list[str] = []

    password = "journey-passw0rd-long"
    merchant = await signup(client, "journey@example.com", password)
    created += [password, merchant.token, *merchant.keys.values()]
    url = await receiver.start()
    _, body = await api(client, "PUT", "/dashboard/settings/webhook", merchant.jwt, json={"webhook_url": url})
    created.append(body["data"]["webhook_secret"])
    _, body = await api(client, "POST", "/dashboard/mfa/setup", merchant.jwt)
    totp_secret = body["data"]["secret"]
    created.append(totp_secret)
    status, _ = await api(client, "POST", "/dashboard/mfa/verify", merchant.jwt,
                          json={"code": pyotp.TOTP(totp_secret).now()})
    assert status == 200
    status, body = await api(client, "POST", "/dashboard/api-keys", merchant.jwt,
                             json={"label": "shop", "scopes": ["payment:read"]})
    assert status == 200, body
    created += [v for k, v in body["data"].items() if isinstance(v, str) and v.startswith("ok_")]

    # A payment paid on devnet, its webhook delivered (signed with the secret).
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01"})
    assert status == 200, body
    await devnet.pay("BTC", body["data"]["address"], "0.01")
    await devnet.mine(2)
    await deliver_due(gateway)
    assert receiver.requests
    status, body = await api(client, "POST", "/v1/payout", merchant.payout_key,
                             json={"currency": "BTC", "address": BTC_DEST, "amount": "0.001"})
    assert status == 200, body
    other = await signup(client, "other@example.com", "other-passw0rd-long")
    created += ["other-passw0rd-long", other.token, *other.keys.values()]
    _, account = await api(client, "GET", "/dashboard/account", other.jwt)
    status, body = await api(client, "POST", "/v1/transfer", merchant.merchant_key,
                             json={"to_account_id": account["data"]["account"]["account_id"], "coin": "BTC", "amount": "0.001",
                                   "totp_code": pyotp.TOTP(totp_secret).at(time.time() + 30)})
    assert status == 200, body  # the next TOTP step: the current one was spent on activation
    # Key rotation, password change, sign-in (a new JWT), and refused attempts carrying secrets.
    _, body = await api(client, "POST", "/dashboard/settings/rotate-key", merchant.jwt,
                        json={"key_type": "generalApiKey"})
    created.append(body["data"]["new_key"])
    new_password = "changed-passw0rd-long"
    created.append(new_password)
    status, body = await api(client, "POST", "/dashboard/settings/change-password", merchant.jwt,
                             json={"current_password": password, "new_password": new_password})
    assert status == 200, body
    status, body = await api(client, "POST", "/dashboard/auth/login", {},
                             json={"email": "journey@example.com", "password": new_password,
                                   "totp_code": pyotp.TOTP(totp_secret).now()})
    if status == 200 and body["data"].get("token"):
        created.append(body["data"]["token"])
    wrong = "wrong-passw0rd-guess"
    created.append(wrong)
    await api(client, "POST", "/dashboard/auth/login", {}, json={"email": "journey@example.com", "password": wrong})
    bad_key = "ok_m_" + "9" * 44
    created.append(bad_key)
    assert (await api(client, "GET", "/v1/payment/x", {"merchant_api_key": bad_key}))[0] == 401
    assert (await client.get("/dashboard/account", headers={"Authorization": f"Bearer {merchant.token}x"})).status == 401

    secrets = gateway.require_secrets()
    created += [secrets.jwt_secret.decode(), secrets.seed_material,
                base64.b64encode(bytes(secrets.receipt_key)).decode(), bytes(secrets.receipt_key).hex()]
    log = buffer.getvalue()
    assert log.count("orbchain.access") >= 15 and "webhook" in log  # the journey really was logged
    assert all(len(secret) >= 8 for secret in created)
    leaked = [index for index, secret in enumerate(created) if secret in log]
    assert not leaked, f"secrets number {leaked} of the journey reached the {fmt} log"  # indexes, not the secrets
    # The seed's words must not appear in sequence either (a mnemonic can be split by formatting).
    words = secrets.seed_material.split()
    if len(words) >= 12:
        assert " ".join(words[:4]) not in log
