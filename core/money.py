"""Exact money at the edge: decimal strings in, base-unit integers inside.

Amounts never pass through ``float``. JSON bodies are parsed with
``parse_float=Decimal`` so a client sending ``0.1`` as a number is read as
exactly one tenth; these helpers then turn that into base units and refuse
anything the coin cannot represent.
"""

from __future__ import annotations

import json
import re
from decimal import ROUND_DOWN, Decimal, InvalidOperation, localcontext
from typing import Any

# 78 digits holds 2**256, the largest amount any supported chain can express.
MAX_DIGITS = 78
# The finest amount any field takes: 10**-MAX_DIGITS (no coin has more than 18 decimals,
# and fiat/USD amounts far fewer). Bounding the exponent this way keeps every later
# scaleb/quantize/int() on the value small, so "1e900000" costs microseconds, not minutes.
MAX_SCALE = MAX_DIGITS
# ASCII only: Decimal() also reads Arabic-Indic and full-width digits, "1_000", "NaN", "Infinity".
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,6})?", re.ASCII)


class AmountError(ValueError):
    """An amount is not a positive, finite number representable in the coin."""


def parse_decimal(value: Any) -> Decimal:
    """Read a decimal string or an exact JSON number; reject floats and junk."""
    if isinstance(value, bool) or isinstance(value, float):
        # A float already lost exactness before it reached us.
        raise AmountError("must be a decimal string")
    if isinstance(value, int):
        if value.bit_length() > 4 * MAX_DIGITS:  # cheap, and long before str() of it would be slow
            raise AmountError("is too large")
        number = Decimal(value)
    elif isinstance(value, Decimal):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if not text or len(text) > MAX_DIGITS + 2 or not _DECIMAL_TEXT.fullmatch(text):
            raise AmountError("must be a decimal string")
        try:
            number = Decimal(text)
        except InvalidOperation:
            raise AmountError("must be a decimal string") from None
    else:
        raise AmountError("must be a decimal string")
    if not number.is_finite():
        raise AmountError("must be a finite number")
    check_bounds(number)
    return number


def check_bounds(number: Decimal) -> None:
    """Refuse a finite Decimal no money field can hold, before any arithmetic on it.

    Decimal keeps ``1E+900000`` as three small fields; it is ``int()``, ``scaleb``
    and quantizing that expand it to a million digits and freeze the event loop.
    Looking at the tuple costs nothing whatever the exponent.
    """
    _sign, digits, exponent = number.as_tuple()
    if not isinstance(exponent, int):  # NaN/Infinity
        raise AmountError("must be a finite number")
    if len(digits) > MAX_DIGITS + MAX_SCALE:
        raise AmountError("has too many digits")
    if exponent < -MAX_SCALE:
        raise AmountError(f"has more than {MAX_SCALE} decimal places")
    if len(digits) + exponent > MAX_DIGITS:  # the integer part alone has more than MAX_DIGITS digits
        raise AmountError("is too large")


def to_base_units(value: Any, decimals: int, *, allow_zero: bool = False) -> int:
    """Convert a coin-unit amount to an integer count of base units.

    Raises ``AmountError`` when the amount is not above zero (unless
    ``allow_zero``) or has more decimal places than the coin has.
    """
    number = parse_decimal(value)
    if number < 0 or (number == 0 and not allow_zero):
        raise AmountError("must be greater than 0")
    exponent = number.as_tuple().exponent
    if isinstance(exponent, int) and -exponent > decimals and number != number.to_integral_value():
        normalized = number.normalize().as_tuple().exponent
        if isinstance(normalized, int) and -normalized > decimals:  # int: the number is finite
            raise AmountError(f"has more than {decimals} decimal places")
    with localcontext() as ctx:
        ctx.prec = MAX_DIGITS + 30
        units = number.scaleb(decimals)
        if units != units.to_integral_value():
            raise AmountError(f"has more than {decimals} decimal places")
        result = int(units)
    if len(str(result)) > MAX_DIGITS:
        raise AmountError("is too large")
    return result


def format_units(units: int, decimals: int) -> str:
    """Render base units as a plain decimal string with no trailing zeros."""
    if not isinstance(units, int) or isinstance(units, bool):
        raise TypeError("base units must be an int")
    sign = "-" if units < 0 else ""
    digits = str(abs(units))
    if decimals == 0:
        return sign + digits
    digits = digits.rjust(decimals + 1, "0")
    whole, frac = digits[:-decimals], digits[-decimals:].rstrip("0")
    return f"{sign}{whole}.{frac}" if frac else f"{sign}{whole}"


def fee_units(amount: int, fee_percent: Decimal | str) -> int:
    """The platform fee on ``amount`` base units, rounded down to a whole unit.

    Rounding down favours the merchant: the fee never exceeds the rate.
    """
    rate = Decimal(fee_percent)
    if not rate.is_finite() or rate < 0 or rate >= 100:
        raise AmountError("fee_percent must be at least 0 and below 100")
    with localcontext() as ctx:
        ctx.prec = MAX_DIGITS + 30
        fee = (Decimal(amount) * rate / Decimal(100)).to_integral_value(rounding=ROUND_DOWN)
    return int(fee)


def loads_exact(text: str | bytes) -> Any:
    """``json.loads`` that reads every JSON number exactly (Decimal or int)."""
    return json.loads(text, parse_float=Decimal)
