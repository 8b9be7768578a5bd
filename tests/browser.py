"""The hosted-page and dashboard tests' browser: Playwright for Python driving Debian's Chromium.

Playwright is the well-kept driver the docs show (docs/decisions.md "Browser tests on
Playwright"): it waits for elements to be there and ready before a click or a fill,
and its own options cover what the tests need, so this module only fixes the defaults
these suites share. It launches the system Chromium through ``executable_path``
(``scripts/ensure_chromium.sh`` installs it; ``playwright install`` and its browser
download are never used), headless and without Chromium's sandbox (the tests run as
root), with the profile in the test's folder. Page scripts are off unless asked for
(Playwright's ``java_script_enabled``), so a test sees exactly what a payer without
JavaScript sees; ``evaluate`` still reads the DOM then, as DevTools does. The viewport
is a phone's: the hosted pages are mostly opened on mobiles.

Every wait is bounded (``TIMEOUT``); the browser and Playwright's driver are closed on exit.

    async with Browser.launch(tmp_path) as browser:
        await browser.goto(url)
        html = await browser.html()
        await browser.click("button[type=submit]")
        await browser.screenshot(tmp_path / "page.png")
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable

import pytest
from playwright.async_api import BrowserContext, CDPSession, ConsoleMessage, Page, async_playwright
from playwright.async_api import Error as BrowserError
from playwright.async_api import TimeoutError as BrowserTimeout

from orbchain.web.app import create_app

from .support import free_port

__all__ = ["VIEWPORT", "Browser", "BrowserError", "assert_png", "free_port", "require_chromium", "serve_app"]

CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = "Chromium is missing: run scripts/ensure_chromium.sh (installs Debian's chromium package)"
# No GPU process: the pages render in software either way, and Playwright's default (SwiftShader in a
# GPU process) costs about a second more per launch on this suite's two shared cores.
CHROMIUM_ARGS = ["--disable-gpu"]
TIMEOUT = 15.0  # seconds: one navigation, one action or one evaluation
# A screenshot smaller than this is a blank page, not the one under test.
MIN_PNG_BYTES = 5 * 1024
# A phone (Playwright's context options); tests lay a page out at other sizes with ``page.set_viewport_size``.
VIEWPORT = {"width": 390, "height": 844}
PHONE = {"viewport": VIEWPORT, "device_scale_factor": 2, "is_mobile": True}


def chromium_missing() -> bool:
    return not os.access(CHROMIUM, os.X_OK)


@pytest.fixture(autouse=True)
def require_chromium() -> None:
    """Imported by each browser test module: fail (never skip) with the install hint when Chromium is missing."""
    if chromium_missing():
        pytest.fail(INSTALL_HINT, pytrace=False)


async def serve_app(aiohttp_server: Any, aiohttp_client: Any, make_config: Any, **config: Any) -> Any:
    """The full app on a real TCP port whose ``base_url`` matches, so absolute links open as they are.

    Takes the pytest-aiohttp ``aiohttp_server``/``aiohttp_client`` and the suite's ``make_config``
    fixtures; ``config`` adds sections (e.g. ``plugin=...``). The scheduler stays off.
    """
    port = free_port()
    settings = make_config(scheduler={"enabled": False}, server={"base_url": f"http://127.0.0.1:{port}"}, **config)
    server = await aiohttp_server(create_app(settings), host="127.0.0.1", port=port)
    return await aiohttp_client(server)


def assert_png(path: Path) -> None:
    """A real screenshot: the PNG signature and more than a blank page's bytes."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > MIN_PNG_BYTES, f"{path}: {len(data)} bytes"


class Browser:
    """One Chromium with one page; use ``Browser.launch(dir)`` as an async context manager.

    ``page`` and ``context`` are Playwright's own, for what the helpers below do not cover.
    ``console`` collects every console message from the start, Chromium's log entries among
    them (a refused Content Security Policy, a failed load); ``page_errors`` every uncaught
    script error.
    """

    def __init__(self, context: BrowserContext, page: Page) -> None:
        self.context = context
        self.page = page
        self.console: list[ConsoleMessage] = []
        self.page_errors: list[BrowserError] = []
        self._cdp: CDPSession | None = None
        # Playwright tags each handler, so a plain function rather than the lists' bound append.
        page.on("console", lambda message: self.console.append(message))
        page.on("pageerror", lambda error: self.page_errors.append(error))

    @classmethod
    @contextlib.asynccontextmanager
    async def launch(cls, workdir: Path, *, javascript: bool = False,
                     ignore_https_errors: bool = False) -> AsyncIterator["Browser"]:
        """Chromium with its profile in ``workdir``; ``ignore_https_errors`` trusts any certificate."""
        if chromium_missing():
            raise BrowserError(INSTALL_HINT)
        profile = Path(workdir) / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        async with async_playwright() as playwright:
            context = await playwright.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, headless=True, chromium_sandbox=False, args=CHROMIUM_ARGS,
                java_script_enabled=javascript, ignore_https_errors=ignore_https_errors, **PHONE,
            )
            try:
                context.set_default_timeout(TIMEOUT * 1000)
                yield cls(context, context.pages[0] if context.pages else await context.new_page())
            finally:
                await context.close()

    def console_errors(self) -> list[str]:
        """Every console error so far (a script's, a refused Content Security Policy, a failed load),
        but the missing favicon's."""
        return [m.text for m in self.console
                if m.type == "error" and not m.location.get("url", "").endswith("/favicon.ico")]

    def csp_refusals(self) -> list[str]:
        """What the page's Content Security Policy refused so far, as Chromium logged it."""
        return [m.text for m in self.console if "Content Security Policy" in m.text]

    # -- what a test does ------------------------------------------------------------------------

    async def goto(self, url: str) -> None:
        """Open ``url`` and wait for its load event."""
        await self.page.goto(url)

    async def reload(self) -> None:
        await self.page.reload()

    async def evaluate(self, expression: str, timeout: float = TIMEOUT) -> Any:
        """A JavaScript expression's value (awaited when a promise), evaluated in the page.

        Works with page scripts off, as DevTools does; bounded, as Playwright's own evaluate is not."""
        return await _bounded(self.page.evaluate(expression), f"evaluating {expression[:80]!r}", timeout)

    async def html(self) -> str:
        return await self.page.content()

    async def url(self) -> str:
        return self.page.url

    async def text(self, selector: str) -> str | None:
        """The element's text now, or None when nothing matches (no waiting: a test polls when it must)."""
        return await _bounded(self.page.evaluate("s => document.querySelector(s)?.textContent ?? null", selector),
                              f"reading {selector}", TIMEOUT)

    async def select(self, selector: str, value: str) -> None:
        """Choose an option, as a user picking from the list would."""
        await self.page.select_option(selector, value)

    async def fill(self, selector: str, value: str) -> None:
        """Type into a form field (Playwright's fill: the field's value and its input events)."""
        await self.page.fill(selector, value)

    async def check(self, selector: str) -> None:
        """Tick a checkbox or radio button by clicking it."""
        await self.page.check(selector)

    async def click(self, selector: str, *, navigates: bool = True) -> None:
        """A real click on the element once it can take one; unless ``navigates`` is False,
        also waits for the page it loads."""
        if not navigates:
            await self.page.click(selector)
            return
        async with self.page.expect_event("load"):
            await self.page.click(selector)

    async def screenshot(self, path: Path) -> Path:
        """The whole page (beyond the viewport) as a PNG, one pixel per CSS pixel: a phone's 2x
        would be four times the pixels to encode, for every page of the accessibility walk."""
        path = Path(path)
        await self.page.screenshot(path=path, full_page=True, scale="css")
        return path

    async def cdp(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One DevTools command on the page, for the rare need Playwright has no option for.

        Always the same session: what a command sets (an emulation) lasts until the browser closes."""
        if self._cdp is None:
            self._cdp = await self.context.new_cdp_session(self.page)
        return await self._cdp.send(method, params or {})


async def _bounded(awaitable: Awaitable[Any], what: str, timeout: float) -> Any:
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except TimeoutError:
        raise BrowserTimeout(f"{what}: not within {timeout} s") from None
