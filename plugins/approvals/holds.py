"""Which payouts and transfers wait for approval, and approving, rejecting and expiring them.

``quote`` answers ``decide_hold_quote`` before that transaction opens: the
coin's USD price, read (maybe fetched) while no lock is held, so a slow price
feed never keeps the merchant row locked. ``decide`` answers
``decide_payout_hold`` and ``decide_transfer_hold`` with that price,
inside the transaction that reserves the money, with the merchant row
locked (the core's payout reserve locks it; for a transfer ``decide``
does), so the day's spend it sums cannot change under it. A hold leaves
``awaiting`` once: the conditional UPDATE of its row runs in the core's
transaction that moves the money (``approve_held_*``/``reject_held_*``),
so two approvers at once send it once, and an approval answered twice is
one approval.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Mapping

from ...api import (
    lock_merchant_money, released_subjects,
    Conflict, Forbidden, NotFound, Principal, announce_security_event, approve_held_payout, approve_held_transfer,
    insert_statement, reject_held_payout, reject_held_transfer, usd_price, usd_units, verify_second_factor,
)
from ...api.merchant import get_merchant, member_totp_enabled
from . import people, policy as policies

AWAITING, APPROVED, REJECTED, EXPIRED = "awaiting", "approved", "rejected", "expired"
THRESHOLD, DAILY_LIMIT = "threshold", "daily_limit"
PAYOUT, TRANSFER = "payout", "transfer"
SYSTEM = "system"  # requested_by of a job's or plugin's payout, in the spend table
MOVES = {PAYOUT: (approve_held_payout, reject_held_payout), TRANSFER: (approve_held_transfer, reject_held_transfer)}


@dataclass(frozen=True)
class Subject:
    """A new payout or transfer as the policy weighs it."""

    kind: str
    id: str
    ref: str  # the id people see: a payout's track id, a transfer's id
    merchant_id: str
    coin: str
    amount: int
    destination: str


def utc_day(now: int) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")


# Whose day's spend a limit sums: a person's (whatever they used: session or any key of theirs), or a key's.
SPENDERS = {"person": "requested_by", "key": "key_id"}


async def spent_today(gateway: Any, merchant_id: str, spender: str, name: str, day: str) -> int:
    """USD (1e-8) of the payouts and transfers today of ``name`` (a ``spender``: a person or a key) that did not
    fail, reject or expire."""
    rows = await gateway.db.fetch_all(
        f"SELECT subject_id, usd FROM approval_spend WHERE merchant_id = :m AND {SPENDERS[spender]} = :r"
        " AND day = :d", {"m": merchant_id, "r": name, "d": day})
    released = await released_subjects(gateway, [row["subject_id"] for row in rows])
    return sum(gateway.db.to_int(row["usd"]) for row in rows if row["subject_id"] not in released)


async def past_daily_limit(gateway: Any, policy: policies.Policy, merchant_id: str, requested_by: str | None,
                           key_id: str | None, usd: int, day: str) -> bool:
    """Whether ``usd`` more today takes the person who asked past their limit (their keys count as them), or
    the key they used past its own. Jobs and plugins (no person, no key) have no limit."""
    limits = [("person", requested_by, policy.member_daily_usd), ("key", key_id, policy.key_daily_usd)]
    for spender, name, limit in limits:
        if name is None or limit is None:
            continue
        if usd == 0 or await spent_today(gateway, merchant_id, spender, name, day) + usd > limit:
            return True
    return False


async def quote(gateway: Any, merchant_id: str, coin: str) -> Decimal | None:
    """Before the reserving transaction: the coin's USD price when the account has a policy (None: no policy).

    The policy comes from the process's cache: ``decide`` reads it again in the transaction, so a cache that
    missed a new policy only means no price, and then the policy holds (fails closed)."""
    if await policies.load_cached(gateway, merchant_id) is None:
        return None
    return await usd_price(gateway, coin)


async def decide(gateway: Any, subject: Subject, requested_by: str | None, price: Any = None,
                 key_id: str | None = None) -> bool | None:
    """Hold ``subject`` when it is worth more than its coin's threshold or takes the requester (a person: a key's
    issuer for a payout made with ``key_id``) or that key past the day's limit.

    ``price``: ``quote``'s, read before the transaction; never fetched
    here. A price the gateway cannot tell (0), or no quote (the policy
    was turned on after ``quote`` looked), holds whatever a threshold or
    limit would have compared: the policy fails closed.
    """
    policy = await policies.load(gateway, subject.merchant_id)
    if policy is None:
        return None
    if subject.kind == TRANSFER:
        await lock_merchant_money(gateway, subject.merchant_id)
    now = gateway.now()
    usd = await usd_units(gateway, subject.coin, subject.amount, price if isinstance(price, Decimal) else Decimal(0))
    reason = None
    threshold = policy.thresholds.get(subject.coin)
    if threshold is not None and (usd == 0 or usd > threshold):
        reason = THRESHOLD
    day = utc_day(now)
    if reason is None and await past_daily_limit(gateway, policy, subject.merchant_id, requested_by, key_id, usd,
                                                 day):
        reason = DAILY_LIMIT
    db = gateway.db
    spend = {"subject_id": subject.id, "merchant_id": subject.merchant_id, "requested_by": requested_by or SYSTEM,
             "key_id": key_id, "day": day, "usd": usd}
    await db.execute(insert_statement("approval_spend", spend), spend)
    if reason is None:
        return None
    hold = {"subject_id": subject.id, "kind": subject.kind, "ref": subject.ref, "merchant_id": subject.merchant_id,
            "coin": subject.coin, "amount": db.amount_param(subject.amount), "destination": subject.destination,
            "requested_by": requested_by, "key_id": key_id, "reason": reason, "usd": usd, "state": AWAITING,
            "expires_at": now + policy.expiry_hours * 3600, "created_at": now}
    await db.execute(insert_statement("approval_holds", hold), hold)
    return True


async def awaiting(gateway: Any, merchant_id: str) -> list[Mapping[str, Any]]:
    """The account's payouts and transfers waiting for a decision, oldest first."""
    return await gateway.db.fetch_all(
        "SELECT * FROM approval_holds WHERE merchant_id = :m AND state = :s ORDER BY created_at, ref",
        {"m": merchant_id, "s": AWAITING})


async def _hold(gateway: Any, merchant_id: str, ref: Any) -> Mapping[str, Any]:
    """The hold of the account's payout (track id) or transfer (id) ``ref``; 404 for unknown, foreign or never
    held ones alike."""
    row = None
    if isinstance(ref, str) and 0 < len(ref) <= 64:
        row = await gateway.db.fetch_one("SELECT * FROM approval_holds WHERE merchant_id = :m AND ref = :r",
                                         {"m": merchant_id, "r": ref})
    if row is None:
        raise NotFound("nothing awaiting approval with this id", code="approval_not_found")
    return row


def _settled(hold: Mapping[str, Any], wanted: str) -> Mapping[str, Any]:
    """A hold decided before: the same decision is answered again (idempotent), another one is a 409."""
    if hold["state"] == wanted:
        return hold
    raise Conflict(f"this {hold['kind']} was {hold['state']} already", code=f"approval_{hold['state']}")


def _mark(gateway: Any, subject_id: str, state: str, by: str | None):
    async def within(_row: Any) -> None:
        moved = await gateway.db.execute(
            "UPDATE approval_holds SET state = :s, decided_by = :by, decided_at = :now"
            " WHERE subject_id = :id AND state = :awaiting RETURNING subject_id",
            {"s": state, "by": by, "now": gateway.now(), "id": subject_id, "awaiting": AWAITING})
        assert moved is not None, "the hold moves with its payout or transfer"
    return within


async def has_own_2fa(gateway: Any, person: Principal) -> bool:
    """Whether ``person`` (a member, or the holder) has their own two-factor authentication on: approving needs it."""
    if person.member_id is not None:
        return await member_totp_enabled(gateway.db, person.merchant_id, person.member_id)
    merchant = await get_merchant(gateway.db, person.merchant_id)
    return merchant is not None and bool(merchant["totp_enabled"])


async def _check_approver(gateway: Any, hold: Mapping[str, Any], approver: Principal, code: Any) -> None:
    """Someone other than the requester, with two-factor authentication of their own on, and its fresh code."""
    if hold["requested_by"] == approver.requester:
        raise Forbidden(f"a {hold['kind']} needs a second person: its requester cannot approve it",
                        code="self_approval")
    if not await has_own_2fa(gateway, approver):
        raise Forbidden("approving needs your own two-factor authentication: set it up on your Security page first",
                        code="totp_required")
    await verify_second_factor(gateway, approver, code)


async def _announce(gateway: Any, merchant_id: str, kind: str, hold: Mapping[str, Any]) -> None:
    """The activity log's line: the actor decided, the details say which payout and who had asked."""
    await announce_security_event(gateway, merchant_id, f"{hold['kind']}_{kind}", {
        hold["kind"]: hold["ref"],
        "requested_by": await people.label(gateway, merchant_id, hold["requested_by"], hold["key_id"])})


async def approve(gateway: Any, approver: Principal, ref: Any, code: Any) -> Mapping[str, Any]:
    """Send the held payout or transfer: another person than its requester, with their TOTP code. Twice = once."""
    merchant_id = approver.merchant_id
    hold = await _hold(gateway, merchant_id, ref)
    if hold["state"] != AWAITING:
        return _settled(hold, APPROVED)
    await _check_approver(gateway, hold, approver, code)
    move = MOVES[hold["kind"]][0]
    if await move(gateway, hold["subject_id"], _mark(gateway, hold["subject_id"], APPROVED, approver.requester)):
        await _announce(gateway, merchant_id, APPROVED, hold)
    return _settled(await _hold(gateway, merchant_id, ref), APPROVED)


async def reject(gateway: Any, merchant_id: str, ref: Any, by: str) -> Mapping[str, Any]:
    """Fail the held payout or transfer (``rejected``) and give its money back; the requester may withdraw theirs."""
    hold = await _hold(gateway, merchant_id, ref)
    if hold["state"] == AWAITING and await _release(gateway, hold, REJECTED, by):
        await _announce(gateway, merchant_id, REJECTED, hold)
    return _settled(await _hold(gateway, merchant_id, ref), REJECTED)


async def _release(gateway: Any, hold: Mapping[str, Any], state: str, by: str | None) -> Any:
    move = MOVES[hold["kind"]][1]
    return await move(gateway, hold["subject_id"], state, _mark(gateway, hold["subject_id"], state, by))


async def expire_due(gateway: Any, limit: int = 100) -> int:
    """The job: fail every hold past its time (``expired``) and give its money back; returns how many."""
    due = await gateway.db.fetch_all(
        "SELECT * FROM approval_holds WHERE state = :s AND expires_at <= :now ORDER BY expires_at LIMIT :l",
        {"s": AWAITING, "now": gateway.now(), "l": limit})
    done = 0
    for hold in due:  # each its own transaction; one another process expired meanwhile is skipped
        if await _release(gateway, hold, EXPIRED, None):
            done += 1
    return done


async def check_signing(gateway: Any, payout: Any) -> None:
    """``check_payout_signing``: a payout this policy held is signed only with its approval recorded, unchanged.

    The core's stage ``held`` keeps it from the worker; this answers for the moment keys are used, so a
    row moved out of ``held`` by anything but ``approve`` (or edited after approval) is not signed.
    """
    hold = await gateway.db.fetch_one(
        "SELECT state, coin, amount, destination FROM approval_holds WHERE subject_id = :id AND kind = :k",
        {"id": payout.id, "k": PAYOUT})
    if hold is None:
        return
    same = (hold["coin"], int(hold["amount"]), hold["destination"]) == (payout.coin, payout.amount,
                                                                       payout.destination)
    if hold["state"] != APPROVED or not same:
        raise Forbidden("this payout's approval is not recorded", code="approval_missing")


async def review_notice(gateway: Any, merchant_id: str, coin: str, amount: int, requested_by: str | None) -> str | None:
    """What the payout review says before anything is reserved: the rule that will hold this payout and who may
    approve it (``decide_payout_hold_notice``); None when the policy would let it go. Reads only: the hold is
    still decided, with the money locked, when the payout is made."""
    policy = await policies.load(gateway, merchant_id)
    if policy is None:
        return None
    price = await usd_price(gateway, coin)
    usd = await usd_units(gateway, coin, amount, price if isinstance(price, Decimal) else Decimal(0))
    who = ("a second person (an owner or admin with two-factor authentication on), on the Approvals page;"
           " you cannot approve your own payout")
    threshold = policy.thresholds.get(coin)
    if threshold is not None and (usd == 0 or usd > threshold):
        limit = policies.usd_text(threshold)
        worth = "its value cannot be priced now" if usd == 0 else f"it is worth more than {limit} USD"
        return (f"This payout will be held for approval: {worth}, the account's limit for {coin}. It is sent"
                f" once approved by {who}.")
    if await past_daily_limit(gateway, policy, merchant_id, requested_by, None, usd, utc_day(gateway.now())):
        return (f"This payout will be held for approval: it takes you past your daily limit. It is sent once"
                f" approved by {who}.")
    return None
