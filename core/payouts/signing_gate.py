"""The signing boundary: the one place a payout is judged before a chain adapter signs it.

The worker calls :func:`authorize` with its claim, right before
``sign_payout`` (``core/payouts/worker.py``, also for an instant payout
driven inside its request). It reads, from the database, what the signer's
policy needs (``signing_policy.SigningFacts``): the payout's reserve posting
in the ledger (never the row's own word for it), whether that reserve was
given back, the binding digest kept with it, a plugin's objection (the
approvals plugin: an approval asked for and not given) and the coin's
payouts authorized in the last hour and day. ``signing_policy.judge``
decides; this module writes the verdict.

Race-free caps: the counting and the verdict happen in one transaction that
first locks the coin's row of ``signing_locks`` (``FOR UPDATE`` on
PostgreSQL; SQLite's single writer, ``BEGIN IMMEDIATE``, already serialises),
and a payout that passes gets ``authorized_at`` in that transaction, so the
next worker (in this process or another ``serve``) counts it. A payout held
leaves the worker (stage ``policy_held``, never claimed again) with its money
still reserved; it is counted in ``orbchain_payouts_held_by_policy_total``,
logged as an ERROR and announced to the merchant's activity log
(``payout_held_by_policy``). The operator releases or cancels it
(``core/payouts/policy_holds.py``).
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..events import operator as operator_events
from ..events.operator import notify_operator
from ..types.views import payout_view_of
from ..types.errors import ApiError
from ..infra.config import ConfigError
from .payout_events import announce_payout
from .reservations import reservation_of
from .service import CONFIRMING, POLICY_HELD, QUEUED, Row, payout_route
from .signing_policy import (DAY_SECONDS, HOUR_SECONDS, SigningFacts, SigningPolicy, judge,
                             judge_fee_bump, judge_hot_wallet_spend, needs_window_counts, policy_from_config)
from ..types.services import ServiceKey

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway
    from ..infra.db import Database

log = logging.getLogger(__name__)

POLICY_SERVICE = ServiceKey("signing_policy", SigningPolicy)  # the loaded policy
HELD_EVENT = "payout_held_by_policy"  # the security event (activity log) of a hold


def load_policy(gateway: "Gateway") -> SigningPolicy:
    """Build the ``[signing]`` policy against this gateway's coins and chains; ``ConfigError`` naming the entry."""

    def to_units(coin: str, amount: Decimal) -> int:
        known = gateway.coins.get(coin)
        if known is None:
            raise ValueError(f"unknown coin {coin}")
        return known.to_units(amount)

    def canonical(coin: str, address: str) -> str:
        try:
            route = payout_route(gateway, coin)
        except ApiError:
            raise ValueError(f"{coin} payouts are not configured here") from None
        return route.family.validate(address)

    try:
        policy = policy_from_config(gateway.config.signing, to_units, canonical)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    gateway.services[POLICY_SERVICE] = policy
    return policy


def current_policy(gateway: "Gateway") -> SigningPolicy:
    policy = gateway.services.get(POLICY_SERVICE)
    return policy if isinstance(policy, SigningPolicy) else load_policy(gateway)


async def authorize(gateway: "Gateway", row: Row) -> Row | None:
    """The claimed, queued payout with ``authorized_at`` set, ready to sign; None when it was held or the claim lost.

    Chain calls never happen here; the caller signs after this returns.
    """
    policy = current_policy(gateway)
    objection = await _plugin_objection(gateway, row)  # before the lock: a plugin's own reads stay outside it
    db = gateway.db
    now = gateway.now()
    async with db.transaction():
        await _lock_coin(db, row["coin"])
        current = await db.fetch_one(
            f"SELECT * FROM payouts WHERE id = :id AND claim_token = :tok AND stage = :queued AND status = :s"
            f"{db.for_update}", {"id": row["id"], "tok": row["claim_token"], "queued": QUEUED, "s": CONFIRMING})
        if current is None:
            return None
        facts = await read_facts(gateway, current, objection, policy)
        reason = judge(facts, policy)
        if reason is None:
            return await db.fetch_one(
                "UPDATE payouts SET authorized_at = COALESCE(authorized_at, :now), updated_at = :now WHERE id = :id"
                " RETURNING *", {"now": now, "id": current["id"]})
        held = await db.fetch_one(
            "UPDATE payouts SET stage = :held, policy_hold = :reason, claimed_until = NULL, claim_token = NULL,"
            " updated_at = :now WHERE id = :id RETURNING *",
            {"held": POLICY_HELD, "reason": reason, "now": now, "id": current["id"]})
        if held is not None:
            await notify_operator(gateway, operator_events.HELD, held_body(gateway, held, reason),
                                  f"{operator_events.HELD}:{held['id']}:{reason}")
    assert held is not None, "the payout row is locked by this transaction"
    await _announce_hold(gateway, held, reason)
    return None


async def authorize_fee_bump(gateway: "Gateway", payout_id: str, reference: str, extra_fee: int,
                             fee_coin: str | None = None) -> str | None:
    """Judge and count the extra fee of one bump of a broadcast payout; the cap it would pass, or None to sign it.

    Called by a chain's ``bump_stuck`` before it signs (in whichever process
    holds the keys). ``extra_fee`` is in ``fee_coin``, the coin the chain
    pays fees in (a token payout pays gas in the chain's native coin), by
    default the payout's. Under that coin's signing lock, like ``authorize``: its hour and day
    windows (other payouts and earlier bumps, and this payout's own amount
    when it is in that coin and was authorized inside them) plus
    ``extra_fee`` against its caps; a bump that passes is recorded under
    ``reference`` in the same transaction, so the next decision counts it.
    Asking again with the same ``reference`` answers None without counting
    it twice. A refused bump is not signed: the payout waits as it is.
    """
    if extra_fee < 0:
        raise ValueError(f"a bump's extra fee cannot be negative: {extra_fee}")
    policy = current_policy(gateway)
    db = gateway.db
    async with db.transaction():
        row = await db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout_id})
        if row is None:
            return "unknown payout"
        coin = fee_coin or row["coin"]
        await _lock_coin(db, coin)
        if await db.fetch_val("SELECT 1 FROM payout_fee_bumps WHERE reference = :r", {"r": reference}):
            return None
        if needs_window_counts(policy, coin):
            hour, day, merchant_day = await _window_sums(gateway, coin, merchant_id=row["merchant_id"],
                                                          payout_id=payout_id, include_self=coin == row["coin"])
            reason = judge_fee_bump(policy, coin, extra_fee, hour, day, merchant_day)
            if reason is not None:
                log.error("payout %s (%s): a bump paying %d %s more would pass the signer's cap (%s); not bumped",
                          payout_id, row["coin"], extra_fee, coin, reason)
                return reason
        await db.execute(
            "INSERT INTO payout_fee_bumps (reference, payout_id, merchant_id, coin, fee, authorized_at)"
            " VALUES (:r, :p, :m, :c, :f, :t)",
            {"r": reference, "p": payout_id, "m": row["merchant_id"], "c": coin,
             "f": db.amount_param(extra_fee), "t": gateway.now()})
    return None


async def authorize_hot_wallet_spend(gateway: "Gateway", *, chain: str, coin: str, kind: str, reference: str,
                                     amount: int, subject: str, per_spend: bool = True) -> str | None:
    """Judge and count a spend of the hot wallet that is no payout (a gas top-up); the cap it would pass, or None.

    Why: a top-up sends ``coin`` out of the hot wallet as a payout does, so a
    serve that starts sweeps at will must not get around the caps with them.
    Called by a chain's sweeper before it signs (in whichever process holds
    the keys). ``amount`` is all the spend may take from the hot wallet (value
    and fee bound); ``per_spend`` False for a re-signing's extra fee, which
    passes the windows only (like ``authorize_fee_bump``). Under the coin's
    signing lock, like ``authorize``: the coin's hour and day windows (payouts,
    bumps, earlier spends) plus ``amount`` against its caps; a spend that passes
    is recorded under ``reference`` in the same transaction, so every later
    decision counts it; asking again with the same ``reference`` answers None
    without counting twice. A refused spend is not signed: the caller waits
    (the sweep is tried again at its next run). It is never silent: counted in
    ``orbchain_hot_wallet_spends_held_by_policy_total``, logged as an ERROR and
    announced to the operator (``hot_wallet.spend_held``, once a day per
    ``subject`` and reason).
    """
    if amount < 0:
        raise ValueError(f"a spend cannot be negative: {amount}")
    policy = current_policy(gateway)
    db = gateway.db
    now = gateway.now()
    async with db.transaction():
        await _lock_coin(db, coin)
        if await db.fetch_val("SELECT 1 FROM hot_wallet_spends WHERE reference = :r", {"r": reference}):
            return None
        hour = day = 0
        if needs_window_counts(policy, coin):
            hour, day, _ = await _window_sums(gateway, coin, merchant_id=None, payout_id=None)
        reason = judge_hot_wallet_spend(policy, coin, amount, hour, day, per_spend=per_spend)
        if reason is None:
            await db.execute(
                "INSERT INTO hot_wallet_spends (reference, chain, coin, kind, amount, authorized_at)"
                " VALUES (:r, :ch, :c, :k, :a, :t)",
                {"r": reference, "ch": chain, "c": coin, "k": kind, "a": db.amount_param(amount), "t": now})
            return None
        known = gateway.coins.get(coin)
        await notify_operator(gateway, operator_events.SPEND_HELD,
                              {"chain": chain, "coin": coin, "kind": kind, "subject": subject, "reason": reason,
                               "amount": known.format(amount) if known is not None else str(amount)},
                              f"{operator_events.SPEND_HELD}:{chain}:{kind}:{subject}:{reason}:{now // DAY_SECONDS}")
    gateway.metrics.hot_wallet_spends_held_by_policy.labels(coin=coin, kind=kind, reason=reason).inc()
    log.error("%s: a %s of %d %s base units for %s is over the signer's %s; not signed, tried again at the next run",
              chain, kind, amount, coin, subject, reason)
    return reason


async def _plugin_objection(gateway: "Gateway", row: Row) -> str | None:
    """``check_payout_signing``: a plugin's refusal, as its error code (or message)."""
    try:
        await gateway.hooks.check_payout_signing(payout=payout_view_of(gateway, row))
    except ApiError as exc:
        return exc.code or str(exc)
    return None


async def _lock_coin(db: "Database", coin: str) -> None:
    """Serialise every signing decision of ``coin`` across processes until this transaction ends."""
    await db.execute("INSERT INTO signing_locks (coin) VALUES (:c) ON CONFLICT DO NOTHING", {"c": coin})
    await db.fetch_one(f"SELECT coin FROM signing_locks WHERE coin = :c{db.for_update}", {"c": coin})


async def read_facts(gateway: "Gateway", row: Row, objection: str | None, policy: SigningPolicy) -> SigningFacts:
    """What ``judge`` needs about ``row``, from the ledger and the payouts table."""
    db = gateway.db
    amount = db.to_int(row["amount"])
    reservation, released = await reservation_of(gateway, row)
    hour = day = merchant_day = 0
    if needs_window_counts(policy, row["coin"]):
        hour, day, merchant_day = await _window_sums(gateway, row["coin"], merchant_id=row["merchant_id"],
                                                     payout_id=row["id"])
    return SigningFacts(
        payout_id=row["id"], merchant_id=row["merchant_id"], coin=row["coin"], chain=row["chain"], amount=amount,
        destination=row["destination"], reservation=reservation, reservation_released=released,
        approval_objection=objection, operator_released=bool(row["policy_released_by"]),
        coin_last_hour=hour, coin_last_day=day, merchant_last_day=merchant_day)


async def _window_sums(gateway: "Gateway", coin: str, *, merchant_id: str | None, payout_id: str | None,
                       include_self: bool = False) -> tuple[int, int, int]:
    """What the coin's caps already hold in the last hour and day (all merchants), and ``merchant_id``'s day.

    Summed in Python (SQLite stores amounts as text). Payouts of ``coin`` authorized in the windows, other
    than ``payout_id`` unless ``include_self`` (judging its bump): one that failed before anything was signed
    (no ``tx_hash``) no longer counts; one that was signed counts even if it failed later (a transaction that
    may still confirm is money that may have left). The extra fees of bumps (``payout_fee_bumps``) and the
    hot wallet's other spends (``hot_wallet_spends``: gas top-ups, no merchant's) count too.
    """
    db = gateway.db
    now = gateway.now()
    rows = await db.fetch_all(
        "SELECT merchant_id, amount, authorized_at FROM payouts WHERE coin = :c AND authorized_at > :since"
        " AND (id <> :id OR :self = 1) AND NOT (status = 'Failed' AND tx_hash IS NULL)"
        " UNION ALL SELECT merchant_id, fee AS amount, authorized_at FROM payout_fee_bumps"
        " WHERE coin = :c AND authorized_at > :since"
        " UNION ALL SELECT NULL AS merchant_id, amount, authorized_at FROM hot_wallet_spends"
        " WHERE coin = :c AND authorized_at > :since",
        {"c": coin, "since": now - DAY_SECONDS, "id": payout_id or "", "self": 1 if include_self else 0})
    hour = day = merchant_day = 0
    for other in rows:
        units = db.to_int(other["amount"])
        day += units
        hour += units if int(other["authorized_at"]) > now - HOUR_SECONDS else 0
        merchant_day += units if merchant_id is not None and other["merchant_id"] == merchant_id else 0
    return hour, day, merchant_day


def held_body(gateway: "Gateway", row: Row, reason: str) -> dict[str, Any]:
    """The operator event of a hold: the row as the database has it (a forged one's merchant may not exist)."""
    amount = gateway.db.to_int(row["amount"])
    coin = gateway.coins.get(row["coin"])
    return {"payout_id": row["id"], "track_id": row["track_id"], "merchant_id": row["merchant_id"],
            "coin": row["coin"], "chain": row["chain"], "destination": row["destination"],
            "amount": coin.format(amount) if coin is not None else str(amount), "reason": reason}


def count_hold(gateway: "Gateway", row: Row, reason: str) -> None:
    """``orbchain_payouts_held_by_policy_total`` one up for this hold's coin and reason."""
    coin = row["coin"] if gateway.coins.get(row["coin"]) is not None else "unknown"  # a forged row's text: no new label
    gateway.metrics.payouts_held_by_policy.labels(coin=coin, reason=reason).inc()


async def _announce_hold(gateway: "Gateway", row: Row, reason: str) -> None:
    """Count, log and announce a hold: the metric, an ERROR line, the merchant's activity log."""
    count_hold(gateway, row, reason)
    log.error("payout %s (%s, merchant %s) held by the signing policy: %s; release or cancel it with"
              " `orbchain payouts release|cancel %s`", row["id"], row["coin"], row["merchant_id"], reason,
              row["track_id"])
    await announce_payout(gateway, row, HELD_EVENT, reason=reason)
