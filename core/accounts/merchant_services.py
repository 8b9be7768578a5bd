"""Core services for merchants: a merchant's record, who it referred, its settlement coin, its keys.

Why its own module: plugins that act for a merchant (public pages keyed by account id, referrals,
settlement) read the account here, never the merchants table.

Records, never rows: plugins reach these through ``orbchain.api`` (docs/plugins.md, "Core services").
"""

from __future__ import annotations

from typing import Any, NamedTuple

from . import merchants as accounts
from ..contract.gateway import PluginGateway as Gateway


class MerchantRecord(NamedTuple):
    """A merchant as a plugin sees it: public account id and accepted coins in the merchant's order,
    who referred it at sign-up (None when nobody did), when it signed up (Unix seconds) and whether
    the account is enabled."""

    merchant_id: str
    account_id: str
    accepted_coins: tuple[str, ...]
    referrer_id: str | None = None
    signed_up_at: int = 0
    enabled: bool = True


def _merchant_record(row: Any) -> MerchantRecord:
    return MerchantRecord(row["id"], row["account_id"], tuple(accounts.accepted_coins(row)), row["referrer_id"],
                          int(row["created_at"]), bool(row["enabled"]))


async def merchant_record(gateway: "Gateway", merchant_id: str) -> MerchantRecord:
    """The merchant's record (404 ``not_found`` for an unknown merchant)."""
    return _merchant_record(await accounts.require_merchant(gateway.db, merchant_id))


async def merchant_by_account_id(gateway: "Gateway", account_id: str) -> MerchantRecord | None:
    """The merchant behind a public account id (SPEC 2.12), or None: for public pages keyed by it."""
    row = await accounts.find_by_account_id(gateway.db, account_id)
    return None if row is None else _merchant_record(row)


async def referred_merchants(gateway: "Gateway", referrer_id: str) -> list[MerchantRecord]:
    """Every merchant that signed up with ``referrer_id`` as its referrer, disabled ones included,
    oldest first."""
    rows = await gateway.db.fetch_all(
        "SELECT * FROM merchants WHERE referrer_id = :r ORDER BY created_at, id", {"r": referrer_id})
    return [_merchant_record(row) for row in rows]


async def default_settlement_coin(gateway: "Gateway", merchant_id: str) -> str | None:
    """The account's ``default_settlement_coin`` (SPEC 2.7: core account data; the settling plugin interprets it)."""
    return (await accounts.require_merchant(gateway.db, merchant_id))["default_settlement_coin"] or None


async def set_default_settlement_coin(gateway: "Gateway", merchant_id: str, symbol: str | None) -> None:
    """Set (or clear, with None) the account's ``default_settlement_coin``; the settling plugin validates it."""
    await accounts.set_default_settlement_coin(gateway, merchant_id, symbol)


async def api_key_exists(gateway: "Gateway", merchant_id: str, key_id: str) -> bool:
    """Whether ``key_id`` names an API key of this merchant (revoked and expired keys included)."""
    return await gateway.db.fetch_val(
        "SELECT 1 FROM api_keys WHERE id = :id AND merchant_id = :m", {"id": key_id, "m": merchant_id}) is not None
