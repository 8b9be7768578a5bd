"""Strict JSON request bodies: type, encoding, nesting, numbers and text checked before use.

Every check here is a way a body used to crash or freeze the gateway:

- ``json.loads`` recurses once per nesting level; ~75,000 nested arrays blow
  the C stack and kill the process. The depth is measured first by a linear
  scan (``nested_deeper_than``), so json never sees a body deeper than
  ``MAX_DEPTH``.
- A JSON number like ``1e1000000`` is cheap as a Decimal but takes minutes to
  turn into an int; every number's exponent (and, in a body with long digit
  runs, its digits: ``money.check_bounds``) is bounded before any field looks at it.
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

from ..core.types.errors import ValidationError
from ..core.money.amounts import MAX_DIGITS, MAX_SCALE, AmountError, check_bounds
from .edge import REFUSED_TEXT as _TEXT_REFUSED, text_problem

MAX_DEPTH = 32
# Values in one body (counted by the commas between them). The largest body the API takes, a batch of
# 100 payouts, holds about 600. Without a bound a 1 MiB body of 200,000 values took the event loop
# 30 ms just to free after the answer (issue 29).
MAX_VALUES = 10_000
# 10**78 fits in 260 bits; no integer field takes more (amounts, ids, timestamps).
MAX_INT_BITS = 4 * MAX_DIGITS
MAX_REPORTED = 10

_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_JSON_TYPE = re.compile(r"application/(?:[^/;\s]+\+)?json")
_BOM = b"\xef\xbb\xbf"
# Outside strings, a number can only be out of bounds with an exponent or with
# more digits in a row than any bounded number has.
_EXPONENT = re.compile(r"[0-9][eE]")
_LONG_DIGITS = re.compile(rf"[0-9]{{{MAX_DIGITS + 1}}}")


def _outside_strings(text: str) -> str:
    return _STRING.sub("", text)


def nested_deeper_than(text: str, limit: int, *, strings_removed: bool = False) -> bool:
    """Whether brackets in ``text`` (strings skipped) nest deeper than ``limit``.

    Linear time and no recursion, whatever the input. A closing bracket of the
    wrong kind still counts as closing, so the depth measured is never below
    the depth json would recurse to before it reports the error.
    """
    brackets = _NOT_BRACKET.sub("", text if strings_removed else _outside_strings(text))
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


def parse_object(raw: bytes) -> dict[str, Any]:
    """The JSON object ``raw`` holds (``decode``, ``parse``, then a 400 unless an object).

    One call, so the CPU pool runs all of it for a large body, the refusal
    included: a refused body is then freed on the pool's thread too.
    """
    body = parse(decode(raw))
    if not isinstance(body, dict):
        raise ValidationError({"body": "must be a JSON object"})
    return body


def parse(text: str) -> Any:
    """The parsed body, once its nesting is known to be shallow and its numbers and text sane.

    The value walk only runs when the text can hold a problem: a string can
    only carry NUL, a control character or a lone surrogate through an escape
    (``\\u0000``, ``\\b``; strict UTF-8 decoding and json's strict mode refuse
    them raw), and a number can only be out of bounds with an exponent or a
    run of more than ``MAX_DIGITS`` digits. Ordinary bodies skip it.
    """
    bare = _outside_strings(text)
    if nested_deeper_than(bare, MAX_DEPTH, strings_removed=True):
        raise ValidationError({"body": f"is nested deeper than {MAX_DEPTH} levels"})
    if bare.count(",") >= MAX_VALUES:
        raise ValidationError({"body": f"holds more than {MAX_VALUES} values"})
    try:
        body = json.loads(text, parse_float=Decimal, object_pairs_hook=_object_without_twins)
    except ValueError:  # includes ints past Python's 4300-digit conversion limit
        raise ValidationError({"body": "is not valid JSON"}) from None
    strings, numbers = "\\" in text, _EXPONENT.search(bare) is not None
    long_numbers = _LONG_DIGITS.search(bare) is not None
    if (strings or numbers or long_numbers) and isinstance(body, (dict, list)):
        errors = _problems(body, strings=strings, numbers=numbers or long_numbers, exact=long_numbers)
        if errors:
            raise ValidationError(errors)
    return body


def _object_without_twins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are distinct.

    ``{"amount": "1", "amount": "1000"}`` means one thing to a proxy or a
    log reader that keeps the first and another to ``json.loads``, which
    keeps the last: money requests must not be ambiguous, so twins are a 400.
    """
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValidationError({"body": "has an object with the same key twice"})
    return obj


def _decimal_problem(value: Decimal, exact: bool) -> str | None:
    """Out-of-bounds problem of a JSON number; ``exact`` when its digits may be too many.

    Without a run of more than MAX_DIGITS digits in the body every coefficient
    is short, and the exponent alone (``adjusted``, no tuple built) decides.
    """
    if exact:
        try:
            check_bounds(value)
        except AmountError as exc:
            return str(exc)
        return None
    magnitude = value.adjusted()
    if magnitude >= MAX_DIGITS:
        return "is too large"
    if magnitude < -MAX_SCALE:
        return f"has more than {MAX_SCALE} decimal places"
    return None


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return key if path == "body" else f"{path}.{key}"


def _problems(body: Any, *, strings: bool, numbers: bool, exact: bool) -> dict[str, str]:
    """Field path -> problem for every string, key and number in ``body``.

    Iterative, and scalars are checked inline rather than by a call each: a
    1 MB body holds a quarter of a million values and this runs on the event loop.
    """
    out: dict[str, str] = {}
    stack: list[tuple[str, Any]] = [("body", body)]
    while stack and len(out) < MAX_REPORTED:
        path, node = stack.pop()
        for key, item in (node.items() if type(node) is dict else enumerate(node)):
            if strings and type(key) is str and _TEXT_REFUSED.search(key):
                out[path] = f"has a key that {text_problem(key)}"
                continue
            kind = type(item)
            if kind is str:
                if strings and _TEXT_REFUSED.search(item):
                    out[_child(path, key)] = text_problem(item) or ""
            elif kind is Decimal:
                problem = _decimal_problem(item, exact) if numbers else None
                if problem:
                    out[_child(path, key)] = problem
            elif kind is int:
                if numbers and item.bit_length() > MAX_INT_BITS:
                    out[_child(path, key)] = "is too large"
            elif kind is dict or kind is list:
                stack.append((_child(path, key), item))
    return out
