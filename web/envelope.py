"""Response shapes of SPEC 2.1 and exact JSON request bodies.

Every V2 response is ``{data, message, error, status, version}``; a few
endpoints answer bare ``{data}`` (``data_only``). Bodies are parsed with
Decimal for every number, so amounts sent as JSON numbers stay exact.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any, Mapping

import orjson
from aiohttp import web

from ..core.types.errors import ApiError, PayloadTooLarge, ValidationError
from . import json_body
from .edge import parse_off_loop

ENVELOPE_VERSION = "2.0.0"
SERVER_NAME = "orbchain"  # the Server header of every answer: no product version for an attacker to read


_NUMBER_MARK = "\u0001orbchain-num:"
# Both encoders write the mark's control character as the escape \u0001.
_NUMBER_MARK_BYTES = b"\\u0001orbchain-num:"
_NUMBER_TOKEN = re.compile(rb'"\\u0001orbchain-num:(-?[0-9]+(?:\.[0-9]+)?)"')


class JsonNumber(str):
    """A Decimal to be written as a JSON number from its exact text (prices).

    Money amounts are strings in this API; the few informational numbers
    (USD prices) are numbers, and this keeps them from passing through float.
    """

    def __new__(cls, value: Decimal) -> "JsonNumber":
        text = format(value.normalize() if value != value.to_integral_value() else value.quantize(Decimal(1)), "f")
        return super().__new__(cls, _NUMBER_MARK + text)


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _stdlib(payload: Any) -> bytes:
    return json.dumps(payload, default=_default, separators=(",", ":")).encode()


def encode(payload: Any) -> bytes:
    """The compact UTF-8 JSON of ``payload``: orjson, else the standard library.

    orjson writes a typical answer several times faster (docs/decisions.md,
    "Hot path (continued)"). What it refuses, the standard library writes as
    before: integers past 64 bits, non-string keys, lone surrogates. Decimals
    are strings; ``JsonNumber`` marks become bare numbers.
    """
    try:
        body = orjson.dumps(payload, default=_default)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        body = _stdlib(payload)
    if _NUMBER_MARK_BYTES in body:
        body = _NUMBER_TOKEN.sub(rb"\1", body)
    return body


def dumps(payload: Any) -> str:
    """``encode`` as text (for ``web.json_response(dumps=...)`` and callers that want a str)."""
    return encode(payload).decode()


def json_answer(body: bytes, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    """A response carrying already-encoded JSON (no re-encoding of a text)."""
    return web.Response(body=body, status=status, headers=headers, content_type="application/json", charset="utf-8")


def envelope_bytes(data: Any, status: int = 200) -> bytes:
    """The JSON of a success envelope, for answers rendered once and served many times."""
    return encode({"data": data, "message": "OK", "error": None, "status": status, "version": ENVELOPE_VERSION})


def kept_envelope_bytes(data: Any) -> bytes:
    """``envelope_bytes`` for an answer a cache keeps, copied to its exact length.

    orjson's bytes keep the whole buffer it wrote into, about 8 times the
    text (12 KB for a 1.4 KB answer): harmless for a response sent and
    dropped, most of a cached answer's memory (docs/decisions.md, "Worker
    RSS growth").
    """
    return bytes(memoryview(envelope_bytes(data)))


def envelope_text(data: Any, status: int = 200) -> str:
    return envelope_bytes(data, status).decode()


def envelope(data: Any, status: int = 200, *, headers: Mapping[str, str] | None = None) -> web.Response:
    return json_answer(envelope_bytes(data, status), status, headers)


def data_only(data: Any, status: int = 200) -> web.Response:
    return json_answer(encode({"data": data}), status)


def error_body(error: ApiError) -> bytes:
    """The JSON of ``error``'s envelope (also written straight to a socket, web/connection_guard.py)."""
    return encode({
        "data": None,
        "message": error.message,
        "error": error.error_object(),
        "status": error.status,
        "version": ENVELOPE_VERSION,
    })


def error_response(error: ApiError, headers: Mapping[str, str] | None = None) -> web.Response:
    merged = {**error.headers, **(headers or {})}
    return json_answer(error_body(error), error.status, merged)


async def read_json(request: web.Request, *, required: bool = True) -> dict[str, Any]:
    """The JSON object body, numbers as Decimal; an empty body is ``{}`` when allowed.

    ``json_body`` refuses, each with a 400 naming ``body`` or the field, what
    used to crash or freeze the server: a non-JSON content type, a non-UTF-8
    encoding, nesting past 32 levels, unbounded numbers, unstorable text. A
    large body is parsed in the CPU pool (``edge.parse_off_loop``).
    """
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise PayloadTooLarge() from None
    if not raw.strip():
        if required:
            raise ValidationError({"body": "a JSON object is required"})
        return {}
    json_body.check_content_type(request.content_type, request.charset)
    return await parse_off_loop(request, json_body.parse_object, raw)
