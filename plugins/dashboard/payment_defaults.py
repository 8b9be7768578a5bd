"""The currency the new-payment form preselects for an account (issue 49 item 8): the one the merchant chose
in Settings, Payments, else the first accepted coin (what the API uses when a body names none, SPEC 4.2).

This module owns ``dashboard_payment_defaults`` (migration m0003); nobody else writes its SQL.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...api import FIAT_CURRENCIES, ValidationError

FIELD = "default_currency"


async def chosen_currency(gateway: Any, merchant_id: str) -> str | None:
    """What the merchant chose, as stored (it may have stopped being offered since)."""
    return await gateway.db.fetch_val("SELECT currency FROM dashboard_payment_defaults WHERE merchant_id = :m",
                                      {"m": merchant_id})


def preselected(chosen: str | None, coins: Sequence[str]) -> str | None:
    """The form's preselected currency: the choice while the form still offers it, else the first coin."""
    if chosen is not None and (chosen in coins or chosen in FIAT_CURRENCIES):
        return chosen
    return coins[0] if coins else None


async def choose_currency(gateway: Any, merchant_id: str, currency: Any, coins: Sequence[str]) -> None:
    """Store ``currency`` (one of ``coins`` or a fiat code) as the account's default; empty clears it.
    Anything else is a 400 naming the field, and nothing is stored."""
    text = currency.strip().upper() if isinstance(currency, str) else ""
    if not text:
        await gateway.db.execute("DELETE FROM dashboard_payment_defaults WHERE merchant_id = :m", {"m": merchant_id})
        return
    if text not in coins and text not in FIAT_CURRENCIES:
        raise ValidationError({FIELD: "choose one of your accepted coins or a fiat currency from the list"})
    await gateway.db.execute(
        "INSERT INTO dashboard_payment_defaults (merchant_id, currency, updated_at) VALUES (:m, :c, :t)"
        " ON CONFLICT (merchant_id) DO UPDATE SET currency = excluded.currency, updated_at = excluded.updated_at",
        {"m": merchant_id, "c": text, "t": gateway.now()})
