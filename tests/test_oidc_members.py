"""Identity-provider sign-in for team members (plugins/oidc with plugins/teams, issue 36), on both databases.

A signed-in member links their own provider identity (``POST
/dashboard/auth/google/link``); that identity then signs in as the member,
with the member's role, never as the account holder; an e-mail alone never
signs anyone in (issue 42). Removing the member
stops it at once; an identity linked to someone else is refused; a member
with their own 2FA gives their code after the provider. The provider is the
local stand-in of tests/test_oidc.py, which checks PKCE and the redirect URI
itself.
"""

from __future__ import annotations

from typing import Any

import pytest

from orbchain import api as services
from orbchain.plugins.oidc import payload
from orbchain.plugins.teams import members as team_members
from orbchain.web.keys import GATEWAY

from .approvals_support import add_member, member_totp, next_code
from .dashboard_support import Visitor
from .support import api, bearer, signup
from . import test_oidc
from .test_oidc import begin, consent, finish, land, oidc_block, refused_page

provider = test_oidc.provider  # the stand-in provider's fixture, shared

STEP = "/dashboard/auth/google/2fa"
OWNER = "owner@example.com"


@pytest.fixture
async def team(make_client, make_config, provider):
    """An account with a viewer member (their token's headers), on a gateway with sign-in configured."""
    client = await make_client(make_config(plugin={"oidc": oidc_block(provider)}, scheduler={"enabled": False},
                                           rate_limits={"auth_per_minute": 1000}))
    holder = await signup(client, OWNER)
    gateway = client.app[GATEWAY]
    viewer = await add_member(client, gateway, holder.merchant_id, "view@example.com", role="viewer")
    return client, gateway, holder, viewer


def landed(response) -> dict[str, Any]:
    location = response.headers["Location"]
    path, _, fragment = location.partition("#")
    assert response.status == 302 and path == "/app" and fragment.startswith("google-auth="), location
    return payload.decode(fragment.removeprefix("google-auth="))


async def link(client, headers: dict[str, str], body: dict[str, str] | None = None):
    """The link call (a member's, or the holder's with ``body``'s password), then the browser at the provider
    and back: the callback's answer."""
    status, body = await api(client, "POST", "/dashboard/auth/google/link", headers,
                             **({"json": body} if body is not None else {}))
    assert status == 200, body
    return await finish(client, await consent(body["data"]["authorization_url"]))


async def provider_sign_in(client):
    """A signed-out browser signing in through the provider: the callback's answer."""
    client.session.cookie_jar.clear()
    return await finish(client, await consent(await begin(client)))


async def member_id_of(gateway, email: str) -> str:
    return await gateway.db.fetch_val("SELECT id FROM team_members WHERE email = :e", {"e": email})


async def test_a_member_links_their_identity_and_signs_in_as_the_member_with_their_role(team, provider):
    client, gateway, holder, viewer = team
    provider.user = {"sub": "g-viewer", "email": "viewer.private@gmail.example", "email_verified": True}
    response = await link(client, viewer)
    linked = landed(response)
    member_id = await member_id_of(gateway, "view@example.com")
    assert dict(await gateway.db.fetch_one("SELECT merchant_id, member_id FROM oidc_identities", {})) == {
        "merchant_id": holder.merchant_id, "member_id": member_id}
    assert linked["merchant_id"] == holder.merchant_id and linked["email"] == "view@example.com"
    browser = Visitor(client)  # the member's browser lands the payload, then signs out
    await land(browser, response.headers["Location"].split("#google-auth=")[1], expect=303)
    assert "view@example.com" in await browser.get("/app")
    await browser.submit("/app/logout")
    await browser.get("/app", expect=303)

    # Signed out, they sign in through the provider again: as the member, with the viewer's limits.
    again = await finish(client, await consent(await begin(client)))
    token = landed(again)["token"]
    principal = await services.dashboard_principal(gateway, token)
    assert principal.merchant_id == holder.merchant_id and principal.member_id == member_id
    await land(browser, again.headers["Location"].split("#google-auth=")[1], expect=303)
    assert 'id="payout-form"' not in await browser.get("/app/payouts")  # the viewer's dashboard
    await browser.submit("/app/payouts", {"currency": "BTC", "address": "x", "amount": "1"}, expect=403)
    assert "payout:create" in browser.page
    status, body = await api(client, "POST", "/dashboard/create-payout", bearer(token),
                             json={"address": "x", "amount": "1", "currency": "BTC"})
    assert status == 403 and body["error"]["detail"] == {"scope": "payout:create"}
    status, _ = await api(client, "GET", "/dashboard/payouts", bearer(token))
    assert status == 200
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM security_events WHERE kind = :k",
                                      {"k": "member_identity_linked"}) == 1


async def test_the_account_holder_links_with_their_password_and_never_by_e_mail(team, provider):
    """Issue 42: the holder's verified e-mail at the provider no longer links by itself; the holder links their
    identity themselves, with their password (their JSON token alone is not enough), and it signs in as the
    holder, never as a member."""
    client, gateway, holder, _ = team
    provider.user = {"sub": "g-owner", "email": OWNER, "email_verified": True}
    await refused_page(await provider_sign_in(client), 409, "not linked to that sign-in")
    status, body = await api(client, "POST", "/dashboard/auth/google/link", bearer(holder.token))
    assert status == 400 and "password" in body["error"]["detail"]
    status, body = await api(client, "POST", "/dashboard/auth/google/link", bearer(holder.token),
                             json={"password": "not it"})
    assert status == 401
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM oidc_identities", {}) == 0
    landed(await link(client, bearer(holder.token), {"password": "s3cret-pass"}))  # signup()'s password
    signed_in = landed(await provider_sign_in(client))
    principal = await services.dashboard_principal(gateway, signed_in["token"])
    assert principal.merchant_id == holder.merchant_id and principal.member_id is None
    assert await gateway.db.fetch_val("SELECT member_id FROM oidc_identities", {}) is None


async def test_a_removed_members_identity_stops_at_once(team, provider):
    client, gateway, holder, viewer = team
    provider.user = {"sub": "g-viewer", "email": "viewer.private@gmail.example", "email_verified": True}
    token = landed(await link(client, viewer))["token"]
    await team_members.remove(gateway, holder.merchant_id, await member_id_of(gateway, "view@example.com"), None)
    status, body = await api(client, "GET", "/dashboard/payouts", bearer(token))
    assert status == 401 and body["error"]["code"] == "member_removed"
    await refused_page(await provider_sign_in(client), 403, "was removed from the account")
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM merchants", {}) == 1  # and no account made for them


async def test_an_identity_linked_to_someone_else_is_refused(team, provider):
    client, gateway, holder, viewer = team
    provider.user = {"sub": "g-owner", "email": OWNER, "email_verified": True}
    landed(await link(client, bearer(holder.token), {"password": "s3cret-pass"}))  # the holder's identity
    await refused_page(await link(client, viewer), 409, "already linked to another orbchain sign-in")
    finance = await add_member(client, gateway, holder.merchant_id, "fin@example.com", role="finance")
    provider.user = {"sub": "g-fin", "email": "fin.private@gmail.example", "email_verified": True}
    landed(await link(client, finance))
    await refused_page(await link(client, viewer), 409, "nothing was linked")  # another member's
    rows = await gateway.db.fetch_all("SELECT subject, member_id FROM oidc_identities ORDER BY subject", {})
    assert [(r["subject"], r["member_id"]) for r in rows] == [
        ("g-fin", await member_id_of(gateway, "fin@example.com")), ("g-owner", None)]


async def test_a_member_with_2fa_gives_their_code_after_the_provider(team, provider):
    client, gateway, holder, viewer = team
    secret = await member_totp(gateway, holder.merchant_id, "view@example.com")
    provider.user = {"sub": "g-viewer", "email": "viewer.private@gmail.example", "email_verified": True}
    response = await link(client, viewer)
    assert response.status == 302 and response.headers["Location"] == STEP  # linked, but no session yet
    assert "google-auth" not in response.headers["Location"]

    response = await provider_sign_in(client)
    assert response.status == 302 and response.headers["Location"] == STEP
    page = await client.get(STEP)
    assert page.status == 200 and 'name="totp_code"' in await page.text()
    response = await client.post(STEP, data={"totp_code": ""}, allow_redirects=False)
    assert response.status == 401 and "authenticator app" in await response.text()  # 400 before issue 42
    response = await client.post(STEP, data={"totp_code": "000000"}, allow_redirects=False)
    assert response.status == 401 and "invalid totp code" in (await response.text()).lower()
    response = await client.post(STEP, data={"totp_code": next_code(gateway, secret)}, allow_redirects=False)
    token = landed(response)["token"]
    principal = await services.dashboard_principal(gateway, token)
    assert principal.member_id == await member_id_of(gateway, "view@example.com")
    again = await client.post(STEP, data={"totp_code": next_code(gateway, secret)}, allow_redirects=False)
    await refused_page(again, 400, "sign in again")  # the step works once

    # The member's verified e-mail at the provider signs nobody in without a link (issue 42: before, it signed
    # in as the member, so whoever had registered the address as a member got its owner's sign-in).
    provider.user = {"sub": "g-other", "email": "view@example.com", "email_verified": True}
    await refused_page(await provider_sign_in(client), 409, "not linked to that sign-in")


async def test_the_code_step_without_its_cookie_signs_nobody_in(team, provider):
    client, gateway, holder, viewer = team
    await member_totp(gateway, holder.merchant_id, "view@example.com")
    provider.user = {"sub": "g-viewer", "email": "viewer.private@gmail.example", "email_verified": True}
    assert (await link(client, viewer)).headers["Location"] == STEP
    client.session.cookie_jar.clear()  # another browser
    await refused_page(await client.post(STEP, data={"totp_code": "123456"}, allow_redirects=False), 400,
                       "sign in again")


@pytest.mark.parametrize("cookie", ["", "x", "a" * 43 + "\u00e9", "%00" * 20, "s" * 6000, "a" * 43])
async def test_the_code_step_answers_hostile_input_with_a_page(team, cookie):
    """Forged or unknown step cookies and odd codes: the HTML page saying to sign in again, never a 500."""
    client = team[0]
    for code, words in (("", "sign in again"), ("\x00", "nul characters"), ("9" * 5000, "sign in again"),
                        ("\u0663" * 6, "sign in again")):
        response = await client.post(STEP, data={"totp_code": code}, allow_redirects=False,
                                     headers={"Cookie": f"orbchain_oidc_2fa={cookie}"} if cookie else {})
        await refused_page(response, 400, words)
    response = await client.put(STEP, allow_redirects=False)
    assert (response.status, response.content_type) == (405, "text/html")


async def test_a_member_links_from_the_dashboard_page_without_javascript(team, provider):
    """The helper's gap: the link was reachable only by the JSON call, which a browser holding the dashboard's
    HttpOnly session cookie cannot make. The Sign-in tab's form sends the member to the provider (a
    ``DashboardRedirect`` with the login cookies) and the identity comes back linked to them."""
    client, gateway, holder, _ = team
    browser = Visitor(client)
    await browser.sign_in("view@example.com")
    page = await browser.get("/app/sign-in-methods")  # a viewer may: it is their own sign-in
    assert 'id="link-identity-form"' in page and 'id="identity-linked"' not in page
    provider.user = {"sub": "g-viewer-page", "email": "viewer.page@gmail.example", "email_verified": True}
    sent = await browser.submit("/app/sign-in-methods")
    assert sent.headers["Location"].startswith(provider.issuer) and sent.headers["Cache-Control"] == "no-store"
    assert {"orbchain_oidc", "orbchain_oidc_landing"} <= set(sent.cookies)
    response = await finish(client, await consent(sent.headers["Location"]))
    assert landed(response)["email"] == "view@example.com"
    assert await gateway.db.fetch_val("SELECT member_id FROM oidc_identities WHERE subject = 'g-viewer-page'") == \
        await member_id_of(gateway, "view@example.com")
    assert 'id="identity-linked"' in await browser.get("/app/sign-in-methods")

    # Without the page's CSRF token nothing starts; the holder's form asks their password first.
    await browser.submit("/app/sign-in-methods", token="forged", expect=403)
    await browser.get("/app")
    await browser.submit("/app/logout")
    owner = Visitor(client)
    await owner.sign_in(OWNER, "s3cret-pass")  # signup()'s password
    assert 'id="link-password"' in await owner.get("/app/sign-in-methods")
    await owner.submit("/app/sign-in-methods", expect=400)
    assert 'id="error-password"' in owner.page
