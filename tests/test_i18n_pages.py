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
    [sub] = (await api(client, "GET", "/v1/subscription", merchant.merchant_key))[1]["data"]["subscriptions"]
    status, page, _ = await get(shop, "/subscribe/manage/" + sub["manage_url"].rsplit("/", 1)[1], accept="tr")
    assert status == 200 and html_lang(page) == "tr" and "Aboneliği iptal et" in page and "Beklemede" in page
