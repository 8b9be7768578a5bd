"""The 5-minute check (SPEC 8): fire each rule whose balance reached its threshold, then cool down 30 minutes.

A rule withdraws the whole available balance of its coin. The cooldown is
claimed (committed) before the payout is requested, so two checks at once,
or a restart after a crash, fire once per (merchant, coin) and cooldown.
The payout's idempotency key is ``aw:<merchant>:<coin>:<amount>:<window>``:
the normalized amount string (``Coin.format``: no trailing zeros) and the
30-minute window, so a replay of one attempt reserves nothing more. When the
payout service answers 503 (backlog breaker, payouts not configured) the
error is recorded and the cooldown released: the next check retries.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping

from ...api import ApiError, ServiceUnavailable, available_balance, request_payout
from . import store

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

JOB_NAME = "autowithdraw.check"
CHECK_SECONDS = 300  # SPEC 8: 5-minute check
COOLDOWN_SECONDS = 1800  # SPEC 8: 30 minutes per (merchant, coin)
PAGE = 500


def idempotency_key(merchant_id: str, coin: str, amount: str, now: int) -> str:
    return f"aw:{merchant_id}:{coin}:{amount}:{now // COOLDOWN_SECONDS}"


def cooling(row: Mapping[str, Any], now: int) -> bool:
    return row["last_fired_at"] is not None and now - int(row["last_fired_at"]) < COOLDOWN_SECONDS


async def run_autowithdraw(gateway: "Gateway") -> int:
    """One check over every rule; returns how many payouts were requested."""
    now = gateway.now()
    fired, after = 0, ("", "")
    while rows := await store.all_rules(gateway, after, PAGE):
        after = (rows[-1]["merchant_id"], rows[-1]["coin"])
        for row in rows:
            fired += await _fire(gateway, row, now)
    return fired


async def _fire(gateway: "Gateway", row: Mapping[str, Any], now: int) -> int:
    merchant_id, symbol = row["merchant_id"], row["coin"]
    if cooling(row, now):
        return 0
    balance = await available_balance(gateway, merchant_id, symbol)
    if balance <= 0 or balance < gateway.db.to_int(row["threshold"]):
        return 0
    if not await store.claim(gateway, merchant_id, symbol, now=now, cooldown=COOLDOWN_SECONDS):
        return 0  # another check fired it
    coin = gateway.coins.get(symbol)
    amount = coin.format(balance) if coin is not None else str(balance)
    try:
        payout = await request_payout(
            gateway, merchant_id, coin=symbol, destination=row["destination"], amount=balance,
            idempotency_key=idempotency_key(merchant_id, symbol, amount, now), description="auto-withdraw")
    except ServiceUnavailable as exc:  # breaker or no sender: recorded, retried at the next check
        await store.record(gateway, merchant_id, symbol, error=exc.code or exc.message, payout_id=None,
                           release=True, release_to=row["last_fired_at"])
        return 0
    except ApiError as exc:
        await store.record(gateway, merchant_id, symbol, error=exc.code or exc.message, payout_id=None)
        return 0
    except Exception:  # a bug must not stop the other merchants' rules
        log.exception("auto-withdraw %s %s failed", merchant_id, symbol)
        await store.record(gateway, merchant_id, symbol, error="internal error", payout_id=None)
        return 0
    await store.record(gateway, merchant_id, symbol, error=None, payout_id=payout.id)
    return 1
