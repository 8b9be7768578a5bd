"""The swaps' dashboard page: quote, then confirm (the TOTP code when 2FA is on); the history."""

from __future__ import annotations

from typing import Any, Mapping

from ...api import DashboardView, ValidationError
from ...api.merchant import merchant_balances
from . import service

FIELDS = ("from_coin", "to_coin", "amount")


def _body(form: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {name: form[name].strip() for name in names if isinstance(form.get(name), str) and form[name].strip()}


async def page(gateway: Any, merchant_id: str, query: Mapping[str, str],
               quote: Mapping[str, Any] | None = None, asked: Mapping[str, Any] | None = None) -> DashboardView:
    listed = await service.list_swaps(gateway, merchant_id, limit=50, offset=0)
    coins = [c.symbol for c in gateway.coins if c.payable]
    return DashboardView("swaps/dashboard.html", {
        "swaps": listed["swaps"], "coins": coins, "quote": quote,
        "asked": asked or default_pair(coins, await merchant_balances(gateway.db, merchant_id))})


def default_pair(coins: list[str], balances: Mapping[str, int]) -> dict[str, str]:
    """The form's first choice: from the first coin holding a balance (else the first coin) to another coin.

    A swap from a coin to itself is refused, so the form never proposes one.
    """
    if not coins:
        return {}
    source = next((coin for coin in coins if balances.get(coin, 0) > 0), coins[0])
    target = next((coin for coin in coins if coin != source), source)
    return {"from_coin": source, "to_coin": target}


async def submit(gateway: Any, merchant_id: str, form: Mapping[str, Any],
                 principal: Any = None) -> DashboardView | None:
    """Quote, or commit with the TOTP of whoever is signed in (``principal``: a team member's own)."""
    action = form.get("action")
    if action == "quote":
        asked = _body(form, FIELDS)
        return await page(gateway, merchant_id, {}, await service.quote(gateway, asked), asked)
    if action == "commit":
        await service.commit(gateway, merchant_id, _body(form, (*FIELDS, "idempotency_key", "totp_code")),
                             principal=principal)
        return None
    raise ValidationError({"action": "must be quote or commit"})
