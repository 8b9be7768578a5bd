"""Team members' own two-factor authentication (issue 36), on SQLite and PostgreSQL.

A member sets up, confirms and turns off their own TOTP on their Security page; their sign-in then asks
for their code; every step-up (transfers here, swaps and approvals through the same
``orbchain.api.verify_second_factor``) checks the code of whoever acts: the member's own when a member
sends, the holder's when the holder (or one of their keys) does, never the other's.
"""

from __future__ import annotations

import re

import pyotp
import pytest

from orbchain.api import Principal, verify_second_factor
from orbchain.api import ApiError
from orbchain.web.keys import GATEWAY

from .dashboard_support import PASSWORD, Visitor
from .support import Devnet, api, bearer, signup
from .test_payouts import fund
from .teams_support import OWNER, invite, join, member_jwt, owner_of

SECRET = re.compile(r'id="totp-secret"[^>]*>([A-Z2-7]+)</code>')
FIN = "fin@example.com"


@pytest.fixture
async def env(make_client, make_config):
    client = await make_client(make_config(rate_limits={"write_per_minute": 100000, "auth_per_minute": 1000}, scheduler={"enabled": False}))
    gateway = client.app[GATEWAY]
    now = [gateway.now()]
    gateway.clock = lambda: now[0]
    return client, now


def other_than(code: str) -> str:
    return "000000" if code != "000000" else "111111"


async def member_setup(member: Visitor, now: list[int]) -> pyotp.TOTP:
    """The member turns on their own 2FA on their Security page; their authenticator."""
    page = await member.get("/app/security")
    assert 'id="totp-whose"' in page and "<strong>off</strong>" in page
    await member.submit("/app/security/setup", expect=200)
    totp = pyotp.TOTP(SECRET.search(member.page).group(1))
    await member.submit("/app/security/verify", {"code": other_than(totp.at(now[0]))}, expect=401)
    assert "invalid totp code" in member.page.lower()
    await member.submit("/app/security/verify", {"code": totp.at(now[0])}, expect=200)  # the recovery codes, once
    assert len(re.findall(r"<li><code>[a-z2-7]{4}-", member.page)) == 10
    assert "<strong>on</strong>" in await member.get("/app/security")
    now[0] += 30
    return totp


async def holder_setup(client, token: str, now: list[int]) -> pyotp.TOTP:
    secret = (await api(client, "POST", "/dashboard/mfa/setup", bearer(token)))[1]["data"]["secret"]
    totp = pyotp.TOTP(secret)
    status, body = await api(client, "POST", "/dashboard/mfa/verify", bearer(token), json={"code": totp.at(now[0])})
    assert status == 200, body
    now[0] += 30
    return totp


async def sign_in_with(client, email: str, fields: dict, expect: int) -> Visitor:
    client.session.cookie_jar.clear()
    visitor = Visitor(client)
    await visitor.get("/app/login")
    await visitor.submit("/app/login", {"email": email, "password": PASSWORD, **fields}, expect=expect)
    return visitor


async def test_member_sets_up_totp_and_signs_in_with_it(env):
    client, now = env
    owner = await owner_of(client)
    member = await join(client, await invite(owner, FIN, "finance"))
    totp = await member_setup(member, now)
    gateway = client.app[GATEWAY]
    holder = await gateway.db.fetch_one("SELECT totp_enabled FROM merchants WHERE email = :e", {"e": OWNER})
    assert not holder["totp_enabled"]  # the member's 2FA is theirs, the holder's untouched

    # Sign-in: the password alone is not enough (the code page comes next, issue 42), nor a wrong or replayed code.
    client.session.cookie_jar.clear()
    visitor = Visitor(client)
    await visitor.get("/app/login")
    response = await visitor.submit("/app/login", {"email": FIN, "password": PASSWORD})
    assert response.headers["Location"] == "/app/login/code"
    assert "invalid totp code" in (await sign_in_with(client, FIN, {"totp_code": other_than(totp.at(now[0]))},
                                                      401)).page.lower()
    code = totp.at(now[0])
    signed = await sign_in_with(client, FIN, {"totp_code": code}, 303)
    assert FIN in await signed.get("/app")
    await sign_in_with(client, FIN, {"totp_code": code}, 401)  # the same code twice: refused
    # The JSON sign-in alike: 401 totp_required (issue 42: it was a 400 naming the field), then a fresh code.
    status, body = await api(client, "POST", "/dashboard/auth/login", {}, json={"email": FIN, "password": PASSWORD})
    assert (status, body["error"]["code"]) == (401, "totp_required"), body
    now[0] += 30
    status, body = await api(client, "POST", "/dashboard/auth/login", {},
                             json={"email": FIN, "password": PASSWORD, "totp_code": totp.at(now[0])})
    assert status == 200, body
    # The holder's sign-in is unchanged (SPEC: 2FA guards money, not the holder's sign-in).
    assert (await api(client, "POST", "/dashboard/auth/login", {},
                      json={"email": OWNER, "password": PASSWORD}))[0] == 200

    # Turning it off takes a fresh code of theirs; then the password alone signs in again.
    now[0] += 30
    signed = await sign_in_with(client, FIN, {"totp_code": totp.at(now[0])}, 303)
    now[0] += 30
    await signed.get("/app/security")
    await signed.submit("/app/security/disable", {"code": totp.at(now[0])})
    assert "<strong>off</strong>" in await signed.get("/app/security")
    await sign_in_with(client, FIN, {}, 303)
    activity = await owner_sign_in_and_read(client, "/app/activity")
    assert re.search(r"activity-actor\"[^>]*>member fin@example.com", activity)


async def owner_sign_in_and_read(client, path: str, code: str | None = None) -> str:
    client.session.cookie_jar.clear()
    owner = Visitor(client)
    await owner.sign_in(OWNER, code=code)
    return await owner.get(path)


async def test_finance_member_sends_with_their_own_code_while_the_holder_has_2fa(env):
    client, now = env
    owner = Visitor(client)
    keys = await owner.sign_up(OWNER)
    gateway = client.app[GATEWAY]
    holder_id = (await gateway.db.fetch_one("SELECT id FROM merchants WHERE email = :e", {"e": OWNER}))["id"]
    holder = type("Holder", (), {"merchant_key": {"merchant_api_key": keys["merchant_api_key"]}})()
    await fund(client, holder, Devnet(client))
    bob = await signup(client, "bob@example.com")
    bob_account = (await api(client, "GET", "/dashboard/account", bob.jwt))[1]["data"]["account"]["account_id"]
    member = await join(client, await invite(owner, FIN, "finance"))
    holder_jwt = await member_jwt(client, OWNER)
    holder_totp = await holder_setup(client, holder_jwt, now)
    transfer = {"to_account_id": bob_account, "coin": "BTC", "amount": "0.001"}

    # A member without 2FA of their own is refused while the holder has 2FA on.
    await member.get("/app/transfers")
    assert 'name="totp_code"' not in member.page
    await member.submit("/app/transfers", {**transfer, "idempotency_key": "member-0001"}, expect=403)
    assert "set up your own" in member.page
    member_totp = await member_setup(member, now)

    # The holder's code does not work for the member ...
    await member.get("/app/transfers")
    assert 'name="totp_code"' in member.page
    await member.submit("/app/transfers", {**transfer, "totp_code": holder_totp.at(now[0])}, expect=401)
    assert "invalid totp code" in member.page.lower() and holder_totp.at(now[0]) not in member.page
    # ... the member's own does, once.
    code = member_totp.at(now[0])
    await member.submit("/app/transfers", {**transfer, "totp_code": code})
    await member.get("/app/transfers")
    await member.submit("/app/transfers", {**transfer, "totp_code": code}, expect=401)
    # The member's code does not work for the holder (their token or their API key); the holder's does.
    status, body = await api(client, "POST", "/dashboard/transfer", bearer(holder_jwt),
                             json={**transfer, "totp_code": member_totp.at(now[0])})
    assert (status, body["error"]["code"]) == (401, "totp_invalid"), body
    status, body = await api(client, "POST", "/v1/transfer", holder.merchant_key,
                             json={**transfer, "totp_code": member_totp.at(now[0])})
    assert status == 401, body
    status, body = await api(client, "POST", "/v1/transfer", holder.merchant_key,
                             json={**transfer, "totp_code": holder_totp.at(now[0])})
    assert status == 200, body
    # The member's JSON token takes their own next code.
    now[0] += 30
    token = (await api(client, "POST", "/dashboard/auth/login", {},
                       json={"email": FIN, "password": PASSWORD, "totp_code": member_totp.at(now[0])}))[1]["data"]
    now[0] += 30
    status, body = await api(client, "POST", "/dashboard/transfer", bearer(token["token"]),
                             json={**transfer, "totp_code": member_totp.at(now[0])})
    assert status == 200, body
    sent = await gateway.db.fetch_all("SELECT amount FROM transfers WHERE from_merchant_id = :m", {"m": holder_id})
    assert len(sent) == 3


async def test_verify_second_factor_checks_whoever_acts_and_locks_them_alone(env):
    client, now = env
    owner = await owner_of(client)
    member = await join(client, await invite(owner, FIN, "finance"))
    member_totp = await member_setup(member, now)
    holder_totp = await holder_setup(client, await member_jwt(client, OWNER), now)
    gateway = client.app[GATEWAY]
    merchant_id = (await gateway.db.fetch_one("SELECT id FROM merchants WHERE email = :e", {"e": OWNER}))["id"]
    member_id = (await gateway.db.fetch_one("SELECT id FROM team_members WHERE email = :e", {"e": FIN}))["id"]
    as_holder = Principal(merchant_id=merchant_id, via="jwt")
    as_key = Principal(merchant_id=merchant_id, via="scoped_key", key_id="key_x")
    as_member = Principal(merchant_id=merchant_id, via="jwt", member_id=member_id, member_email=FIN)

    async def refused(principal, code) -> tuple[int, str | None]:
        with pytest.raises(ApiError) as caught:
            await verify_second_factor(gateway, principal, code)
        return caught.value.status, caught.value.code

    assert await refused(as_member, holder_totp.at(now[0])) == (401, "totp_invalid")
    assert await refused(as_holder, member_totp.at(now[0])) == (401, "totp_invalid")
    assert await refused(as_member, None) == (401, "totp_invalid")
    await verify_second_factor(gateway, as_member, member_totp.at(now[0]))
    await verify_second_factor(gateway, as_key, holder_totp.at(now[0]))  # a key acts for the holder
    assert await refused(as_holder, holder_totp.at(now[0])) == (401, "totp_invalid")  # spent by the key
    # A member's wrong codes lock that member only; the holder's codes still work.
    for _ in range(5):
        await refused(as_member, "123456" if member_totp.at(now[0]) != "123456" else "654321")
    assert (await refused(as_member, member_totp.at(now[0] + 30)))[0] == 429
    now[0] += 30
    await verify_second_factor(gateway, as_holder, holder_totp.at(now[0]))
    # A removed member's secret goes with them. (The holder's own sign-in asks their code: issue 42.)
    now[0] += 30
    await owner_sign_in_and_read(client, "/app/team", holder_totp.at(now[0]))
    remover = Visitor(client)
    await remover.get("/app/team")
    await remover.submit("/app/team", {"action": "remove", "member_id": member_id})
    assert await gateway.db.fetch_one("SELECT id FROM member_totp WHERE id = :id", {"id": member_id}) is None


async def test_security_forms_refuse_forgery_and_hostile_input(env):
    client, now = env
    owner = await owner_of(client)
    member = await join(client, await invite(owner, "view@example.com", "viewer"))
    await member.get("/app/security")  # every member has their own page, a viewer too
    await member.submit("/app/security/setup", token="forged", expect=403)
    await member.submit("/app/security/verify", {"code": "000000"}, token="forged", expect=403)
    gateway = client.app[GATEWAY]
    assert await gateway.db.fetch_one("SELECT id FROM member_totp") is None
    for hostile in ("<script>alert(1)</script>", "1" * 5000, "12345", "１２３４５６"):
        await member.get("/app/security")
        await member.submit("/app/security/verify", {"code": hostile}, expect=400)
        assert "must be a 6-digit code" in member.page.lower() and "<script>alert" not in member.page
    await member.get("/app/security")
    await member.submit("/app/security/verify", {"code": "123456"}, expect=403)  # no setup yet
    await member.get("/app/security")
    await member.submit("/app/security/disable", {"code": "123456"}, expect=403)  # not on
    await member.get("/app/security")
    await member.submit("/app/security/elsewhere", expect=404)
    # The holder's 2FA endpoints stay the holder's: a member's token is refused there.
    token = await member_jwt(client, "view@example.com")
    status, body = await api(client, "POST", "/dashboard/mfa/setup", bearer(token))
    assert (status, body["error"]["detail"]["scope"]) == (403, "account:credentials")
    # Hostile codes at sign-in are a clear refusal, never a 500, for a member with 2FA on.
    await sign_in_with(client, "view@example.com", {}, 303)
    page = await Visitor(client).get("/app/security")
    assert "<strong>off</strong>" in page
    totp = await member_setup(Visitor(client), now)
    for hostile in ("<b>1</b>", "9" * 300, "abcdef"):
        visitor = await sign_in_with(client, "view@example.com", {"totp_code": hostile}, 401)
        assert "<b>1</b>" not in visitor.page
    for hostile in ({"a": 1}, [1], 12.5, True):
        status, body = await api(client, "POST", "/dashboard/auth/login", {},
                                 json={"email": "view@example.com", "password": PASSWORD, "totp_code": hostile})
        assert status == 401, (hostile, body)
    assert (await api(client, "POST", "/dashboard/auth/login", {},
                      json={"email": "view@example.com", "password": PASSWORD,
                            "totp_code": totp.at(now[0])}))[0] == 200


async def test_owner_requires_members_2fa_and_members_without_it_may_only_read(env):
    client, now = env
    owner = await owner_of(client)
    admin = await join(client, await invite(owner, "admin@example.com", "admin"))
    client.session.cookie_jar.clear()
    await owner.sign_in(OWNER)
    fin_link = await invite(owner, FIN, "finance")  # the finance member joins below, in their own browser
    # Only an owner changes the rule; a forged form changes nothing.
    await owner.get("/app/team")
    assert "may do what their role allows" in owner.page
    await owner.submit("/app/team", {"action": "require-2fa", "require_2fa": "on"}, token="forged", expect=403)
    await owner.get("/app/team")
    await owner.submit("/app/team", {"action": "require-2fa", "require_2fa": "on"})
    assert "<strong>may only read</strong>" in await owner.get("/app/team")
    client.session.cookie_jar.clear()
    await admin.sign_in("admin@example.com")
    page = await admin.get("/app/payments")  # an admin without 2FA reads ...
    assert 'href="/app/team"' not in page
    await admin.get("/app/team", expect=403)  # ... and nothing more
    member = await join(client, fin_link)
    await member.get("/app/payouts")
    assert 'id="payout-form"' not in member.page
    token = await member_jwt(client, FIN)
    status, body = await api(client, "POST", "/dashboard/transfer", bearer(token),
                             json={"to_account_id": "ORB-" + "1" * 20, "coin": "BTC", "amount": "0.001"})
    assert (status, body["error"]["detail"]) == (403, {"scope": "transfer:create"}), body
    # Setting up their own 2FA lifts it at their next click.
    await member_setup(member, now)
    await member.get("/app/payouts")
    assert 'id="payout-form"' in member.page
    # The owner turns it off again; the activity log says both.
    client.session.cookie_jar.clear()
    await owner.sign_in(OWNER)
    await owner.get("/app/team")
    await owner.submit("/app/team", {"action": "require-2fa", "require_2fa": "off"})
    page = await owner.get("/app/activity")
    assert "Members must now use two-factor authentication" in page and "no longer have to" in page



async def test_a_member_manages_their_own_totp_over_the_json_api(env):
    """``/dashboard/team/me/mfa/*``: setup, verify and disable like the holder's ``/dashboard/mfa/*``, for the
    member's own secret; open to a member whom "require 2FA" limited to reading; the holder is sent to theirs."""
    client, now = env
    owner = await owner_of(client)
    await owner.get("/app/team")
    await owner.submit("/app/team", {"action": "require-2fa", "require_2fa": "on"})
    await join(client, await invite(owner, FIN, "viewer"))
    member = bearer(await member_jwt(client, FIN))
    base = "/dashboard/team/me/mfa"
    assert (await api(client, "POST", "/dashboard/mfa/setup", member))[0] == 403  # the holder's stay the holder's
    status, body = await api(client, "POST", f"{base}/verify", member, json={"code": "123456"})
    assert (status, body["error"]["code"]) == (403, "totp_setup_required"), body
    status, body = await api(client, "POST", f"{base}/setup", member)
    assert status == 200 and body["data"]["qr_code"].startswith("data:image/"), body
    assert FIN.replace("@", "%40") in body["data"]["otpauth_url"]
    totp = pyotp.TOTP(body["data"]["secret"])
    wrong = ({"code": other_than(totp.at(now[0]))}, 401)
    for bad, expected in (wrong, ({"code": "12ab56"}, 400), ({}, 400), ({"code": ["123456"]}, 400)):
        status, body = await api(client, "POST", f"{base}/verify", member, json=bad)
        assert status == expected and body["error"]["code" if expected == 401 else "detail"] in (
            "totp_invalid", {"code": "must be a 6-digit code"}), (bad, body)
    status, body = await api(client, "POST", f"{base}/verify", member, json={"code": totp.at(now[0])})
    assert status == 200 and body["data"]["totp_enabled"] is True and len(body["data"]["recovery_codes"]) == 10
    gateway = client.app[GATEWAY]
    holder = await gateway.db.fetch_one("SELECT id, totp_enabled FROM merchants WHERE email = :e", {"e": OWNER})
    assert not holder["totp_enabled"]  # the member's own, never the holder's
    assert (await api(client, "POST", f"{base}/setup", member))[0] == 400  # on already: disable first
    now[0] += 30
    status, body = await api(client, "POST", "/dashboard/auth/login", {},
                             json={"email": FIN, "password": PASSWORD, "totp_code": totp.at(now[0])})
    assert status == 200, body  # their sign-in asks their code now
    now[0] += 30
    status, body = await api(client, "POST", f"{base}/disable", member, json={"code": totp.at(now[0])})
    assert status == 200 and body["data"] == {"ok": True, "totp_enabled": False}
    assert (await api(client, "POST", "/dashboard/auth/login", {}, json={"email": FIN, "password": PASSWORD}))[0] == 200
    holder_jwt = bearer(await member_jwt(client, OWNER))
    status, body = await api(client, "POST", f"{base}/setup", holder_jwt)
    assert (status, body["error"]["code"]) == (403, "not_a_member") and "/dashboard/mfa/" in body["message"]
    events = await gateway.db.fetch_all("SELECT kind, actor FROM security_events WHERE actor = :a",
                                        {"a": f"member {FIN}"})
    assert {"totp_enabled", "totp_disabled"} <= {e["kind"] for e in events}, events
