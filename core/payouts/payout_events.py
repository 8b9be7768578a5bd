"""A payout's security events (the merchant's activity log), for the signer's holds and refused give-backs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..accounts.security_events import announce

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway


async def announce_payout(gateway: "Gateway", row: Mapping[str, Any], kind: str, **details: Any) -> None:
    """A security event about this payout; a merchant id the books do not know (a forged row) gets none."""
    known = await gateway.db.fetch_val("SELECT 1 FROM merchants WHERE id = :m", {"m": row["merchant_id"]})
    if not known:
        return
    amount = gateway.db.to_int(row["amount"])
    coin = gateway.coins.get(row["coin"])
    shown = coin.format(amount) if coin is not None else str(amount)
    await announce(gateway, row["merchant_id"], kind,
                   {"payout": row["track_id"], "coin": row["coin"], "amount": shown, **details}, alert=True)
