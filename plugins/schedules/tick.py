"""The every-minute tick: pay out the full balance of each due schedule, at most once per run.

Order matters (SPEC 4.11): the run is claimed by advancing ``next_run_at``
in its own committed statement, and only then is the payout requested.
Two ticks racing for one run: one conditional update wins, the other skips.
A crash after the claim loses that run's attempt (the next run pays the
whole balance anyway) instead of paying twice. The payout's idempotency key
``sched:<id>:<minute of the claimed run>`` makes even a replayed attempt of
the same run reserve nothing more.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping

from ...api import ApiError, available_balance, request_payout
from . import store

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

JOB_NAME = "schedules.tick"
TICK_SECONDS = 60  # SPEC 8: checked every minute
BATCH = 200  # due schedules handled per tick; the rest wait a minute


def next_run(row: Mapping[str, Any], now: int) -> int:
    """One interval after the run being claimed; from now when the schedule fell more than an interval behind."""
    interval = int(row["interval_sec"])
    following = int(row["next_run_at"]) + interval
    return following if following > now else now + interval


def idempotency_key(row: Mapping[str, Any]) -> str:
    return f"sched:{row['id']}:{int(row['next_run_at']) // 60}"


async def run_schedules(gateway: "Gateway") -> int:
    """One tick; returns how many payouts were requested (replays included)."""
    now = gateway.now()
    paid = 0
    for row in await store.due(gateway, now, BATCH):
        balance = await available_balance(gateway, row["merchant_id"], row["coin"])
        if balance <= 0 or balance < gateway.db.to_int(row["min_amount"]):
            continue  # stays due: it fires on the first tick that finds enough money
        if not await store.claim(gateway, row, now=now, next_run_at=next_run(row, now)):
            continue  # another tick took this run
        try:
            payout = await request_payout(
                gateway, row["merchant_id"], coin=row["coin"], destination=row["destination"], amount=balance,
                idempotency_key=idempotency_key(row), description=f"payout schedule {row['id']}")
        except ApiError as exc:
            await store.record_result(gateway, row["id"], error=exc.code or exc.message, payout_id=None)
            continue
        except Exception:  # a bug must not stop the other merchants' schedules
            log.exception("payout schedule %s failed", row["id"])
            await store.record_result(gateway, row["id"], error="internal error", payout_id=None)
            continue
        await store.record_result(gateway, row["id"], error=None, payout_id=payout.id)
        paid += 1
    return paid
