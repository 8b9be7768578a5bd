"""Plans (SPEC 2.13, 4.10): what they may hold, and how the dashboard shows them.

``amount_usd`` is kept as the exact decimal text the merchant gave (in
cents at most: an invoice is priced in USD), never a float, and buys at
least the smallest payment of each coin the plan's invoices offer, at the
rate of the moment it is set (``check_price``). The coins of a
plan must be coins the merchant accepts and a chain here can receive; an
empty list means "every coin the merchant accepts when the invoice is
minted".
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ...api import Field, InvalidRequest, ValidationError, check_invoice_amount, merchant_record, receivable_coins
from . import store

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

MIN_INTERVAL, MAX_INTERVAL = 3600, 31_536_000  # SPEC 8
MAX_PLANS = 200  # per merchant (docs/decisions.md)
MAX_AMOUNT_USD = Decimal("1000000")
MAX_COINS = 50


def _exponent(value: Decimal) -> int:
    """The decimal exponent of a finite amount (the ``amount`` field kind refuses the others)."""
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int), "amounts are finite"
    return exponent


def check_amount_usd(value: Decimal) -> str | None:
    if _exponent(value) < -2:
        return "must have at most 2 decimals (cents)"
    if value > MAX_AMOUNT_USD:
        return f"must be at most {MAX_AMOUNT_USD}"
    return None


LABEL = Field("label", min_len=1, max_len=80)
AMOUNT_USD = Field("amount_usd", "amount", check=check_amount_usd)
INTERVAL = Field("interval_sec", "int", minimum=MIN_INTERVAL, maximum=MAX_INTERVAL)
COINS = Field("accepted_coins", "list", upper=True, max_len=MAX_COINS)
ENABLED = Field("enabled", "bool")
BRAND = Field("brand_id", max_len=64)
CREATE_FIELDS = [Field("label", required=True, min_len=1, max_len=80),
                 Field("amount_usd", "amount", required=True, check=check_amount_usd),
                 Field("interval_sec", "int", required=True, minimum=MIN_INTERVAL, maximum=MAX_INTERVAL), COINS,
                 BRAND]
PATCH_FIELDS = [LABEL, AMOUNT_USD, INTERVAL, COINS, ENABLED, BRAND]


def usd_text(value: Decimal) -> str:
    """Exact decimal text with at least cents: ``9.5`` -> ``9.50``, ``10`` -> ``10.00``."""
    return format(value.quantize(Decimal("0.01")) if _exponent(value) > -2 else value, "f")


async def check_coins(gateway: "Gateway", merchant_id: str, coins: Sequence[str]) -> list[str]:
    """The plan's coins, without duplicates, each known, receivable and accepted by the merchant."""
    unique = list(dict.fromkeys(coins))
    unknown = [c for c in unique if gateway.coins.get(c) is None]
    if unknown:
        raise ValidationError({"accepted_coins": f"unknown coin(s): {', '.join(unknown)}"})
    not_receivable = [c for c in unique if not gateway.coins.require(c).receive_address]
    if not_receivable:
        raise ValidationError({"accepted_coins": f"cannot be received: {', '.join(not_receivable)}"})
    accepted = (await merchant_record(gateway, merchant_id)).accepted_coins
    refused = [c for c in unique if c not in accepted]
    if refused:
        raise InvalidRequest("currency not accepted by merchant", code="currency_not_accepted",
                             detail={"accepted_coins": f"not accepted: {', '.join(refused)}"})
    return unique


async def check_price(gateway: "Gateway", merchant_id: str, amount_usd: Decimal, coins: Sequence[str]) -> None:
    """400 naming ``amount_usd`` when the price would buy less than the smallest payment of a coin the plan's
    invoices offer (its coins, or every coin the merchant can be paid in now), at the current rate: every
    period's invoice would be refused (``check_invoice_amount``)."""
    offered = list(coins) or list(receivable_coins(gateway, await merchant_record(gateway, merchant_id)))
    await check_invoice_amount(gateway, amount_usd, "USD", offered, field="amount_usd")


def plan_view(gateway: "Gateway", row: Mapping[str, Any]) -> dict[str, Any]:
    """A plan as the dashboard shows it, with the customer page's address."""
    return {
        "id": row["id"], "plan_id": row["id"], "label": row["label"], "amount_usd": row["amount_usd"],
        "interval_sec": int(row["interval_sec"]), "accepted_coins": store.coins_of(row),
        "enabled": bool(row["enabled"]), "brand_id": row["brand_id"],
        "subscribe_url": f"{gateway.config.base_url}/subscribe/{row['id']}",
        "created_at": int(row["created_at"]), "updated_at": int(row["updated_at"]),
    }


def too_many() -> InvalidRequest:
    return InvalidRequest(f"at most {MAX_PLANS} plans", code="too_many_plans")


def nothing_to_change() -> ValidationError:
    return ValidationError({"body": "give at least one of label, amount_usd, interval_sec, accepted_coins, enabled,"
                                    " brand_id"})
