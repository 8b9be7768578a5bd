"""Exact money at the edge: decimal strings in, base-unit integers inside.

Amounts never pass through ``float``. JSON bodies are parsed with
``parse_float=Decimal`` so a client sending ``0.1`` as a number is read as
exactly one tenth; these helpers then turn that into base units and refuse
anything the coin cannot represent.
"""

from __future__ import annotations

import json
import re
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any

from ..types.messages import N_

# 78 digits holds 2**256, the largest amount any supported chain can express.
MAX_DIGITS = 78
# The finest amount any field takes: 10**-MAX_DIGITS (no coin has more than 18 decimals,
# and fiat/USD amounts far fewer). Bounding the exponent this way keeps every later
# scaleb/quantize/int() on the value small, so "1e900000" costs microseconds, not minutes.
MAX_SCALE = MAX_DIGITS
# The one grammar of an amount written as text: ASCII digits, at most one dot with digits on both
# sides, and an optional minus (so "-1" is "must be greater than 0", not "not a number"). No spaces,
# no "+", no exponent, no thousands or comma separator, no "0x", no NaN/Infinity: each of those is
# refused with its own message (``_why_not``) rather than guessed at. JSON numbers are not text: they
# arrive as exact ``int``/``Decimal`` values (``loads_exact``) and are taken as they are.
_DECIMAL_TEXT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?", re.ASCII)
# Longest text worth reading: every digit an amount may have, the dot and the sign.
MAX_TEXT = MAX_DIGITS + MAX_SCALE + 2


class AmountError(ValueError):
    """An amount is not a positive, finite number representable in the coin."""

    @property
    def problem(self) -> str:
        """The problem as raised: a ``Translatable`` a payer page shows in its language (``str(error)``
        is the English only)."""
        return self.args[0] if self.args else ""


def parse_decimal(value: Any) -> Decimal:
    """Read a decimal string or an exact JSON number; reject floats and anything not plainly written.

    The one parser of amounts, for the JSON API and the payers' forms alike; ``AmountError``'s
    message says what to fix ("must not contain spaces", "must use a dot (.) ...").
    """
    if isinstance(value, bool) or isinstance(value, float):
        # A float already lost exactness before it reached us.
        raise AmountError(N_("must be a decimal string"))
    if isinstance(value, int):
        if value.bit_length() > 4 * MAX_DIGITS:  # cheap, and long before str() of it would be slow
            raise AmountError(N_("is too large"))
        number = Decimal(value)
    elif isinstance(value, Decimal):
        number = value
    elif isinstance(value, str):
        number = _parse_text(value)
    else:
        raise AmountError(N_("must be a decimal string"))
    if not number.is_finite():
        raise AmountError(N_("must be a finite number"))
    check_bounds(number)
    return number


def _parse_text(text: str) -> Decimal:
    if not text:
        raise AmountError(N_("must not be empty"))
    if len(text) > MAX_TEXT:
        raise AmountError(N_("has too many digits"))
    if not _DECIMAL_TEXT.fullmatch(text):
        raise AmountError(_why_not(text))
    return Decimal(text)


def _why_not(text: str) -> str:
    """What is wrong with an amount's text, in words a person can act on."""
    lowered = text.lower()
    if any(c.isspace() for c in text):
        return N_("must not contain spaces")
    if lowered.lstrip("+-") in ("nan", "snan", "inf", "infinity"):
        return N_("must be a finite number")
    if lowered.lstrip("+-").startswith("0x"):
        return N_("must be a decimal number, not hexadecimal")
    if text.startswith("+"):
        return N_("must be written without a plus sign")
    if "," in text or "_" in text or "'" in text:
        return N_("must use a dot (.) as the decimal separator and no thousands separator, for example 1234.5")
    if "e" in lowered and _DECIMAL_TEXT.fullmatch(lowered.split("e", 1)[0]):
        return N_("must be written out in full, without an exponent")
    if text.startswith(".") or text.endswith(".") or text.startswith("-."):
        return N_("needs a digit on each side of the decimal point, for example 0.5")
    return N_("must be a decimal string such as 12.50")


def check_bounds(number: Decimal) -> None:
    """Refuse a finite Decimal no money field can hold, before any arithmetic on it.

    Decimal keeps ``1E+900000`` as three small fields; it is ``int()``, ``scaleb``
    and quantizing that expand it to a million digits and freeze the event loop.
    Looking at the tuple costs nothing whatever the exponent.
    """
    _sign, digits, exponent = number.as_tuple()
    if not isinstance(exponent, int):  # NaN/Infinity
        raise AmountError(N_("must be a finite number"))
    if len(digits) > MAX_DIGITS + MAX_SCALE:
        raise AmountError(N_("has too many digits"))
    if exponent < -MAX_SCALE:
        raise AmountError(N_("has more than %(places)d decimal places", places=MAX_SCALE))
    if len(digits) + exponent > MAX_DIGITS:  # the integer part alone has more than MAX_DIGITS digits
        raise AmountError(N_("is too large"))


def to_base_units(value: Any, decimals: int, *, allow_zero: bool = False) -> int:
    """Convert a coin-unit amount to an integer count of base units.

    Raises ``AmountError`` when the amount is not above zero (unless
    ``allow_zero``) or has more decimal places than the coin has.
    """
    number = parse_decimal(value)
    if number < 0 or (number == 0 and not allow_zero):
        raise AmountError(N_("must be greater than 0"))
    exponent = number.as_tuple().exponent
    if isinstance(exponent, int) and -exponent > decimals and number != number.to_integral_value():
        normalized = number.normalize().as_tuple().exponent
        if isinstance(normalized, int) and -normalized > decimals:  # int: the number is finite
            raise AmountError(N_("has more than %(places)d decimal places", places=decimals))
    with localcontext() as ctx:
        ctx.prec = MAX_DIGITS + 30
        units = number.scaleb(decimals)
        if units != units.to_integral_value():
            raise AmountError(N_("has more than %(places)d decimal places", places=decimals))
        result = int(units)
    if len(str(result)) > MAX_DIGITS:
        raise AmountError(N_("is too large"))
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


FIAT_MINOR_DIGITS = {"JPY": 0}  # ISO 4217 minor units of the SPEC 4.2 fiat currencies: 2 unless listed


def fiat_decimals(currency: str) -> int:
    """How many decimals an amount of the fiat ``currency`` may have: its ISO 4217 minor unit (USD 2, JPY 0)."""
    return FIAT_MINOR_DIGITS.get(currency, 2)


def fiat_text(amount: Any, currency: Any) -> str:
    """A fiat amount as pages show it, to the currency's minor unit (``25.0002`` USD -> ``25.00 USD``), exactly.

    Empty when there is no amount (or it is not a number). Decimal rounding, half up: never a float.
    """
    if amount in (None, "") or not currency:
        return ""
    try:
        value = Decimal(str(amount))
    except InvalidOperation:
        return ""
    if not value.is_finite():
        return ""
    digits = fiat_decimals(str(currency))
    return f"{value.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP):,f} {currency}"


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
