"""The payer pages in the payer's language (web/i18n.py), over HTTP, on both databases.

The language comes from ``?lang=`` (remembered in a cookie), the cookie, then
Accept-Language, else English; the answer says it varies with them, and the
pay page's rendering cache never hands one payer's language to another.
"""

from __future__ import annotations

import html as htmllib
import json
import re

import pytest

from orbchain.testing.fixtures import open_shop
from orbchain.web import i18n

from .support import api

# A string of each language's pay page (an open invoice: "Amount to pay").
AMOUNT_TO_PAY = {"en": "Amount to pay", "es": "Importe a pagar", "pt": "Valor a pagar", "ru": "Сумма к оплате",
                 "zh": "应付金额", "de": "Zu zahlender Betrag", "fr": "Montant à payer", "tr": "Ödenecek tutar"}


@pytest.fixture
async def shop(make_config, make_client):
    return await open_shop(make_config, make_client, plugin={"links": {"mint_per_minute": 100}})


async def invoice(shop, **fields):
    status, body = await api(shop.client, "POST", "/v1/payment/invoice", shop.merchant.merchant_key,
                             json={"amount": "10", "currency": "USD", **fields})
    assert status == 200, body
    return body["data"]["track_id"]


async def get(shop, path, *, lang=None, accept=None, cookie=None):
    """A fresh browser's GET (no cookie but ``cookie``): status, HTML, response."""
    shop.client.session.cookie_jar.clear()
    headers = {}
    if accept is not None:
        headers["Accept-Language"] = accept
    if cookie is not None:
        headers["Cookie"] = f"{i18n.COOKIE}={cookie}"
    response = await shop.client.get(path, params={"lang": lang} if lang is not None else None, headers=headers,
                                     allow_redirects=False)
    return response.status, await response.text(), response


def html_lang(page):
    return re.search(r'<html lang="([^"]+)"', page).group(1)


async def test_accept_language_picks_spanish_and_the_answer_varies_with_it(shop):
    track_id = await invoice(shop)
    status, page, response = await get(shop, f"/pay/{track_id}", accept="fr;q=0.5, es-MX, en;q=0.8")
    assert status == 200
    assert html_lang(page) == "es" and "Importe a pagar" in page and "Amount to pay" not in page
    assert "<title>En espera · Pagar " in page  # the title is translated too
    vary = {v.strip() for value in response.headers.getall("Vary") for v in value.split(",")}
    assert {"Accept-Language", "Cookie"} <= vary
    assert i18n.COOKIE not in response.cookies  # a header's choice is not remembered


async def test_the_switcher_sets_a_cookie_that_later_views_follow(shop):
    track_id = await invoice(shop)
    status, page, response = await get(shop, f"/pay/{track_id}", lang="de", accept="es")
    assert status == 200 and html_lang(page) == "de" and "Zu zahlender Betrag" in page
    cookie = response.cookies[i18n.COOKIE]
    assert cookie.value == "de" and cookie["path"] == "/" and cookie["httponly"] and cookie["samesite"] == "Lax"
    # The switcher: a link per language, to the same page, each named in its own language; no JavaScript needed.
    assert '<a href="?lang=ru" lang="ru" hreflang="ru">Русский</a>' in page
    assert 'href="?lang=de" lang="de" hreflang="de" aria-current="true"' in page
    # The remembered choice wins over the browser's header on the next view (no ?lang=).
    status, page, response = await get(shop, f"/pay/{track_id}", accept="es", cookie="de")
    assert html_lang(page) == "de" and "Zu zahlender Betrag" in page and i18n.COOKIE not in response.cookies


@pytest.mark.parametrize("value", ["xx", "en-GB-x-very-long-private-use-tag", "es'\"><script>alert(1)</script>",
                                   "../../../etc/passwd", "e" * 2000])
async def test_unknown_or_hostile_languages_fall_back_to_english(shop, value):
    track_id = await invoice(shop)
    status, page, response = await get(shop, f"/pay/{track_id}", lang=value, cookie="zz", accept="ja, ko;q=0.5")
    assert status in (200, 400), page[:300]  # an over-long query is refused by the edge's checks, as any other
    assert html_lang(page) == "en"
    assert "<script>alert" not in page and "etc/passwd" not in page
    assert i18n.COOKIE not in response.cookies


@pytest.mark.parametrize("lang", sorted(i18n.LANGUAGES))
async def test_the_pay_page_renders_in_every_language(shop, lang):
    track_id = await invoice(shop, description="Tea", order_id="A-1")
    status, page, _ = await get(shop, f"/pay/{track_id}", lang=lang)
    assert status == 200
    assert html_lang(page) == i18n.html_lang(lang) and AMOUNT_TO_PAY[lang] in page
    payment = (await api(shop.client, "GET", f"/v1/payment/{track_id}", shop.merchant.merchant_key))[1]["data"]
    # Amounts stay the API's exact decimal strings in every language (no locale's grouping or comma).
    assert f'<span id="pay-amount">{payment["pay_amount"]}</span>' in page
    # The expiry in the page's language (Babel's CLDR formats), the machine-readable time beside it.
    with i18n.using_language(lang):
        shown = i18n.format_timestamp(payment["expires_at"])
    assert re.search(r'<time datetime="[^"]+Z">' + re.escape(htmllib.escape(shown, quote=False)) + "</time>", page)
    # The live script's words come from the page, in its language (pay.js reads data-texts).
    texts = json.loads(htmllib.unescape(re.search(r"data-texts='([^']*)'", page).group(1)))
    with i18n.using_language(lang):
        assert texts["notices"]["Paid"] == i18n.gettext("Paid. Thank you, your payment is complete.")
        assert texts["statuses"]["Waiting"] == i18n.gettext("Waiting")
    assert "{status}" in texts["title"] and "{amount}" in texts["title"] and "{currency}" in texts["title"]
    assert "{done}" in texts["of"] and "{required}" in texts["of"]


async def test_the_page_cache_never_mixes_languages(shop):
    """Views of one unchanged payment in turn: each comes back in its own language, from the cache or not."""
    track_id = await invoice(shop)
    seen = []
    for lang in ("es", "en", "es", "ru", "en", "ru", "es"):
        _, page, _ = await get(shop, f"/pay/{track_id}", accept=lang)
        seen.append(page)
        assert html_lang(page) == lang and AMOUNT_TO_PAY[lang] in page, lang
        assert all(AMOUNT_TO_PAY[other] not in page for other in AMOUNT_TO_PAY if other != lang), lang
    strip = re.compile(r"nonce-[^'\"]+|nonce=\"[^\"]+\"|data-remaining=\"\d+\"|>\d+:\d\d(:\d\d)?<")
    assert strip.sub("", seen[0]) == strip.sub("", seen[2]) == strip.sub("", seen[6])


async def test_error_pages_a_payer_sees_are_translated(shop):
    status, page, _ = await get(shop, "/pay/nosuchpayment", accept="fr")
    assert status == 404 and html_lang(page) == "fr" and "Paiement introuvable" in page
    status, page, _ = await get(shop, "/l/nosuchlink", accept="tr")
    assert status == 404 and "Ödeme bağlantısı bulunamadı" in page
    status, page, _ = await get(shop, "/tip/nobody", accept="ru")
    assert status == 404 and "Страница для чаевых не найдена" in page
    status, page, _ = await get(shop, "/subscribe/manage/" + "x" * 43, accept="zh-CN")
    assert status == 404 and html_lang(page) == "zh-Hans" and "链接无效" in page


async def test_link_tip_and_subscription_pages_are_translated(shop):
    client, merchant = shop.client, shop.merchant
    status, body = await api(client, "POST", "/dashboard/payment-links", merchant.jwt, json={"coin": "BTC"})
    assert status == 200, body
    slug = body["data"]["slug"]
    status, page, _ = await get(shop, f"/l/{slug}", accept="pt-BR")
    assert status == 200 and html_lang(page) == "pt" and "Continuar para o pagamento" in page
    status, page, _ = await get(shop, f"/l/{slug}?amount=1,5", accept="de")
    assert status == 400 and "Der Betrag" in page  # the payer's mistake, in their language

    account = (await api(client, "GET", "/dashboard/account", merchant.jwt))[1]["data"]["account"]["account_id"]
    status, page, _ = await get(shop, f"/tip/{account}", accept="es")
    assert status == 200 and "Enviar una propina" in page and "Continuar al pago" in page

    status, body = await api(client, "POST", "/dashboard/plans", merchant.jwt, json={
        "label": "Club", "amount_usd": "4.99", "interval_sec": 30 * 86400, "accepted_coins": ["BTC"]})
    assert status == 200, body
    status, page, _ = await get(shop, f"/subscribe/{body['data']['id']}", lang="ru")
    assert status == 200 and "Подписаться и оплатить первый период" in page and "30 дней" in page
    assert "4.99" in page  # the price as the merchant wrote it, never a float's rounding
    shop.client.session.cookie_jar.clear()
    response = await client.post(f"/subscribe/{body['data']['id']}", data={"email": "a@example.com"},
                                 allow_redirects=False)
    assert response.status == 303
    token = await _enrolment_token(shop)  # not a subscription of the API until paid (issue 42 item 9)
    status, page, _ = await get(shop, f"/subscribe/manage/{token}", accept="tr")
    assert status == 200 and html_lang(page) == "tr" and "Aboneliği iptal et" in page and "Beklemede" in page


async def _enrolment_token(shop) -> str:
    """The magic token of the one enrolment from the customer page (the API lists it only once it is paid)."""
    [row] = await shop.gateway.db.fetch_all("SELECT magic_token FROM subscriptions WHERE merchant_id = :m",
                                            {"m": shop.merchant.merchant_id})
    return row["magic_token"]


async def _buyer_link(shop, **fields):
    status, body = await api(shop.client, "POST", "/dashboard/payment-links", shop.merchant.jwt,
                             json={"coin": "BTC", **fields})
    assert status == 200, body
    return body["data"]["slug"]


async def _plan(shop):
    status, body = await api(shop.client, "POST", "/dashboard/plans", shop.merchant.jwt, json={
        "label": "Club", "amount_usd": "4.99", "interval_sec": 30 * 86400, "accepted_coins": ["BTC"]})
    assert status == 200, body
    return body["data"]["id"]


def notice(page):
    """The text of the page's error notice (tags dropped, entities read, spaces collapsed)."""
    found = re.search(r'<p class="notice notice-error"[^>]*>(.*?)</p>', page, re.S)
    assert found, page
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", "", found.group(1))).split())


async def test_the_cores_amount_problems_reach_the_link_page_in_the_payers_language(shop):
    slug = await _buyer_link(shop)
    maximum = shop.gateway.coins.require("BTC").format(shop.gateway.coins.require("BTC").max_units)
    cases = [  # (typed, language, the whole sentence the payer reads)
        ("1,5", "de", "Der Betrag muss einen Punkt (.) als Dezimaltrennzeichen und kein Tausendertrennzeichen "
                      "verwenden, zum Beispiel 1234.5."),
        ("0.000000001", "es", "El importe tiene más de 8 decimales."),
        (str(10 ** 15 + 1), "ru", f"Сумма должна быть не больше {maximum} BTC."),
        ("1e3", "zh", "金额必须完整写出，不能使用指数。"),
        ("+1", "tr", "Tutar artı işareti olmadan yazılmalı."),
        ("1,5", "en", "The amount must use a dot (.) as the decimal separator and no thousands separator, "
                      "for example 1234.5."),
    ]
    for typed, lang, sentence in cases:
        status, page, _ = await get(shop, f"/l/{slug}?amount={typed.replace('+', '%2B')}", lang=lang)
        assert status == 400 and html_lang(page) == i18n.html_lang(lang), (typed, lang)
        assert notice(page) == sentence, (typed, lang)


async def test_a_fiat_price_above_the_coins_maximum_is_said_in_the_payers_language(shop):
    slug = await _buyer_link(shop, fiat_currency="USD")
    status, page, _ = await get(shop, f"/l/{slug}?amount=999999999999999999", lang="pt")
    maximum = shop.gateway.coins.require("BTC").format(shop.gateway.coins.require("BTC").max_units)
    assert status == 400 and notice(page) == f"O valor vale mais de {maximum} BTC, o máximo de um pagamento."


async def test_the_tip_amount_problem_is_in_the_payers_language(shop):
    account = (await api(shop.client, "GET", "/dashboard/account", shop.merchant.jwt))[1]["data"]["account"][
        "account_id"]
    shop.client.session.cookie_jar.clear()
    response = await shop.client.post(f"/tip/{account}?lang=fr", data={"coin": "BTC", "amount": "1 000"})
    page = await response.text()
    assert response.status == 400 and html_lang(page) == "fr"
    assert notice(page).startswith("Le montant ne doit pas contenir d’espaces."), notice(page)


async def test_the_subscribe_forms_field_problems_are_in_the_payers_language(shop):
    plan_id = await _plan(shop)
    shop.client.session.cookie_jar.clear()
    response = await shop.client.post(f"/subscribe/{plan_id}?lang=pt",
                                      data={"email": "not-an-address", "customer_ref": "r" * 129})
    page = await response.text()
    assert response.status == 400 and html_lang(page) == "pt"
    text = " ".join(htmllib.unescape(re.search(r'id="form-error"[^>]*>(.*?)</p>', page, re.S).group(1)).split())
    assert "deve ser um endereço de e-mail" in text and "deve ter no máximo 128 caracteres" in text, text
    assert "must be" not in text


async def test_the_json_api_keeps_its_english_problems_whatever_the_language(shop):
    status, body = await api(shop.client, "POST", "/v1/payment/invoice",
                             {**shop.merchant.merchant_key, "Accept-Language": "de", "Cookie": f"{i18n.COOKIE}=de"},
                             json={"amount": "1,5", "currency": "BTC"})
    assert status == 400
    problem = "must use a dot (.) as the decimal separator and no thousands separator, for example 1234.5"
    assert body["error"]["detail"] == {"amount": problem}
    assert body["error"]["message"] == f"validation error: amount: {problem}"


@pytest.mark.parametrize(("lang", "payment", "subscription"), [
    ("es", ("Vencido", "Cancelado"), ("Vencida", "Cancelada")),
    ("pt", ("Expirado", "Cancelado"), ("Expirada", "Cancelada")),
    ("ru", ("Просрочен", "Отменён"), ("Истекла", "Отменена")),
    ("de", ("Abgelaufen", "Storniert"), ("Abgelaufen", "Gekündigt")),
    ("fr", ("Expiré", "Annulé"), ("Expiré", "Résilié")),
])
def test_a_payments_and_a_subscriptions_status_words_agree_with_their_noun(lang, payment, subscription):
    with i18n.using_language(lang):
        assert (i18n.pgettext("payment status", "Expired"), i18n.pgettext("payment status", "Cancelled")) == payment
        assert (i18n.pgettext("subscription status", "Expired"),
                i18n.pgettext("subscription status", "Cancelled")) == subscription


async def test_a_cancelled_subscription_reads_in_the_feminine_in_spanish(shop):
    plan_id = await _plan(shop)
    shop.client.session.cookie_jar.clear()
    response = await shop.client.post(f"/subscribe/{plan_id}", data={}, allow_redirects=False)
    assert response.status == 303
    token = await _enrolment_token(shop)
    response = await shop.client.post(f"/subscribe/manage/{token}/cancel", allow_redirects=False)
    assert response.status == 303
    status, page, _ = await get(shop, response.headers["Location"], lang="es")
    assert status == 200 and '<span class="badge badge-cancelled" id="status">Cancelada</span>' in page


async def test_the_shop_name_shows_on_the_link_tip_and_subscribe_pages(shop):
    from orbchain.core.accounts.merchants import set_display_name

    slug, plan_id = await _buyer_link(shop), await _plan(shop)
    account = (await api(shop.client, "GET", "/dashboard/account", shop.merchant.jwt))[1]["data"]["account"][
        "account_id"]
    pages = (f"/l/{slug}", f"/tip/{account}", f"/subscribe/{plan_id}")
    for path in pages:
        assert 'id="merchant-name"' not in (await get(shop, path))[1], path  # no name set, no brand
    await set_display_name(shop.gateway, shop.merchant.merchant_id, "Corner Café & Co")
    for path in pages:
        status, page, _ = await get(shop, path, lang="ru")
        assert status == 200 and '<p class="merchant" id="merchant-name">Corner Café &amp; Co</p>' in page, path


async def test_a_stale_button_on_the_manage_page_says_why_in_the_payers_language(shop):
    plan_id = await _plan(shop)
    shop.client.session.cookie_jar.clear()
    assert (await shop.client.post(f"/subscribe/{plan_id}", data={}, allow_redirects=False)).status == 303
    token = await _enrolment_token(shop)
    # A pause form left open from an earlier state: the subscription is still PENDING, so nothing changes.
    response = await shop.client.post(f"/subscribe/manage/{token}/pause?lang=es", allow_redirects=False)
    page = await response.text()
    assert response.status == 400 and html_lang(page) == "es"
    assert notice(page) == "Este cambio no es posible para esta suscripción en su estado actual, que se muestra abajo."
    assert '<span class="badge badge-pending" id="status">Pendiente</span>' in page


def test_an_accept_language_value_is_parsed_once_per_process(monkeypatch):
    """Issue 47: a browser sends the same header on every view; the language it asks for is worked out once,
    and the remembered answer is the one a fresh parse gives (longer headers are read up to MAX_HEADER alike)."""
    parsed = []
    real = i18n.parse_accept_language
    monkeypatch.setattr(i18n, "parse_accept_language", lambda header: parsed.append(header) or real(header))
    monkeypatch.setattr(i18n, "_ACCEPTED", i18n.LruMap(4))
    headers = ["es-MX,es;q=0.9,en;q=0.8", "xx, de;q=0.5", "tlh", "fr;q=0", "a" * 2000 + ",pt"]
    first = [i18n.choose(None, None, header) for header in headers]
    assert first == ["es", "de", "en", "en", "en"]
    assert [i18n.choose(None, None, header) for header in headers[1:]] == first[1:]  # the first one was evicted
    assert len(parsed) == len(headers) and parsed[-1] == ("a" * 2000)[:i18n.MAX_HEADER]
    assert i18n.choose("pt", None, headers[0]) == "pt" and i18n.choose(None, "ru", headers[0]) == "ru"
