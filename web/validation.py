"""Declarative checks for request bodies and query strings.

A route lists its fields once; ``validate`` returns the clean values or
raises one ``ValidationError`` whose detail names every bad field, so a
client fixes all problems in one round trip. Unknown fields are ignored
(be liberal in what is accepted).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import urlsplit

from multidict import MultiMapping

from ..core.types.errors import ValidationError
from ..core.types.messages import N_
from ..core.money.amounts import AmountError, parse_decimal

_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}$")

MISSING = object()


@dataclass(frozen=True)
class Field:
    """One field: its kind, whether required, and its limits.

    kinds: ``str``, ``int``, ``bool``, ``amount`` (Decimal, exact), ``list``
    (of strings), ``object``, ``url`` (http/https), ``email``.
    """

    name: str
    kind: str = "str"
    required: bool = False
    min_len: int | None = None
    max_len: int | None = None
    minimum: int | None = None
    maximum: int | None = None
    choices: Sequence[Any] | None = None
    default: Any = None
    aliases: tuple[str, ...] = ()
    upper: bool = False
    check: Callable[[Any], str | None] | None = None


# Integer fields land in BIGINT columns (or smaller); a field without its own
# bounds still never holds more than a signed 64-bit integer.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Unix seconds of 9999-12-31T23:59:59Z: the latest instant a timestamp field takes.
MAX_TIMESTAMP = 253_402_300_799
# ASCII digits only: ``\d`` and ``int()`` also take Arabic-Indic and full-width digits.
_INT_TEXT = re.compile(r"-?[0-9]{1,19}", re.ASCII)


def _as_int(value: Any, text: bool) -> int | None:
    """An integer from a JSON int, an integral JSON number or (``text`` sources only) a digit string.

    Values far beyond int64 come back as one step past the int64 range (never
    expanded): ``int(Decimal("1e1000000"))`` would build a million-digit int.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        if value.adjusted() > 19:
            return INT64_MAX + 1 if value > 0 else INT64_MIN - 1
        if value != value.to_integral_value():
            return None
        return int(value)
    if text and isinstance(value, str):
        return int_from_text(value)
    return None


def int_from_text(text: str) -> int | None:
    """The integer ``text`` writes (optional minus, 1-19 ASCII digits, spaces around ignored), else None.

    The one parser of integers written as text (query strings and form fields;
    a JSON body's integer fields take JSON integers only, ``validate``'s
    ``text``): ``int()`` of unbounded text raises past 4,300 digits (a 500)
    and ``str.isdigit`` passes ``²`` (then ``int`` raises) and Arabic-Indic digits.
    """
    stripped = text.strip()
    return int(stripped) if _INT_TEXT.fullmatch(stripped) else None


def form_integer(value: Any, name: str, *, minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> int:
    """A form field's text as an integer from ``minimum`` to ``maximum``; else a ValidationError naming ``name``."""
    number = int_from_text(value) if isinstance(value, str) else None
    if number is None:
        raise ValidationError({name: "must be a whole number"})
    if not minimum <= number <= maximum:
        raise ValidationError({name: f"must be a whole number from {minimum} to {maximum}"})
    return number


def _check_one(spec: Field, value: Any, text: bool) -> tuple[Any, str | None]:
    kind = spec.kind
    if kind in ("str", "url", "email"):
        if not isinstance(value, str):
            return None, "must be a string"
        value = value.strip()
        if spec.upper:
            value = value.upper()
        if spec.min_len is not None and len(value) < spec.min_len:
            return None, N_("must be at least %(min_len)d characters", min_len=spec.min_len)
        if spec.max_len is not None and len(value) > spec.max_len:
            return None, N_("must be at most %(max_len)d characters", max_len=spec.max_len)
        if kind == "url":
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                return None, "must be an http or https URL"
        if kind == "email":
            if not _EMAIL.match(value):
                return None, N_("must be an email address")
            value = value.lower()
    elif kind == "int":
        number = _as_int(value, text)
        if number is None:
            return None, "must be an integer" if text or not isinstance(value, str) else \
                "must be a JSON integer (a number without quotes)"
        value = number
        minimum = INT64_MIN if spec.minimum is None else spec.minimum
        maximum = INT64_MAX if spec.maximum is None else spec.maximum
        if value < minimum:
            return None, f"must be at least {minimum}"
        if value > maximum:
            return None, f"must be at most {maximum}"
    elif kind == "bool":
        if not isinstance(value, bool):
            return None, "must be true or false"
    elif kind == "amount":
        try:
            value = parse_decimal(value)
        except AmountError as exc:
            return None, exc.problem
        if value <= 0:
            return None, N_("must be greater than 0")
    elif kind == "list":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None, "must be an array of strings"
        value = [v.strip().upper() if spec.upper else v.strip() for v in value]
        if spec.min_len is not None and len(value) < spec.min_len:
            return None, f"must have at least {spec.min_len} item(s)"
        if spec.max_len is not None and len(value) > spec.max_len:
            return None, f"must have at most {spec.max_len} items"
        if spec.choices is not None:
            bad = [v for v in value if v not in spec.choices]
            if bad:
                return None, f"unsupported value(s): {', '.join(bad)}"
        return value, spec.check(value) if spec.check else None
    elif kind == "object":
        if not isinstance(value, dict):
            return None, "must be an object"
    else:  # pragma: no cover - programming error
        raise ValueError(f"unknown field kind {kind}")
    if spec.choices is not None and value not in spec.choices:
        return None, f"must be one of {', '.join(map(str, spec.choices))}"
    if spec.check is not None:
        problem = spec.check(value)
        if problem:
            return None, problem
    return value, None


def validate(source: Mapping[str, Any], fields: Sequence[Field], *, text: bool | None = None) -> dict[str, Any]:
    """Clean values for ``fields`` from a body or query mapping.

    ``text``: the values were typed as text (a query string, a form), so an
    integer field reads a digit string. A JSON body is typed: there an
    integer field takes a JSON integer only (SPEC 4 types ``lifetime``,
    ``interval_sec`` ... as integers) and ``"3600"`` is a 400. None decides
    by the source: aiohttp's query and form mappings (``MultiMapping``) are
    text, anything else (a JSON object) is not.
    """
    if text is None:
        text = isinstance(source, MultiMapping)
    clean: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for spec in fields:
        value = MISSING
        for key in (spec.name, *spec.aliases):
            if key in source and source[key] is not None and source[key] != "":
                value = source[key]
                break
        if value is MISSING:
            if spec.required:
                errors[spec.name] = N_("is required")
            else:
                clean[spec.name] = spec.default
            continue
        result, problem = _check_one(spec, value, text)
        if problem:
            errors[spec.name] = problem
        else:
            clean[spec.name] = result
    if errors:
        raise ValidationError(errors)
    return clean


def pagination(query: Mapping[str, str], *, default_limit: int, max_limit: int) -> tuple[int, int]:
    """``limit`` and ``offset`` from a query string, bounded per SPEC 8."""
    values = validate(query, [
        Field("limit", "int", minimum=1, maximum=max_limit, default=default_limit),
        Field("offset", "int", minimum=0, maximum=10**12, default=0),
    ], text=True)
    return values["limit"], values["offset"]


IDEMPOTENCY_HEADER = "X-Idempotency-Key"
IDEMPOTENCY_KEY = Field("idempotency_key", min_len=8, max_len=128)  # SPEC 8: 8-128 characters


def body_idempotency_key(body: Mapping[str, Any]) -> str | None:
    """A JSON body's optional ``idempotency_key``, taken exactly as sent (never stripped: a
    retry must repeat it byte for byte); 400 unless a string of 8-128 characters."""
    key = body.get("idempotency_key")
    if key is None:
        return None
    if not isinstance(key, str) or not 8 <= len(key) <= 128:
        raise ValidationError({"idempotency_key": "must be 8-128 characters"})
    return key


def idempotency_key(headers: Mapping[str, str], body_key: str | None) -> str | None:
    """The body's (already validated) ``idempotency_key`` or the ``X-Idempotency-Key``
    header; when both are given they must agree (a 400 names the field)."""
    header = headers.get(IDEMPOTENCY_HEADER)
    if header is None or not header.strip():
        return body_key
    header_key = validate({"idempotency_key": header}, [IDEMPOTENCY_KEY])["idempotency_key"]
    if body_key is not None and body_key != header_key:
        raise ValidationError({"idempotency_key": f"differs from the {IDEMPOTENCY_HEADER} header"})
    return header_key


def coin_units(coin: Any, value: Any, field: str = "amount") -> int:
    """Base units of ``value`` in ``coin``, or a validation error naming ``field``.

    Refuses amounts not above zero and amounts with more decimals than the coin has.
    """
    try:
        return coin.to_units(value)
    except AmountError as exc:
        raise ValidationError({field: exc.problem}) from None
