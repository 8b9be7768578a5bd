"""A minimal Chrome DevTools Protocol driver for the hosted-page tests.

Starts Debian's headless Chromium, attaches to its page over a websocket
(aiohttp's client) and turns page scripts off, so a test sees exactly what a
payer without JavaScript sees. DevTools' own ``Runtime.evaluate`` still works
with page scripts disabled; it is only used to read the DOM and to set a
form field's value, as a user would. Clicks are real mouse events.

Every wait is bounded; the browser's whole process group is killed on exit.

    async with Browser.launch(tmp_path) as browser:
        await browser.goto(url)
        html = await browser.html()
        await browser.click("button[type=submit]")
        await browser.screenshot(tmp_path / "page.png")
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import signal
import time
from pathlib import Path
from typing import Any, AsyncIterator

import aiohttp
import pytest

from orbchain.web.app import create_app

from .support import free_port

CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = "Chromium is missing: run scripts/ensure_chromium.sh (installs Debian's chromium package)"
STARTUP_TIMEOUT = 30.0
COMMAND_TIMEOUT = 15.0
LOAD_TIMEOUT = 15.0
# A phone-sized viewport: the hosted pages are mostly opened on mobiles.
# A screenshot smaller than this is a blank page, not the one under test.
MIN_PNG_BYTES = 5 * 1024
VIEWPORT = {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True}


class BrowserError(RuntimeError):
    """The browser did not start, or a DevTools command failed or timed out."""


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
    """One Chromium with one page; use ``Browser.launch(dir)`` as an async context manager."""

    def __init__(self, process: asyncio.subprocess.Process, session: aiohttp.ClientSession,
                 ws: aiohttp.ClientWebSocketResponse) -> None:
        self._process = process
        self._session = session
        self._ws = ws
        self._ids = itertools.count(1)
        self._replies: dict[int, asyncio.Future] = {}
        self._waiters: list[tuple[str, asyncio.Future]] = []
        self._records: dict[str, list[dict[str, Any]]] = {}
        # Every DevTools event seen, in order (e.g. ``Log.entryAdded`` after ``Log.enable``).
        self.events: list[dict[str, Any]] = []
        self._reader = asyncio.create_task(self._read())

    # -- lifecycle ----------------------------------------------------------------------------

    @classmethod
    @contextlib.asynccontextmanager
    async def launch(cls, workdir: Path, *, javascript: bool = False,
                     extra_args: tuple[str, ...] = ()) -> AsyncIterator["Browser"]:
        if chromium_missing():
            raise BrowserError(INSTALL_HINT)
        profile = Path(workdir) / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        log = open(profile / "chromium.log", "wb")  # noqa: ASYNC230 - once per browser start, a local file
        process = await asyncio.create_subprocess_exec(
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--no-proxy-server", "--hide-scrollbars", "--mute-audio",
            f"--user-data-dir={profile}", "--remote-debugging-port=0", *extra_args, "about:blank",
            stdout=log, stderr=log, start_new_session=True,  # own process group: killed as one
        )
        session = aiohttp.ClientSession()
        browser = None
        try:
            port = await _devtools_port(profile, process)
            ws = await session.ws_connect(await _page_socket(session, port), max_msg_size=0,
                                          timeout=aiohttp.ClientWSTimeout(ws_close=5))
            browser = cls(process, session, ws)
            await browser.send("Page.enable")
            await browser.send("Emulation.setDeviceMetricsOverride", VIEWPORT)
            await browser.send("Emulation.setScriptExecutionDisabled", {"value": not javascript})
            yield browser
        finally:
            if browser is not None:
                await browser._close_socket()
            await session.close()
            await _kill(process)
            log.close()

    async def _close_socket(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(BaseException):
            await self._reader
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._ws.close(), 5)

    # -- protocol -------------------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            async for message in self._ws:
                if message.type != aiohttp.WSMsgType.TEXT:
                    break
                data = json.loads(message.data)
                if "id" in data:
                    future = self._replies.pop(data["id"], None)
                    if future is not None and not future.done():
                        future.set_result(data)
                    continue
                if data.get("method") in self._records:
                    self._records[data["method"]].append(data.get("params", {}))
                self.events.append(data)
                for waiter in [w for w in self._waiters if w[0] == data.get("method")]:
                    self._waiters.remove(waiter)
                    if not waiter[1].done():
                        waiter[1].set_result(data.get("params", {}))
        finally:
            error = BrowserError("the DevTools connection closed")
            for future in [*self._replies.values(), *(w[1] for w in self._waiters)]:
                if not future.done():
                    future.set_exception(error)

    async def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = COMMAND_TIMEOUT) -> dict:
        """Run one DevTools command and return its ``result``."""
        message_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._replies[message_id] = future
        await self._ws.send_str(json.dumps({"id": message_id, "method": method, "params": params or {}}))
        try:
            reply = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise BrowserError(f"{method}: no answer within {timeout} s") from None
        finally:
            self._replies.pop(message_id, None)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def expect(self, event: str) -> asyncio.Future:
        """A future for the next ``event``: register it *before* causing the event."""
        future = asyncio.get_running_loop().create_future()
        self._waiters.append((event, future))
        return future

    def record(self, event: str) -> list[dict[str, Any]]:
        """Every ``event`` from now on, appended to the returned list as it arrives (none missed)."""
        return self._records.setdefault(event, [])

    async def _until(self, future: asyncio.Future, what: str, timeout: float = LOAD_TIMEOUT) -> Any:
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise BrowserError(f"{what}: not within {timeout} s") from None

    # -- what a test does ------------------------------------------------------------------------

    async def goto(self, url: str) -> None:
        loaded = self.expect("Page.loadEventFired")
        result = await self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise BrowserError(f"navigating to {url}: {result['errorText']}")
        await self._until(loaded, f"loading {url}")

    async def reload(self) -> None:
        loaded = self.expect("Page.loadEventFired")
        await self.send("Page.reload", {"ignoreCache": True})
        await self._until(loaded, "reloading")

    async def evaluate(self, expression: str) -> Any:
        """Evaluate in the page from DevTools (works with page scripts disabled); JSON result."""
        result = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"evaluating {expression!r}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    async def html(self) -> str:
        return await self.evaluate("document.documentElement.outerHTML")

    async def url(self) -> str:
        return await self.evaluate("location.href")

    async def text(self, selector: str) -> str | None:
        return await self.evaluate(f"(e => e && e.textContent)(document.querySelector({json.dumps(selector)}))")

    async def select(self, selector: str, value: str) -> None:
        """Choose an option, as a user picking from the list would."""
        ok = await self.evaluate(
            f"(s => {{ if (!s || ![...s.options].some(o => o.value === {json.dumps(value)})) return false;"
            f" s.value = {json.dumps(value)}; return true; }})(document.querySelector({json.dumps(selector)}))"
        )
        if not ok:
            raise BrowserError(f"no option {value!r} in {selector}")

    async def fill(self, selector: str, value: str) -> None:
        """Set a form field's value, as a user typing would (page scripts may stay off)."""
        await self._set(selector, "value", value)

    async def check(self, selector: str) -> None:
        """Tick a checkbox or radio button."""
        await self._set(selector, "checked", True)

    async def _set(self, selector: str, prop: str, value: Any) -> None:
        ok = await self.evaluate(
            f"(e => {{ if (!e) return false; e.{prop} = {json.dumps(value)}; return true; }})"
            f"(document.querySelector({json.dumps(selector)}))"
        )
        if not ok:
            raise BrowserError(f"nothing matches {selector}")

    async def click(self, selector: str, *, navigates: bool = True) -> None:
        """A real left click in the middle of the element; waits for the next page load."""
        box = await self.evaluate(
            f"(e => {{ if (!e) return null; e.scrollIntoView({{block: 'center'}});"
            f" const r = e.getBoundingClientRect(); return {{x: r.x + r.width / 2, y: r.y + r.height / 2}}; }})"
            f"(document.querySelector({json.dumps(selector)}))"
        )
        if box is None:
            raise BrowserError(f"nothing matches {selector}")
        loaded = self.expect("Page.loadEventFired") if navigates else None
        for kind in ("mousePressed", "mouseReleased"):
            await self.send("Input.dispatchMouseEvent",
                            {"type": kind, "x": box["x"], "y": box["y"], "button": "left", "clickCount": 1})
        if loaded is not None:
            await self._until(loaded, f"the page load after clicking {selector}")

    async def screenshot(self, path: Path) -> Path:
        """The whole page (beyond the viewport) as a PNG."""
        result = await self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        path = Path(path)
        path.write_bytes(base64.b64decode(result["data"]))
        return path


# -- process plumbing -------------------------------------------------------------------------


async def _devtools_port(profile: Path, process: asyncio.subprocess.Process) -> int:
    """Chromium writes ``<port>\\n<browser path>`` to DevToolsActivePort once it listens."""
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.returncode is not None:
            raise BrowserError(f"chromium exited with {process.returncode}; see {profile / 'chromium.log'}")
        with contextlib.suppress(FileNotFoundError, ValueError):
            lines = marker.read_text().splitlines()
            if len(lines) >= 2:
                return int(lines[0])
        await asyncio.sleep(0.05)
    raise BrowserError(f"chromium did not open DevTools within {STARTUP_TIMEOUT} s")


async def _page_socket(session: aiohttp.ClientSession, port: int) -> str:
    """The websocket of the page target that ``about:blank`` opened."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        async with session.get(f"http://127.0.0.1:{port}/json/list",
                               timeout=aiohttp.ClientTimeout(total=COMMAND_TIMEOUT)) as response:
            targets = await response.json(content_type=None)
        pages = [t for t in targets if t.get("type") == "page" and t.get("webSocketDebuggerUrl")]
        if pages:
            return pages[0]["webSocketDebuggerUrl"]
        await asyncio.sleep(0.1)
    raise BrowserError("chromium opened no page target")


async def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # the group: renderer and zygote children too
    with contextlib.suppress(asyncio.TimeoutError, ProcessLookupError):
        await asyncio.wait_for(process.wait(), 10)
