"""The settings page in sections (issue 49 item 9), over HTTP as a browser without JavaScript, on both databases.

Business, Payments, Webhooks, Security and Team, each form saved on its own and confirming what it saved in
its own section; bad input is said beside its field, with what was typed kept, and changes nothing.
"""

from __future__ import annotations

import re

import pytest

from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor

SECTIONS = ["business", "payments", "webhooks", "security", "team"]


@pytest.fixture
async def app_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


def section(page: str, name: str) -> str:
    start = page.index(f'<section id="{name}"')
    return page[start:page.index("</section>", start)]


def field_error(page: str, name: str) -> str:
    """The error beside ``name``'s input (or its group's fieldset), which points at it."""
    assert re.search(rf'(name="{name}"|<fieldset)[^>]*aria-invalid="true" aria-describedby="error-{name}"', page), name
    return re.search(rf'<p class="field-error" id="error-{name}">([^<]*)</p>', page).group(1)


async def merchant_row(client, email: str):
    return await client.app[GATEWAY].db.fetch_one("SELECT * FROM merchants WHERE email = :e", {"e": email})


async def test_settings_are_in_sections_each_saved_alone_and_confirmed_in_place(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("sections@example.com")
    page = await visitor.get("/app/settings")
    assert re.findall(r'<section id="(\w+)"', page)[:5] == SECTIONS
    assert [f"#{s}" for s in SECTIONS] == re.findall(r'<a href="(#\w+)">', page[page.index('aria-label="Settings'):])[:5]
    assert 'id="profile-form"' in section(page, "business")
    for form in ("default-currency-form", "coins-form", "confirmations-form", "static-form"):
        assert f'id="{form}"' in section(page, "payments"), form
    assert 'id="webhook-form"' in section(page, "webhooks")
    assert 'href="/app/security"' in section(page, "security") and 'id="rotate-form"' in section(page, "security")
    assert 'href="/app/team"' in section(page, "team")
    assert 'href="/app/auto-withdraw"' in section(page, "payments")  # a plugin's settings page, in its section
    assert page.count("<button type=\"submit\"") >= 7 and "saved-" not in page

    response = await visitor.submit("/app/settings/coins", {"accepted_coins": ["LTC", "BTC"]})
    assert response.headers["Location"] == "/app/settings?saved=coins#payments"
    page = await visitor.get(response.headers["Location"])
    note = re.search(r'<p class="notice notice-success saved" role="status" id="saved-coins">([^<]*)</p>', page)
    assert note and note.group(1) == "Saved: you accept LTC, BTC." and note.group(0) in section(page, "payments")
    assert page.count('class="notice notice-success saved"') == 1

    response = await visitor.submit("/app/settings/profile", {"display_name": "Blue Mug Co"})
    page = await visitor.get(response.headers["Location"])
    assert "Saved: payers now see “Blue Mug Co”." in section(page, "business")
    response = await visitor.submit("/app/settings/confirmations", {"conf_BTC": "4"})
    page = await visitor.get(response.headers["Location"])
    assert re.search(r'id="saved-confirmations">Saved: [^<]*BTC 4', section(page, "payments"))
    # The confirmation names a form the page knows, never text from the URL.
    page = await visitor.get("/app/settings?saved=<b>hi</b>")
    assert "saved-" not in page and "<b>hi" not in page


async def test_bad_input_is_said_beside_its_field_keeps_what_was_typed_and_changes_nothing(app_client):
    visitor = Visitor(app_client)
    await visitor.sign_up("bad@example.com")
    before = dict(await merchant_row(app_client, "bad@example.com"))
    await visitor.get("/app/settings")
    for value, words in (("many", "whole number"), ("9" * 5000, ""), ("-1", "")):
        await visitor.submit("/app/settings/confirmations", {"conf_BTC": value, "conf_LTC": "3"}, expect=400)
        assert field_error(visitor.page, "conf_BTC")
        assert words in field_error(visitor.page, "conf_BTC").lower()
        assert f'name="conf_BTC" inputmode="numeric" maxlength="20" value="{value[:50]}' in visitor.page
    await visitor.submit("/app/settings/confirmations", {"conf_NOPE": "3"}, expect=400)
    assert "Conf nope" in visitor.page or "conf_NOPE" in visitor.page
    for coins in (["ZZZ"], [], ["BTC", "<script>"]):
        await visitor.submit("/app/settings/coins", {"accepted_coins": coins}, expect=400)
        assert field_error(visitor.page, "accepted_coins")
    assert "<script>" not in visitor.page
    await visitor.submit("/app/settings/profile", {"display_name": "x" * 200}, expect=400)
    assert field_error(visitor.page, "display_name")
    await visitor.submit("/app/settings/nonsense", {"x": "1"}, expect=404)
    after = dict(await merchant_row(app_client, "bad@example.com"))
    assert {k: v for k, v in after.items() if k != "updated_at"} == \
        {k: v for k, v in before.items() if k != "updated_at"}
