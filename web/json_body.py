"""Strict JSON request bodies: type, encoding, nesting, numbers and text checked before use.

Every check here is a way a body used to crash or freeze the gateway:

- ``json.loads`` recurses once per nesting level; ~75,000 nested arrays blow
  the C stack and kill the process. The depth is measured first by a linear
  scan (``nested_deeper_than``), so json never sees a body deeper than
  ``MAX_DEPTH``.
- A JSON number like ``1e1000000`` is cheap as a Decimal but takes minutes to
  turn into an int; every number is bounded (``money.check_bounds``) before
  any field looks at it.
- NUL and lone surrogates (``"\\ud800"``) in a string or key cannot be stored
  (``web.edge.text_problem``).
- ``json.loads`` on bytes guesses UTF-16/UTF-32 and skips a BOM; bodies must be
  UTF-8 without a BOM, sent as ``application/json`` (or ``application/*+json``).

Each refusal is a 400 validation error naming ``body`` or the field path.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from itertools import accumulate
from typing import Any

from ..core.errors import ValidationError
from ..core.money import MAX_DIGITS, AmountError, check_bounds
from .edge import text_problem

MAX_DEPTH = 32
# 10**78 fits in 260 bits; no integer field takes more (amounts, ids, timestamps).
MAX_INT_BITS = 4 * MAX_DIGITS
MAX_REPORTED = 10

_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_JSON_TYPE = re.compile(r"application/(?:[^/;\s]+\+)?json")
_BOM = b"\xef\xbb\xbf"


def nested_deeper_than(text: str, limit: int) -> bool:
    """Whether brackets in ``text`` (strings skipped) nest deeper than ``limit``.

    Linear time and no recursion, whatever the input. A closing bracket of the
    wrong kind still counts as closing, so the depth measured is never below
    the depth json would recurse to before it reports the error.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if brackets.count("[") + brackets.count("{") <= limit:
        return False
    return max(accumulate(map(_STEP.__getitem__, brackets))) > limit


def check_content_type(content_type: str, charset: str | None) -> None:
    """JSON bodies come as ``application/json`` or ``application/*+json``, in UTF-8."""
    if not _JSON_TYPE.fullmatch(content_type.lower()):
        raise ValidationError({"body": "must be sent with Content-Type: application/json"})
    if charset is not None and charset.lower().replace("-", "") != "utf8":
        raise ValidationError({"body": "must be encoded as UTF-8"})


def decode(raw: bytes) -> str:
    """UTF-8 text of ``raw``; a BOM or any other encoding is refused."""
    if raw.startswith(_BOM):
        raise ValidationError({"body": "must be UTF-8 without a byte order mark"})
    # NUL bytes are never valid JSON text; they mean UTF-16/UTF-32 (which json.loads would guess).
    if b"\x00" in raw:
        raise ValidationError({"body": "must be encoded as UTF-8"})
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError({"body": "must be encoded as UTF-8"}) from None


def parse(text: str) -> Any:
    """``json.loads`` with exact numbers, once the nesting is known to be shallow."""
    if nested_deeper_than(text, MAX_DEPTH):
        raise ValidationError({"body": f"is nested deeper than {MAX_DEPTH} levels"})
    try:
        return json.loads(text, parse_float=Decimal)
    except ValueError:  # includes ints past Python's 4300-digit conversion limit
        raise ValidationError({"body": "is not valid JSON"}) from None


def _problems(value: Any, path: str, out: dict[str, str]) -> None:
    """Field path -> problem for every string, key and number in ``value`` (depth is bounded)."""
    if len(out) >= MAX_REPORTED:
        return
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            out[path] = problem
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            out[path] = "is too large"
    elif isinstance(value, Decimal):
        try:
            check_bounds(value)
        except AmountError as exc:
            out[path] = str(exc)
    elif isinstance(value, dict):
        for key, item in value.items():
            problem = text_problem(key)
            if problem:
                out[path] = f"has a key that {problem}"
                continue
            _problems(item, key if path == "body" else f"{path}.{key}", out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _problems(item, f"{path}[{index}]", out)


def check_values(body: Any) -> None:
    """400 naming each field whose string or number the gateway could not store or convert."""
    errors: dict[str, str] = {}
    _problems(body, "body", errors)
    if errors:
        raise ValidationError(errors)
