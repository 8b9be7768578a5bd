"""The messaging mini-app (plugins/telegram; SPEC 4.13, 5.4, 7, 8) against a Bot API stand-in, on both databases.

The bot's jobs are called directly (the scheduler is off). Init data is
signed by ``tests/telegram_support.py`` from Telegram's published algorithm.
"""

from __future__ import annotations

import html
import re
from decimal import Decimal
from urllib.parse import urlencode

import jwt
import pytest

from orbchain.core.ledger import book as ledger
from orbchain.plugins.telegram import bot, initdata, link_tokens, linking
from orbchain.web.keys import GATEWAY

from .dashboard_support import PASSWORD, Visitor
from .support import Devnet, advance_clock, api, bearer, config_from_environment, freeze_clock, signup
from .telegram_support import (BOT_TOKEN, CHAT, MERCHANT_PASSWORD, balance, enable_totp, fund, init_data_for,
                               link_via_bot, next_code, open_session, sign_init_data, start_chat, telegram_config,
                               telegram_shop)

BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
DAY = 86400


@pytest.fixture
async def env(make_client, make_config, standin):
    return await telegram_shop(make_client, make_config, standin)


# -- init data (pure) -------------------------------------------------------------------------


def test_init_data_verifies_telegram_signature_and_freshness():
    now = 1_800_000_000
    good = init_data_for(CHAT, now - 10)
    user = initdata.verify(good, BOT_TOKEN, now=now, max_age=3600)
    assert user.user_id == CHAT and user.auth_date == now - 10
    cases = {
        "forged hash": good[:-4] + ("0000" if not good.endswith("0000") else "1111"),
        "other bot": init_data_for(CHAT, now, bot_token="7000002:other"),
        "tampered user": good.replace(str(CHAT), str(CHAT + 1)),
        "no hash": good.split("&hash=")[0],
        "repeated field": good + "&auth_date=1",
        "not a query": "%%%",
    }
    for name, data in cases.items():
        with pytest.raises(initdata.InitDataError) as exc:
            initdata.verify(data, BOT_TOKEN, now=now, max_age=3600)
        assert exc.value.code == "init_data_invalid", name
    for auth_date in (now - 3601, now + 120):
        with pytest.raises(initdata.InitDataError) as exc:
            initdata.verify(init_data_for(CHAT, auth_date), BOT_TOKEN, now=now, max_age=3600)
        assert exc.value.code == "init_data_expired"
    # Every field counts, in sorted order, whatever the query order (Telegram's data-check-string).
    extra = sign_init_data({"user": {"id": CHAT}, "auth_date": now, "start_param": "x", "chat_instance": "-1"})
    assert initdata.verify(extra, BOT_TOKEN, now=now, max_age=60).user_id == CHAT


def test_link_token_shape_expiry_and_forgery():
    secret = b"s" * 32
    token = link_tokens.issue(secret, CHAT, 1000)
    chat, expiry, mac = token.split(".")
    assert (int(chat), int(expiry), len(mac)) == (CHAT, 1600, 64)
    assert link_tokens.verify(secret, token, 1599).chat_id == CHAT
    with pytest.raises(link_tokens.LinkTokenError) as exc:
        link_tokens.verify(secret, token, 1600)
    assert exc.value.code == "link_token_expired"
    for bad in (f"{CHAT + 1}.{expiry}.{mac}", f"{chat}.{int(expiry) + 60}.{mac}", token.upper(), "", None,
                link_tokens.issue(b"x" * 32, CHAT, 1000)):
        with pytest.raises(link_tokens.LinkTokenError) as exc:
            link_tokens.verify(secret, bad, 1000)
        assert exc.value.code == "link_token_invalid"


# -- linking ----------------------------------------------------------------------------------


async def test_start_link_complete_status_and_replays(env, standin):
    client, merchant, gateway = env
    status, body = await api(client, "GET", "/dashboard/tg/link/status", merchant.jwt)
    assert body["data"] == {"linked": False, "linked_at": None, "chat_id": None, "first_name": None,
                            "last_name": None, "username": None}, body

    standin.user_says(CHAT, "/start")
    standin.user_says(-100123, "/start@OrbchainBot", chat_type="group")
    assert await bot.poll_updates(gateway) == 2
    assert await bot.poll_updates(gateway) == 0  # the offset confirmed them: handled once
    group = standin.messages_to(-100123)
    assert len(group) == 1 and "/tg/link/start" not in group[0]["text"] and "private chat" in group[0]["text"]
    [reply] = standin.messages_to(CHAT)
    token = re.search(r"/tg/link/start\?t=(\S+)", reply["text"]).group(1)

    response = await client.get(f"/tg/link/start?t={token}", allow_redirects=False)
    assert response.status == 302 and response.headers["Location"] == f"/app#tg-link={token}"
    forged = token[:-1] + ("0" if token[-1] != "0" else "1")
    response = await client.get(f"/tg/link/start?t={forged}", allow_redirects=False)
    assert response.status == 400 and response.content_type == "text/html"

    status, body = await api(client, "POST", "/dashboard/tg/link/complete", {},
                             json={"token": token, "password": MERCHANT_PASSWORD})
    assert status == 401
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": forged, "password": MERCHANT_PASSWORD})
    assert (status, body["error"]["code"]) == (400, "link_token_invalid")
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt,
                             json={"token": token, "password": MERCHANT_PASSWORD})
    assert status == 200, body
    _, account = await api(client, "GET", "/dashboard/account", merchant.jwt)
    assert body["data"] == {"ok": True, "account_id": account["data"]["account"]["account_id"]}
    assert await bot.deliver_messages(gateway) == 1
    assert "now linked" in standin.messages_to(CHAT)[-1]["text"]
    assert "reply_markup" not in standin.messages_to(CHAT)[-1]  # http base URL: no Web App button

    status, body = await api(client, "GET", "/dashboard/tg/link/status", merchant.jwt)
    assert body["data"]["linked"] is True and body["data"]["chat_id"] == CHAT
    assert (body["data"]["first_name"], body["data"]["last_name"], body["data"]["username"]) == (
        "Ada", "Lovelace", "ada_l")
    assert 0 <= gateway.now() - body["data"]["linked_at"] <= 5

    # Replayed: the token was spent.
    friend = await signup(client, "friend@example.com", password=MERCHANT_PASSWORD)
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", friend.jwt,
                             json={"token": token, "password": MERCHANT_PASSWORD})
    assert (status, body["error"]["code"]) == (400, "link_token_used")
    response = await client.get(f"/tg/link/start?t={token}", allow_redirects=False)
    assert response.status == 400 and "already used" in await response.text()

    # Expired: ten minutes after /start.
    standin.user_says(CHAT, "/start")
    await bot.poll_updates(gateway)
    late = re.search(r"t=(\S+)", standin.messages_to(CHAT)[-1]["text"]).group(1)
    advance_clock(gateway, link_tokens.LINK_TOKEN_TTL)
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", friend.jwt,
                             json={"token": late, "password": MERCHANT_PASSWORD})
    assert (status, body["error"]["code"]) == (400, "link_token_expired")
    response = await client.get(f"/tg/link/start?t={late}", allow_redirects=False)
    assert response.status == 400 and "expired" in await response.text()
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", friend.jwt, json={})
    assert status == 400 and body["error"]["type"] == "validation"


async def test_relinking_moves_the_chat_and_unlink_ends_sessions(env, standin):
    client, merchant, gateway = env
    await link_via_bot(client, gateway, standin, merchant)
    session = await open_session(client, gateway)
    status, _ = await api(client, "GET", "/tgapp/balances", bearer(session["token"]))
    assert status == 200
    friend = await signup(client, "friend@example.com")
    advance_clock(gateway, 1)  # a new link token (the same chat and second would give the spent one again)
    await link_via_bot(client, gateway, standin, friend)  # the same chat, now bound to the friend
    _, body = await api(client, "GET", "/dashboard/tg/link/status", merchant.jwt)
    assert body["data"]["linked"] is False
    status, body = await api(client, "GET", "/tgapp/balances", bearer(session["token"]))
    assert (status, body["error"]["code"]) == (401, "not_linked")

    session = await open_session(client, gateway, query_id="AAE-q2")
    assert session["merchant"]["id"] == friend.merchant_id
    status, body = await api(client, "POST", "/tgapp/unlink", bearer(session["token"]))
    assert status == 200 and body["data"] == {"ok": True}
    status, _ = await api(client, "GET", "/tgapp/balances", bearer(session["token"]))
    assert status == 401
    await bot.deliver_messages(gateway)
    assert "no longer linked" in standin.messages_to(CHAT)[-1]["text"]
    status, body = await api(client, "POST", "/tgapp/session", {},
                             json={"init_data": init_data_for(CHAT, gateway.now(), query_id="AAE-q3")})
    assert (status, body["error"]["code"]) == (403, "not_linked")


# -- session and the separation of tokens -----------------------------------------------------


async def test_session_token_claims_and_refusals(env, standin):
    client, merchant, gateway = env
    await link_via_bot(client, gateway, standin, merchant)
    now = gateway.now()
    data = init_data_for(CHAT, now - 5)
    status, body = await api(client, "POST", "/tgapp/session", {}, json={"init_data": data})
    assert status == 200, body
    session = body["data"]
    assert session["expires_in"] == 3600
    merchant_view = session["merchant"]
    assert merchant_view["id"] == merchant.merchant_id and merchant_view["email"] == "merchant@example.com"
    assert merchant_view["default_settlement_coin"] is None and "BTC" in merchant_view["accepted_coins"]
    claims = jwt.decode(session["token"], options={"verify_signature": False})
    assert claims["m"] == merchant.merchant_id and claims["tg"] == CHAT and claims["src"] == "tgapp"
    assert claims["exp"] - claims["iat"] == 3600 and claims["aud"] == "tgapp"

    refusals = {
        "init_data_replayed": data,
        "init_data_invalid": data.replace(str(CHAT), str(CHAT + 1)),
        "init_data_expired": init_data_for(CHAT, now - 3601),
    }
    for code, init in refusals.items():
        status, body = await api(client, "POST", "/tgapp/session", {}, json={"init_data": init})
        assert (status, body["error"]["code"]) == (401, code), body
    status, body = await api(client, "POST", "/tgapp/session", {}, json={})
    assert status == 401 and body["error"]["code"] == "init_data_invalid"
    status, body = await api(client, "POST", "/tgapp/session", {},
                             json={"init_data": init_data_for(CHAT + 7, now, query_id="x")})
    assert (status, body["error"]["code"]) == (403, "not_linked")

    mini = bearer(session["token"])
    assert (await api(client, "GET", "/tgapp/balances", mini))[0] == 200
    # The dashboard JWT never opens /tgapp, the mini-app JWT never opens the dashboard, nor does a key.
    assert (await api(client, "GET", "/tgapp/balances", merchant.jwt))[0] == 401
    assert (await api(client, "GET", "/dashboard/balances", mini))[0] == 401
    assert (await api(client, "POST", "/dashboard/tg/link/complete", mini, json={"token": "x"}))[0] == 401
    assert (await api(client, "GET", "/tgapp/balances", merchant.general_key))[0] == 401
    assert (await api(client, "GET", "/tgapp/balances", {}))[0] == 401
    # A token signed with the dashboard key but shaped like a mini-app one is refused too.
    forged = jwt.encode({**claims}, gateway.require_secrets().jwt_secret, algorithm="HS256")
    assert (await api(client, "GET", "/tgapp/balances", bearer(forged)))[0] == 401
    advance_clock(gateway, 3600)
    status, body = await api(client, "GET", "/tgapp/balances", mini)
    assert status == 401


async def test_a_bot_token_set_in_the_environment_enables_the_bot(make_client, make_config, standin):
    """Issue 29 item 6: ORBCHAIN_PLUGIN__TELEGRAM__BOT_TOKEN (docs/telegram.md) was dropped: the plugin
    stayed idle (503 telegram_not_configured)."""
    config = config_from_environment(make_config, ORBCHAIN_PLUGIN__TELEGRAM__BOT_TOKEN=BOT_TOKEN,
                                     ORBCHAIN_PLUGIN__TELEGRAM__API_BASE_URL=standin.url)
    client = await make_client(config)
    gateway = client.app[GATEWAY]
    # The init data is checked with that token: genuine but unlinked is 403 not_linked (idle would be 503).
    status, body = await api(client, "POST", "/tgapp/session", {},
                             json={"init_data": init_data_for(CHAT, gateway.now())})
    assert (status, body["error"]["code"]) == (403, "not_linked"), body
    status, body = await api(client, "POST", "/tgapp/session", {},
                             json={"init_data": init_data_for(CHAT, gateway.now(), bot_token="7000002:other")})
    assert status == 401, body
    standin.user_says(CHAT, "/start")
    assert await bot.poll_updates(gateway) == 1  # the bot talks to the Bot API with that token
    assert "/tg/link/start?t=" in standin.messages_to(CHAT)[-1]["text"]


async def test_without_a_bot_token_the_plugin_is_idle(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client)
    status, body = await api(client, "POST", "/tgapp/session", {}, json={"init_data": init_data_for(CHAT, 1)})
    assert (status, body["error"]["code"]) == (503, "telegram_not_configured")
    status, body = await api(client, "POST", "/dashboard/tg/link/complete", merchant.jwt, json={"token": "x"})
    assert status == 503
    assert (await client.get("/tg/link/start?t=x")).status == 404
    assert (await client.post("/tg/webhook", json={"update_id": 1})).status == 404
    assert await bot.poll_updates(client.app[GATEWAY]) == 0


async def linked_chats(gateway) -> list[int]:
    return [int(r["chat_id"]) for r in await gateway.db.fetch_all("SELECT chat_id FROM telegram_links")]


async def test_the_dashboard_pages_confirm_a_link_with_and_without_script(env, standin):
    """The fragment only leads to a confirmation page naming the chat; the password links it. Without script
    the visitor pastes the whole address (landing page or the Telegram page); signed out, sign-in leads there.

    Against the old code the fragment's POST linked the chat at once (200, no password): the first step fails.
    """
    client, _, gateway = env
    assert isinstance(gateway.services.get(linking.SERVICE_NAME), linking.LinkService)
    visitor = Visitor(client)
    await visitor.sign_up("tg-dash@example.com")
    await visitor.get("/app")
    assert 'id="fragment-fallback"' in visitor.page  # the no-script form sits on the landing page

    token = await start_chat(gateway, standin, CHAT)
    response = await visitor.submit("/app/fragment", {"kind": "tg-link", "value": token})
    confirm = response.headers["Location"]
    assert confirm == f"/app/telegram?t={token}" and await linked_chats(gateway) == []
    await visitor.get(confirm)
    assert 'id="tg-confirm-name">Ada Lovelace<' in visitor.page and ">@ada_l<" in visitor.page
    assert 'name="password"' in visitor.page and "If someone sent you this link" in visitor.page
    # Asked again: a missing password is a field's error (the summary), a wrong one the banner.
    for fields, status, shown in (({}, 400, 'id="form-errors"'), ({"password": "not-my-password"}, 401,
                                                                   'id="form-error"')):
        await visitor.submit(confirm, {"action": "link", "t": token, **fields}, expect=status)
        assert 'id="tg-confirm-form"' in visitor.page and shown in visitor.page
    assert await linked_chats(gateway) == []
    await visitor.submit(confirm, {"action": "link", "t": token, "password": PASSWORD}, expect=200)
    assert "Your Telegram chat is linked" in visitor.page and await linked_chats(gateway) == [CHAT]
    await bot.deliver_messages(gateway)
    assert "now linked" in standin.messages_to(CHAT)[-1]["text"]
    # The same token again: used, said on the page, nothing changes.
    await visitor.get(confirm, expect=400)
    assert "already used" in visitor.page and 'id="tg-confirm-form"' not in visitor.page

    # Without script: the pasted address of /app#tg-link=... leads to the same confirmation.
    other = CHAT + 1
    advance_clock(gateway, 1)
    token = await start_chat(gateway, standin, other, first_name="Grace", last_name=None, username=None)
    await visitor.get("/app")
    response = await visitor.submit("/app/fragment", {"value": f"http://gateway.test/app#tg-link={token}"})
    await visitor.get(response.headers["Location"])
    assert 'id="tg-confirm-name">Grace<' in visitor.page and "(no @username)" in visitor.page
    # So does the Telegram page's own paste form, given the bot's link itself.
    await visitor.get("/app/telegram?" + urlencode({"t": f"http://gateway.test/tg/link/start?t={token}"}))
    assert 'id="tg-confirm-name">Grace<' in visitor.page
    await visitor.submit(f"/app/telegram?t={token}", {"action": "link", "t": token, "password": PASSWORD},
                         expect=200)
    assert await linked_chats(gateway) == [other]
    await visitor.get("/app/telegram")
    assert 'id="tg-linked-name">Grace<' in visitor.page and 'id="tg-unlink"' in visitor.page
    await visitor.submit("/app/telegram", {"action": "unlink"})
    assert await linked_chats(gateway) == []
    await visitor.get("/app/telegram?t=" + token[:-1] + ("0" if token[-1] != "0" else "1"), expect=400)
    assert "not valid" in visitor.page and 'id="tg-confirm-form"' not in visitor.page

    # Signed out: the login page, whose form leads to the confirmation once signed in.
    await visitor.submit("/app/logout")
    await visitor.get("/app/login")
    advance_clock(gateway, 1)
    fresh = await start_chat(gateway, standin, CHAT)
    await visitor.submit("/app/fragment", {"kind": "tg-link", "value": fresh}, expect=401)
    target = html.unescape(re.search(r'name="next" value="([^"]+)"', visitor.page).group(1))
    assert target == f"/app/telegram?t={fresh}"
    response = await visitor.submit("/app/login", {"email": "tg-dash@example.com", "password": PASSWORD,
                                                   "next": target})
    assert response.headers["Location"] == target and await linked_chats(gateway) == []


async def test_without_a_bot_the_dashboard_says_linking_is_off(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    assert linking.SERVICE_NAME not in client.app[GATEWAY].services
    visitor = Visitor(client)
    await visitor.sign_up("no-bot@example.com")
    await visitor.get("/app")
    await visitor.submit("/app/fragment", {"kind": "tg-link", "value": "1.2.abc"}, expect=503)
    assert "not enabled" in visitor.page


# -- reads ------------------------------------------------------------------------------------


async def test_reads_receive_prices_and_qr(env, standin):
    client, merchant, gateway = env
    await link_via_bot(client, gateway, standin, merchant)
    mini = bearer((await open_session(client, gateway))["token"])
    for n in range(12):
        status, _ = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                              json={"currency": "BTC", "amount": f"0.00{n + 1}"})
        assert status == 200
    status, body = await api(client, "GET", "/tgapp/payments", mini)
    assert status == 200 and len(body["data"]["payments"]) == 10
    status, body = await api(client, "GET", "/tgapp/balances", mini)
    assert body["data"] == {"balances": []}

    status, body = await api(client, "GET", "/tgapp/receive?coin=btc", mini)
    assert status == 200 and body["data"]["coin"] == "BTC" and body["data"]["network_label"] == "Bitcoin"
    _, dashboard = await api(client, "GET", "/dashboard/receive-address?coin=BTC", merchant.jwt)
    assert body["data"]["address"] == dashboard["data"]["address"]
    for query, code in (("", "missing_coin"), ("?coin=XMR", "xmr_receive_unsupported"),
                        ("?coin=DOGE", "coin_not_accepted")):
        status, body = await api(client, "GET", f"/tgapp/receive{query}", mini)
        assert (status, body["error"]["code"]) == (400, code)

    status, body = await api(client, "GET", "/tgapp/prices", mini)
    assert status == 200 and Decimal(body["data"]["BTC"]["usd"]) > 0 and body["data"]["BTC"]["change_24h"] is None

    response = await client.get("/tgapp/qr", params={"data": "bitcoin:" + BTC_DEST})
    assert response.status == 200 and response.content_type == "image/svg+xml"
    assert response.headers["Cache-Control"] == "public, max-age=300" and "<svg" in await response.text()
    assert (await client.get("/tgapp/qr", params={"data": "x" * 512})).status == 200
    assert (await client.get("/tgapp/qr", params={"data": "x" * 513})).status == 400
    assert (await client.get("/tgapp/qr")).status == 400

    response = await client.get("/tgapp")
    csp = response.headers["Content-Security-Policy"]
    assert response.status == 200 and "script-src 'nonce-" in csp and "unsafe-inline" not in csp
    assert "connect-src 'self'" in csp and "default-src 'none'" in csp


# -- money: TOTP always -----------------------------------------------------------------------


async def test_payouts_transfers_and_swaps_need_totp_always(env, standin):
    client, merchant, gateway = env
    friend = await signup(client, "friend@example.com")
    _, account = await api(client, "GET", "/dashboard/account", friend.jwt)
    friend_account = account["data"]["account"]["account_id"]
    await fund(client, merchant, gateway)  # 0.0099 BTC available
    await link_via_bot(client, gateway, standin, merchant)
    mini = bearer((await open_session(client, gateway))["token"])
    payout = {"currency": "BTC", "destination": BTC_DEST, "amount": "0.001", "totp_code": "123456"}
    swap = {"from_coin": "BTC", "to_coin": "ETH", "amount": "0.001", "totp_code": "123456"}

    for path, body in (("/tgapp/payout", payout), ("/tgapp/payout", {**payout, "destination": friend_account}),
                       ("/tgapp/swap", swap)):
        status, answer = await api(client, "POST", path, mini, json=body)
        assert (status, answer["error"]["code"]) == (403, "totp_setup_required"), answer
    status, body = await api(client, "GET", "/tgapp/mfa/status", mini)
    assert body["data"] == {"totpEnabled": False}
    secret = await enable_totp(client, gateway, mini)
    assert (await api(client, "GET", "/tgapp/mfa/status", mini))[1]["data"] == {"totpEnabled": True}
    status, body = await api(client, "POST", "/tgapp/mfa/setup", mini)
    assert status == 400  # already on

    for path, body in (("/tgapp/payout", payout), ("/tgapp/swap", swap),
                       ("/tgapp/payout", {k: v for k, v in payout.items() if k != "totp_code"})):
        status, answer = await api(client, "POST", path, mini, json=body)
        assert (status, answer["error"]["code"]) == (401, "totp_invalid"), answer
    assert await balance(gateway, merchant) == Decimal("0.0099")

    status, body = await api(client, "POST", "/tgapp/payout", mini,
                             json={**payout, "totp_code": next_code(gateway, secret)})
    assert status == 200, body
    data = body["data"]
    assert data["kind"] == "payout" and data["status"] == "CONFIRMING" and data["amount"] == "0.001"
    assert data["destination"] == BTC_DEST and data["coin"] == "BTC" and data["track_id"]
    code = next_code(gateway, secret)
    status, body = await api(client, "POST", "/tgapp/payout", mini, json={**payout, "totp_code": code})
    assert status == 200
    status, body = await api(client, "POST", "/tgapp/payout", mini, json={**payout, "totp_code": code})
    assert (status, body["error"]["code"]) == (401, "totp_invalid")  # a code works once

    status, body = await api(client, "POST", "/tgapp/payout", mini, json={
        **payout, "destination": friend_account, "totp_code": next_code(gateway, secret)})
    assert status == 200, body
    assert body["data"]["kind"] == "transfer" and body["data"]["status"] == "CONFIRMED"
    assert body["data"]["destination"] == friend_account
    _, friend_balances = await api(client, "GET", "/dashboard/balances", friend.jwt)
    assert friend_balances["data"]["balances"] == [{"coin": "BTC", "amount": "0.001"}]

    _, own = await api(client, "GET", "/dashboard/account", merchant.jwt)
    refusals = [
        ({**payout, "destination": own["data"]["account"]["account_id"]}, "self_transfer"),
        ({**payout, "destination": "ORB-" + "1" * 20}, "recipient_not_found"),
        ({**payout, "destination": "bc1qnotanaddress"}, "invalid_address"),
        ({**payout, "amount": "5"}, "insufficient_balance"),
        ({**payout, "currency": "XMR"}, "coin_not_supported"),
        ({**payout, "currency": "NOPE"}, "coin_not_supported"),
    ]
    for body_, code in refusals:
        status, answer = await api(client, "POST", "/tgapp/payout", mini,
                                   json={**body_, "totp_code": next_code(gateway, secret)})
        assert (status, answer["error"]["code"]) == (400, code), answer
    status, answer = await api(client, "POST", "/tgapp/payout", mini, json={"currency": "BTC"})
    assert status == 400 and answer["error"]["type"] == "validation"
    assert await balance(gateway, merchant) == Decimal("0.0069")  # 0.0099 - 2 payouts - 1 transfer

    status, body = await api(client, "POST", "/tgapp/swap/quote", mini, json=swap)
    assert status == 200 and body["data"]["from_amount"] == "0.001" and body["data"]["to_coin"] == "ETH"
    status, body = await api(client, "POST", "/tgapp/swap", mini, json={**swap, "totp_code": next_code(gateway, secret)})
    assert status == 200, body
    assert set(body["data"]) == {"swap_id", "from_coin", "from_amount", "to_coin", "to_amount_quoted", "status"}
    assert body["data"]["status"] == "QUOTED" and body["data"]["from_amount"] == "0.001"
    assert await balance(gateway, merchant) == Decimal("0.0059")
    assert (await ledger.check_ledger(gateway.db)).ok


# -- notifications ----------------------------------------------------------------------------


async def test_notifications_on_paid_and_final_payouts_say_no_more_than_needed(env, standin):
    client, merchant, gateway = env
    await link_via_bot(client, gateway, standin, merchant)
    await bot.deliver_messages(gateway)
    before = len(standin.messages_to(CHAT))
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01", "order_id": "secret-order-7"})
    address, track_id = body["data"]["address"], body["data"]["track_id"]
    devnet = Devnet(client)
    await devnet.pay("BTC", address, "0.01")
    await devnet.mine(gateway.coins.require("BTC").confirmations)
    await devnet.mine(1)  # a rescan: the hook may run again, the message is queued once
    status, body = await api(client, "POST", "/v1/payout", merchant.payout_key,
                             json={"currency": "BTC", "address": BTC_DEST, "amount": "0.001"})
    assert status == 200, body
    payout_id = body["data"]["track_id"]
    from orbchain.core.payouts import worker as payout_worker

    for _ in range(4):
        advance_clock(gateway, 60)
        await payout_worker.process_payouts(gateway)
        await devnet.mine(3)
    assert await bot.deliver_messages(gateway) >= 2
    texts = [m["text"] for m in standin.messages_to(CHAT)[before:]]
    assert f"Payment {track_id} is paid: 0.01 BTC." in texts
    assert f"Payout {payout_id} is confirmed: 0.001 BTC." in texts
    assert len(texts) == 2
    for text in texts:
        assert address not in text and BTC_DEST not in text and "secret-order-7" not in text
    assert await bot.deliver_messages(gateway) == 0


async def test_delivery_retries_then_gives_up(env, standin):
    client, merchant, gateway = env
    await link_via_bot(client, gateway, standin, merchant)
    standin.blocked_chats.add(CHAT)
    assert await bot.deliver_messages(gateway) == 0  # 403 from Telegram: final, not retried
    from orbchain.plugins.telegram import store

    rows = await gateway.db.fetch_all("SELECT * FROM telegram_messages WHERE chat_id = :c AND sent_at IS NULL",
                                      {"c": CHAT})
    assert rows and all(r["failed_at"] is not None for r in rows)
    standin.blocked_chats.clear()
    standin.token = "7000001:rotated"  # our token is now wrong: 401 is retried with backoff
    await store.enqueue(gateway, "probe", CHAT, bot.text_message(CHAT, "probe"))
    assert await bot.deliver_messages(gateway) == 0
    row = await store.message(gateway, "probe")
    assert row["failed_at"] is None and int(row["attempts"]) == 1 and "401" in row["last_error"]
    standin.token = BOT_TOKEN
    assert await bot.deliver_messages(gateway) == 0  # not due yet
    advance_clock(gateway, 5)
    assert await bot.deliver_messages(gateway) == 1


async def test_old_sent_and_given_up_messages_are_pruned_pending_ones_stay(env):
    """Breaks caught: the bot's outbox grew forever; a prune that takes a message still to be sent or one
    younger than ``message_retention_days`` (its row still refuses a notification queued twice)."""
    from orbchain.plugins.telegram import store

    _, _, gateway = env
    now = freeze_clock(gateway)
    old, young = now - 31 * DAY, now - 29 * DAY
    rows = [(f"sent{i}", old, old, None) for i in range(1_200)]
    rows += [("given-up", old, None, old), ("pending", old, None, None), ("young", young, young, None)]
    for key, created, sent, failed in rows:
        await gateway.db.execute(
            "INSERT INTO telegram_messages (id, chat_id, body, attempts, next_attempt_at, sent_at, failed_at,"
            " created_at) VALUES (:id, :c, '{}', 1, :t, :s, :f, :t)",
            {"id": key, "c": CHAT, "t": created, "s": sent, "f": failed})
    await bot.prune(gateway)
    left = {r["id"] for r in await gateway.db.fetch_all("SELECT id FROM telegram_messages")}
    assert left == {"pending", "young"}
    assert not await store.enqueue(gateway, "young", CHAT, bot.text_message(CHAT, "again"))  # still refused


def test_message_retention_is_at_least_a_week():
    from orbchain.core.infra.config import ConfigError
    from orbchain.plugins.telegram.settings import parse_settings

    assert parse_settings({}).message_retention_days == 30
    assert parse_settings({"message_retention_days": 7}).message_retention_days == 7
    with pytest.raises(ConfigError, match="message_retention_days"):
        parse_settings({"message_retention_days": 6})


# -- webhook mode -----------------------------------------------------------------------------


async def test_webhook_mode_registers_and_checks_the_secret(make_client, make_config, standin):
    secret = "hook-secret-0123456789abcdef"
    config = make_config(**telegram_config(standin, mode="webhook", webhook_secret=secret),
                         server={"base_url": "https://pay.example.com"})
    client = await make_client(config)
    assert standin.webhook == {"url": "https://pay.example.com/tg/webhook", "secret_token": secret}
    gateway = client.app[GATEWAY]
    update = {"update_id": 9, "message": {"message_id": 1, "date": 1, "text": "/start",
                                          "chat": {"id": CHAT, "type": "private"}}}
    response = await client.post("/tg/webhook", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "nope"})
    assert response.status == 401
    response = await client.post("/tg/webhook", json=update)
    assert response.status == 401
    response = await client.post("/tg/webhook", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": secret})
    assert response.status == 200
    assert await bot.poll_updates(gateway) == 0  # no polling in webhook mode
    standin.known_chats.add(CHAT)
    assert await bot.deliver_messages(gateway) == 1
    assert "https://pay.example.com/tg/link/start?t=" in standin.messages_to(CHAT)[0]["text"]
    response = await client.post("/tg/webhook", data=b"[1]", headers={
        "X-Telegram-Bot-Api-Secret-Token": secret, "Content-Type": "application/json"})
    assert response.status == 400


async def test_config_is_checked(make_config):
    from orbchain.core.infra.config import ConfigError
    from orbchain.plugins.telegram.settings import parse_settings

    for block, key in (({"bot_tokn": "1:a"}, "bot_tokn"), ({"bot_token": "no colon"}, "bot_token"),
                       ({"mode": "push"}, "mode"), ({"bot_token": "1:a", "mode": "webhook"}, "webhook_secret"),
                       ({"api_base_url": "ftp://x"}, "api_base_url"),
                       ({"init_data_max_age_seconds": 5}, "init_data_max_age_seconds")):
        with pytest.raises(ConfigError, match=key):
            parse_settings(block)
    assert parse_settings({}).enabled is False
