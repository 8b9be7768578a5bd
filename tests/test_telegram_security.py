"""Issue 29, item 1: linking a Telegram chat can no longer take over an account. Both databases.

The attack as it was played against main (``test_the_one_click_chat_link_attack_takes_nothing``), then
each defence on its own: the JSON link needs the password (or a code), who the chat is comes from the
bot's ``/start`` and never from the URL, the dashboard lists and unlinks the chat and an undone link's
mini-app sessions never work again, 2FA waits out a cooling-off before the mini-app may set it up (and
is announced when it does), and wrong codes in the mini-app lock the mini-app only. Each test's
docstring says which break of the old code it catches.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pyotp
import pytest

from orbchain.core.accounts import lockout
from orbchain.core.infra.config import ConfigError
from orbchain.plugins.telegram import bot, link_tokens, store
from orbchain.plugins.telegram.settings import DEFAULT_MFA_COOLING_OFF, parse_settings
from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor, csrf_of
from .support import advance_clock, api, bearer, signup
from .telegram_support import (CHAT, MERCHANT_PASSWORD, balance, fund, init_data_for, link_via_bot, next_code,
                               open_session, start_chat, telegram_config, telegram_shop)

BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
ATTACKER = 6660001


async def linked_chats(gateway) -> list[int]:
    return [int(r["chat_id"]) for r in await gateway.db.fetch_all("SELECT chat_id FROM telegram_links")]


async def default_shop(make_client, make_config, standin):
    """The telegram plugin with every default (the 24-hour cooling-off included) and one merchant."""
    client = await make_client(make_config(**telegram_config(standin)))
    merchant = await signup(client, password=MERCHANT_PASSWORD)
    return client, merchant, client.app[GATEWAY]


async def totp_on_dashboard(client, gateway, merchant) -> str:
    """2FA turned on through the dashboard's JSON API (no cooling-off there); the secret."""
    _, body = await api(client, "POST", "/dashboard/mfa/setup", merchant.jwt)
    secret = body["data"]["secret"]
    status, body = await api(client, "POST", "/dashboard/mfa/verify", merchant.jwt,
                             json={"code": pyotp.TOTP(secret).at(gateway.now())})
    assert status == 200, body
    return secret


# -- the attack, end to end ----------------------------------------------------------------------


async def test_the_one_click_chat_link_attack_takes_nothing(make_client, make_config, standin):
    """The attacker's /start link, opened by the signed-in victim, links nothing; the old flow's next steps
    (mini-app session, 2FA set-up, payout) get nothing. Even a victim talked into confirming loses no money:
    2FA cannot be set up from the new chat for 24 hours, the dashboard names the chat and unlinks it.

    Against the old code the fragment's POST answered 200 and linked the attacker's chat: the assertion
    that nothing is linked after it fails, and the attacker's session, 2FA and payout all succeeded.
    """
    client, victim, gateway = await default_shop(make_client, make_config, standin)
    await fund(client, victim, gateway)  # 0.0099 BTC available
    browser = Visitor(client)
    await browser.sign_in("merchant@example.com", MERCHANT_PASSWORD)

    # 1. The attacker's own chat asks the bot for a link.
    token = await start_chat(gateway, standin, ATTACKER, first_name="Mallory", last_name="M", username="mallory")
    # 2. The signed-in victim opens it: SPEC 4.13's 302 to the fragment, which the dashboard's script posts.
    response = await client.get(f"/tg/link/start?t={token}", allow_redirects=False)
    assert response.status == 302 and response.headers["Location"] == f"/app#tg-link={token}"
    await browser.get("/app")
    response = await browser.submit("/app/fragment", {"kind": "tg-link", "value": token})
    assert await linked_chats(gateway) == []
    await browser.get(response.headers["Location"])
    assert 'id="tg-confirm-name">Mallory M<' in browser.page and ">@mallory<" in browser.page
    assert await linked_chats(gateway) == []
    # Posting the confirmation without the password (a forged or replayed form) links nothing either.
    await browser.submit(response.headers["Location"], {"action": "link", "t": token}, expect=400)
    assert await linked_chats(gateway) == []

    # 3. The old flow's next steps: a mini-app session on the victim's account, 2FA, a payout.
    status, body = await api(client, "POST", "/tgapp/session", {},
                             json={"init_data": init_data_for(ATTACKER, gateway.now())})
    assert (status, body["error"]["code"]) == (403, "not_linked")
    for path in ("/tgapp/mfa/setup", "/tgapp/payout"):
        assert (await api(client, "POST", path, {}, json={}))[0] == 401
    assert await balance(gateway, victim) == Decimal("0.0099")

    # 4. A victim talked into confirming with the password: the chat is linked and named everywhere ...
    await browser.submit(f"/app/telegram?t={token}", {"action": "link", "t": token, "password": MERCHANT_PASSWORD},
                         expect=200)
    mini = bearer((await open_session(client, gateway, ATTACKER))["token"])
    # ... but it cannot give the account a second factor of its own, so it cannot pay anything out.
    status, body = await api(client, "POST", "/tgapp/mfa/setup", mini)
    assert (status, body["error"]["code"]) == (403, "mfa_cooling_off")
    status, body = await api(client, "POST", "/tgapp/payout", mini,
                             json={"currency": "BTC", "destination": BTC_DEST, "amount": "0.009",
                                   "totp_code": "123456"})
    assert (status, body["error"]["code"]) == (403, "totp_setup_required")
    await browser.get("/app/activity")
    assert "Telegram chat Mallory M (@mallory) linked" in browser.page
    await browser.get("/app/telegram")
    assert 'id="tg-linked-name">Mallory M<' in browser.page
    await browser.submit("/app/telegram", {"action": "unlink"})
    assert (await api(client, "GET", "/tgapp/balances", mini))[0] == 401
    assert await balance(gateway, victim) == Decimal("0.0099")


# -- the JSON route needs the password, or a code with 2FA on --------------------------------------


async def test_json_link_needs_the_password_and_counts_wrong_ones(make_client, make_config, standin):
    """POST /dashboard/tg/link/complete: no password -> 400 naming it; wrong -> 401, counted by the sign-in
    lockout (429 for sign-in too); nothing bound and the token unspent until the right password.

    Against the old code the body {token} alone linked the chat (200).
    """
    client, merchant, gateway = await telegram_shop(make_client, make_config, standin)
    token = await start_chat(gateway, standin, CHAT)
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt, json={"token": token})
    assert status == 400 and body["error"]["type"] == "validation" and "password" in body["error"]["detail"]
    assert "required" in body["error"]["detail"]["password"]
    for _ in range(lockout.LOGIN_POLICY.max_failures):
        status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                                 json={"token": token, "password": "guess-guess"})
        assert status == 401, body
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": token, "password": MERCHANT_PASSWORD})
    assert status == 429 and body["error"]["type"] == "rate_limit"
    response = await client.post("/dashboard/auth/login", json={"email": "merchant@example.com",
                                                                "password": MERCHANT_PASSWORD})
    assert response.status == 429  # the same lockout as sign-in
    assert await linked_chats(gateway) == [] and not await store.is_spent(gateway, token)
    advance_clock(gateway, lockout.LOGIN_POLICY.lock_seconds)
    token = await start_chat(gateway, standin, CHAT)  # the first one expired meanwhile
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": token, "password": MERCHANT_PASSWORD})
    assert status == 200, body
    assert await linked_chats(gateway) == [CHAT]


async def test_with_2fa_on_the_link_needs_a_code_not_the_password(make_client, make_config, standin):
    """2FA on: the password alone is refused (400 naming totp_code), a wrong code is 401 totp_invalid and
    counts against the dashboard's TOTP lockout; a fresh code links, and is spent.

    Against the old code no credential was asked for: the first call linked.
    """
    client, merchant, gateway = await telegram_shop(make_client, make_config, standin)
    secret = await totp_on_dashboard(client, gateway, merchant)
    token = await start_chat(gateway, standin, CHAT)
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": token, "password": MERCHANT_PASSWORD})
    assert status == 400 and "totp_code" in body["error"]["detail"]
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": token, "totp_code": "12"})
    assert status == 400 and "totp_code" in body["error"]["detail"]
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": token, "totp_code": "000000" if pyotp.TOTP(secret).at(
                                 gateway.now()) != "000000" else "111111"})
    assert (status, body["error"]["code"]) == (401, "totp_invalid")
    assert await linked_chats(gateway) == []
    code = next_code(gateway, secret)
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": token, "totp_code": code})
    assert status == 200, body
    assert await linked_chats(gateway) == [CHAT]


async def test_a_password_less_account_must_turn_on_2fa_to_link(make_client, make_config, standin):
    """An identity-provider account has no password to confirm with: 403 password_not_set, nothing bound."""
    from orbchain import api as services

    client, _, gateway = await telegram_shop(make_client, make_config, standin)
    session = await services.create_account(gateway, "sso@example.com")
    token = await start_chat(gateway, standin, CHAT)
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", bearer(session.token),
                             json={"token": token, "password": "anything-at-all"})
    assert (status, body["error"]["code"]) == (403, "password_not_set")
    assert await linked_chats(gateway) == []


# -- who the chat is: from /start, never from the URL --------------------------------------------------


async def test_the_chat_is_named_from_its_start_message_only(make_client, make_config, standin):
    """The bot records the private chat's names at /start (control and bidi characters stripped, a malformed
    @username dropped; nothing for a group); a token for a chat never seen at /start links nothing.

    Against the old code no name was recorded anywhere (no telegram_chat_profiles), and a bare token linked.
    """
    client, merchant, gateway = await telegram_shop(make_client, make_config, standin)
    await start_chat(gateway, standin, CHAT, first_name="Ada\u202e\u0000 Lovelace ", last_name="\u200bL",
                     username="no spaces allowed")
    assert await store.profile_of(gateway, CHAT) == store.ChatProfile(CHAT, "Ada Lovelace", "L", None)
    standin.user_says(-100777, "/start", chat_type="group")
    await bot.poll_updates(gateway)
    assert await store.profile_of(gateway, -100777) is None

    unseen = link_tokens.issue(link_tokens.key_of(gateway), CHAT + 9, gateway.now())
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": unseen, "password": MERCHANT_PASSWORD})
    assert (status, body["error"]["code"]) == (400, "link_chat_unknown")
    assert await linked_chats(gateway) == []
    # An unlinked chat's profile goes once its tokens are long expired; a linked chat's stays.
    await link_via_bot(client, gateway, standin, merchant, chat_id=CHAT + 1)
    advance_clock(gateway, 2 * link_tokens.LINK_TOKEN_TTL + 1)
    await bot.prune(gateway)
    assert await store.profile_of(gateway, CHAT) is None
    assert (await store.profile_of(gateway, CHAT + 1)).first_name == "Ada"


# -- the dashboard unlinks; an undone link's sessions never come back -------------------------------------


async def test_unlinking_from_the_dashboard_ends_sessions_for_good(make_client, make_config, standin):
    """POST /dashboard/tg/unlink ends the chat's mini-app sessions at once; linking the same chat to the same
    account again does not revive them (each session names its link).

    Against the old code there was no dashboard unlink (404), and a relinked chat revived its old sessions.
    """
    client, merchant, gateway = await telegram_shop(make_client, make_config, standin)
    await link_via_bot(client, gateway, standin, merchant)
    old = bearer((await open_session(client, gateway))["token"])
    assert (await api(client, "GET", "/tgapp/balances", old))[0] == 200
    status, body = await api(client, "POST", "/dashboard/tg/unlink", merchant.jwt)
    assert status == 200 and body["data"] == {"ok": True, "unlinked": True}
    status, body = await api(client, "GET", "/tgapp/balances", old)
    assert (status, body["error"]["code"]) == (401, "not_linked")
    status, body = await api(client, "POST", "/dashboard/tg/unlink", merchant.jwt)
    assert body["data"] == {"ok": True, "unlinked": False}
    await bot.deliver_messages(gateway)
    assert "no longer linked" in standin.messages_to(CHAT)[-1]["text"]

    advance_clock(gateway, 1)
    await link_via_bot(client, gateway, standin, merchant)
    assert (await api(client, "GET", "/tgapp/balances", old))[0] == 401
    fresh = bearer((await open_session(client, gateway, query_id="AAE-q2"))["token"])
    assert (await api(client, "GET", "/tgapp/balances", fresh))[0] == 200
    assert (await api(client, "POST", "/dashboard/tg/unlink", {}))[0] == 401


# -- 2FA from the mini-app: a cooling-off, and the dashboard is told ---------------------------------------


async def test_mini_app_2fa_waits_for_the_cooling_off_and_is_announced(make_client, make_config, standin):
    """Default 24 h: setup and verify answer 403 mfa_cooling_off naming when (detail.available_at and the
    message's UTC time) until then; afterwards 2FA turns on, and the dashboard's home shows it until dismissed.

    Against the old code setup answered 200 at once (the attacker's first step after linking), and nothing
    reached the dashboard.
    """
    assert parse_settings({}).mfa_cooling_off_seconds == DEFAULT_MFA_COOLING_OFF == 24 * 3600
    for bad in (-1, 31 * 86400, "1d", True):
        with pytest.raises(ConfigError, match="mfa_cooling_off_seconds"):
            parse_settings({"mfa_cooling_off_seconds": bad})
    client, merchant, gateway = await default_shop(make_client, make_config, standin)
    await link_via_bot(client, gateway, standin, merchant)
    linked_at = (await store.link_of(gateway, merchant.merchant_id))["linked_at"]
    mini = bearer((await open_session(client, gateway))["token"])
    for path, body in (("/tgapp/mfa/setup", None), ("/tgapp/mfa/verify", {"code": "123456"})):
        status, answer = await api(client, "POST", path, mini, json=body)
        assert (status, answer["error"]["code"]) == (403, "mfa_cooling_off"), answer
        assert answer["error"]["detail"] == {"available_at": linked_at + 24 * 3600}
        assert "24 hours after this chat was linked" in answer["message"] and " UTC" in answer["message"]
    assert (await api(client, "GET", "/tgapp/mfa/status", mini))[1]["data"] == {"totpEnabled": False}

    advance_clock(gateway, 24 * 3600)
    mini = bearer((await open_session(client, gateway, query_id="AAE-later"))["token"])
    status, body = await api(client, "POST", "/tgapp/mfa/setup", mini)
    assert status == 200, body
    secret = body["data"]["secret"]
    status, body = await api(client, "POST", "/tgapp/mfa/verify", mini,
                             json={"code": pyotp.TOTP(secret).at(gateway.now())})
    assert status == 200, body

    browser = Visitor(client)
    await browser.sign_in("merchant@example.com", MERCHANT_PASSWORD, code=next_code(gateway, secret))
    await browser.get("/app")
    assert "Two-factor authentication turned on from the Telegram mini-app" in browser.page
    alert = re.search(r'<div class="notice notice-error" role="alert" id="home-alert-1">(.*?)</div>', browser.page,
                      re.S).group(1)
    event_id = re.search(r'name="event_id" value="(\d+)"', alert).group(1)
    await browser.submit("/app/activity", {"action": "dismiss", "event_id": event_id})
    await browser.get("/app")
    assert "turned on from the Telegram mini-app" not in browser.page
    await browser.get("/app/activity")
    assert "Two-factor authentication turned on from the Telegram mini-app" in browser.page  # the log keeps it


# -- wrong mini-app codes lock the mini-app only ----------------------------------------------------------


async def test_mini_app_code_failures_do_not_lock_the_dashboard(make_client, make_config, standin):
    """Five wrong codes on /tgapp/payout lock the mini-app (429, even for a right code) but the dashboard's
    transfer with a right code still goes through; five wrong codes on the dashboard leave the mini-app alone.

    Against the old code both shared one lockout: the dashboard transfer answered 429.
    """
    client, merchant, gateway = await telegram_shop(make_client, make_config, standin)
    friend = await signup(client, "friend@example.com")
    _, account = await api(client, "GET", "/dashboard/account", friend.jwt)
    friend_account = account["data"]["account"]["account_id"]
    await fund(client, merchant, gateway)
    secret = await totp_on_dashboard(client, gateway, merchant)
    token = await start_chat(gateway, standin, CHAT)
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": token, "totp_code": next_code(gateway, secret)})
    assert status == 200, body
    mini = bearer((await open_session(client, gateway, totp_code=next_code(gateway, secret)))["token"])
    payout = {"currency": "BTC", "destination": BTC_DEST, "amount": "0.001"}

    def wrong() -> str:
        right = {pyotp.TOTP(secret).at(gateway.now() + d) for d in (-30, 0, 30)}
        return next(c for c in ("000000", "111111", "222222", "333333") if c not in right)

    for _ in range(lockout.TOTP_POLICY.max_failures):
        status, body = await api(client, "POST", "/tgapp/payout", mini, json={**payout, "totp_code": wrong()})
        assert (status, body["error"]["code"]) == (401, "totp_invalid"), body
    status, body = await api(client, "POST", "/tgapp/payout", mini,
                             json={**payout, "totp_code": next_code(gateway, secret)})
    assert status == 429, body  # the mini-app is locked ...
    status, body = await api(client, "POST", "/dashboard/transfer", merchant.jwt, json={
        "to_account_id": friend_account, "coin": "BTC", "amount": "0.001", "totp_code": next_code(gateway, secret)})
    assert status == 200, body  # ... the dashboard is not

    advance_clock(gateway, lockout.TOTP_POLICY.lock_seconds)
    for _ in range(lockout.TOTP_POLICY.max_failures):
        status, _ = await api(client, "POST", "/dashboard/mfa/disable", merchant.jwt, json={"code": wrong()})
        assert status == 401
    status, _ = await api(client, "POST", "/dashboard/mfa/disable", merchant.jwt,
                          json={"code": next_code(gateway, secret)})
    assert status == 429  # the dashboard is locked now ...
    mini = bearer((await open_session(client, gateway, query_id="AAE-q9",
                                      totp_code=next_code(gateway, secret)))["token"])  # its own lockout, too
    status, body = await api(client, "POST", "/tgapp/payout", mini,
                             json={**payout, "totp_code": next_code(gateway, secret)})
    assert status == 200, body  # ... the mini-app is not
    assert lockout.totp_policy("miniapp").name != lockout.TOTP_POLICY.name
    with pytest.raises(ValueError):
        lockout.totp_policy("Mini App")


async def test_the_confirmation_form_needs_the_dashboard_csrf_token(make_client, make_config, standin):
    """The confirmation POST without this session's CSRF token is refused (403) and links nothing."""
    client, _, gateway = await telegram_shop(make_client, make_config, standin)
    browser = Visitor(client)
    await browser.sign_in("merchant@example.com", MERCHANT_PASSWORD)
    token = await start_chat(gateway, standin, CHAT)
    await browser.get(f"/app/telegram?t={token}")
    assert csrf_of(browser.page)
    await browser.submit(f"/app/telegram?t={token}", {"action": "link", "t": token, "password": MERCHANT_PASSWORD},
                         token="forged", expect=403)
    assert await linked_chats(gateway) == []
