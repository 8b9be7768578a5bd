"""Brands changed from the dashboard (issue 49 item 3, what was left), on SQLite and PostgreSQL.

A brand is edited on the Brands page (name, slug, logo, theme, colour under the same WCAG AA check, webhook),
previewed before saving; an existing link, plan and API key changes or clears its brand with the picker's
previews. Hostile input (another account's brand or record, a colour below AA, no CSRF token) is refused with
a form error and changes nothing.
"""

from __future__ import annotations

import re

import pytest

from orbchain.web.keys import GATEWAY

from .brand_support import DARK_BLUE, brand, field_error, picker, preview, shop
from .support import api


@pytest.fixture
async def app_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))

LIGHT_BLUE = "#0a84ff"  # passes with the dark label


async def brand_row(client, jwt, brand_id: str) -> dict:
    status, body = await api(client, "GET", f"/dashboard/brands/{brand_id}", jwt)
    assert status == 200, body
    return body["data"]


def selected(page: str, select_id: str) -> str:
    select = re.search(rf'<select id="{select_id}" name="brand_id".*?</select>', page, re.S).group(0)
    chosen = re.search(r'<option value="([^"]*)" selected>', select)
    return chosen.group(1) if chosen else ""


async def test_a_brand_is_edited_and_previewed_from_the_dashboard(app_client):
    visitor, jwt = await shop(app_client, "brand-edit@example.com")
    night = await brand(app_client, jwt, "Night", theme_mode="DARK", brand_color=DARK_BLUE,
                        webhook_secret="s" * 20)
    listing = await visitor.get("/app/brands")
    assert f'href="/app/brands?edit={night}"' in listing and 'id="brand-form"' in listing
    page = await visitor.get(f"/app/brands?edit={night}")
    assert 'id="brand-form"' not in page and 'value="Night"' in page and f'value="{DARK_BLUE}"' in page
    assert preview(page, night)["button"] == DARK_BLUE  # as payers see it now
    typed = {"brand_id": night, "name": "Day", "slug": "day", "logo_url": "", "theme_mode": "LIGHT",
             "brand_color": LIGHT_BLUE, "webhook_url": ""}

    await visitor.submit(f"/app/brands?edit={night}", {**typed, "action": "preview"}, expect=200)
    assert preview(visitor.page, night) == {"card": "#ffffff", "button": LIGHT_BLUE, "label": "#111827",
                                            "title": f"Day: light page, buttons {LIGHT_BLUE} with #111827 text"}
    assert 'value="Day"' in visitor.page and "once saved" in visitor.page
    assert (await brand_row(app_client, jwt, night))["name"] == "Night"  # a preview stores nothing

    response = await visitor.submit(f"/app/brands?edit={night}", {**typed, "action": "save"})
    assert response.headers["Location"] == "/app/brands?notice=brand-saved"
    saved = await brand_row(app_client, jwt, night)
    assert {k: saved[k] for k in ("name", "slug", "theme_mode", "brand_color", "webhook_secret_set")} == {
        "name": "Day", "slug": "day", "theme_mode": "LIGHT", "brand_color": LIGHT_BLUE, "webhook_secret_set": True}
    assert "Brand saved" in await visitor.get("/app/brands?notice=brand-saved")

    # Clearing the look inherits the default brand's; the secret is removed only when asked.
    await visitor.get(f"/app/brands?edit={night}")
    await visitor.submit(f"/app/brands?edit={night}", {**typed, "theme_mode": "", "brand_color": "",
                                                       "clear_webhook_secret": "1", "action": "save"})
    saved = await brand_row(app_client, jwt, night)
    assert (saved["theme_mode"], saved["brand_color"], saved["webhook_secret_set"]) == (None, None, False)


async def test_hostile_brand_edits_are_refused_and_change_nothing(app_client):
    visitor, jwt = await shop(app_client, "brand-edit-hostile@example.com")
    night = await brand(app_client, jwt, "Night", theme_mode="DARK", brand_color=DARK_BLUE)
    before = await brand_row(app_client, jwt, night)
    await visitor.get(f"/app/brands?edit={night}")
    for action in ("preview", "save"):  # below AA: refused beside the colour, what was typed kept
        await visitor.submit(f"/app/brands?edit={night}", {"brand_id": night, "name": "Red", "brand_color": "#ff0000",
                                                           "action": action}, expect=400)
        assert "4.43:1" in field_error(visitor.page, "brand_color") and 'value="#ff0000"' in visitor.page
        assert 'id="brand-edit-form"' in visitor.page
    await visitor.submit(f"/app/brands?edit={night}", {"brand_id": night, "name": "", "action": "save"}, expect=400)
    assert field_error(visitor.page, "name") == "Cannot be empty."
    await visitor.submit(f"/app/brands?edit={night}", {"brand_id": night, "name": "X", "webhook_secret": "short",
                                                       "action": "save"}, expect=400)
    assert field_error(visitor.page, "webhook_secret")
    await visitor.get(f"/app/brands?edit={night}")
    await visitor.submit("/app/brands", {"brand_id": night, "name": "No token", "action": "save"}, token="",
                         expect=403)
    await visitor.get("/app/brands")

    await visitor.submit("/app/logout")  # one cookie jar: the next account signs up signed out
    other, _ = await shop(app_client, "brand-edit-other@example.com")
    await other.get(f"/app/brands?edit={night}", expect=404)
    assert "No such brand in this account." in other.page and 'id="brand-edit-form"' not in other.page
    await other.get("/app/brands")
    await other.submit("/app/brands", {"brand_id": night, "name": "Stolen", "action": "save"}, expect=404)
    assert "No such brand in this account" in re.search(r'id="form-error">([^<]*)<', other.page).group(1)
    assert await brand_row(app_client, jwt, night) == before


async def make_link(client, jwt, brand_id):
    status, body = await api(client, "POST", "/dashboard/payment-links", jwt, json={"coin": "BTC", "brand_id": brand_id})
    assert status == 200, body
    return body["data"]["id"]


async def make_plan(client, jwt, brand_id):
    status, body = await api(client, "POST", "/dashboard/plans", jwt, json={
        "label": "Club", "amount_usd": "5", "interval_sec": 30 * 86400, "brand_id": brand_id})
    assert status == 200, body
    return body["data"]["id"]


async def make_key(client, jwt, brand_id):
    status, body = await api(client, "POST", "/dashboard/api-keys", jwt, json={
        "label": "shop", "scopes": ["payment:create"], "brand_id": brand_id})
    assert status == 200, body
    PLAINTEXT[body["data"]["id"]] = body["data"]["api_key"]
    return body["data"]["id"]


PLAINTEXT: dict[str, str] = {}  # key id -> the key, as its creation showed it once


async def brand_of(client, jwt, kind: str, item_id: str) -> str | None:
    path, listed = {"link": ("/dashboard/payment-links", "links"), "plan": ("/dashboard/plans", "plans"),
                    "key": ("/dashboard/api-keys", "keys")}[kind]
    status, body = await api(client, "GET", path, jwt)
    assert status == 200, body
    return next(item["brand_id"] for item in body["data"][listed] if item["id"] == item_id)


# What each kind's brand form is: the page listing it, where the form posts, what it posts, where it lands.
KINDS = {
    "link": ("/app/links", lambda i: "/app/links", lambda i: {"action": "brand", "link_id": i}, "link-brand",
             "/app/links?notice=brand-saved", make_link),
    "plan": ("/app/subscriptions", lambda i: "/app/subscriptions", lambda i: {"action": "brand", "plan_id": i},
             "plan-brand", "/app/subscriptions?notice=brand-saved", make_plan),
    "key": ("/app/keys", lambda i: f"/app/keys/{i}/brand", lambda i: {}, "key_brand", "/app/keys?notice=key-brand-changed",
            make_key),
}


@pytest.mark.parametrize("kind", KINDS)
async def test_an_existing_link_plan_or_key_changes_and_clears_its_brand(app_client, kind):
    page_path, post_path, fields, select_id, landed, make = KINDS[kind]
    visitor, jwt = await shop(app_client, f"rebrand-{kind}@example.com")
    night = await brand(app_client, jwt, "Night", theme_mode="DARK", brand_color=DARK_BLUE)
    day = await brand(app_client, jwt, "Day", brand_color=LIGHT_BLUE)
    item = await make(app_client, jwt, night)
    assert f'href="{page_path}?brand={item}"' in await visitor.get(page_path)
    page = await visitor.get(f"{page_path}?brand={item}")
    assert selected(page, select_id) == night and sorted(picker(page, select_id)) == sorted(["", night, day])
    assert preview(page, day)["button"] == LIGHT_BLUE  # every brand previewed before saving
    response = await visitor.submit(post_path(item), {**fields(item), "brand_id": day})
    assert response.headers["Location"] == landed
    assert await brand_of(app_client, jwt, kind, item) == day
    if kind == "key":  # in force at once in this process's auth cache: the key's next payment wears it
        status, body = await api(app_client, "POST", "/v1/payment/invoice", {"merchant_api_key": PLAINTEXT[item]},
                                 json={"amount": "0.01", "currency": "BTC"})
        assert status == 200, body
        assert await app_client.app[GATEWAY].db.fetch_val("SELECT brand_id FROM payments WHERE track_id = :t",
                                                          {"t": body["data"]["track_id"]}) == day
    await visitor.get(landed)
    assert "Brand saved" in visitor.page and "Day" in visitor.page
    await visitor.get(f"{page_path}?brand={item}")
    await visitor.submit(post_path(item), {**fields(item), "brand_id": ""})  # "Your default look"
    assert await brand_of(app_client, jwt, kind, item) is None


@pytest.mark.parametrize("kind", KINDS)
async def test_hostile_brand_changes_are_refused_and_change_nothing(app_client, kind):
    page_path, post_path, fields, select_id, _, make = KINDS[kind]
    victim, jwt = await shop(app_client, f"rebrand-victim-{kind}@example.com")
    night = await brand(app_client, jwt, "Night", theme_mode="DARK", brand_color=DARK_BLUE)
    theirs = await make(app_client, jwt, night)
    await victim.get(page_path)
    await victim.submit(post_path(theirs), {**fields(theirs), "brand_id": ""}, token="", expect=403)  # no CSRF token
    await victim.get(page_path)
    await victim.submit("/app/logout")

    other, other_jwt = await shop(app_client, f"rebrand-other-{kind}@example.com")
    await brand(app_client, other_jwt, "Mine")
    mine = await make(app_client, other_jwt, None)
    await other.get(f"{page_path}?brand={theirs}", expect=404)  # another account's item: no form for it
    assert f'id="{select_id}-form"' not in other.page and "No such" in other.page
    await other.get(page_path)
    await other.submit(post_path(theirs), {**fields(theirs), "brand_id": ""}, expect=404)
    assert "No such" in re.search(r'id="form-error">([^<]*)<', other.page).group(1)
    await other.get(f"{page_path}?brand={mine}")
    await other.submit(post_path(mine), {**fields(mine), "brand_id": night}, expect=400)  # another account's brand
    assert field_error(other.page, "brand_id") == "Not a brand of this account."
    assert selected(other.page, select_id) == ""  # the form again, as it was
    assert await brand_of(app_client, jwt, kind, theirs) == night
    assert await brand_of(app_client, other_jwt, kind, mine) is None


@pytest.mark.parametrize("path, make", [("/dashboard/payment-links", make_link), ("/dashboard/plans", make_plan)])
async def test_the_api_patch_changes_and_clears_a_brand(app_client, path, make):
    """SPEC's PATCH of links and plans takes brand_id too (additive): a live brand of this account, null clears."""
    _, jwt = await shop(app_client, "rebrand-api@example.com")
    night = await brand(app_client, jwt, "Night")
    item = await make(app_client, jwt, None)
    kind = "link" if "links" in path else "plan"
    status, body = await api(app_client, "PATCH", f"{path}/{item}", jwt, json={"brand_id": night})
    assert status == 200 and body["data"]["brand_id"] == night, body
    status, body = await api(app_client, "PATCH", f"{path}/{item}", jwt, json={"brand_id": "brand_not_ours"})
    assert status == 400 and body["error"]["detail"] == {"brand_id": "is not a brand of this account"}
    assert await brand_of(app_client, jwt, kind, item) == night
    status, body = await api(app_client, "PATCH", f"{path}/{item}", jwt, json={})
    assert status == 400 and "brand_id" in str(body["error"]["detail"]), body
    status, body = await api(app_client, "PATCH", f"{path}/{item}", jwt, json={"brand_id": None})
    assert status == 200 and body["data"]["brand_id"] is None, body


@pytest.mark.parametrize("kind", KINDS)
async def test_an_archived_brand_is_cleared_from_a_link_plan_or_key(app_client, kind):
    """A brand archived while a link, plan or key still wears it: the row says so and offers its brand form even
    when no live brand is left; the form says the brand is archived, offers "Your default look" (selected) and
    clears it; naming the archived brand again is refused beside the picker, nothing changed."""
    page_path, post_path, fields, select_id, landed, make = KINDS[kind]
    visitor, jwt = await shop(app_client, f"rebrand-archived-{kind}@example.com")
    night = await brand(app_client, jwt, "Night", theme_mode="DARK", brand_color=DARK_BLUE)
    item = await make(app_client, jwt, night)
    status, body = await api(app_client, "DELETE", f"/dashboard/brands/{night}", jwt)
    assert status == 200 and body["data"]["archived"], body
    listing = await visitor.get(page_path)
    assert "archived brand" in listing and f'href="{page_path}?brand={item}"' in listing  # no live brand left
    page = await visitor.get(f"{page_path}?brand={item}")
    assert picker(page, select_id) == [""] and selected(page, select_id) == ""
    note = re.search(rf'<p class="hint" id="{select_id}-archived">([^<]*)</p>', page)
    assert note and "archived" in note.group(1), page[-3000:]

    await visitor.submit(post_path(item), {**fields(item), "brand_id": night}, expect=400)
    assert field_error(visitor.page, "brand_id") == "Not a brand of this account."
    assert await brand_of(app_client, jwt, kind, item) == night

    day = await brand(app_client, jwt, "Day", brand_color=LIGHT_BLUE)  # a live brand beside the archived one
    page = await visitor.get(f"{page_path}?brand={item}")
    assert picker(page, select_id) == ["", day] and selected(page, select_id) == ""
    response = await visitor.submit(post_path(item), {**fields(item), "brand_id": ""})
    assert response.headers["Location"] == landed
    assert await brand_of(app_client, jwt, kind, item) is None
    assert "archived brand" not in await visitor.get(page_path)


def _img_src(response) -> str:
    policy = dict(part.strip().split(" ", 1) for part in response.headers["Content-Security-Policy"].split(";"))
    return policy["img-src"]


async def test_brand_previews_draw_their_logos_under_a_csp_naming_exactly_their_origins(app_client):
    """The previews draw each brand's logo from its host: the page's CSP names exactly the origins of the logos it
    draws (never a wildcard, never on a page without them); a logo that no longer passes the checks is not drawn."""
    visitor, jwt = await shop(app_client, "brand-logo@example.com")
    night = await brand(app_client, jwt, "Night", logo_url="https://cdn.example.com/night.png")
    day = await brand(app_client, jwt, "Day", logo_url="https://img.example.org:8443/day.svg?v=2")
    plain = await brand(app_client, jwt, "Plain")
    client = app_client

    response = await client.get(f"/app/brands?edit={night}")
    assert _img_src(response) == "'self' data: https://cdn.example.com"
    page = await response.text()
    assert re.search(rf'<svg class="brand-preview" id="brand-preview-{night}".*?<image class="brand-preview-logo" '
                     r'href="https://cdn\.example\.com/night\.png"', page, re.S)
    assert "Night: light page with its logo, buttons" in page

    response = await client.get("/app/keys")  # the new-key picker previews every brand
    assert set(_img_src(response).split()) == {"'self'", "data:", "https://cdn.example.com",
                                               "https://img.example.org:8443"}
    page = await response.text()
    assert 'href="https://img.example.org:8443/day.svg?v=2"' in page
    assert "<image" not in re.search(rf'<svg class="brand-preview" id="brand-preview-{plain}".*?</svg>', page,
                                     re.S).group(0)

    # A preview of a cleared logo inherits the default brand's (none here): no image, no origin.
    await visitor.get(f"/app/brands?edit={day}")
    response = await visitor.submit(f"/app/brands?edit={day}", {
        "brand_id": day, "name": "Day", "slug": "day", "logo_url": "", "theme_mode": "", "brand_color": "",
        "webhook_url": "", "action": "preview"}, expect=200)
    assert "<image" not in re.search(rf'<svg class="brand-preview" id="brand-preview-{day}".*?</svg>',
                                     visitor.page, re.S).group(0)
    assert _img_src(response) == "'self' data:"

    for path in ("/app", "/app/payments"):  # no preview, no logo origin
        assert _img_src(await client.get(path)) == "'self' data:"
    # A stored URL the checks refuse now (written behind the API's back) is drawn as no logo, never put in a CSP.
    await app_client.app[GATEWAY].db.execute("UPDATE brands SET logo_url = :u WHERE id = :i",
                                             {"u": "http://cdn.example.com/x.png", "i": night})
    response = await client.get("/app/keys")
    assert "http://cdn.example.com/x.png" not in await response.text()
    assert "cdn.example.com" not in _img_src(response)
