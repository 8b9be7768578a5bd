"""HTML form bodies, read through the same edge as JSON bodies (issue 29): ``read_form`` is the one reader.

The JSON API refused NUL, lone surrogates and non-UTF-8 text at the door
(``web.edge``, ``web.json_body``), but the pages' forms were read with
``request.post()`` and went straight to the handlers: NUL in a subscribe or
sign-in form reached PostgreSQL (500, ``CharacterNotInRepertoireError``),
and a page took the body in whatever charset it named. Every form now comes
through here, so for every page:

- text is UTF-8, strictly: raw bytes and percent-escapes that are not UTF-8
  and any charset but UTF-8 are a 400, never decoded with a guess;
- every field name and value passes ``edge.text_problem`` (NUL, lone
  surrogates, C0 controls other than tab, newline and carriage return);
- at most ``MAX_FIELDS`` fields; a body over ``INLINE_PARSE_BYTES`` is parsed
  in the CPU pool (``edge.parse_off_loop``), so a 1 MiB form costs the event
  loop nothing;
- ``multipart/form-data`` only where the page takes a file (``files=True``);
  aiohttp bounds its size and fields, and its text parts are checked alike.

A body of another content type reads as an empty form (as aiohttp's
``post()`` did), which the page then refuses for what is missing. Each
refusal is a ``ValidationError`` naming ``body`` or the field; on a page the
error middleware renders it as the HTML error page with status 400.
Integer fields are then parsed by ``web.validation``'s one bounded parser.
"""

from __future__ import annotations

from typing import Any, Iterable
from urllib.parse import parse_qsl

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from multidict import MultiDict, MultiDictProxy

from ..core.types.errors import PayloadTooLarge, ValidationError
from .edge import parse_off_loop, text_problem

URLENCODED = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
# More than any page's form has (the settings page's one field per coin is the most).
MAX_FIELDS = 256
MAX_NAME_SHOWN = 64  # of a refused field's name, on the error page
_NOT_UTF8 = "must be a form encoded as UTF-8"

Form = MultiDictProxy[Any]  # str values, and web.FileField for the file fields of a multipart form


def _checked(pairs: Iterable[tuple[str, Any]]) -> MultiDict[Any]:
    """The pairs as a MultiDict once every name and text value is storable text."""
    form: MultiDict[Any] = MultiDict()
    for name, value in pairs:
        problem = text_problem(name)
        if problem:
            raise ValidationError({"body": f"has a field name that {problem}"})
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                raise ValidationError({name[:MAX_NAME_SHOWN]: problem})  # the error page names the field
        if len(form) == MAX_FIELDS:
            raise ValidationError({"body": f"has more than {MAX_FIELDS} fields"})
        form.add(name, value)
    return form


def parse_urlencoded(raw: bytes) -> MultiDict[str]:
    """Fields of an ``application/x-www-form-urlencoded`` body, strictly UTF-8, checked (may run in the pool)."""
    try:
        text = raw.decode("utf-8").rstrip()
    except UnicodeDecodeError:
        raise ValidationError({"body": _NOT_UTF8}) from None
    if text.count("&") >= MAX_FIELDS:  # before parsing: a million empty fields cost a second to split
        raise ValidationError({"body": f"has more than {MAX_FIELDS} fields"})
    try:
        pairs = parse_qsl(text, keep_blank_values=True, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:  # a percent-escape that is not UTF-8
        raise ValidationError({"body": _NOT_UTF8}) from None
    return _checked(pairs)


def _charset_is_utf8(request: web.Request) -> bool:
    charset = request.charset
    return charset is None or charset.lower().replace("-", "").replace("_", "") == "utf8"


async def read_form(request: web.Request, *, files: bool = False) -> Form:
    """The request's form, refused (400) unless its text is storable UTF-8; see the module docstring.

    ``files``: the page takes ``multipart/form-data`` (a file upload); elsewhere it is refused.
    """
    content_type = request.content_type
    if content_type == MULTIPART:
        if not files:
            raise ValidationError({"body": f"must be sent as {URLENCODED}"})
        return MultiDictProxy(_checked((await _multipart(request)).items()))
    if content_type not in ("", URLENCODED):
        return MultiDictProxy(MultiDict())
    if not _charset_is_utf8(request):
        raise ValidationError({"body": _NOT_UTF8})
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise PayloadTooLarge() from None
    return MultiDictProxy(await parse_off_loop(request, parse_urlencoded, raw))


async def _multipart(request: web.Request) -> MultiDictProxy[Any]:
    """aiohttp's multipart reading (size and field count bounded by the app), its failures as 400/413."""
    try:
        return await request.post()
    except web.HTTPRequestEntityTooLarge:
        raise PayloadTooLarge() from None
    except (UnicodeDecodeError, LookupError):  # a text part in a charset that is not UTF-8, or none known
        raise ValidationError({"body": _NOT_UTF8}) from None
    except (ValueError, AssertionError, HttpProcessingError):  # malformed: aiohttp raises (or asserts) these
        raise ValidationError({"body": "is not a well-formed multipart form"}) from None
