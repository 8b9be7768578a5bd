"""Tools for the hostile-input suite: a real ``orbchain serve`` process and raw HTTP.

Why a separate process: the suite must prove the server *survives* what it
is sent. A body that segfaults the interpreter would take pytest down with
an in-process server; here it kills only the child, which the suite sees
(``alive()``), records and restarts.

Why raw sockets: an HTTP client library refuses to send most of what an
attacker sends (NUL or invalid UTF-8 in a header, a bad Content-Length, a
lone surrogate in a path). ``send_raw`` writes the bytes as given, one
connection per request, and times the round trip.

``encode_json`` writes JSON the standard library cannot produce: number
tokens such as ``1e1000000`` or ``NaN`` (``Raw``) and lone surrogates as
``\\ud800`` escapes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import quote, urlencode, urlsplit

from aiohttp import web

from orbchain.core.infra.config import RateLimitConfig

from .support import free_port  # also lent to test_hostile_input

# 503 is the spec's answer for maintenance, a payout backlog or a feature/provider this deployment
# lacks (SPEC 7); only these envelope types count as such, any other 5xx is a server error.
SPEC_503_TYPES = frozenset({"maintenance", "unavailable", "not_configured"})


def is_server_error(status: int, body: bytes) -> bool:
    """A 5xx other than the spec's documented 503 refusals."""
    if status < 500:
        return False
    if status == 503:
        if body.lstrip()[:15].lower() == b"<!doctype html>":
            # A page's 503 refusal: the error middleware renders ApiError 503s of HTML routes as the error
            # page (sign-in with a provider this deployment has not configured), a dashboard page renders
            # its own (Telegram linking without a bot); a crash renders the 500 page instead.
            return False
        try:
            answer = json.loads(body)
            error = answer.get("error") or {}
        except (ValueError, AttributeError):
            return True
        if answer.get("ready") is False:
            return False  # GET /ready: "not ready" is its documented 503 (docs/operations.md)
        return error.get("type") not in SPEC_503_TYPES
    return True


def unlimited_rate_limits() -> dict[str, int]:
    """Every per-minute limit this gateway has, raised so that 429 does not hide the handlers."""
    return {f.name: 1_000_000 for f in dataclasses.fields(RateLimitConfig) if f.name.endswith("_per_minute")}


# -- JSON the standard library will not write ------------------------------------------------------


class Raw(str):
    """A JSON token written verbatim: ``Raw("1e1000000")``, ``Raw("NaN")``, ``Raw("[" * 10)``."""


def encode_json(value: Any) -> str:
    """JSON text; ``Raw`` values verbatim, strings escaped (a lone surrogate becomes ``\\udXXX``)."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{encode_json(str(k))}:{encode_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(encode_json(v) for v in value) + "]"
    return json.dumps(value)  # ensure_ascii: every non-ASCII character, surrogates too, is an escape


def percent(text: str) -> str:
    """Percent-encode every reserved byte of the UTF-8 form; lone surrogates pass as their 3 bytes."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


# -- raw HTTP ----------------------------------------------------------------------------------------


@dataclass
class Reply:
    status: int  # 0: no HTTP answer (connection reset or closed before a status line)
    headers: dict[str, str]
    body: bytes
    seconds: float
    timed_out: bool = False
    set_cookies: list[str] = field(default_factory=list)  # every Set-Cookie (``headers`` keeps the last)

    def json(self) -> Any:
        return json.loads(self.body)


def _dechunk(body: bytes) -> bytes:
    out, rest = bytearray(), body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += rest[:size]
        rest = rest[size + 2:]
    return bytes(out)


def _parse(raw: bytes, seconds: float) -> Reply:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        return Reply(0, {}, raw, seconds)
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.decode("latin-1").strip().lower()] = value.decode("latin-1").strip()
        if name.strip().lower() == b"set-cookie":
            cookies.append(value.decode("latin-1").strip())
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _dechunk(body)
    return Reply(int(parts[1]), headers, body, seconds, set_cookies=cookies)


def send_raw(port: int, method: str, target: bytes, headers: list[tuple[bytes, bytes]] = (),
             body: bytes | None = None, *, timeout: float = 10.0, first_event_only: bool = False) -> Reply:
    """One request on its own connection; the reply once the server closes it.

    With ``first_event_only`` an event stream's reply ends at its first event
    (the client closes then): a stream stays open until its payment is final,
    and what the server does meanwhile is not this request's work.
    """
    lines = [method.encode() + b" " + target + b" HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close"]
    names = {name.lower() for name, _ in headers}
    lines += [name + b": " + value for name, value in headers]
    if body is not None and b"content-length" not in names:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    payload = b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")
    chunks: list[bytes] = []
    start = time.perf_counter()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            try:
                sock.sendall(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered early (a refused header or body): read what it said
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                chunks.append(data)
                if first_event_only and _holds_first_event(b"".join(chunks)):
                    break
    except TimeoutError:
        return Reply(0, {}, b"".join(chunks), time.perf_counter() - start, timed_out=True)
    except (ConnectionResetError, ConnectionRefusedError, BrokenPipeError):
        pass
    return _parse(b"".join(chunks), time.perf_counter() - start)


def _holds_first_event(data: bytes) -> bool:
    """Whether ``data`` (a reply so far) is an event stream's head and its first whole event."""
    head, separator, body = data.partition(b"\r\n\r\n")
    if not separator or b"text/event-stream" not in head.lower():
        return False
    at = body.find(b"event:")
    return at >= 0 and body.find(b"\n\n", at) >= 0


def get_json(port: int, path: str, headers: Mapping[str, str] | None = None) -> Reply:
    return send_raw(port, "GET", path.encode(), [(k.encode(), v.encode()) for k, v in (headers or {}).items()])


def post_json(port: int, path: str, payload: Any, headers: Mapping[str, str] | None = None) -> Reply:
    wire = [(b"Content-Type", b"application/json")] + [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    return send_raw(port, "POST", path.encode(), wire, json.dumps(payload).encode())


# -- the server process ------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def write_config(path: Path, sections: Mapping[str, Mapping[str, Any]]) -> Path:
    """A TOML config file of plain scalar settings."""
    text = "".join(f"[{name}]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in values.items()) + "\n"
                   for name, values in sections.items())
    path.write_text(text, encoding="utf-8")
    return path


def orbchain_command() -> list[str]:
    """``orbchain`` run by the test's own interpreter (``python -m orbchain``), whatever the PATH holds."""
    return [sys.executable, "-m", "orbchain"]


@dataclass
class OrbchainServer:
    """``orbchain --config <file> serve`` on a loopback port; restartable."""

    config_path: Path
    port: int
    log_path: Path
    process: subprocess.Popen | None = None
    deaths: list[str] = field(default_factory=list)

    def start(self, wait: float = 60.0) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [*orbchain_command(), "--config", str(self.config_path), "serve", "--port", str(self.port)],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        log.close()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"orbchain serve exited with {self.process.returncode}:\n{self.log_tail()}")
            if self.healthy(timeout=2.0):
                return
            time.sleep(0.1)
        raise RuntimeError(f"orbchain serve did not answer /health within {wait} s:\n{self.log_tail()}")

    def healthy(self, timeout: float = 5.0) -> bool:
        reply = send_raw(self.port, "GET", b"/health", timeout=timeout)
        return reply.status == 200

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait_healthy(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            if self.healthy(timeout=max(0.5, deadline - time.monotonic())):
                return True
            time.sleep(0.2)
        return False

    def restart(self, reason: str) -> None:
        """Record why the old process is gone (or had to go: frozen, it is killed) and start a fresh one."""
        code = self.stop(kill=True)
        self.deaths.append(f"{reason} (exit status {code})")
        self.start()

    def stop(self, kill: bool = False) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None and kill:
            self.process.kill()
            self.process.wait(10)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        code = self.process.returncode
        self.process = None
        return code

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"


def ledger_check(config_path: Path) -> subprocess.CompletedProcess:
    """``orbchain --config <file> ledger check``: exit status 0 and ``ledger OK`` when the books balance."""
    return subprocess.run([*orbchain_command(), "--config", str(config_path), "ledger", "check"],
                          capture_output=True, text=True, timeout=120)


# -- an in-process server on its own thread, whose CPU time can be read ------------------------------


class LoopThreadServer:
    """``app`` served by its own event loop on its own thread, on a loopback port.

    The test talks to it over sockets from another thread, so the CPU time
    of the loop's thread (``loop_cpu_seconds``, the kernel's per-thread
    clock) counts exactly what the event loop spent: parsing, handlers,
    rendering, but not the CPU pool's threads nor the test's own work.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.port = free_port()
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clock: int | None = None
        self._thread = threading.Thread(target=self._serve, name="orbchain-loop", daemon=True)

    def start(self, wait: float = 60.0) -> "LoopThreadServer":
        self._thread.start()
        if not self._ready.wait(wait) or self._failed is not None:
            raise RuntimeError(f"the in-process server did not start: {self._failed!r}")
        return self

    def _serve(self) -> None:
        from orbchain.web.server import GatewayAppRunner

        self._clock = time.pthread_getcpuclockid(threading.get_ident())
        loop = self._loop = asyncio.new_event_loop()
        runner = GatewayAppRunner(self.app)
        try:
            loop.run_until_complete(runner.setup())
            loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", self.port).start())
        except BaseException as exc:  # noqa: BLE001 - reported by start()
            self._failed = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()

    def loop_cpu_seconds(self) -> float:  # float ok: a duration, not money
        """CPU time the event loop's thread has used so far."""
        assert self._clock is not None
        return time.clock_gettime(self._clock)

    def stop(self) -> None:
        if self._loop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(60)


# -- HTML forms: what a page offers, and a browser to send them ---------------------------------------


@dataclass
class PageForm:
    """One ``<form method="post">`` of a page: where it posts, how, and its fields with their page values."""

    action: str  # the path it posts to (no query)
    enctype: str
    fields: dict[str, str]
    signed_out: bool = False  # found on a page served without a session (its token is the pre-session one)


class _FormFinder(HTMLParser):
    def __init__(self, page_path: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page_path = page_path
        self.forms: list[PageForm] = []
        self._current: PageForm | None = None
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form" and values.get("method", "get").lower() == "post":
            action = urlsplit(values.get("action") or self.page_path).path or self.page_path
            self._current = PageForm(action, values.get("enctype", "application/x-www-form-urlencoded"), {})
            return
        form, name = self._current, values.get("name")
        if form is None or not name:
            return
        if tag == "input":
            kind = values.get("type", "text").lower()
            if kind in ("checkbox", "radio") and "checked" not in values and name in form.fields:
                return
            form.fields.setdefault(name, "" if kind == "file" else values.get("value", ""))
        elif tag == "button":
            form.fields.setdefault(name, values.get("value", ""))
        elif tag == "select":
            self._select = name
            form.fields.setdefault(name, "")
        elif tag == "option" and self._select and not form.fields.get(self._select):
            form.fields[self._select] = values.get("value", "")
        elif tag == "textarea":
            self._textarea = name
            form.fields.setdefault(name, "")

    def handle_data(self, data: str) -> None:
        if self._current is not None and self._textarea and not self._current.fields.get(self._textarea):
            self._current.fields[self._textarea] = data.strip()

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self._current is not None:
            self.forms.append(self._current)
            self._current = None
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


def forms_in(page: str, page_path: str) -> list[PageForm]:
    """The POST forms of an HTML page, with the values the page filled in (hidden fields, first options)."""
    finder = _FormFinder(page_path)
    finder.feed(page)
    return finder.forms


def multipart_body(fields: Mapping[str, Any], boundary: str = "orbchain-walk") -> tuple[bytes, bytes]:
    """``fields`` as ``multipart/form-data`` (text parts; bytes values as a CSV file part)."""
    out = bytearray()
    for name, value in fields.items():
        out += f"--{boundary}\r\n".encode()
        disposition = f'form-data; name="{name}"'
        if isinstance(value, bytes):
            out += f'Content-Disposition: {disposition}; filename="rows.csv"\r\nContent-Type: text/csv\r\n\r\n'.encode()
            out += value
        else:
            text = value if isinstance(value, str) else json.dumps(value)
            out += f"Content-Disposition: {disposition}\r\n\r\n".encode() + text.encode("utf-8", "surrogatepass")
        out += b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), f"multipart/form-data; boundary={boundary}".encode()


def cookie_value(reply: Reply, name: str) -> str | None:
    """The value ``reply`` sets for cookie ``name`` (None: not set, or set empty to delete it)."""
    for header in reply.set_cookies:
        key, _, rest = header.partition("=")
        if key.strip() == name:
            value = rest.split(";", 1)[0].strip().strip('"')
            return value or None
    return None


CSRF_FIELD = "csrf_token"
_CSRF = re.compile(r'name="csrf_token" value="([^"]*)"')


@dataclass
class Browser:
    """The walk's browser on the HTML pages: a signed-in session, the pre-session cookie and their tokens."""

    port: int
    email: str
    password: str
    session: str = ""
    pre: str = ""
    csrf: str = ""  # forms of signed-in pages
    pre_csrf: str = ""  # sign-in and sign-up forms
    sign_ins: int = 0

    def cookie(self, signed_in: bool = True) -> tuple[bytes, bytes]:
        jar = [f"orb_pre={self.pre}"] + ([f"orb_session={self.session}"] if signed_in and self.session else [])
        return b"Cookie", "; ".join(jar).encode()

    def get(self, path: str, signed_in: bool = True) -> Reply:
        return send_raw(self.port, "GET", path.encode(), [self.cookie(signed_in)])

    def sign_in(self) -> None:
        """A fresh session through the sign-in form (as a person would), and the tokens its pages carry."""
        page = send_raw(self.port, "GET", b"/app/login", [self.cookie(False)] if self.pre else [])
        self.pre = cookie_value(page, "orb_pre") or self.pre
        self.pre_csrf = html.unescape(_CSRF.search(page.body.decode()).group(1))
        body = urlencode({CSRF_FIELD: self.pre_csrf, "email": self.email, "password": self.password}).encode()
        reply = send_raw(self.port, "POST", b"/app/login",
                         [self.cookie(False), (b"Content-Type", b"application/x-www-form-urlencoded")], body)
        session = cookie_value(reply, "orb_session")
        assert reply.status == 303 and session, f"sign-in failed: {reply.status} {reply.body[:300]!r}"
        self.session = session
        home = self.get("/app")
        assert home.status == 200, home.body[:300]
        self.csrf = html.unescape(_CSRF.search(home.body.decode()).group(1))
        self.sign_ins += 1

    def token_for(self, form: PageForm | None) -> str:
        return self.pre_csrf if form is not None and form.signed_out else self.csrf


def form_and_page_routes(app: Any) -> tuple[set[tuple[str, str]], list[str]]:
    """From the app's own router: every POST route that serves a page (a form's target), and every GET page.

    So a form route a plugin adds tomorrow is walked, and counted as not
    reached, without anyone writing it down.
    """
    from orbchain.web.pages import is_html_page

    pages = [r for r in app.router.routes() if r.resource is not None and is_html_page(r.handler)]
    posts = {("POST", r.resource.canonical) for r in pages if r.method == "POST"}
    gets = sorted({r.resource.canonical for r in pages if r.method == "GET"})
    return posts, gets


PAGES_PASSWORD = "s3cret-pass"


def page_world(port: int, email: str = "pages@example.com") -> tuple[Browser, dict[str, str]]:
    """A merchant of its own for the pages' forms (they rotate keys, sign out ...), with one of everything a
    page's path names (an invoice, a plan and a subscription to it, a link, a key), signed in as a browser."""
    reply = post_json(port, "/dashboard/auth/signup", {"email": email, "password": PAGES_PASSWORD})
    assert reply.status == 200, reply.body[:300]
    data = reply.json()["data"]
    jwt = {"Authorization": f"Bearer {data['token']}"}
    mkey = {"merchant_api_key": data["api_keys"]["merchant_api_key"]}

    def made(path: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        answer = post_json(port, path, body, headers)
        assert answer.status == 200, f"{path}: {answer.body[:300]!r}"
        return answer.json()["data"]

    invoice = made("/v1/payment/invoice", {"amount": "0.001", "currency": "BTC"}, mkey)
    plan = made("/dashboard/plans", {"label": "P", "amount_usd": "5", "interval_sec": 86400,
                                     "accepted_coins": ["BTC"]}, jwt)
    subscription = made("/v1/subscription", {"plan_id": plan["id"]}, mkey)
    link = made("/dashboard/payment-links", {"coin": "BTC"}, jwt)
    key = made("/dashboard/api-keys", {"label": "pages", "scopes": ["payment:read"]}, jwt)
    account = get_json(port, "/dashboard/account", jwt).json()["data"]["account"]
    ids = {"track_id": invoice["track_id"], "plan_id": plan["id"], "account_id": account["account_id"],
           "token": subscription["manage_url"].rsplit("/", 1)[-1], "slug": link["slug"], "key_id": key["id"],
           "event_id": "evt_unknown"}
    browser = Browser(port, email, PAGES_PASSWORD)
    browser.sign_in()
    return browser, ids
