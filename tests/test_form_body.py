"""HTML form bodies pass the edge JSON bodies pass (issue 29, item 4; ``web/form_body.py``), on both databases.

Each case below is a request the issue found answering 500: NUL in a text
field reached PostgreSQL (``CharacterNotInRepertoireError``), a 5,000-digit
number reached ``int()`` (Python refuses to convert more than 4,300 digits)
on both databases. Now each is a 400 HTML page (never the JSON envelope on
a page for people), and the database is exactly as it was.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from orbchain.web.keys import GATEWAY

from .dashboard_support import Visitor, csrf_of
from .support import api, database_rows, signup

ROOT = Path(__file__).resolve().parent.parent
HUGE = "9" * 5000  # past Python's 4,300-digit int() limit: ValueError, a 500 before the fix
NUL = "a\x00b"
SURROGATE = "x\ud800"  # sent as the three UTF-8-style bytes ED A0 80, which no UTF-8 decoder takes


@pytest.fixture
async def app_client(make_client, make_config):
    return await make_client(make_config(scheduler={"enabled": False}))


async def signed_in(client: Any, email: str = "forms@example.com") -> Visitor:
    visitor = Visitor(client)
    await visitor.sign_up(email)
    return visitor


async def refused(client: Any, path: str, fields: dict[str, str], *, status: int = 400,
                  cookie_path: str = "/app") -> str:
    """POST ``fields`` as a form; the answer must be an HTML page with ``status``, the database untouched."""
    gateway = client.app[GATEWAY]
    before = await database_rows(gateway.db)
    body = "&".join(f"{_quote(k)}={_quote(v)}" for k, v in fields.items()).encode()
    response = await client.post(path, data=body, allow_redirects=False,
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    text = await response.text(errors="replace")
    assert response.status == status, f"POST {path}: {response.status} {text[:600]}"
    assert response.content_type == "text/html", f"POST {path}: {response.content_type} {text[:300]}"
    assert await database_rows(gateway.db) == before, f"POST {path} changed the database"
    return text


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text.encode("utf-8", "surrogatepass"), safe="")


async def _plan(client: Any) -> str:
    """An enabled plan of a fresh merchant; its id (the customer page's path)."""
    merchant = await signup(client, "plans-owner@example.com")
    status, plan = await api(client, "POST", "/dashboard/plans", merchant.jwt,
                             json={"label": "Pro", "amount_usd": "5", "interval_sec": 86400, "accepted_coins": ["BTC"]})
    assert status == 200, plan
    return plan["data"]["id"]


# -- the requests, one by one ---------------------------------------------------------------


@pytest.mark.parametrize("field", ["email", "customer_ref"])
@pytest.mark.parametrize("value", [NUL, SURROGATE], ids=["nul", "surrogate"])
async def test_subscribe_form_refuses_unstorable_text(app_client, field, value):
    """Was 500 on PostgreSQL (NUL in ``POST /subscribe/<plan>``, unauthenticated) and made no subscription."""
    plan_id = await _plan(app_client)
    await refused(app_client, f"/subscribe/{plan_id}", {"email": "payer@example.com", "customer_ref": "c1", field: value})


async def test_login_form_refuses_nul_in_the_email(app_client):
    """Was 500 on PostgreSQL: the e-mail went into the lockout count and the merchant look-up."""
    visitor = Visitor(app_client)
    await visitor.get("/app/login")
    await refused(app_client, "/app/login", {"csrf_token": csrf_of(visitor.page), "email": "x\x00@example.com",
                                             "password": "correct horse battery"})


async def test_plan_id_with_nul_on_the_subscriptions_page(app_client):
    """Was 500 on PostgreSQL: ``/app/subscriptions`` looked the plan id up as sent."""
    visitor = await signed_in(app_client)
    await visitor.get("/app/subscriptions")
    await refused(app_client, "/app/subscriptions", {"csrf_token": csrf_of(visitor.page), "action": "enable",
                                                     "plan_id": NUL})


@pytest.mark.parametrize("path, fields", [
    ("/app/settings/confirmations", {"conf_BTC": HUGE}),
    ("/app/payments/new", {"type": "invoice", "currency": "BTC", "amount": "0.001", "lifetime": HUGE}),
    ("/app/keys", {"label": "k", "scopes": "payment:read", "expires_in_days": HUGE}),
    ("/app/keys", {"label": "k", "scopes": "payment:read", "rate_limit_rpm": HUGE}),
    ("/app/schedules", {"action": "create", "coin": "BTC", "destination": "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu",
                        "min_amount": "0.01", "interval_hours": HUGE}),
    ("/app/subscriptions", {"action": "create", "label": "Pro", "amount_usd": "5", "interval_days": HUGE}),
    ("/app/links", {"action": "create", "coin": "BTC", "lifetime": HUGE}),
], ids=["confirmations", "payment-lifetime", "key-expiry", "key-rpm", "schedule-interval", "plan-interval",
        "link-lifetime"])
async def test_a_5000_digit_number_in_an_integer_field_is_a_400_page(app_client, path, fields):
    """Was 500 on both databases (``int()`` of 5,000 digits raises ValueError)."""
    visitor = await signed_in(app_client)
    await visitor.get(path if path != "/app/settings/confirmations" else "/app/settings")
    page = await refused(app_client, path, {"csrf_token": csrf_of(visitor.page), **fields})
    assert "must be" in page.lower()  # the field's own complaint, on the page (a sentence: "Must be ...")


@pytest.mark.parametrize("digits", ["\u00b2", "\u0661\u0662", "\uff11"], ids=["superscript", "arabic-indic", "fullwidth"])
async def test_integer_fields_take_ascii_digits_only(app_client, digits):
    """``str.isdigit`` took ``²`` (then ``int`` raised: 500) and Arabic-Indic digits (read as 12)."""
    visitor = await signed_in(app_client)
    await visitor.get("/app/schedules")
    await refused(app_client, "/app/schedules", {
        "csrf_token": csrf_of(visitor.page), "action": "create", "coin": "BTC", "min_amount": "0.01",
        "destination": "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu", "interval_hours": digits})


# -- the edge itself ------------------------------------------------------------------------------------


@pytest.mark.parametrize("body, content_type", [
    (b"email=%FF%FE&customer_ref=x", b"application/x-www-form-urlencoded"),  # percent-encoded invalid UTF-8
    (b"email=\xff\xfe", b"application/x-www-form-urlencoded"),  # raw invalid UTF-8
    (b"email=a", b"application/x-www-form-urlencoded; charset=no-such-charset"),
    (b"email=a", b"application/x-www-form-urlencoded; charset=utf-16"),
    (b"&".join([b"a=1"] * 2000), b"application/x-www-form-urlencoded"),  # more fields than any form has
    (b"a%00b=1", b"application/x-www-form-urlencoded"),  # NUL in a field's name
    (b"--x\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\na\r\n--x--\r\n", b"multipart/form-data; boundary=x"),
], ids=["percent-invalid-utf8", "raw-invalid-utf8", "unknown-charset", "utf16", "too-many-fields", "nul-in-name",
        "multipart-where-none-is-taken"])
async def test_bodies_no_form_reader_should_take(app_client, body, content_type):
    """Each is a 400 page on a public form: never decoded with a guess, never a 500, nothing stored."""
    plan_id = await _plan(app_client)
    gateway = app_client.app[GATEWAY]
    before = await database_rows(gateway.db)
    response = await app_client.post(f"/subscribe/{plan_id}", data=body, headers={"Content-Type": content_type.decode()},
                                     allow_redirects=False)
    assert response.status == 400, (await response.text())[:500]
    assert response.content_type == "text/html"
    assert await database_rows(gateway.db) == before


@pytest.mark.parametrize("body, content_type", [
    (b"--x\r\nnonsense", "multipart/form-data; boundary=x"),  # a part header that is not one (was a 500)
    (b"x", "multipart/form-data"),  # no boundary
], ids=["bad-part-header", "no-boundary"])
async def test_a_malformed_upload_is_a_400_page(app_client, body, content_type):
    """The batch form is the one page that takes ``multipart/form-data``; a malformed body is refused there."""
    visitor = await signed_in(app_client)
    await visitor.get("/app/payouts")
    gateway = app_client.app[GATEWAY]
    before = await database_rows(gateway.db)
    response = await app_client.post("/app/payouts/batch", data=body, headers={"Content-Type": content_type},
                                     allow_redirects=False)
    assert response.status == 400 and response.content_type == "text/html", (await response.text())[:300]
    assert await database_rows(gateway.db) == before


async def test_a_good_form_still_works(app_client):
    """The edge takes ordinary forms: tab, newline and non-ASCII text included."""
    plan_id = await _plan(app_client)
    response = await app_client.post(f"/subscribe/{plan_id}", data={"email": "payer@example.com",
                                                                     "customer_ref": "Zoë\tline"},
                                     allow_redirects=False)
    assert response.status == 303 and "/pay/" in response.headers["Location"]  # the first invoice (issue 29 item 5)


def test_every_form_is_read_by_the_form_edge():
    """No handler reads a form around the edge: ``request.post()`` appears in ``web/form_body.py`` only.

    Fails on the old code, where five modules called ``request.post()``
    (the dashboard's ``signed_in``, sign-in and sign-up, the fragment page,
    the tip page and the subscription pages) and none checked the text.
    """
    callers = []
    for folder in ("web", "plugins", "chains", "core"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "web" / "form_body.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "post" \
                        and not node.args and not node.keywords:
                    callers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not callers, f"read forms with web.form_body.read_form, not request.post(): {callers}"
