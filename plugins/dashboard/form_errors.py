"""A refused form, said in words: each field's complaint beside that field, all of them at once.

The API's errors name fields by their JSON names (``amount_fiat: is required``);
a merchant reads labels. ``field_errors`` turns an error's ``detail`` into
sentences keyed by field (the page shows each beside its input, with
``aria-invalid`` and ``aria-describedby``, and lists them in one summary);
an error that names no field stays one banner (``banner``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ...api import ApiError

# How a field is called on the dashboard's forms (and plugin pages'); others read as their name in words.
LABELS = {
    "type": "Payment type", "amount": "Amount", "currency": "Currency", "pay_currency": "Coin the payer sends",
    "order_id": "Order id", "description": "Description", "lifetime": "Lifetime", "email": "Payer e-mail",
    "return_url": "Return URL", "callback_url": "Webhook URL for this payment", "user_id": "Customer id",
    "webhook_url": "Webhook URL", "coin": "Coin", "amount_fiat": "Fiat price", "fiat_currency": "Fiat currency",
    "accepted_coins": "Accepted coins", "destination": "Destination", "amount_usd": "Amount in USD",
    "external_id": "External id", "recipient": "Recipient", "settlement_coin": "Settlement coin",
    "api_keys": "API keys they issued", "brand_id": "Brand", "default_currency": "Default currency",
}
_NAME = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")  # a snake_case field name inside a message


def label(name: str) -> str:
    return LABELS.get(name) or name.replace("_", " ").capitalize()


def sentence(message: str) -> str:
    """``is required with amount_fiat`` -> ``Required with fiat price.``: field names read as their labels."""
    text = _NAME.sub(lambda m: label(m.group(0)).lower() if m.group(0) in LABELS else m.group(0), message.strip())
    text = text.removeprefix("is ")
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


# A refusal of who asks (401, 403) names no field: its detail says what they lack (``{"scope": ...}``).
_NOT_ABOUT_FIELDS = frozenset({401, 403})


def field_errors(exc: ApiError) -> dict[str, str]:
    """Field -> sentence for every field ``exc`` names (empty when it names none)."""
    detail = exc.detail or {}
    if not isinstance(detail, Mapping) or exc.status in _NOT_ABOUT_FIELDS:
        return {}
    return {str(name): sentence(str(why)) for name, why in detail.items()}


def banner(exc: ApiError) -> str:
    """The one-line message of an error that names no field (``field_errors`` is empty)."""
    return exc.message[:1].upper() + exc.message[1:]


def error_context(exc: ApiError) -> dict[str, Any]:
    """What a page renders for ``exc``: ``errors`` beside the fields it names, else one ``error`` banner."""
    errors = field_errors(exc)
    return {"errors": errors} if errors else {"error": banner(exc)}
