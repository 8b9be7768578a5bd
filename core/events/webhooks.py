"""Webhook delivery: the delivery job, the immediate attempt, requeues and the merchant's log (SPEC 6.1-6.2).

Correctness comes from the outbox (``core/events/outbox.py``): :func:`deliver_due`
runs every ``webhooks.tick_seconds`` and whenever a new event committed (the
``wake`` signal, ``core/events/delivery_wake.py``), claims due rows and sends
them until none is left, so an event survives a crash, a restart or a
receiver that is down for a while. How one run sends them, side by side
across endpoints and in order within one, is ``core/events/delivery_run.py``;
one attempt (claim, signed request, record, give back) is
``core/events/attempts.py``, whose names are re-exported here.
:func:`deliver_now` is only a shortcut for one event (the CLI, a redelivery). A merchant's "Send again"
(:func:`redeliver`) requeues an event that gave up, was never sent, or was delivered a while ago.
"""

from __future__ import annotations

import hmac
import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import AsyncIterator, Mapping

import aiohttp

from .attempts import (  # noqa: F401 - re-exported: callers and tests name them here
    CLAIM_BATCH, LEASE_MARGIN_SECONDS, MAX_RETRY_DELAY, RETRY_DELAYS, SIGNATURE_HEADER, Claim, Outcome,
    attempt_delivery, claim_due, delivery_headers, record_attempt, record_attempts, release_claims,
    retry_delay, sign,
)
from .delivery_run import run_claims, run_due
from .outbox import DELIVERED, FAILED, PENDING, SKIPPED_NO_SECRET, SKIPPED_NO_URL
from ..infra import kept_counts
from ..infra.db_dialect import in_list
from ..infra.netguard import HTTP_SESSION, outbound_session
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

WEBHOOK_LOG = kept_counts.KeptList("webhook_log")  # m0056: per merchant, the log has no filter
BATCH_SIZE = CLAIM_BATCH  # a delivery run's claims (tests make it small to interleave workers)


def verify_signature(body: bytes, secret: str, signature: str) -> bool:
    """What a receiver does: recompute and compare in constant time."""
    return hmac.compare_digest(sign(body, secret), (signature or "").strip().lower())


# -- entry points ------------------------------------------------------------------


@asynccontextmanager
async def _http_session(gateway: "Gateway") -> AsyncIterator[aiohttp.ClientSession]:
    """The app's shared session, or a short-lived one (CLI, service tests)."""
    shared = gateway.services.get(HTTP_SESSION)
    if shared is not None and not shared.closed:
        yield shared
        return
    config = gateway.config.webhooks
    async with outbound_session(
        allow_private=config.allow_private_urls, timeout_seconds=config.timeout_seconds
    ) as session:
        yield session


async def deliver_due(gateway: "Gateway") -> int:
    """The delivery job: send every due event once, until none is left; returns the number of attempts made."""
    async with _http_session(gateway) as http:
        return await run_due(gateway, http, batch=BATCH_SIZE)


async def deliver_now(gateway: "Gateway", event_id: str) -> bool:
    """Best-effort immediate attempt after the enqueueing transaction committed.

    Returns True when the receiver accepted it. Never raises: if anything
    goes wrong the outbox row is still there and the tick delivers it.
    """
    try:
        claims = await claim_due(gateway, limit=1, event_id=event_id)
        if not claims:
            return False
        async with _http_session(gateway) as http:
            statuses = await run_claims(gateway, http, claims)
        return statuses.get(event_id) == DELIVERED
    except Exception as exc:  # the tick retries; the caller's request must not fail
        if not gateway.db_outage.absorb(exc, "an immediate webhook delivery"):  # an outage: logged once
            log.exception("immediate delivery of webhook %s failed; the delivery tick retries it", event_id)
        return False


async def requeue_event(gateway: "Gateway", event_id: str) -> bool:
    """Make ``event_id`` due now with a fresh attempt budget (``orbchain webhooks redeliver``).

    Any status may be requeued: a delivered event is sent again with the same
    bytes and signature (receivers dedupe by event id), a failed one gets the
    whole retry schedule again. Earlier attempts stay in the delivery log.
    Returns False when no such event exists.
    """
    now = gateway.now()
    moved = await gateway.db.fetch_val(
        "UPDATE webhook_events SET status = :pending, attempts = 0, next_attempt_at = :now, claim_token = NULL,"
        " last_error = NULL, updated_at = :now WHERE event_id = :id RETURNING event_id",
        {"pending": PENDING, "now": now, "id": event_id})
    if moved:
        log.info("webhook %s requeued by the operator", event_id)
    return bool(moved)


def describe_schedule(max_attempts: int) -> Mapping[int, int]:
    """Attempt number to seconds after the first attempt (docs, tests)."""
    offsets, total = {1: 0}, 0
    for attempt in range(1, max_attempts):
        total += retry_delay(attempt)
        offsets[attempt + 1] = total
    return offsets


# -- the merchant's view -------------------------------------------------------------------


async def delivery_log(gateway: "Gateway", merchant_id: str, *, limit: int, offset: int) -> tuple[list[dict], int]:
    """One merchant's delivery attempts, newest first (SPEC 2.16), and their total count: kept by the database
    (core/infra/kept_counts.py, m0056), a few rows however long the log."""
    db = gateway.db
    total = await WEBHOOK_LOG.total(db, merchant_id)
    # The page first, then its events' types: joined before the LIMIT, a deep page made PostgreSQL hash-join
    # every webhook event (tests/test_query_plans.py), as the deposits list did with payments. The offset is
    # walked over the index alone (merchant_id, id: index-only), the page's rows read by id (deep offsets).
    rows = await db.fetch_all(
        "SELECT d.id, d.event_id, e.event_type, d.url, d.status_code, d.success, d.attempt, d.error,"
        " d.payload_preview, d.response_preview, d.created_at"
        " FROM (SELECT id FROM webhook_deliveries WHERE merchant_id = :m ORDER BY id DESC LIMIT :limit OFFSET :offset)"
        " page JOIN webhook_deliveries d ON d.id = page.id JOIN webhook_events e ON e.event_id = d.event_id"
        " ORDER BY d.id DESC",
        {"m": merchant_id, "limit": limit, "offset": offset},
    )
    return [
        {
            "id": str(row["id"]),
            "event_id": row["event_id"],
            "event_type": row["event_type"],
            "url": row["url"],
            "status_code": row["status_code"],
            "success": bool(row["success"]),
            "attempt": int(row["attempt"]),
            "error": row["error"],
            "payload_preview": row["payload_preview"],
            "response_preview": row["response_preview"],
            "created_at": int(row["created_at"]),
        }
        for row in rows
    ], int(total or 0)


# -- redelivery --------------------------------------------------------------------------------

# Every status but "being sent": a delivered event too, as Stripe resends one (a receiver that lost it, or one
# fixed since it answered 200 without acting on it). Pending is already on its way and is left alone.
REDELIVERABLE = (FAILED, SKIPPED_NO_SECRET, SKIPPED_NO_URL, DELIVERED)
# A delivered event is sent again at most once in this many seconds: a receiver that answered is not hammered
# by repeated clicks, and the bound is the row's own time, so it holds across processes with no counter.
RESEND_GAP_SECONDS = 60


@dataclass(frozen=True)
class Redelivery:
    """What asking to send an event again did: ``queued``, else why not (``retry_after`` > 0: it was delivered
    less than ``RESEND_GAP_SECONDS`` ago and may be sent again in that many seconds; 0: it is still being sent)."""

    queued: bool
    retry_after: int = 0


async def redeliverable_events(gateway: "Gateway", merchant_id: str, event_ids: list[str]) -> set[str]:
    """Those of ``event_ids`` (the merchant's own) that are not being sent now and may be sent again."""
    if not event_ids:
        return set()
    placeholders, ids = in_list("id", sorted(set(event_ids)))
    rows = await gateway.db.fetch_all(
        f"SELECT event_id, status FROM webhook_events WHERE merchant_id = :m AND event_id IN ({placeholders})",
        {"m": merchant_id, **ids})
    return {row["event_id"] for row in rows if row["status"] in REDELIVERABLE}


async def redeliver(gateway: "Gateway", merchant_id: str, event_id: str) -> Redelivery | None:
    """Queue an event of this merchant for a fresh round of attempts: one that gave up, was never sent, or was
    delivered (at most once a ``RESEND_GAP_SECONDS``).

    The event keeps its ``event_id`` and sealed body, so a receiver that
    deduplicates on it is safe; each attempt signs the body anew with the
    secret in force then (a rotated secret verifies). It gets the full
    attempt budget again and is tried at once; the delivery log keeps the
    earlier attempts. One statement decides, so two clicks at once queue it
    once. None (nothing changed) for an unknown event or another merchant's.
    """
    now = gateway.now()
    placeholders, statuses = in_list("s", list(REDELIVERABLE))
    moved = await gateway.db.fetch_val(
        "UPDATE webhook_events SET status = :pending, attempts = 0, next_attempt_at = :now, claim_token = NULL,"
        " last_error = NULL, updated_at = :now"
        f" WHERE event_id = :e AND merchant_id = :m AND status IN ({placeholders})"
        " AND (status <> :delivered OR updated_at <= :settled) RETURNING event_id",
        {"pending": PENDING, "now": now, "e": event_id, "m": merchant_id, "delivered": DELIVERED,
         "settled": now - RESEND_GAP_SECONDS, **statuses})
    if moved is None:
        row = await gateway.db.fetch_one(
            "SELECT status, updated_at FROM webhook_events WHERE event_id = :e AND merchant_id = :m",
            {"e": event_id, "m": merchant_id})
        if row is None:
            return None
        if row["status"] == DELIVERED:
            return Redelivery(False, max(1, int(row["updated_at"]) + RESEND_GAP_SECONDS - now))
        return Redelivery(False)
    log.info("webhook %s queued again by its merchant", event_id)
    await deliver_now(gateway, event_id)
    return Redelivery(True)
