"""Payer pages in the payer's language: which language a request gets, and the catalogues' lookups.

A page's language is, in order: a valid ``?lang=`` (the pages' switcher
links; remembered in the ``orbchain_lang`` cookie), the cookie, the
``Accept-Language`` header by its q-values, else English. Anything else
(an unknown code, a huge or hostile value) is ignored, never echoed.

Templates translate through ``jinja2.ext.i18n`` (``install`` puts this
module's lookups on the environment once); the lookups read the language
of the request being answered from a context variable the edge middleware
sets (``bind``), so one environment serves every language and a page
rendered outside a request (a test, the malformed-request page) is
English. Catalogues are flat: ``<dir>/<lang>.mo`` compiled from
``<dir>/<lang>.po`` (``make catalogues``; docs/decisions.md "Payer pages
in eight languages"). Plugins add their own with ``add_catalogue``.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import jinja2
from aiohttp import hdrs, web
from babel.dates import format_skeleton
from markupsafe import Markup
from babel.support import NullTranslations, Translations

from ..core.infra.bounded import LruMap
from ..core.types.messages import Translatable

__all__ = ["COOKIE", "DEFAULT", "LANGUAGES", "add_catalogue", "bind", "choose", "format_timestamp", "gettext",
           "gettext_noop", "html_lang", "install", "language", "mark_page_response", "ngettext",
           "parse_accept_language", "pgettext", "translate", "using_language"]

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "orbchain"
DEFAULT = "en"
# Code (the switcher's ?lang= value and the catalogue's file name) -> the language's own name.
LANGUAGES: dict[str, str] = {
    "en": "English", "es": "Español", "pt": "Português", "ru": "Русский", "zh": "简体中文",
    "de": "Deutsch", "fr": "Français", "tr": "Türkçe",
}
_HTML_LANG = {"zh": "zh-Hans"}  # <html lang> where it is not the code itself
_BABEL_LOCALE = {"zh": "zh_Hans_CN"}
_TRADITIONAL = {"hant", "tw", "hk", "mo"}  # Chinese the Simplified catalogue does not serve
COOKIE = "orbchain_lang"
COOKIE_MAX_AGE = 365 * 86400
QUERY = "lang"
_LANG_KEY = web.RequestKey("orbchain_lang", str)
MAX_HEADER = 1024  # an Accept-Language longer than this is read up to here
MAX_RANGES = 32
_TAG = re.compile(r"[A-Za-z]{1,8}(?:[-_][A-Za-z0-9]{1,8})*|\*")
_Q = re.compile(r"q=(0(?:\.\d{0,3})?|1(?:\.0{0,3})?)", re.IGNORECASE)

def gettext_noop(message: str) -> str:
    """Mark ``message`` for the catalogue where it is defined; ``gettext`` translates it where it is shown."""
    return message


_request: ContextVar[web.Request | None] = ContextVar("orbchain_page_request", default=None)
_override: ContextVar[str | None] = ContextVar("orbchain_page_language", default=None)
_extra: list[tuple[Path, str]] = []  # plugin catalogues, in the order they were added


def language_of_tag(tag: str) -> str | None:
    """The served language a language tag (BCP 47, ``pt-BR``, ``zh_Hans``) asks for; None when none is."""
    if len(tag) > 35 or not _TAG.fullmatch(tag):
        return None
    primary, *rest = tag.lower().replace("_", "-").split("-")
    if primary not in LANGUAGES:
        return None
    if primary == "zh" and _TRADITIONAL.intersection(rest):
        return None
    return primary


def parse_accept_language(header: str) -> list[str]:
    """The served languages an ``Accept-Language`` header asks for, best first (q-values in thousandths,
    ties in the header's order; ``q=0`` and malformed ranges dropped)."""
    ranked: list[tuple[int, int, str]] = []
    for position, part in enumerate(header[:MAX_HEADER].split(",")[:MAX_RANGES]):
        tag, _, params = part.strip().partition(";")
        weight = 1000
        params = params.strip()
        if params:
            match = _Q.fullmatch(params.replace(" ", ""))
            if match is None:
                continue
            whole, _, fraction = match.group(1).partition(".")
            weight = int(whole) * 1000 + int((fraction + "000")[:3])
        code = language_of_tag(tag.strip())
        if code is not None and weight > 0:
            ranked.append((-weight, position, code))
    seen: list[str] = []
    for _, _, code in sorted(ranked):
        if code not in seen:
            seen.append(code)
    return seen


def choose(query: str | None, cookie: str | None, accept: str | None) -> str:
    """The page's language: the switcher's choice, the remembered one, the browser's, else English."""
    for value in (query, cookie):
        if value and value.lower() in LANGUAGES:
            return value.lower()
    if accept:
        return _browser_language(accept[:MAX_HEADER])
    return DEFAULT


# Distinct Accept-Language values are few (a browser sends the same one on every view): each is parsed once
# per process. Bounded: a client making up a header per request only evicts (docs/decisions.md, issue 47).
_ACCEPTED: LruMap[str, str] = LruMap(512)


def _browser_language(accept: str) -> str:
    """``parse_accept_language``'s first language (else English), remembered per header value."""
    code = _ACCEPTED.get(accept)
    if code is None:
        ranked = parse_accept_language(accept)
        code = ranked[0] if ranked else DEFAULT
        _ACCEPTED.put(accept, code)
    return code


def requested_language(request: web.Request) -> str:
    """``choose`` for ``request``, worked out once per request."""
    code = request.get(_LANG_KEY)
    if code is None:
        code = request[_LANG_KEY] = choose(request.query.get(QUERY) if request.query_string else None,
                                           request.cookies.get(COOKIE), request.headers.get(hdrs.ACCEPT_LANGUAGE))
    return code


def bind(request: web.Request) -> None:
    """Make ``request`` the one whose language lookups answer in (the edge middleware, per request)."""
    _request.set(request)


def language() -> str:
    """The language of the page being rendered: the ``using_language`` override, the request's, else English."""
    code = _override.get()
    if code is not None:
        return code
    request = _request.get()
    return DEFAULT if request is None else requested_language(request)


@contextmanager
def using_language(code: str) -> Iterator[None]:
    """Render in ``code`` (a key of ``LANGUAGES``) whatever the request asks: tests, mails, jobs."""
    if code not in LANGUAGES:
        raise ValueError(f"unknown language {code!r}")
    token = _override.set(code)
    try:
        yield
    finally:
        _override.reset(token)


def html_lang(code: str | None = None) -> str:
    """The ``<html lang>`` value of ``code`` (default: the current language)."""
    code = code or language()
    return _HTML_LANG.get(code, code)


def add_catalogue(directory: Path | str, domain: str) -> None:
    """Add a plugin's catalogue: ``<directory>/<lang>.mo`` files, looked up after the core's (a message the
    core translates keeps the core's wording). Idempotent; call it when the plugin's module is imported."""
    entry = (Path(directory), domain)
    if entry not in _extra:
        _extra.append(entry)
        translations.cache_clear()


def _load(path: Path, domain: str) -> NullTranslations | None:
    if not path.is_file():
        return None
    with path.open("rb") as file:
        return Translations(file, domain=domain)


@lru_cache(maxsize=len(LANGUAGES))
def translations(code: str) -> NullTranslations:
    """The core catalogue of ``code`` with the plugins' after it (English: the messages as written)."""
    chain: NullTranslations = NullTranslations()
    if code == DEFAULT:
        return chain
    found = [t for t in ([_load(LOCALE_DIR / f"{code}.mo", DOMAIN)]
                         + [_load(directory / f"{code}.mo", domain) for directory, domain in _extra]) if t]
    if not found:
        return chain
    head = found[0]
    for later in found[1:]:
        head.add_fallback(later)
    return head


def gettext(message: str, **variables: Any) -> str:
    """``message`` in the current page's language, ``%(name)s`` placeholders filled from ``variables``."""
    text = translations(language()).gettext(message)
    return text % variables if variables else text


def pgettext(context: str, message: str, **variables: Any) -> str:
    """``message`` as said in ``context`` (a word whose gender or number differs: a payment's "Expired"
    is not a subscription's), in the current language."""
    text = str(translations(language()).pgettext(context, message))
    return text % variables if variables else text


def translate(text: str) -> str:
    """A problem the core or a plugin raised, in the current language: a ``Translatable`` by its message id
    and named values (core/types/messages.py), any other text as the catalogue has it (else as it is)."""
    if isinstance(text, Translatable):
        return gettext(text.msgid, **text.values)
    return gettext(str(text))


def ngettext(singular: str, plural: str, n: int, **variables: Any) -> str:
    """The singular or plural form for ``n`` in the current language; ``%(num)d`` is ``n``."""
    text = translations(language()).ngettext(singular, plural, n)
    return text % {"num": n, **variables}


class _CurrentTranslations:
    """What ``install_gettext_translations`` is given: every lookup goes to the current page's catalogue."""

    def gettext(self, message: str) -> str:
        return translations(language()).gettext(message)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return translations(language()).ngettext(singular, plural, n)

    def pgettext(self, context: str, message: str) -> str:
        return str(translations(language()).pgettext(context, message))

    def npgettext(self, context: str, singular: str, plural: str, n: int) -> str:
        return translations(language()).npgettext(context, singular, plural, n)


@lru_cache(maxsize=4096)
def _formatted(timestamp: int, code: str) -> str:
    when = datetime.fromtimestamp(timestamp, UTC)
    locale = _BABEL_LOCALE.get(code, code)
    # The date in the language's own order and month names, the time on the 24-hour clock every language reads.
    return (f"{format_skeleton('yMMMd', when, tzinfo=UTC, locale=locale)} "
            f"{format_skeleton('Hm', when, tzinfo=UTC, locale=locale)} UTC")


def format_timestamp(timestamp: int | None) -> str:
    """A Unix time as the payer reads a date in their language (Babel's CLDR data), in UTC, to the minute."""
    return "" if timestamp is None else _formatted(int(timestamp), language())


def switcher() -> list[dict[str, Any]]:
    """The language links every payer page shows (``base.html``): relative ``?lang=`` links, no JavaScript."""
    current = language()
    return [{"code": code, "name": name, "html_lang": html_lang(code), "current": code == current}
            for code, name in LANGUAGES.items()]


def install(env: jinja2.Environment) -> None:
    """Give ``env`` the i18n extension, bound to the current page's language, and the pages' helpers."""
    env.add_extension("jinja2.ext.i18n")
    env.install_gettext_translations(_CurrentTranslations(), newstyle=True)  # type: ignore[attr-defined]
    env.globals.update(page_lang=html_lang, language_links=switcher, Markup=Markup)
    env.filters["payer_datetime"] = format_timestamp
    env.filters["translate"] = translate


def mark_page_response(request: web.Request, response: web.StreamResponse) -> None:
    """A payer page's answer: it varies with the language asked for, and a switcher choice is remembered."""
    response.headers.add(hdrs.VARY, "Accept-Language")
    response.headers.add(hdrs.VARY, "Cookie")
    chosen = request.query.get(QUERY) if request.query_string else None
    if chosen and chosen.lower() in LANGUAGES and request.cookies.get(COOKIE) != chosen.lower():
        response.set_cookie(COOKIE, chosen.lower(), max_age=COOKIE_MAX_AGE, path="/", httponly=True,
                            samesite="Lax")
