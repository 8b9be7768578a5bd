"""Which payouts wait for approval, and approving, rejecting and expiring them.

``decide`` answers ``decide_payout_hold`` inside the transaction that
reserved the payout, with the merchant row locked: the day's spend it sums
cannot change under it. A held payout leaves ``awaiting`` once: the
conditional UPDATE of its hold runs in the core's transaction that moves the
payout (``approve_held_payout``/``reject_held_payout``), so two approvers
at once send it once, and an approval answered twice is one approval.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Mapping

from ...api import (
    Conflict, Forbidden, NotFound, Unauthorized, announce_security_event, approve_held_payout, insert_statement,
    reject_held_payout, usd_units,
)
from ...api.merchant import get_merchant, verify_totp
from . import people, policy as policies

AWAITING, APPROVED, REJECTED, EXPIRED = "awaiting", "approved", "rejected", "expired"
THRESHOLD, DAILY_LIMIT = "threshold", "daily_limit"
SYSTEM = "system"  # requested_by of a job's or plugin's payout, in the spend table


def utc_day(now: int) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")


async def spent_today(gateway: Any, merchant_id: str, requested_by: str, day: str) -> int:
    """USD (1e-8) of the requester's payouts today that did not fail (rejected, expired, failed)."""
    value = await gateway.db.fetch_val(
        "SELECT COALESCE(SUM(s.usd), 0) FROM approval_spend s JOIN payouts p ON p.id = s.payout_id"
        " WHERE s.merchant_id = :m AND s.requested_by = :r AND s.day = :d AND p.status <> 'Failed'",
        {"m": merchant_id, "r": requested_by, "d": day})
    return gateway.db.to_int(value)


async def decide(gateway: Any, payout: Any, requested_by: str | None) -> bool | None:
    """Hold ``payout`` when it is worth more than its coin's threshold or takes the requester past the day's limit.

    A price the gateway cannot tell (0) holds whatever a threshold or limit
    would have compared: the policy fails closed.
    """
    policy = await policies.load(gateway, payout.merchant_id)
    if policy is None:
        return None
    now = gateway.now()
    usd = await usd_units(gateway, payout.coin, payout.amount)
    reason = None
    threshold = policy.thresholds.get(payout.coin)
    if threshold is not None and (usd == 0 or usd > threshold):
        reason = THRESHOLD
    limit = policy.daily_limit(requested_by)
    who, day = requested_by or SYSTEM, utc_day(now)
    if reason is None and limit is not None and \
            (usd == 0 or await spent_today(gateway, payout.merchant_id, who, day) + usd > limit):
        reason = DAILY_LIMIT
    db = gateway.db
    spend = {"payout_id": payout.id, "merchant_id": payout.merchant_id, "requested_by": who, "day": day, "usd": usd}
    await db.execute(insert_statement("approval_spend", spend), spend)
    if reason is None:
        return None
    hold = {"payout_id": payout.id, "merchant_id": payout.merchant_id, "requested_by": requested_by,
            "reason": reason, "usd": usd, "state": AWAITING, "expires_at": now + policy.expiry_hours * 3600,
            "created_at": now}
    await db.execute(insert_statement("approval_holds", hold), hold)
    return True


async def awaiting(gateway: Any, merchant_id: str) -> list[Mapping[str, Any]]:
    """The account's payouts waiting for a decision, oldest first, with their hold."""
    return await gateway.db.fetch_all(
        "SELECT p.*, h.reason AS hold_reason, h.usd AS hold_usd, h.expires_at AS hold_expires_at"
        " FROM approval_holds h JOIN payouts p ON p.id = h.payout_id"
        " WHERE h.merchant_id = :m AND h.state = :s ORDER BY h.created_at, h.payout_id",
        {"m": merchant_id, "s": AWAITING})


async def decided(gateway: Any, merchant_id: str, limit: int = 20) -> list[Mapping[str, Any]]:
    """The latest decisions (approved, rejected, expired), newest first."""
    return await gateway.db.fetch_all(
        "SELECT p.track_id, p.coin, p.amount, h.requested_by, h.state, h.decided_by, h.decided_at"
        " FROM approval_holds h JOIN payouts p ON p.id = h.payout_id"
        " WHERE h.merchant_id = :m AND h.state <> :s ORDER BY h.decided_at DESC, h.payout_id LIMIT :l",
        {"m": merchant_id, "s": AWAITING, "l": limit})


async def _hold(gateway: Any, merchant_id: str, track_id: Any) -> Mapping[str, Any]:
    """The hold of the account's payout ``track_id``; 404 for unknown, foreign or never held payouts alike."""
    row = None
    if isinstance(track_id, str) and 0 < len(track_id) <= 64:
        row = await gateway.db.fetch_one(
            "SELECT h.*, p.track_id FROM approval_holds h JOIN payouts p ON p.id = h.payout_id"
            " WHERE p.track_id = :t AND h.merchant_id = :m", {"t": track_id, "m": merchant_id})
    if row is None:
        raise NotFound("no payout awaiting approval with this track id", code="approval_not_found")
    return row


def _settled(hold: Mapping[str, Any], wanted: str) -> Mapping[str, Any]:
    """A hold decided before: the same decision is answered again (idempotent), another one is a 409."""
    if hold["state"] == wanted:
        return hold
    raise Conflict(f"this payout was {hold['state']} already", code=f"approval_{hold['state']}")


def _mark(gateway: Any, payout_id: str, state: str, by: str | None):
    async def within(_row: Any) -> None:
        moved = await gateway.db.execute(
            "UPDATE approval_holds SET state = :s, decided_by = :by, decided_at = :now"
            " WHERE payout_id = :id AND state = :awaiting RETURNING payout_id",
            {"s": state, "by": by, "now": gateway.now(), "id": payout_id, "awaiting": AWAITING})
        assert moved is not None, "the hold moves with its payout"
    return within


async def _check_approver(gateway: Any, merchant_id: str, hold: Mapping[str, Any], approver: str, code: Any) -> None:
    if hold["requested_by"] == approver:
        raise Forbidden("a payout needs a second person: its requester cannot approve it", code="self_approval")
    merchant = await get_merchant(gateway.db, merchant_id)
    if merchant is None or not merchant["totp_enabled"]:
        raise Forbidden("approving payouts needs two-factor authentication: turn it on in Settings → Security first",
                        code="totp_required")
    if not await verify_totp(gateway.db, merchant_id, code, now=gateway.now()):
        raise Unauthorized("invalid two-factor code: enter the current code of the account's authenticator app",
                           code="totp_invalid")


async def _announce(gateway: Any, merchant_id: str, kind: str, hold: Mapping[str, Any]) -> None:
    """The activity log's line: the actor decided, the details say which payout and who had asked."""
    await announce_security_event(gateway, merchant_id, kind, {
        "payout": hold["track_id"], "requested_by": await people.label(gateway, merchant_id, hold["requested_by"])})


async def approve(gateway: Any, merchant_id: str, track_id: Any, approver: str, code: Any) -> Mapping[str, Any]:
    """Send the held payout: another person than its requester, with a TOTP code. Twice = once."""
    hold = await _hold(gateway, merchant_id, track_id)
    if hold["state"] != AWAITING:
        return _settled(hold, APPROVED)
    await _check_approver(gateway, merchant_id, hold, approver, code)
    if await approve_held_payout(gateway, hold["payout_id"], _mark(gateway, hold["payout_id"], APPROVED, approver)):
        await _announce(gateway, merchant_id, "payout_approved", hold)
    return _settled(await _hold(gateway, merchant_id, track_id), APPROVED)


async def reject(gateway: Any, merchant_id: str, track_id: Any, by: str) -> Mapping[str, Any]:
    """Fail the held payout (``rejected``) and give its reserve back; the requester may withdraw their own."""
    hold = await _hold(gateway, merchant_id, track_id)
    if hold["state"] == AWAITING and await reject_held_payout(
            gateway, hold["payout_id"], REJECTED, _mark(gateway, hold["payout_id"], REJECTED, by)):
        await _announce(gateway, merchant_id, "payout_rejected", hold)
    return _settled(await _hold(gateway, merchant_id, track_id), REJECTED)


async def expire_due(gateway: Any, limit: int = 100) -> int:
    """The job: fail every hold past its time (``expired``) and give its reserve back; returns how many."""
    due = await gateway.db.fetch_all(
        "SELECT payout_id FROM approval_holds WHERE state = :s AND expires_at <= :now ORDER BY expires_at LIMIT :l",
        {"s": AWAITING, "now": gateway.now(), "l": limit})
    done = 0
    for row in due:  # each its own transaction; one another process expired meanwhile is skipped
        if await reject_held_payout(gateway, row["payout_id"], EXPIRED, _mark(gateway, row["payout_id"], EXPIRED,
                                                                             None)):
            done += 1
    return done
