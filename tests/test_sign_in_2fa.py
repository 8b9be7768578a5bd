"""The account holder's own 2FA at sign-in, and recovery codes (issue 42 item 4), on SQLite and PostgreSQL.

On main (4d55f4a) the holder's sign-in returned a session on the password alone, with 2FA on: here every
sign-in asks the code first (the JSON API answers 401 ``totp_required`` until ``totp_code`` comes; the page
asks it on its own page; the identity provider's and the mini-app's flows are in tests/test_oidc.py and
below). Recovery codes are made when 2FA is turned on, shown once, stored hashed, spent once, accepted where
a sign-in asks its code and nowhere else, and counted by the same code lockout; the activity log records
each step.
"""

from __future__ import annotations

import hashlib
import json
import re

import pyotp
import pytest

from orbchain.api import ApiError, Principal, verify_second_factor
from orbchain.web.keys import GATEWAY

from .dashboard_support import PASSWORD, Visitor
from .support import advance_clock, api, bearer, signup
from .telegram_support import fund, init_data_for, link_via_bot, next_code, open_session, telegram_shop

OWNER = "owner@example.com"
LOGIN = "/dashboard/auth/login"
CODE_PAGE = "/app/login/code"
RECOVERY = re.compile(r"^[a-z2-7]{4}(-[a-z2-7]{4}){3}$")


@pytest.fixture
async def env(make_client, make_config):
    """A gateway whose sign-in and write limits do not get in the way, and its account holder (2FA off)."""
    client = await make_client(make_config(rate_limits={"write_per_minute": 100000, "auth_per_minute": 1000},
                                           scheduler={"enabled": False}))
    holder = await signup(client, OWNER, PASSWORD)
    return client, client.app[GATEWAY], holder


async def turn_on_2fa(client, gateway, holder) -> tuple[pyotp.TOTP, list[str]]:
    """The holder turns 2FA on through the JSON API: their authenticator and the recovery codes shown once
    (none before issue 42: the tests then fail on what they test, not here)."""
    secret = (await api(client, "POST", "/dashboard/mfa/setup", holder.jwt))[1]["data"]["secret"]
    totp = pyotp.TOTP(secret)
    status, body = await api(client, "POST", "/dashboard/mfa/verify", holder.jwt,
                             json={"code": totp.at(gateway.now())})
    assert status == 200 and body["data"]["totp_enabled"] is True, body
    advance_clock(gateway, 30)
    return totp, body["data"].get("recovery_codes", [])


async def log_in(client, **fields):
    return await api(client, "POST", LOGIN, {}, json={"email": OWNER, "password": PASSWORD, **fields})


def error_code(body: dict) -> str | None:
    """The named code of an error answer; None for a success (main's answer to what is refused here)."""
    return (body.get("error") or {}).get("code")


async def events(gateway, kind: str) -> list[dict]:
    rows = await gateway.db.fetch_all("SELECT kind, details, alert, actor FROM security_events WHERE kind = :k"
                                      " ORDER BY id", {"k": kind})
    return [{**dict(row), "details": json.loads(row["details"])} for row in rows]


# -- the JSON sign-in ------------------------------------------------------------------------------------------------


async def test_json_sign_in_asks_the_holders_code_before_any_token(env):
    client, gateway, holder = env
    status, body = await log_in(client)
    assert status == 200 and set(body["data"]) == {"token", "merchant_id", "email"}  # SPEC's shape without 2FA
    totp, codes = await turn_on_2fa(client, gateway, holder)
    status, body = await log_in(client)
    assert (status, error_code(body), body["data"]) == (401, "totp_required", None), body  # main: 200
    assert "authenticator app" in body["error"]["message"]
    for missing in ("", "   "):
        assert error_code((await log_in(client, totp_code=missing))[1]) == "totp_required"
    # A wrong password never reaches the code step: no hint that the password was right.
    status, body = await api(client, "POST", LOGIN, {}, json={"email": OWNER, "password": "wrong-password-1"})
    assert (status, error_code(body), body["message"]) == (401, "unauthorized", "invalid credentials")
    wrong = "000000" if totp.at(gateway.now()) != "000000" else "111111"
    status, body = await log_in(client, totp_code=wrong)
    assert (status, error_code(body)) == (401, "totp_invalid"), body

    code = totp.at(gateway.now())
    status, body = await log_in(client, totp_code=code)
    assert status == 200 and set(body["data"]) == {"token", "merchant_id", "email"}, body
    assert (await api(client, "GET", "/dashboard/account", bearer(body["data"]["token"])))[0] == 200
    assert error_code((await log_in(client, totp_code=code))[1]) == "totp_invalid"  # a code is good once
    assert len(codes) == 10 == len(set(codes)) and all(RECOVERY.match(code) for code in codes)
    # The activity log has the step: the factor on the sign-in, and the refused code.
    signed = [e for e in await events(gateway, "sign_in") if e["details"].get("second_factor")]
    assert [e["details"] for e in signed] == [{"method": "password", "second_factor": "totp"}]
    refused = await events(gateway, "second_factor_refused")  # the wrong code and the replay (a missing one is not)
    assert [e["details"] for e in refused] == [{"method": "password"}] * 2


async def test_recovery_codes_sign_in_once_are_stored_hashed_and_renewed(env):
    client, gateway, holder = env
    totp, codes = await turn_on_2fa(client, gateway, holder)
    assert len(codes) == 10, "2FA turned on shows the recovery codes once"  # main: none
    rows = await gateway.db.fetch_all("SELECT * FROM recovery_codes WHERE owner_id = :o", {"o": holder.merchant_id})
    stored = json.dumps([dict(row) for row in rows], default=str)
    assert len(rows) == 10 and not any(code in stored or code.replace("-", "") in stored for code in codes)
    assert {row["code_hash"] for row in rows} == {
        hashlib.sha256(code.replace("-", "").encode()).hexdigest() for code in codes}

    typed = codes[0].upper().replace("-", " ")  # as a person may type it
    status, body = await log_in(client, totp_code=typed)
    assert status == 200, body
    status, body = await log_in(client, totp_code=codes[0])
    assert (status, error_code(body)) == (401, "totp_invalid"), body  # spent
    assert (await log_in(client, totp_code=codes[1]))[0] == 200
    used = await events(gateway, "recovery_code_used")
    assert [(e["details"], e["alert"]) for e in used] == [
        ({"method": "password", "remaining": "9"}, True), ({"method": "password", "remaining": "8"}, True)]
    sign_ins = [e["details"].get("second_factor") for e in await events(gateway, "sign_in")]
    assert sign_ins[-2:] == ["recovery_code", "recovery_code"]

    # A new set takes a fresh authenticator code, never a recovery code; the old set stops working.
    path = "/dashboard/mfa/recovery-codes"
    status, body = await api(client, "POST", path, holder.jwt, json={"code": codes[2]})
    assert (status, body["error"]["type"]) == (400, "validation"), body
    status, body = await api(client, "POST", path, holder.jwt, json={"code": totp.at(gateway.now())})
    assert status == 200 and len(body["data"]["recovery_codes"]) == 10, body
    renewed = body["data"]["recovery_codes"]
    assert not set(renewed) & set(codes)
    assert error_code((await log_in(client, totp_code=codes[2]))[1]) == "totp_invalid"
    assert (await log_in(client, totp_code=renewed[0]))[0] == 200
    assert [e["details"] for e in await events(gateway, "recovery_codes_created")] == [{"via": "dashboard"}]
    assert (await api(client, "POST", path, {}, json={"code": "123456"}))[0] == 401  # the holder's token only

    # 2FA off: the codes go, and the password alone signs in again (SPEC's answer).
    advance_clock(gateway, 30)
    status, body = await api(client, "POST", "/dashboard/mfa/disable", holder.jwt,
                             json={"code": totp.at(gateway.now())})
    assert status == 200, body
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM recovery_codes", {}) == 0
    assert (await log_in(client))[0] == 200


async def test_a_recovery_code_never_passes_for_a_transfer(env):
    client, gateway, holder = env
    await fund(client, holder, gateway, "0.01")
    bob = await signup(client, "bob@example.com")
    bob_account = (await api(client, "GET", "/dashboard/account", bob.jwt))[1]["data"]["account"]["account_id"]
    totp, codes = await turn_on_2fa(client, gateway, holder)
    transfer = {"to_account_id": bob_account, "coin": "BTC", "amount": "0.001", "totp_code": codes[0]}
    status, body = await api(client, "POST", "/dashboard/transfer", holder.jwt, json=transfer)
    assert (status, error_code(body)) == (401, "totp_invalid"), body
    with pytest.raises(ApiError) as refused:
        await verify_second_factor(gateway, Principal(merchant_id=holder.merchant_id, via="jwt"), codes[0])
    assert refused.value.code == "totp_invalid"
    assert (await log_in(client, totp_code=codes[0]))[0] == 200  # not spent by the refused transfer
    status, body = await api(client, "POST", "/dashboard/transfer", holder.jwt,
                             json={**transfer, "totp_code": totp.at(gateway.now() + 30)})
    assert status == 200, body


async def test_recovery_codes_count_toward_the_same_code_lockout(env):
    client, gateway, holder = env
    totp, codes = await turn_on_2fa(client, gateway, holder)
    for _ in range(5):
        status, body = await log_in(client, totp_code="aaaa-bbbb-cccc-dddd")  # well formed, not one of theirs
        assert (status, error_code(body)) == (401, "totp_invalid"), body
    status, body = await log_in(client, totp_code=totp.at(gateway.now()))
    assert (status, body["error"]["type"]) == (429, "rate_limit"), body
    assert (await log_in(client, totp_code=codes[0]))[0] == 429  # a right recovery code waits too
    # The holder's step-ups share that lockout (one count per secret and channel).
    with pytest.raises(ApiError) as locked:
        await verify_second_factor(gateway, Principal(merchant_id=holder.merchant_id, via="jwt"),
                                   totp.at(gateway.now()))
    assert locked.value.status == 429
    advance_clock(gateway, 15 * 60 + 30)
    assert (await log_in(client, totp_code=codes[0]))[0] == 200


# -- the sign-in page ------------------------------------------------------------------------------------------------


async def test_the_sign_in_page_asks_the_code_on_its_own_page_before_any_session(env):
    client, gateway, holder = env
    totp, codes = await turn_on_2fa(client, gateway, holder)
    browser = Visitor(client)
    await browser.get("/app/login?next=/app/settings")
    response = await browser.submit("/app/login", {"email": OWNER, "password": PASSWORD, "next": "/app/settings"})
    assert response.headers["Location"] == CODE_PAGE
    cookie = response.cookies["orb_sign_in_step"]
    assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == CODE_PAGE
    assert "orb_session" not in response.cookies
    await browser.get("/app", expect=303)  # no session yet
    page = await browser.get(CODE_PAGE)
    assert 'name="totp_code"' in page and "recovery codes" in page
    await browser.submit(CODE_PAGE, {"totp_code": ""}, expect=401)
    assert "authenticator app" in browser.page
    await browser.submit(CODE_PAGE, {"totp_code": "<b>123456</b>"}, expect=401)
    assert "invalid totp code" in browser.page.lower() and "<b>123456</b>" not in browser.page
    response = await browser.submit(CODE_PAGE, {"totp_code": totp.at(gateway.now())})
    assert response.headers["Location"] == "/app/settings"
    assert OWNER in await browser.get("/app")

    # The step works once: its cookie copied into another browser signs nobody in.
    client.session.cookie_jar.clear()
    other = Visitor(client)
    await other.get("/app/login")
    client.session.cookie_jar.update_cookies({"orb_sign_in_step": cookie.value}, client.make_url(CODE_PAGE))
    await other.get(CODE_PAGE)
    response = await other.submit(CODE_PAGE, {"totp_code": codes[0]})
    assert response.headers["Location"] == "/app/login?notice=sign-in-step-ended"
    assert (await log_in(client, totp_code=codes[0]))[0] == 200  # the refused step spent no code

    # Without the step's cookie the code page sends the browser to sign in.
    client.session.cookie_jar.clear()
    await Visitor(client).get(CODE_PAGE, expect=303)
    # A recovery code finishes the page too, and the activity log says so.
    browser = Visitor(client)
    await browser.get("/app/login")
    await browser.submit("/app/login", {"email": OWNER, "password": PASSWORD})
    await browser.get(CODE_PAGE)
    response = await browser.submit(CODE_PAGE, {"totp_code": codes[1]})
    assert response.headers["Location"] == "/app"
    assert "recovery code" in await browser.get("/app/activity")
    # A forged form (no CSRF token of this browser) changes nothing.
    await browser.submit("/app/logout")
    await browser.get("/app/login")
    await browser.submit("/app/login", {"email": OWNER, "password": PASSWORD})
    await browser.submit(CODE_PAGE, {"totp_code": codes[2]}, token="forged", expect=403)
    await browser.get(CODE_PAGE)
    assert (await browser.submit(CODE_PAGE, {"totp_code": codes[2]})).headers["Location"] == "/app"


async def test_the_security_page_shows_the_codes_once_and_makes_new_ones(env):
    client, gateway, holder = env
    browser = Visitor(client)
    await browser.sign_in(OWNER)
    await browser.get("/app/security")
    await browser.submit("/app/security/setup", expect=200)
    totp = pyotp.TOTP(re.search(r'id="totp-secret"[^>]*>([A-Z2-7]+)</code>', browser.page).group(1))
    await browser.submit("/app/security/verify", {"code": totp.at(gateway.now())}, expect=200)
    shown = re.findall(r"<li><code>([a-z2-7-]{19})</code></li>", browser.page)
    assert len(shown) == 10
    page = await browser.get("/app/security")
    assert "10 unused recovery codes left." in page and not any(code in page for code in shown)
    advance_clock(gateway, 30)
    await browser.submit("/app/security/recovery-codes", {"code": totp.at(gateway.now())}, expect=200)
    renewed = re.findall(r"<li><code>([a-z2-7-]{19})</code></li>", browser.page)
    assert len(renewed) == 10 and not set(renewed) & set(shown)
    await browser.get("/app/security")
    await browser.submit("/app/security/recovery-codes", {"code": renewed[0]}, expect=400)  # not a 6-digit code
    assert error_code((await log_in(client, totp_code=shown[0]))[1]) == "totp_invalid"
    assert (await log_in(client, totp_code=renewed[0]))[0] == 200
    assert "9 unused recovery codes left." in await browser.get("/app/security")


# -- the mini-app ----------------------------------------------------------------------------------------------------


async def test_the_miniapp_session_asks_the_holders_code_when_2fa_is_on(make_client, make_config, standin):
    client, merchant, gateway = await telegram_shop(make_client, make_config, standin)
    await link_via_bot(client, gateway, standin, merchant)
    mini = bearer((await open_session(client, gateway))["token"])  # 2FA off: SPEC's session
    assert (await api(client, "GET", "/tgapp/balances", mini))[0] == 200
    totp, codes = await turn_on_2fa(client, gateway, merchant)
    secret = totp.secret

    init_data = init_data_for(5550001, gateway.now(), query_id="AAE-2fa")
    status, body = await api(client, "POST", "/tgapp/session", {}, json={"init_data": init_data})
    assert (status, error_code(body)) == (401, "totp_required"), body  # main: 200, a session
    status, body = await api(client, "POST", "/tgapp/session", {}, json={"init_data": init_data,
                                                                         "totp_code": "000000"})
    assert (status, error_code(body)) == (401, "totp_invalid"), body
    # The init data was not spent by the refusals: the same one opens the session with the code.
    status, body = await api(client, "POST", "/tgapp/session", {},
                             json={"init_data": init_data, "totp_code": next_code(gateway, secret)})
    assert status == 200 and set(body["data"]) == {"token", "expires_in", "merchant"}, body
    status, body = await api(client, "POST", "/tgapp/session", {},
                             json={"init_data": init_data, "totp_code": next_code(gateway, secret)})
    assert (status, error_code(body)) == (401, "init_data_replayed"), body
    assert len(codes) == 10
    fresh = init_data_for(5550001, gateway.now(), query_id="AAE-rc")
    status, body = await api(client, "POST", "/tgapp/session", {}, json={"init_data": fresh, "totp_code": codes[0]})
    assert status == 200, body
    methods = [(e["details"].get("method"), e["details"].get("second_factor")) for e in await events(gateway, "sign_in")]
    assert ("miniapp", "totp") in methods and ("miniapp", "recovery_code") in methods
    # Its wrong codes count on the mini-app's own lockout: the dashboard's sign-in still takes the code.
    for _ in range(5):
        await api(client, "POST", "/tgapp/session", {}, json={"init_data": fresh, "totp_code": "000000"})
    status, _ = await api(client, "POST", LOGIN, {}, json={"email": "merchant@example.com", "password": "s3cret-pass",
                                                           "totp_code": next_code(gateway, secret)})
    assert status == 200
