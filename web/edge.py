"""Text the gateway refuses at the door: NUL, lone surrogates, control characters.

``request_text_problems`` runs as a step of the edge middleware (web/middlewares.py).

PostgreSQL cannot store NUL in text at all, and no UTF-8 encoder (asyncpg's,
SQLite's, the JSON writer's) can encode a lone surrogate, so such text used to
reach the database and come back as a 500, on PostgreSQL even before
authentication (a path lookup, a login e-mail). Checking every piece of text
once here, in the path, the query string and the headers the gateway reads,
and in every string of a JSON body (``web.json_body``), gives the same 400
naming the field on both databases, and lets the rest of the code assume text
is storable.

``parse_off_loop`` is the other door rule, for the JSON and form readers
(``web/envelope.read_json``, ``web/form_body.read_form``): parsing a 1 MiB
body costs up to a quarter of a second of CPU, so a body over
``INLINE_PARSE_BYTES`` is parsed in the gateway's bounded CPU pool
(``core/infra/cpu_pool.py``), never on the event loop.
"""

from __future__ import annotations

import re
from typing import Callable, Mapping, TypeVar

from aiohttp import web
from multidict import CIMultiDictProxy

from .keys import GATEWAY

T = TypeVar("T")

# Parsing this much of the most expensive JSON (30-level nesting) or form text costs about 4 ms.
INLINE_PARSE_BYTES = 16 * 1024

# C0 controls except tab, newline and carriage return (harmless in free text).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
REFUSED_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")
# In a path every control character is refused, whitespace controls included.
_PATH_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Headers whose value the gateway reads (keys, idempotency, client address).
# aiohttp decodes header bytes as UTF-8 with surrogateescape, so invalid UTF-8
# there shows up as lone surrogates too.
CHECKED_HEADERS = (
    "Authorization",
    "merchant_api_key",
    "payout_api_key",
    "general_api_key",
    "X-Idempotency-Key",
    "X-Forwarded-For",
)


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be taken as text, or None when it can."""
    if not REFUSED_TEXT.search(value):  # the common case: one scan
        return None
    if "\x00" in value:
        return "must not contain NUL characters"
    if _SURROGATE.search(value):
        return "must be valid Unicode (no unpaired surrogates)"
    if _CONTROL.search(value):
        return "must not contain control characters"
    return None


def _path_problem(path: str) -> str | None:
    problem = text_problem(path)
    if problem is None and _PATH_CONTROL.search(path):
        return "must not contain control characters"
    return problem


def request_text_problems(path: str, query: Mapping[str, str], headers: CIMultiDictProxy[str]) -> dict[str, str]:
    """Field -> problem for the path, every query key and value, and ``CHECKED_HEADERS``."""
    errors: dict[str, str] = {}
    problem = _path_problem(path)
    if problem:
        errors["path"] = problem
    for key, value in query.items():
        key_problem = text_problem(key)
        if key_problem:
            errors["query"] = f"parameter name {key_problem}"
            continue
        problem = text_problem(value)
        if problem:
            errors[key] = problem
    for name in CHECKED_HEADERS:
        if name not in headers:  # the common case: no list built for an absent header
            continue
        for value in headers.getall(name):  # a repeated header: every copy
            problem = text_problem(value)
            if problem:
                errors[name] = problem
    return errors



async def parse_off_loop(request: web.Request, parse: Callable[[bytes], T], raw: bytes) -> T:
    """``parse(raw)``: on the loop when ``raw`` is small, else in the gateway's CPU pool (503 busy when full)."""
    if len(raw) <= INLINE_PARSE_BYTES:
        return parse(raw)
    return await request.app[GATEWAY].cpu.run(parse, raw)
