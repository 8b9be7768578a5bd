"""Team members and roles (plugins/teams, issue 36 first half), on SQLite and PostgreSQL.

An owner invites by e-mail (single-use, expiring link shown to copy); the member chooses a password and
signs in on the ordinary sign-in page to the same account. Their role's scopes are enforced on the
dashboard (hidden, then a 403 page) and on the JSON API (403 naming the missing scope); removal ends
their sessions at once; the account holder is always an owner; the activity log names the member.
"""

from __future__ import annotations

import asyncio
import re

from orbchain.web.keys import GATEWAY

from .dashboard_support import PASSWORD, Visitor
from .support import api, bearer
from .teams_support import OWNER, invite, join, mailbox, member_jwt, owner_of

import pytest


@pytest.fixture
async def app_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


async def test_invite_accept_sign_in_and_the_activity_log_names_the_member(app_client):
    owner = await owner_of(app_client)
    link = await invite(owner, "Fin@Example.com", "finance")
    assert "fin@example.com" in owner.page and "finance" in owner.page  # pending, lower-cased
    member = await join(app_client, link)
    home = await member.get("/app")
    assert "fin@example.com" in home
    # Same account: the member's JSON token names the holder's merchant.
    token = await member_jwt(app_client, "fin@example.com")
    status, body = await api(app_client, "GET", "/dashboard/account", bearer(token))
    gateway = app_client.app[GATEWAY]
    holder = await gateway.db.fetch_one("SELECT id FROM merchants WHERE email = :e", {"e": OWNER})
    assert status == 200 and body["data"]["account"]["id"] == holder["id"]
    # Single use: the link is spent.
    await member.get(link, expect=410)
    assert "used already" in member.page
    # The activity log says who: the member's sign-in, and the holder's invitation.
    app_client.session.cookie_jar.clear()
    await owner.sign_in(OWNER)
    page = await owner.get("/app/activity")
    assert re.search(r"fin@example.com joined as finance, proving the address with the link e-mailed to the"
                     r" address</td><td class=\"activity-actor\"[^>]*>Account holder", page)
    assert re.search(r"Signed in with the password</td><td class=\"activity-actor\"[^>]*>member fin@example.com", page)
    assert "Invited fin@example.com as finance" in page


async def test_a_member_action_is_attributed_to_them(app_client):
    owner = await owner_of(app_client)
    link = await invite(owner, "dev@example.com", "developer")
    dev = await join(app_client, link)
    await dev.get("/app/keys")
    await dev.submit("/app/keys", {"label": "ci", "scopes": "payment:read"}, expect=200)
    token = await member_jwt(app_client, "dev@example.com")
    status, body = await api(app_client, "GET", "/dashboard/activity", bearer(token))
    assert status == 200
    created = next(e for e in body["data"]["events"] if e["kind"] == "api_key_created")
    assert created["actor"] == "member dev@example.com"


async def test_expired_and_wrong_tokens_are_refused(app_client):
    owner = await owner_of(app_client)
    link = await invite(owner, "late@example.com", "viewer")
    gateway = app_client.app[GATEWAY]
    start = gateway.now()
    gateway.clock = lambda: start + 72 * 3600 + 1
    visitor = Visitor(app_client)
    await visitor.get(link, expect=410)
    assert "expired" in visitor.page
    gateway.clock = lambda: start
    await visitor.get("/app/team/accept?token=" + "x" * 43, expect=404)
    await visitor.get("/app/team/accept?token=<script>", expect=404)
    assert "<script>" not in visitor.page
    # Posting a wrong token (with a good form) is refused too, and nothing is created.
    await visitor.get(link)
    await visitor.submit("/app/team/accept", {"token": "y" * 43, "password": PASSWORD,
                                              "password_confirm": PASSWORD}, expect=404)
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM team_members", {}) == 0


async def test_accept_form_keeps_input_and_refuses_forgery(app_client):
    owner = await owner_of(app_client)
    link = await invite(owner, "new@example.com", "viewer")
    token = link.split("token=")[1]
    app_client.session.cookie_jar.clear()
    visitor = Visitor(app_client)
    await visitor.get(link)
    await visitor.submit("/app/team/accept", {"token": token, "password": "short", "password_confirm": "short"},
                         expect=400)
    assert 'id="password-error"' in visitor.page and 'value="' + token + '"' in visitor.page
    await visitor.submit("/app/team/accept", {"token": token, "password": PASSWORD, "password_confirm": "other one"},
                         expect=400)
    assert 'id="confirm-error"' in visitor.page
    # No cookie-bound token (a cross-site form): 403, and the link still works afterwards.
    await visitor.submit("/app/team/accept", {"token": token, "password": PASSWORD, "password_confirm": PASSWORD},
                         token="forged", expect=403)
    await visitor.get(link)
    good = re.search(r'name="csrf_token" value="([^"]+)"', visitor.page).group(1)
    response = await app_client.post("/app/team/accept", data={
        "csrf_token": good, "token": token, "password": PASSWORD, "password_confirm": PASSWORD},
        headers={"Origin": "http://evil.example"}, allow_redirects=False)
    assert response.status == 403  # the right token, from another site
    await visitor.get(link)  # still unused


async def test_team_forms_refuse_hostile_input_and_keep_it(app_client):
    owner = await owner_of(app_client)
    await owner.get("/app/team")
    await owner.submit("/app/team", {"action": "invite", "email": "not-an-email<b>", "role": "viewer"}, expect=400)
    assert 'id="error-email"' in owner.page and 'value="not-an-email&lt;b&gt;"' in owner.page
    await owner.submit("/app/team", {"action": "invite", "email": "x@example.com", "role": "god"}, expect=400)
    await owner.submit("/app/team", {"action": "invite", "email": OWNER, "role": "viewer"}, expect=409)
    await owner.submit("/app/team", {"action": "custom-role", "name": "support", "scopes": "payout:nuke"}, expect=400)
    await owner.submit("/app/team", {"action": "custom-role", "name": "<script>", "scopes": "payment:read"},
                       expect=400)
    await owner.submit("/app/team", {"action": "remove", "member_id": "mbr_' OR 1=1 --"}, expect=404)
    await owner.submit("/app/team", {"action": "nonsense"}, expect=400)
    # CSRF: a form without this session's token changes nothing.
    await owner.submit("/app/team", {"action": "invite", "email": "y@example.com", "role": "viewer"},
                       token="nope", expect=403)
    gateway = app_client.app[GATEWAY]
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM team_invites", {}) == 0


async def test_viewer_is_refused_on_the_dashboard_and_the_api(app_client):
    owner = await owner_of(app_client)
    viewer = await join(app_client, await invite(owner, "view@example.com", "viewer"))
    page = await viewer.get("/app/payouts")
    assert 'id="payout-form"' not in page and 'id="batch-form"' not in page  # hidden
    assert 'href="/app/keys"' not in page and 'href="/app/payouts"' in page  # nav: what the role may see
    await viewer.submit("/app/payouts", {"currency": "BTC", "address": "x", "amount": "1"}, expect=403)
    assert "payout:create" in viewer.page
    await viewer.get("/app/keys", expect=403)
    await viewer.get("/app/team", expect=403)
    assert 'id="totp-whose"' in await viewer.get("/app/security")  # their own second factor, not the holder's
    await viewer.get("/app/schedules", expect=403)  # a plugin page naming a permission (payout:create)
    await viewer.get("/app/telegram", expect=403)  # the holder's own linked chats
    page = await viewer.get("/app/activity")  # a plugin page naming none: readable
    assert 'href="/app/schedules"' not in page and 'href="/app/swaps"' not in page
    token = await member_jwt(app_client, "view@example.com")
    status, body = await api(app_client, "POST", "/dashboard/create-payout", bearer(token),
                             json={"address": "x", "amount": "1", "currency": "BTC"})
    assert status == 403 and body["error"]["code"] == "missing_scope" and body["error"]["detail"] == {
        "scope": "payout:create"}
    status, _ = await api(app_client, "GET", "/dashboard/payouts", bearer(token))
    assert status == 200
    # An unscoped dashboard write (a plugin's) needs settings:manage, which a viewer lacks.
    status, body = await api(app_client, "POST", "/dashboard/payment-links", bearer(token), json={})
    assert status == 403 and body["error"]["detail"] == {"scope": "settings:manage"}
    status, body = await api(app_client, "POST", "/dashboard/settings/change-password", bearer(token),
                             json={"current_password": PASSWORD, "new_password": "another password 1"})
    assert status == 403 and body["error"]["detail"] == {"scope": "account:credentials"}


async def test_finance_passes_the_scope_check_and_a_custom_role_grants_its_scopes(app_client):
    owner = await owner_of(app_client)
    await owner.get("/app/team")
    await owner.submit("/app/team", {"action": "custom-role", "name": "support", "scopes": "payment:read"})
    fin = await join(app_client, await invite(owner, "fin@example.com", "finance"))
    page = await fin.get("/app/payouts")
    assert 'id="payout-form"' in page and 'href="/app/schedules"' in page and 'href="/app/keys"' not in page
    await fin.get("/app/schedules")
    app_client.session.cookie_jar.clear()
    await owner.sign_in(OWNER)
    support = await join(app_client, await invite(owner, "help@example.com", "support"))
    page = await support.get("/app/payments")
    assert "New payment" not in page
    await support.get("/app/payouts", expect=403)
    token = await member_jwt(app_client, "fin@example.com")
    status, body = await api(app_client, "POST", "/dashboard/create-payout", bearer(token),
                             json={"address": "x", "amount": "1", "currency": "BTC"})
    assert status != 403, body  # refused for the address, not the role


async def test_removal_ends_sessions_at_once_and_role_changes_apply_now(app_client):
    owner = await owner_of(app_client)
    dev = await join(app_client, await invite(owner, "dev@example.com", "developer"))
    await dev.get("/app/keys")
    cookies = app_client.session.cookie_jar.filter_cookies(app_client.make_url("/app"))
    member_cookie = cookies["orb_session"].value
    token = await member_jwt(app_client, "dev@example.com")
    gateway = app_client.app[GATEWAY]
    member_id = await gateway.db.fetch_val("SELECT id FROM team_members WHERE email = :e", {"e": "dev@example.com"})
    app_client.session.cookie_jar.clear()
    await owner.sign_in(OWNER)
    await owner.get("/app/team")
    await owner.submit("/app/team", {"action": "role", "member_id": member_id, "role": "viewer"})
    status, body = await api(app_client, "POST", "/dashboard/api-keys", bearer(token), json={"scopes": ["payment:read"]})
    assert status == 403 and body["error"]["detail"] == {"scope": "key:manage"}
    await owner.get("/app/team")
    await owner.submit("/app/team", {"action": "remove", "member_id": member_id})
    status, body = await api(app_client, "GET", "/dashboard/payouts", bearer(token))
    assert status == 401 and body["error"]["code"] == "member_removed"
    app_client.session.cookie_jar.clear()
    response = await app_client.get("/app", allow_redirects=False, headers={"Cookie": f"orb_session={member_cookie}"})
    assert response.status == 303 and "notice=member-removed" in response.headers["Location"]
    status, _ = await api(app_client, "POST", "/dashboard/auth/login", {},
                          json={"email": "dev@example.com", "password": PASSWORD})
    assert status == 401


async def test_the_account_holder_stays_owner_and_only_owners_change_owners(app_client):
    owner = await owner_of(app_client)
    await owner.get("/app/team")
    await owner.submit("/app/team", {"action": "remove", "member_id": "holder"}, expect=403)
    assert "always keeps an owner" in owner.page
    await owner.submit("/app/team", {"action": "role", "member_id": "holder", "role": "viewer"}, expect=403)
    co_owner_link = await invite(owner, "co@example.com", "owner")
    admin_link = await invite(owner, "admin@example.com", "admin")
    await join(app_client, co_owner_link)
    admin = await join(app_client, admin_link)
    gateway = app_client.app[GATEWAY]
    co_id = await gateway.db.fetch_val("SELECT id FROM team_members WHERE email = :e", {"e": "co@example.com"})
    page = await admin.get("/app/team")
    assert f'id="remove-{co_id}"' not in page and '<option value="owner"' not in page.split('id="invite-role"')[1]
    await admin.submit("/app/team", {"action": "role", "member_id": co_id, "role": "viewer"}, expect=403)
    await admin.submit("/app/team", {"action": "remove", "member_id": co_id}, expect=403)
    await admin.submit("/app/team", {"action": "invite", "email": "o2@example.com", "role": "owner"}, expect=400)
    await admin.submit("/app/team", {"action": "remove", "member_id": "holder"}, expect=403)
    assert await gateway.db.fetch_val("SELECT role FROM team_members WHERE id = :id", {"id": co_id}) == "owner"


async def test_identity_provider_sign_in_and_sign_up_know_members(app_client):
    """A member's verified e-mail at the identity provider neither signs them in (only an identity they linked
    themselves does: issue 42) nor opens an account, and nobody can open an account with a member's e-mail."""
    from orbchain.api import Conflict
    from orbchain.plugins.oidc.identities import sign_in as oidc_sign_in
    from orbchain.plugins.oidc.provider import Identity

    owner = await owner_of(app_client)
    await join(app_client, await invite(owner, "sso@example.com", "viewer"))
    gateway = app_client.app[GATEWAY]
    with pytest.raises(Conflict) as refused:
        await oidc_sign_in(gateway, Identity("https://idp.example", "sub-1", "SSO@example.com", True))
    assert refused.value.code == "identity_not_linked"
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM merchants", {}) == 1
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM oidc_identities", {}) == 0
    status, body = await api(app_client, "POST", "/dashboard/auth/signup", {},
                             json={"email": "sso@example.com", "password": "another good one"})
    assert status == 409, body


class _SmtpSink:
    """A minimal SMTP server on localhost (no TLS) keeping each message's text: enough for smtplib."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.server: asyncio.AbstractServer | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._session, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"220 sink ready\r\n")
        while line := await reader.readline():
            verb = line.decode().strip().upper()
            if verb == "DATA":
                writer.write(b"354 go on\r\n")
                await writer.drain()
                body = []
                while (row := await reader.readline()) not in (b".\r\n", b""):
                    body.append(row.decode())
                self.messages.append("".join(body))
                writer.write(b"250 queued\r\n")
            elif verb == "QUIT":
                writer.write(b"221 bye\r\n")
                await writer.drain()
                break
            else:
                writer.write(b"250 ok\r\n")
            await writer.drain()
        writer.close()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


async def test_an_invitation_is_mailed_when_smtp_is_configured(make_client, make_config):
    sink = _SmtpSink()
    port = await sink.start()
    try:
        client = await make_client(make_config(scheduler={"enabled": False}, plugin={"teams": {
            "smtp_host": "127.0.0.1", "smtp_port": port, "smtp_starttls": False,
            "smtp_from": "Orbchain <no-reply@example.com>"}}))
        owner = await owner_of(client)
        with mailbox() as logged:
            await owner.get("/app/team")
            await owner.submit("/app/team", {"action": "invite", "email": "mailed@example.com", "role": "viewer"},
                               expect=200)
        assert "The join link was e-mailed to mailed@example.com" in owner.page
        assert len(sink.messages) == 1 and "To: mailed@example.com" in sink.messages[0]
        mailed = sink.messages[0].replace("=\r\n", "").replace("=3D", "=")
        token = re.search(r"/app/team/accept\?token=([\w-]+)", mailed).group(1)
        assert token not in owner.page and not any(token in line for line in logged)  # the mailbox's alone
        member = await join(client, f"/app/team/accept?token={token}")
        assert "mailed@example.com" in await member.get("/app")
    finally:
        await sink.close()
    # An SMTP server that is gone: the invitation exists, the inviter is told and may send it again later.
    client.session.cookie_jar.clear()
    await owner.sign_in(OWNER)
    await owner.get("/app/team")
    await owner.submit("/app/team", {"action": "invite", "email": "unmailed@example.com", "role": "viewer"},
                       expect=200)
    assert "Sending the e-mail failed" in owner.page and 'id="invite-page-link"' not in owner.page
    gateway = client.app[GATEWAY]
    assert await gateway.db.fetch_val("SELECT mails_sent FROM team_invites WHERE email = 'unmailed@example.com'",
                                      {}) == 1


async def test_two_accepts_of_one_link_make_one_member(app_client):
    from orbchain.plugins.teams import joining

    owner = await owner_of(app_client)
    token = (await invite(owner, "race@example.com", "viewer")).split("token=")[1]
    gateway = app_client.app[GATEWAY]
    form = {"token": token, "password": PASSWORD, "password_confirm": PASSWORD}
    results = await asyncio.gather(joining.join_with_password(gateway, form),
                                   joining.join_with_password(gateway, form), return_exceptions=True)
    assert sorted(type(r).__name__ for r in results) == ["Gone", "str"], results
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM team_members", {}) == 1


def test_settings_refuse_bad_values(make_config):
    from orbchain.api import ConfigError
    from orbchain.plugins.teams.settings import parse

    assert parse(make_config()).invite_seconds == 72 * 3600
    for block, word in (({"invite_hours": 0}, "invite_hours"), ({"invite_hours": 721}, "invite_hours"),
                        ({"smtp_host": "mx.example"}, "smtp_from"), ({"smtp_starttls": "yes"}, "smtp_starttls"),
                        ({"smtp_hots": "x"}, "smtp_hots")):
        with pytest.raises(ConfigError, match=word):
            parse(make_config(plugin={"teams": block}))
