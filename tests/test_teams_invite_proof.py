"""Issue 42 item 1: an invitation claims no address until its owner proves it, on SQLite and PostgreSQL.

The attack on 4d55f4a: an admin invited ``ceo@victim-corp.example``, opened the invitation link themselves and
chose a password, so the address became a member of their account, never verified. The real owner then got 409
at sign-up, and their "Sign in with Google" landed in the attacker's account as that member. Now a membership
starts only with a proof from the address's owner, in their own browser: the join link mailed to it (never shown
to the inviter), or an identity provider vouching for that very address; an identity-provider sign-in resolves
only to an identity its owner linked; and an address is one sign-in (a holder's or one member's), so a pending
invitation neither blocks its owner's sign-up nor joins once they have one.
"""

from __future__ import annotations

import dataclasses
import re
import secrets

import pytest

from orbchain import api as services
from orbchain.core.accounts.auth import hash_password
from orbchain.plugins.teams import invites
from orbchain.web.keys import GATEWAY

from . import test_oidc
from .dashboard_support import PASSWORD, Visitor, csrf_of
from .support import api, bearer
from .teams_support import OWNER, invite, join, join_link_to, mailbox, member_jwt, owner_of, page_link
from .test_oidc import another_browser, consent, finish, land, oidc_block, refused_page

provider = test_oidc.provider  # the stand-in identity provider (it judges PKCE and the redirect URI itself)

VICTIM = "ceo@victim-corp.example"
ATTACKER = "mallory@attacker.example"


@pytest.fixture
async def app_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


@pytest.fixture
async def sso_client(make_client, make_config, provider):
    return await make_client(make_config(plugin={"oidc": oidc_block(provider)}, scheduler={"enabled": False},
                                         rate_limits={"auth_per_minute": 1000}))


async def admin_of(client, owner: Visitor) -> Visitor:
    """The attacker: an admin member of the holder's account, signed in in the client's browser."""
    return await join(client, await invite(owner, ATTACKER, "admin"))


async def members(gateway) -> list[str]:
    return [row["email"] for row in await gateway.db.fetch_all("SELECT email FROM team_members ORDER BY email", {})]


def accept_cookie(client) -> str:
    """The accept page's CSRF cookie: a page with no form still sets it, and a hostile browser reads its own."""
    return client.session.cookie_jar.filter_cookies(client.make_url("/app/team/accept"))["orb_team_accept"].value


def landed(response) -> dict:
    location = response.headers["Location"]
    assert response.status == 302 and "#google-auth=" in location, location
    from orbchain.plugins.oidc import payload
    return payload.decode(location.split("#google-auth=")[1])


async def test_the_inviter_never_sees_the_join_link_and_their_browser_cannot_join(app_client):
    """The attack itself, HTML without script: what the inviter's page holds cannot join, whatever is posted."""
    owner = await owner_of(app_client)
    admin = await admin_of(app_client, owner)
    await admin.get("/app/team")
    with mailbox() as mails:
        await admin.submit("/app/team", {"action": "invite", "email": VICTIM, "role": "admin"}, expect=200)
    assert "/app/team/accept?token=" not in admin.page  # before: the link that joined, shown to the inviter
    assert "written to the server's log" in admin.page
    mailed = join_link_to(mails, VICTIM).split("token=")[1]
    assert mailed not in admin.page
    # The invitation's page token (in the row, as an inviter who shared its page would hold it) does not join.
    gateway = app_client.app[GATEWAY]
    page_token = secrets.token_urlsafe(32)
    await gateway.db.execute("UPDATE team_invites SET token_hash = :h WHERE email = :e",
                             {"h": invites.digest(page_token), "e": VICTIM})
    page = await admin.get(f"/app/team/accept?token={page_token}")
    assert 'id="accept-form"' not in page and 'id="invite-proof-needed"' in page
    await admin.submit("/app/team/accept", {"action": "join", "token": page_token, "password": PASSWORD,
                                            "password_confirm": PASSWORD}, token=accept_cookie(app_client),
                       expect=403)
    assert "does not join it" in admin.page
    # Without an action (the form as it was before): the same refusal.
    await admin.submit("/app/team/accept", {"token": page_token, "password": PASSWORD,
                                            "password_confirm": PASSWORD}, token=accept_cookie(app_client),
                       expect=403)
    assert await members(gateway) == [ATTACKER]
    # The real owner of the address is free to open their own account (JSON): nothing claimed it.
    status, body = await api(app_client, "POST", "/dashboard/auth/signup", {},
                             json={"email": VICTIM, "password": "the ceo's own password"})
    assert status == 200, body
    # The activity log of the attacked account says someone tried to join as the address without proving it.
    events = await gateway.db.fetch_all("SELECT kind, details FROM security_events WHERE kind = :k",
                                        {"k": "member_join_refused"})
    assert len(events) == 2 and VICTIM in events[0]["details"]
    assert mailed


async def test_an_address_that_signed_up_meanwhile_is_not_joined_by_its_invitation(app_client):
    """The related hole: an address pending as an invitee signed up as a holder (JSON), then was also accepted
    as a member of another account. An address signs in to one place: the mailed link now joins nobody and
    the invitation stays pending, as it was."""
    owner = await owner_of(app_client)
    link = await invite(owner, VICTIM, "viewer")
    status, body = await api(app_client, "POST", "/dashboard/auth/signup", {},
                             json={"email": VICTIM, "password": "the ceo's own password"})
    assert status == 200, body
    app_client.session.cookie_jar.clear()
    victim = Visitor(app_client)
    await victim.get(link)
    await victim.submit("/app/team/accept", {"action": "join", "token": link.split("token=")[1],
                                             "password": PASSWORD, "password_confirm": PASSWORD}, expect=409)
    assert "signs in to one place" in victim.page
    gateway = app_client.app[GATEWAY]
    assert await members(gateway) == []
    assert await gateway.db.fetch_val("SELECT accepted_at FROM team_invites WHERE email = :e", {"e": VICTIM}) is None
    await member_jwt(app_client, VICTIM, "the ceo's own password")  # their own account, as the holder


async def test_the_mailed_link_joins_once_and_a_new_one_replaces_it(app_client):
    owner = await owner_of(app_client)
    first = await invite(owner, "fin@example.com", "finance")
    invite_id = re.search(r'name="invite_id" value="(inv_\w+)"', owner.page).group(1)
    with mailbox() as mails:
        await owner.submit("/app/team", {"action": "send-invite-again", "invite_id": invite_id}, expect=200)
    assert "A new join link for" in owner.page and 'id="send-again-' in owner.page
    assert "Sent fin@example.com a new join link (finance)" in await owner.get("/app/activity")
    second = join_link_to(mails, "fin@example.com")
    assert second != first
    visitor = Visitor(app_client)
    await visitor.get(first, expect=404)  # the older link stopped working
    member = await join(app_client, second)
    assert "fin@example.com" in await member.get("/app")
    await member.get(second, expect=410)
    gateway = app_client.app[GATEWAY]
    assert await gateway.db.fetch_val("SELECT proven_by FROM team_members", {}) == "mail"
    # Sending again is bounded, names only this account's pending invitations, and refuses odd input.
    app_client.session.cookie_jar.clear()
    await owner.sign_in(OWNER)
    await invite(owner, "dev@example.com", "developer")
    pending = re.search(r'id="send-again-(inv_\w+)"', owner.page).group(1)
    for _ in range(invites.MAX_MAILS - 1):
        await owner.submit("/app/team", {"action": "send-invite-again", "invite_id": pending}, expect=200)
    await owner.submit("/app/team", {"action": "send-invite-again", "invite_id": pending}, expect=409)
    assert "e-mailed 5 times already" in owner.page
    await owner.submit("/app/team", {"action": "send-invite-again", "invite_id": invite_id}, expect=404)  # used
    await owner.submit("/app/team", {"action": "send-invite-again", "invite_id": "x" * 500}, expect=400)
    await owner.submit("/app/team", {"action": "send-invite-again", "invite_id": "inv_' OR 1=1 --"}, expect=404)


async def test_an_invitation_pending_before_the_upgrade_needs_a_proof_now(app_client):
    """Links shown to inviters before issue 42 become the invitation's page: they show it and join nobody."""
    owner = await owner_of(app_client)
    gateway = app_client.app[GATEWAY]
    merchant_id = (await services.account_by_email(gateway, OWNER)).merchant_id
    old_token = secrets.token_urlsafe(32)
    await gateway.db.execute(
        "INSERT INTO team_invites (id, merchant_id, email, role, token_hash, invited_by, expires_at, created_at)"
        " VALUES ('inv_old', :m, :e, 'admin', :h, NULL, :exp, :now)",
        {"m": merchant_id, "e": VICTIM, "h": invites.digest(old_token), "exp": gateway.now() + 3600,
         "now": gateway.now()})
    visitor = Visitor(app_client)
    page = await visitor.get(f"/app/team/accept?token={old_token}")
    assert 'id="accept-form"' not in page and "ask the account holder to e-mail you the join link" in page
    await visitor.submit("/app/team/accept", {"token": old_token, "password": PASSWORD,
                                              "password_confirm": PASSWORD}, token=accept_cookie(app_client),
                         expect=403)
    assert await members(gateway) == []
    # A member who joined before a proof was asked keeps signing in; the Team page says the address is unproven.
    await gateway.db.execute(
        "INSERT INTO team_members (id, merchant_id, email, role, password_hash, created_at)"
        " VALUES ('mbr_legacy', :m, 'old@example.com', 'viewer', :h, :now)",
        {"m": merchant_id, "h": hash_password(PASSWORD), "now": gateway.now()})
    await member_jwt(app_client, "old@example.com")
    assert 'id="unproven-mbr_legacy"' in await owner.get("/app/team")


async def test_a_server_that_cannot_prove_an_address_says_so_and_invites_nobody(app_client):
    """Production without SMTP and without an identity provider: the Team page says invitations need one, and
    an invitation posted anyway is refused (503) with nothing written; no join link ever reaches the log."""
    owner = await owner_of(app_client)
    gateway = app_client.app[GATEWAY]
    config = gateway.config
    gateway.config = dataclasses.replace(config, server=dataclasses.replace(config.server, environment="production"))
    try:
        page = await owner.get("/app/team")
        assert 'id="invite-unavailable"' in page and 'id="invite-form"' not in page
        assert "mail server or an identity provider" in page
        with mailbox() as mails:
            await owner.submit("/app/team", {"action": "invite", "email": VICTIM, "role": "viewer"}, expect=503)
        assert mails == [] and await gateway.db.fetch_val("SELECT COUNT(*) FROM team_invites", {}) == 0
    finally:
        gateway.config = config


async def test_an_identity_provider_join_needs_the_invited_address_in_the_invited_persons_browser(sso_client,
                                                                                                    provider):
    """The proof by identity provider: the inviter pressing the button and signing in as themselves joins
    nobody (and is logged); the invited person signing in as the invited address joins, in their browser."""
    client = sso_client
    gateway = client.app[GATEWAY]
    owner = await owner_of(client)
    await invite(owner, VICTIM, "admin")
    shared = page_link(owner)  # an identity provider is configured: the inviter may pass the page on
    assert 'id="invite-page-link"' in owner.page
    # The inviter's own browser: the page offers the provider, and the provider vouches for the inviter.
    page = await owner.get(shared)
    assert 'id="accept-form"' not in page and 'id="prove-form"' in page
    sent = await owner.submit("/app/team/accept", {"action": "prove", "token": shared.split("token=")[1]})
    provider.user = {"sub": "g-owner", "email": OWNER, "email_verified": True}
    await refused_page(await finish(client, await consent(sent.headers["Location"])), 403,
                       f"this invitation is for {VICTIM}")
    assert await members(gateway) == []
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM oidc_identities", {}) == 0
    # An unverified e-mail at the provider proves nothing.
    await owner.get(shared)
    sent = await owner.submit("/app/team/accept", {"action": "prove", "token": shared.split("token=")[1]})
    provider.user = {"sub": "g-fake", "email": VICTIM, "email_verified": False}
    await refused_page(await finish(client, await consent(sent.headers["Location"])), 403, "not verified")
    assert await members(gateway) == []
    # The invited person, in their own browser, signs in as the invited address: they join, signed in.
    async with another_browser(client) as browser:
        victim = Visitor(browser)
        await victim.get(shared)
        sent = await victim.submit("/app/team/accept", {"action": "prove", "token": shared.split("token=")[1]})
        provider.user = {"sub": "g-ceo", "email": VICTIM.upper(), "email_verified": True}
        callback = await consent(sent.headers["Location"])
        response = await browser.get(callback.path_qs, allow_redirects=False)
        data = landed(response)
        await land(victim, response.headers["Location"].split("#google-auth=")[1], expect=303)
        assert VICTIM in await victim.get("/app")
    principal = await services.dashboard_principal(gateway, data["token"])
    member = await gateway.db.fetch_one("SELECT id, proven_by FROM team_members WHERE email = :e", {"e": VICTIM})
    assert principal.member_id == member["id"] and member["proven_by"] == "identity_provider"
    assert await gateway.db.fetch_val("SELECT member_id FROM oidc_identities WHERE subject = 'g-ceo'") == member["id"]
    # That identity signs them in from then on; there is no password to guess.
    client.session.cookie_jar.clear()
    again = await finish(client, await consent((await client.get("/dashboard/auth/google",
                                                                  allow_redirects=False)).headers["Location"]))
    assert (await services.dashboard_principal(gateway, landed(again)["token"])).member_id == member["id"]
    status, _ = await api(client, "POST", "/dashboard/auth/login", {}, json={"email": VICTIM, "password": PASSWORD})
    assert status == 401
    kinds = [row["kind"] for row in await gateway.db.fetch_all(
        "SELECT kind FROM security_events ORDER BY id", {})]
    assert "member_join_refused" in kinds and "member_joined" in kinds and "member_identity_linked" in kinds


async def test_an_identity_that_signs_in_elsewhere_cannot_join_as_someone_else(sso_client, provider):
    """An address is one sign-in: an identity linked to an account (its e-mail changed at the provider since)
    proves the invited address but joins nothing, and the invitation stays pending."""
    client = sso_client
    gateway = client.app[GATEWAY]
    provider.user = {"sub": "g-old", "email": "first@example.com", "email_verified": True}
    landed(await finish(client, await consent((await client.get("/dashboard/auth/google",
                                                                 allow_redirects=False)).headers["Location"])))
    client.session.cookie_jar.clear()
    owner = await owner_of(client)
    await invite(owner, VICTIM, "viewer")
    shared = page_link(owner)
    client.session.cookie_jar.clear()
    visitor = Visitor(client)
    await visitor.get(shared)
    sent = await visitor.submit("/app/team/accept", {"action": "prove", "token": shared.split("token=")[1]})
    provider.user = {"sub": "g-old", "email": VICTIM, "email_verified": True}
    await refused_page(await finish(client, await consent(sent.headers["Location"])), 409, "already linked")
    assert await members(gateway) == []
    assert await gateway.db.fetch_val("SELECT accepted_at FROM team_invites", {}) is None


async def test_a_provider_sign_in_never_lands_in_an_account_by_an_unproven_address(sso_client, provider):
    """The second half of the attack: a member made before the fix (never proven) or an account signed up with
    someone else's address. Their owner's verified sign-in at the provider used to land in that account (as the
    member, or as the holder); it is refused now, with nothing linked, and the registration keeps its password."""
    client = sso_client
    gateway = client.app[GATEWAY]
    owner = await owner_of(client)
    merchant_id = (await services.account_by_email(gateway, OWNER)).merchant_id
    await gateway.db.execute(
        "INSERT INTO team_members (id, merchant_id, email, role, password_hash, created_at)"
        " VALUES ('mbr_claimed', :m, :e, 'admin', :h, :now)",
        {"m": merchant_id, "e": VICTIM, "h": hash_password(PASSWORD), "now": gateway.now()})
    status, _ = await api(client, "POST", "/dashboard/auth/signup", {},
                          json={"email": "cfo@victim-corp.example", "password": "squatted address"})
    assert status == 200
    for email in (VICTIM, "cfo@victim-corp.example"):
        client.session.cookie_jar.clear()
        provider.user = {"sub": f"g-{email}", "email": email, "email_verified": True}
        started = await client.get("/dashboard/auth/google", allow_redirects=False)
        response = await finish(client, await consent(started.headers["Location"]))
        text = await refused_page(response, 409, "not linked to that sign-in")
        assert "google-auth" not in response.headers.get("Location", "") and "google-auth" not in text
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM oidc_identities", {}) == 0
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM security_events WHERE kind = 'sign_in' AND details"
                                      " LIKE '%identity_provider%'", {}) == 0
    assert owner  # the holder's own account is untouched


async def test_the_holder_links_their_identity_themselves_with_their_password(sso_client, provider):
    """A password account signs in through the provider once its holder linked it, signed in and re-entering
    their password (HTML without script, then JSON); never by e-mail alone."""
    client = sso_client
    gateway = client.app[GATEWAY]
    owner = await owner_of(client)
    page = await owner.get("/app/sign-in-methods")
    assert 'id="link-identity-form"' in page and 'id="link-password"' in page
    await owner.submit("/app/sign-in-methods", {}, expect=400)  # no password: nothing starts
    await owner.submit("/app/sign-in-methods", {"password": "wrong one"}, expect=401)
    provider.user = {"sub": "g-owner", "email": "owner.private@gmail.example", "email_verified": True}
    sent = await owner.submit("/app/sign-in-methods", {"password": PASSWORD})
    assert sent.headers["Location"].startswith(provider.issuer)
    data = landed(await finish(client, await consent(sent.headers["Location"])))
    principal = await services.dashboard_principal(gateway, data["token"])
    assert principal.member_id is None and principal.merchant_id == (await services.account_by_email(
        gateway, OWNER)).merchant_id
    assert 'id="identity-linked"' in await owner.get("/app/sign-in-methods")
    # JSON: the holder's token needs the password too; a member's needs nothing more than before.
    token = (await api(client, "POST", "/dashboard/auth/login", {},
                       json={"email": OWNER, "password": PASSWORD}))[1]["data"]["token"]
    status, body = await api(client, "POST", "/dashboard/auth/google/link", bearer(token))
    assert status == 400 and "password" in body["error"]["detail"]
    status, body = await api(client, "POST", "/dashboard/auth/google/link", bearer(token),
                             json={"password": PASSWORD})
    assert status == 200 and body["data"]["authorization_url"].startswith(provider.issuer)
    kinds = [row["kind"] for row in await gateway.db.fetch_all("SELECT kind FROM security_events", {})]
    assert "identity_linked" in kinds


async def test_the_accept_page_answers_hostile_input_with_a_page(sso_client):
    client = sso_client
    owner = await owner_of(client)
    link = await invite(owner, VICTIM, "viewer")
    client.session.cookie_jar.clear()
    visitor = Visitor(client)
    await visitor.get(link)
    token = csrf_of(visitor.page)
    for fields, status in (({"action": "prove", "token": "x" * 5000}, 404), ({"action": "prove"}, 404),
                           ({"action": "join", "token": link.split("token=")[1], "password": "\x00" * 9,
                             "password_confirm": "\x00" * 9}, 400),
                           ({"action": "<script>", "token": "nope"}, 404)):
        response = await client.post("/app/team/accept", data={"csrf_token": token, **fields},
                                     allow_redirects=False)
        assert response.status == status and response.content_type == "text/html", (fields, response.status)
    # Cross-site: the right token from another origin starts nothing.
    response = await client.post("/app/team/accept", data={"csrf_token": token, "action": "prove",
                                                           "token": link.split("token=")[1]},
                                 headers={"Origin": "http://evil.example"}, allow_redirects=False)
    assert response.status == 403
