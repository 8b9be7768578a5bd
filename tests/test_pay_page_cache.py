"""The hosted page's caches (issue 11) never show stale content: every view equals a fresh render.

A view of ``/pay/{track_id}`` reuses the content built for the same row,
deposits and shown status, and the rendering made for the same content and
hook answers. These tests change each of those inputs and check that the
very next view shows the change, byte for byte what a render from scratch
(no cache at all) shows with the same nonce. Both databases.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import aiohttp_jinja2
import pytest

from orbchain.chains.devnet import devnet_chain
from orbchain.core.payments import service as svc
from orbchain.core.payments.row_cache import ROWS_TOPIC
from orbchain import api as services
from orbchain.core.types.pages import PageBranding, PayPageForm
from orbchain.core.contract.plugins import hookimpl
from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY
from orbchain.web.routes.pay_page import countdown_text, page_context

from .test_pay_page import merchant_key, new_invoice

NONCE = re.compile(r"'nonce-([^']+)'")


@pytest.fixture
async def shop(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    at(client, int(time.time()))  # a view and its fresh render see the same second
    return client, await merchant_key(client, "page-cache@example.com")


async def view(client: Any, track_id: str) -> tuple[str, str, str]:
    """One view: its HTML, its nonce and its CSP."""
    response = await client.get(f"/pay/{track_id}", allow_redirects=False)
    assert response.status == 200, await response.text()
    csp = response.headers["Content-Security-Policy"]
    return await response.text(), NONCE.search(csp).group(1), csp


async def fresh(client: Any, track_id: str, nonce: str) -> str:
    """The page rendered from scratch: the view and context rebuilt, the template rendered, no cache."""
    gateway = client.app[GATEWAY]
    row, deposits = await svc.payment_with_deposits(gateway, None, track_id)
    payment = svc.payment_view(gateway, row, deposits)
    context = await page_context(gateway, payment, deposits, gateway.now())
    context["nonce"] = nonce
    context["branding"] = await services.page_branding_for(gateway, row["merchant_id"], payment.get("brand_id"),
                                                           payment)
    return aiohttp_jinja2.get_env(client.app).get_template("pay.html").render(context)


async def seen(client: Any, track_id: str) -> str:
    """A view, checked against a fresh render with its nonce."""
    html, nonce, _ = await view(client, track_id)
    assert html == await fresh(client, track_id, nonce)
    return html


def at(client: Any, when: int) -> None:
    client.app[GATEWAY].clock = lambda: float(when)


async def deposit(client: Any, payment: dict[str, Any], blocks: int) -> None:
    gateway = client.app[GATEWAY]
    coin = gateway.coins.require(payment["pay_currency"])
    chain = devnet_chain(gateway)
    if blocks == 1:
        await chain.pay(coin, payment["address"], coin.to_units(payment["pay_amount"]))
    await chain.mine(blocks)
    await scan_chain(gateway, gateway.chains["devnet"])


async def written(gateway: Any, track_id: str, statement: str, values: dict[str, Any]) -> None:
    """Run a plain statement; on PostgreSQL return once its trigger's notification came back (the cached rows'
    staleness bound, core/payments/row_cache.py). SQLite reads the rows every time."""
    if not gateway.db.is_postgres:
        await gateway.db.execute(statement, values)
        return
    heard = asyncio.Event()
    stop = gateway.signals.subscribe(ROWS_TOPIC, lambda payload: payload == track_id and heard.set())
    try:
        await gateway.db.execute(statement, values)
        await asyncio.wait_for(heard.wait(), 30)
    finally:
        stop()


async def test_two_views_differ_only_in_nonce_and_countdown(shop):
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC", "ETH"], description="Tea & <cake>")
    expires_at = invoice["expires_at"]
    at(client, expires_at - 100)
    first, first_nonce, _ = await view(client, invoice["track_id"])
    assert first == await fresh(client, invoice["track_id"], first_nonce)
    at(client, expires_at - 99)
    second, second_nonce, _ = await view(client, invoice["track_id"])
    assert first_nonce != second_nonce
    expected = first.replace(first_nonce, second_nonce).replace(
        f'data-remaining="100">{countdown_text(100)}<', f'data-remaining="99">{countdown_text(99)}<')
    assert second == expected
    assert second == await fresh(client, invoice["track_id"], second_nonce)


async def test_a_status_change_and_new_deposits_show_at_once(shop):
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC"])
    track_id = invoice["track_id"]
    assert 'id="status">Waiting<' in await seen(client, track_id)
    await deposit(client, invoice, blocks=1)  # seen in a block: Paying, one confirmation of two
    paying = await seen(client, track_id)
    assert 'id="status">Paying<' in paying and 'class="confirmations">1 of 2<' in paying
    await deposit(client, invoice, blocks=2)  # confirmed: Paid
    paid = await seen(client, track_id)
    assert 'id="status">Paid<' in paid and 'id="paid-message"' in paid and "1 of 2" not in paid


async def test_a_deposit_row_change_alone_shows_at_once(shop):
    """The deposits are part of the content's key, not only the payment row they may leave unchanged."""
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC"])
    await deposit(client, invoice, blocks=1)
    assert 'class="confirmations">1 of 2<' in await seen(client, invoice["track_id"])
    await written(client.app[GATEWAY], invoice["track_id"], "UPDATE deposits SET confirmations = 0 WHERE track_id = :t",
                  {"t": invoice["track_id"]})
    assert 'class="confirmations">0 of 2<' in await seen(client, invoice["track_id"])


async def test_a_cancellation_shows_at_once(shop):
    client, key = shop
    invoice = await new_invoice(client, key)
    assert 'id="status">Waiting<' in await seen(client, invoice["track_id"])
    response = await client.post(f"/v1/payment/{invoice['track_id']}/cancel", headers={"merchant_api_key": key})
    assert response.status == 200
    cancelled = await seen(client, invoice["track_id"])
    assert 'id="cancelled-message"' in cancelled and invoice["address"] not in cancelled


async def test_the_expiry_flips_the_page_at_its_second(shop):
    client, key = shop
    invoice = await new_invoice(client, key, lifetime=1)
    expires_at = invoice["expires_at"]
    at(client, expires_at - 1)
    waiting = await seen(client, invoice["track_id"])
    assert 'id="status">Waiting<' in waiting and f'data-remaining="1">{countdown_text(1)}<' in waiting
    at(client, expires_at)
    expired = await seen(client, invoice["track_id"])
    assert 'id="status">Expired<' in expired and 'id="expired-message"' in expired
    assert invoice["address"] not in expired and 'id="countdown"' not in expired


class Looks:
    """A plugin whose answers the test changes between views; it counts how often it is asked."""

    forms: list[PayPageForm] | None = None
    branding: PageBranding | None = None
    asked = 0

    @staticmethod
    @hookimpl
    def extra_pay_page_forms(gateway, payment):
        Looks.asked += 1
        payment["pay_amount"] = "scribbled"  # on this view's copy: no later view shows it
        return Looks.forms

    @staticmethod
    @hookimpl(tryfirst=True)
    def decide_page_branding(gateway, merchant_id, brand_id, payment):
        return Looks.branding


@pytest.fixture
def looks(shop):
    client, _ = shop
    gateway = client.app[GATEWAY]
    Looks.forms, Looks.branding, Looks.asked = None, None, 0
    gateway.pm.register(Looks, name="looks")
    yield Looks
    gateway.pm.unregister(name="looks")


async def test_changed_hook_answers_show_at_once(shop, looks):
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC"])
    track_id = invoice["track_id"]
    looks.forms = [PayPageForm("/pay/x/a", "Pay with A")]
    assert "Pay with A" in await seen(client, track_id)
    looks.forms = [PayPageForm("/pay/x/b", "Pay with B", amount="1")]
    html = await seen(client, track_id)
    assert "Pay with B" in html and "Pay with A" not in html
    assert f'id="pay-amount">{invoice["pay_amount"]}<' in html  # the scribble of the first view did not stay
    looks.branding = PageBranding(name="Acme", logo_url="https://cdn.example.com/l.png", brand_color="#00ff00")
    html, nonce, csp = await view(client, track_id)
    assert html == await fresh(client, track_id, nonce)
    assert "/assets/accent/00ff00.css" in html and "https://cdn.example.com" in csp
    looks.branding = None
    html, nonce, csp = await view(client, track_id)
    assert html == await fresh(client, track_id, nonce)
    assert "/assets/accent/" not in html and "cdn.example.com" not in csp
    looks.forms = None
    assert "Pay with B" not in await seen(client, track_id)
    asked = looks.asked
    for _ in range(3):
        await view(client, track_id)
    assert looks.asked == asked + 3  # asked on every view, cached content or not


def add_unhashable_column(monkeypatch) -> None:
    """Payment reads return a row with a list in it (no cache key can hold it)."""
    read = svc.payment_with_deposits

    async def with_a_list(gateway, merchant_id, track_id):
        row, deposits = await read(gateway, merchant_id, track_id)
        return {**row, "tags": ["a"]}, deposits

    monkeypatch.setattr(svc, "payment_with_deposits", with_a_list)


async def test_an_unhashable_column_renders_without_the_caches(shop, monkeypatch):
    client, key = shop
    invoice = await new_invoice(client, key)
    gateway = client.app[GATEWAY]
    add_unhashable_column(monkeypatch)
    for _ in range(2):
        assert invoice["address"] in await seen(client, invoice["track_id"])
    assert len(gateway.services["pay_page_contents"]) == 0
    assert len(gateway.services["pay_page_template"]._renderings) == 0
