"""donate.js (SPEC 4.14) in a real headless Chromium, on a host page of another origin.

The gateway and the host page are served on two local ports, so the script
runs exactly as on a merchant's site: loaded cross-origin, mounting on the
host's elements, opening the gateway's link URLs. A click is a real mouse
event; the window it opens is Playwright's new page, which must land on a
freshly minted invoice (the link's uses go up).
Needs /usr/bin/chromium (``scripts/ensure_chromium.sh``); never skipped.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web
from playwright.async_api import Page


from .browser import Browser, free_port, serve_app
from .browser import require_chromium  # noqa: F401 - autouse fixture
from .support import api, signup

LABEL_WITH_MARKUP = '<img src=x onerror="window.pwned=1">Give'


@pytest.fixture
async def gateway_client(aiohttp_server, aiohttp_client, make_config):
    return await serve_app(aiohttp_server, aiohttp_client, make_config)


def host_page(gateway: str, fixed: str, open_slug: str) -> str:
    """A merchant's page: good and bad buttons, and the host's own script after ours."""
    return f"""<!doctype html><html><head><title>Host shop</title></head><body>
<h1>Support our shop</h1>
<div class="orbchain-donate" id="fixed" data-slug="{fixed}" data-label="Give" data-color="#112233"></div>
<div class="orbchain-donate" id="open" data-slug="{open_slug}" data-amount="0.5" data-target="blank"></div>
<div class="orbchain-donate" id="default" data-slug="{fixed}"></div>
<div class="orbchain-donate" id="no-slug"></div>
<div class="orbchain-donate" id="bad-slug" data-slug="../../admin"></div>
<div class="orbchain-donate" id="bad-origin" data-slug="{fixed}" data-origin="javascript:alert(1)"></div>
<div class="orbchain-donate" id="bad-color" data-slug="{fixed}" data-color="red;background:url(//evil)"
     data-amount="1e9; drop" data-label='{LABEL_WITH_MARKUP.replace("'", "&#39;")}'></div>
<div class="orbchain-donate" id="other-origin" data-slug="{fixed}" data-origin="https://pay.example.org/x?y"></div>
<script src="{gateway}/assets/donate.js"></script>
<script>window.hostRan = true;</script>
</body></html>"""


@pytest.fixture
async def host(aiohttp_server):
    pages: dict[str, str] = {}

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=pages["index"], content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    server = await aiohttp_server(app, host="127.0.0.1", port=free_port())
    return server, pages


async def _link(client: Any, jwt: dict[str, str], **fields: Any) -> dict[str, Any]:
    status, body = await api(client, "POST", "/dashboard/payment-links", jwt, json={"coin": "BTC", **fields})
    assert status == 200, body
    return body["data"]


async def _uses(client: Any, jwt: dict[str, str]) -> dict[str, int]:
    _, body = await api(client, "GET", "/dashboard/payment-links", jwt)
    return {link["slug"]: link["uses"] for link in body["data"]["links"]}


async def _button(browser: Browser, element_id: str) -> dict[str, Any] | None:
    return await browser.evaluate(f"""(() => {{
        const el = document.getElementById({json.dumps(element_id)});
        const buttons = el.querySelectorAll('a');
        const b = buttons[0];
        return {{mounted: el.getAttribute('data-orbchain-mounted'), count: buttons.length,
                 href: b ? b.href : null, text: b ? b.textContent : null, target: b ? b.target : null,
                 background: b ? getComputedStyle(b).backgroundColor : null,
                 width: b ? b.getBoundingClientRect().width : 0, images: el.querySelectorAll('img').length}};
    }})()""")


async def _opened(browser: Browser, selector: str, prefix: str) -> Page:
    """The window a real click on ``selector`` opens, once it has landed on a URL starting with ``prefix``."""
    async with browser.context.expect_page() as opened:
        await browser.click(selector, navigates=False)
    window = await opened.value
    await window.wait_for_url(lambda url: url.startswith(prefix))
    return window


async def test_donate_button_on_a_foreign_page(gateway_client, host, tmp_path):
    client = gateway_client
    gateway_url = str(client.server.make_url("")).rstrip("/")
    merchant = await signup(client)
    fixed = await _link(client, merchant.jwt, amount="0.001")
    open_link = await _link(client, merchant.jwt)
    server, pages = host
    pages["index"] = host_page(gateway_url, fixed["slug"], open_link["slug"])
    host_url = str(server.make_url("/"))
    assert host_url.split("/")[2] != gateway_url.split("/")[2]  # another origin (port)

    async with Browser.launch(tmp_path, javascript=True) as browser:
        await browser.goto(host_url)
        assert await browser.evaluate("window.hostRan === true && typeof window.OrbchainDonate.mount") == "function"
        assert await browser.evaluate("window.pwned") is None

        # The button renders with the element's attributes, pointing at the script's origin.
        button = await _button(browser, "fixed")
        assert button["mounted"] == "true" and button["count"] == 1 and button["text"] == "Give"
        assert button["href"] == f"{gateway_url}/l/{fixed['slug']}" and button["width"] > 20
        assert button["background"] == "rgb(17, 34, 51)"
        open_button = await _button(browser, "open")
        assert open_button["href"] == f"{gateway_url}/l/{open_link['slug']}?amount=0.5"
        default = await _button(browser, "default")
        assert default["text"] == "Donate crypto" and default["background"] == "rgb(245, 158, 11)"
        other = await _button(browser, "other-origin")
        assert other["href"] == f"https://pay.example.org/l/{fixed['slug']}"

        # Bad attributes: skipped (no slug, bad slug, script URL) or defaulted (colour, amount), never run.
        for element_id in ("no-slug", "bad-slug", "bad-origin"):
            skipped = await _button(browser, element_id)
            assert skipped["mounted"] is None and skipped["count"] == 0, element_id
        odd = await _button(browser, "bad-color")
        assert odd["background"] == "rgb(245, 158, 11)" and odd["href"] == f"{gateway_url}/l/{fixed['slug']}"
        assert odd["text"] == LABEL_WITH_MARKUP and odd["images"] == 0

        # Mounting again does nothing: by element, all at once, or by loading the script twice.
        assert await browser.evaluate("OrbchainDonate.mount(document.getElementById('fixed'))") is None
        assert await browser.evaluate("OrbchainDonate.mountAll()") == 0
        await browser.evaluate(f"""new Promise(done => {{ const s = document.createElement('script');
            s.src = {json.dumps(gateway_url + '/assets/donate.js')}; s.onload = done; document.body.appendChild(s); }})""")
        assert (await _button(browser, "fixed"))["count"] == 1
        assert await browser.evaluate("document.querySelectorAll('a.orbchain-donate-button').length") == 5
        # An element added later mounts on demand.
        assert await browser.evaluate(f"""(() => {{ const el = document.createElement('div');
            el.className = 'orbchain-donate'; el.id = 'late'; el.setAttribute('data-slug', {json.dumps(fixed['slug'])});
            document.body.appendChild(el); return OrbchainDonate.mountAll(); }})()""") == 1
        _ = await browser.screenshot(tmp_path / "donate_host.png")

        # A click opens the link (popup by default, a new tab for data-target=blank), which mints an invoice.
        first = await _opened(browser, "#fixed a", f"{gateway_url}/pay/")
        # A 480x720 popup window of its own (headless clamps the height to its 800x600 screen).
        width, height = await first.evaluate("[outerWidth, outerHeight]")
        assert width == 480 and 500 <= height <= 720
        assert await browser.evaluate("[outerWidth, outerHeight]") != [width, height]
        second = await _opened(browser, "#open a", f"{gateway_url}/pay/")
        assert first.url != second.url
        assert await browser.url() == host_url  # the host page stays where it was
        for _ in range(100):
            uses = await _uses(client, merchant.jwt)
            if uses == {fixed["slug"]: 1, open_link["slug"]: 1}:
                break
            await asyncio.sleep(0.1)
        assert uses == {fixed["slug"]: 1, open_link["slug"]: 1}
        _, body = await api(client, "GET", "/v1/payment", merchant.merchant_key)
        assert body["data"]["total"] == 2
