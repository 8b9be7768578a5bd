"""An account's approval policy: per-coin thresholds in USD, how long a hold waits, daily limits.

USD amounts are typed as decimal strings with at most two decimals ("250",
"1000.50") and kept as integers of 1e-8 dollars (``USD_DECIMALS``, what
``usd_units`` prices a payout in): exact, never a float. No row means no
policy: nothing is held and every payout answers exactly as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from ...api import (
    USD_DECIMALS, AmountError, ValidationError, cache_changed_everywhere, cached, insert_statement, int_from_text,
    to_base_units,
)

DEFAULT_EXPIRY_HOURS, MAX_EXPIRY_HOURS = 24, 720
MAX_USD = 10 ** 9  # dollars: keeps 1e-8-dollar integers inside a BIGINT
CENTS = 2
SCALE = 10 ** (USD_DECIMALS - CENTS)


@dataclass(frozen=True)
class Policy:
    thresholds: Mapping[str, int]  # coin -> USD (1e-8 dollars); a payout worth more is held
    expiry_hours: int
    member_daily_usd: int | None  # per person (the holder or a member, their keys included) per UTC day; None: none
    key_daily_usd: int | None  # per API key per UTC day (besides its person's)


def usd_text(value: int | None) -> str:
    """1e-8 dollars as the form shows them ("250.00"); blank for None."""
    if value is None:
        return ""
    cents = value // SCALE
    return f"{cents // 100}.{cents % 100:02d}"


def _usd(value: Any, field: str, errors: dict[str, str]) -> int | None:
    text = value.strip() if isinstance(value, str) else value
    if text in (None, ""):
        return None
    try:
        units = to_base_units(text, CENTS, allow_zero=True)
    except AmountError as exc:
        errors[field] = f"a US dollar amount such as 250 or 99.50: {exc}"
        return None
    if units > MAX_USD * 10 ** CENTS:
        errors[field] = f"at most {MAX_USD} US dollars"
        return None
    return units * SCALE


def _hours(value: Any, errors: dict[str, str]) -> int:
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    if value is None or text == "":
        return DEFAULT_EXPIRY_HOURS
    hours = None if text is None else int_from_text(text)  # bounded ASCII digits: no 500 on 5,000 digits or "²"
    if hours is None or not 1 <= hours <= MAX_EXPIRY_HOURS:
        errors["expiry_hours"] = f"a whole number of hours from 1 to {MAX_EXPIRY_HOURS}"
        return DEFAULT_EXPIRY_HOURS
    return hours


def parse(gateway: Any, form: Mapping[str, Any]) -> Policy:
    """The policy a form (or JSON body) asks for; 400 naming every bad field."""
    errors: dict[str, str] = {}
    thresholds = {}
    for coin in payable_coins(gateway):
        value = _usd(form.get(f"threshold_{coin}"), f"threshold_{coin}", errors)
        if value is not None:
            thresholds[coin] = value
    expiry = _hours(form.get("expiry_hours"), errors)
    member = _usd(form.get("member_daily_usd"), "member_daily_usd", errors)
    key = _usd(form.get("key_daily_usd"), "key_daily_usd", errors)
    if errors:
        raise ValidationError(errors)
    return Policy(thresholds, expiry, member, key)


def payable_coins(gateway: Any) -> list[str]:
    return [coin.symbol for coin in gateway.coins if coin.payable]


CACHE_TABLE = "approval_policies"


async def load(gateway: Any, merchant_id: str) -> Policy | None:
    """The account's policy as stored now (what a decision under the transaction's locks reads)."""
    row = await gateway.db.fetch_one("SELECT * FROM approval_policies WHERE merchant_id = :m", {"m": merchant_id})
    if row is None:
        return None
    to_int = gateway.db.to_int
    return Policy({k: int(v) for k, v in json.loads(row["thresholds"]).items()}, int(row["expiry_hours"]),
                  None if row["member_daily_usd"] is None else to_int(row["member_daily_usd"]),
                  None if row["key_daily_usd"] is None else to_int(row["key_daily_usd"]))


async def load_cached(gateway: Any, merchant_id: str) -> Policy | None:
    """``load``, from this process's cache outside a transaction: every transfer and payout asks before its
    transaction whether a policy exists, and almost none does. Shared: read-only. Changes here answer only
    once every process has dropped its copy (``save``, ``remove``); others by migration m0003's trigger."""
    return await cached(gateway, CACHE_TABLE, merchant_id, lambda: load(gateway, merchant_id))


async def save(gateway: Any, merchant_id: str, policy: Policy) -> None:
    row = {"merchant_id": merchant_id, "thresholds": json.dumps(dict(policy.thresholds), sort_keys=True),
           "expiry_hours": policy.expiry_hours, "member_daily_usd": policy.member_daily_usd,
           "key_daily_usd": policy.key_daily_usd, "updated_at": gateway.now()}
    await gateway.db.execute(
        insert_statement("approval_policies", row) + " ON CONFLICT (merchant_id) DO UPDATE SET"
        " thresholds = excluded.thresholds, expiry_hours = excluded.expiry_hours,"
        " member_daily_usd = excluded.member_daily_usd, key_daily_usd = excluded.key_daily_usd,"
        " updated_at = excluded.updated_at", row)
    await cache_changed_everywhere(gateway)


async def remove(gateway: Any, merchant_id: str) -> None:
    """Turn the policy off: new payouts are no longer held (held ones still wait for a decision)."""
    await gateway.db.execute("DELETE FROM approval_policies WHERE merchant_id = :m", {"m": merchant_id})
    await cache_changed_everywhere(gateway)


def form_values(gateway: Any, policy: Policy | None) -> dict[str, str]:
    """The policy as the settings form shows it."""
    if policy is None:
        return {"expiry_hours": str(DEFAULT_EXPIRY_HOURS)}
    values = {f"threshold_{coin}": usd_text(value) for coin, value in policy.thresholds.items()}
    return {**values, "expiry_hours": str(policy.expiry_hours), "member_daily_usd": usd_text(policy.member_daily_usd),
            "key_daily_usd": usd_text(policy.key_daily_usd)}
