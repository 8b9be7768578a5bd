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

from aiohttp import web

from ..core.errors import ApiError, PayloadTooLarge, ValidationError
from . import json_body

ENVELOPE_VERSION = "2.0.0"


_NUMBER_MARK = "\u0001orbchain-num:"
_NUMBER_TOKEN = re.compile(r'"\\u0001orbchain-num:(-?[0-9]+(?:\.[0-9]+)?)"')


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


def dumps(payload: Any) -> str:
    text = json.dumps(payload, default=_default, separators=(",", ":"))
    if "\\u0001orbchain-num:" in text:
        text = _NUMBER_TOKEN.sub(r"\1", text)
    return text


def envelope_text(data: Any, status: int = 200) -> str:
    """The JSON text of a success envelope, for answers rendered once and served many times."""
    return dumps({"data": data, "message": "OK", "error": None, "status": status, "version": ENVELOPE_VERSION})


def envelope(data: Any, status: int = 200, *, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.json_response(text=envelope_text(data, status), status=status, headers=headers)


def data_only(data: Any, status: int = 200) -> web.Response:
    return web.json_response({"data": data}, status=status, dumps=dumps)


def error_response(error: ApiError, headers: Mapping[str, str] | None = None) -> web.Response:
    body = {
        "data": None,
        "message": error.message,
        "error": error.error_object(),
        "status": error.status,
        "version": ENVELOPE_VERSION,
    }
    merged = {**error.headers, **(headers or {})}
    return web.json_response(body, status=error.status, dumps=dumps, headers=merged)


async def read_json(request: web.Request, *, required: bool = True) -> dict[str, Any]:
    """The JSON object body, numbers as Decimal; an empty body is ``{}`` when allowed.

    ``json_body`` refuses, each with a 400 naming ``body`` or the field, what
    used to crash or freeze the server: a non-JSON content type, a non-UTF-8
    encoding, nesting past 32 levels, unbounded numbers, unstorable text.
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
    body = json_body.parse(json_body.decode(raw))
    if not isinstance(body, dict):
        raise ValidationError({"body": "must be a JSON object"})
    return body
