"""Webhook delivery: signing, attempts, backoff and the replay tick (SPEC 6.1-6.2).

Correctness comes from the outbox (``core/events/outbox.py``): :func:`deliver_due`
runs every ``webhooks.tick_seconds`` and whenever a new event committed (the
``wake`` signal, ``core/events/delivery_wake.py``), claims due rows and sends
them until none is left, so an event survives a crash, a restart or a
receiver that is down for a while. How one run sends them, side by side
across endpoints and in order within one, is ``core/events/delivery_run.py``.
:func:`deliver_now` is only a shortcut for one event (the CLI, a redelivery).

Claiming is safe with several processes: on PostgreSQL the claim takes
``FOR UPDATE SKIP LOCKED`` on the due rows, on SQLite the claim runs in the
single-writer transaction. A claim moves ``next_attempt_at`` forward by a
lease and stamps a claim token, so a worker that dies mid-attempt only
delays the event, and a late worker cannot overwrite a newer claim's result.
The HTTP request itself runs outside any database transaction. An attempt
cancelled by a stop gives its claim back (``release_claims``): the event is
due again at once, after a restart or in another process.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, AsyncIterator, Mapping
from urllib.parse import urlsplit

import aiohttp

from .outbox import DELIVERED, FAILED, PENDING, PREVIEW_CHARS, SKIPPED_NO_SECRET, SKIPPED_NO_URL
from ..infra.netguard import UnsafeUrl, check_public_url, outbound_session

if TYPE_CHECKING:  # pragma: no cover
    from ..gateway import Gateway

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "HMAC"
# Seconds to wait after failed attempt n (index n-1) before attempt n+1:
# 0s, 10s, 1 min, 10 min, 1 h for the default five attempts. Operators who
# raise webhooks.max_attempts get doubling delays capped at one day.
RETRY_DELAYS = (10, 60, 600, 3600)
MAX_RETRY_DELAY = 86_400
BATCH_SIZE = 100
# A claimed row becomes due again this long after the request timeout, in
# case the worker holding it died.
LEASE_MARGIN_SECONDS = 60
# Read at most this much of a receiver's answer: the preview keeps 500 chars.
RESPONSE_READ_BYTES = 4096
REDACTED = "[redacted]"
# Delivery metric outcome for the status an attempt left its event in.
_OUTCOMES = {DELIVERED: "delivered", PENDING: "retrying", FAILED: "failed",
             SKIPPED_NO_SECRET: SKIPPED_NO_SECRET, SKIPPED_NO_URL: SKIPPED_NO_URL}


def sign(body: bytes, secret: str) -> str:
    """Lowercase hex HMAC-SHA512 of the raw body with the webhook secret (header ``HMAC``)."""
    return hmac.new(secret.encode("utf-8"), body, hashlib.sha512).hexdigest()


def verify_signature(body: bytes, secret: str, signature: str) -> bool:
    """What a receiver does: recompute and compare in constant time."""
    return hmac.compare_digest(sign(body, secret), (signature or "").strip().lower())


def retry_delay(attempt: int) -> int:
    """Seconds between failed attempt number ``attempt`` (1-based) and the next one."""
    if attempt < 1:
        raise ValueError("attempts are numbered from 1")
    if attempt <= len(RETRY_DELAYS):
        return RETRY_DELAYS[attempt - 1]
    return min(RETRY_DELAYS[-1] * 2 ** (attempt - len(RETRY_DELAYS)), MAX_RETRY_DELAY)


@dataclass(frozen=True)
class Claim:
    """One attempt this worker owns: what to send, where, and with which secret."""

    event_id: str
    merchant_id: str
    event_type: str
    body: str
    event_timestamp: int
    request_id: str | None
    url: str | None
    secret: str | None
    attempt: int
    token: str
    # Unix seconds when this claim's lease ends and another worker may claim the event.
    leased_until: int = 0

    def __repr__(self) -> str:  # never print the secret
        return f"<Claim {self.event_id} attempt {self.attempt}>"


@dataclass(frozen=True)
class Outcome:
    """The result of one attempt, as the delivery log records it."""

    success: bool
    status_code: int | None = None
    error: str | None = None
    response_preview: str | None = None
    duration_ms: int | None = None
    # Set when the event can never be sent (secret or URL removed since enqueue).
    final_status: str | None = None
    # No answer at all (timeout, connection refused): the endpoint is down, not just this event refused.
    unreachable: bool = False


def delivery_headers(claim: Claim) -> dict[str, str]:
    """The SPEC 6.1 headers of an attempt, signature included."""
    headers = {
        "Content-Type": "application/json",
        "X-Event-Id": claim.event_id,
        "X-Event-Type": claim.event_type,
        "X-Event-Timestamp": str(claim.event_timestamp),
        SIGNATURE_HEADER: sign(claim.body.encode("utf-8"), claim.secret or ""),
    }
    if claim.request_id:
        headers["X-Request-Id"] = claim.request_id
    return headers


# -- claiming ------------------------------------------------------------------


def _in_list(prefix: str, values: list[str]) -> tuple[str, dict[str, str]]:
    names = {f"{prefix}{i}": value for i, value in enumerate(values)}
    return ", ".join(f":{name}" for name in names), names


async def claim_due(gateway: "Gateway", *, limit: int = BATCH_SIZE, event_id: str | None = None) -> list[Claim]:
    """Take up to ``limit`` due events (or just ``event_id`` if due) for one attempt each."""
    db = gateway.db
    cfg = gateway.config.webhooks
    now = gateway.now()
    lock = " FOR UPDATE OF e SKIP LOCKED" if db.is_postgres else ""
    only = " AND e.event_id = :event_id" if event_id else ""
    values: dict[str, object] = {"pending": PENDING, "now": now, "max": cfg.max_attempts, "limit": limit}
    if event_id:
        values["event_id"] = event_id
    # Most ticks find nothing: answer that from a plain read, without taking
    # SQLite's single writer lock away from requests.
    due = await db.fetch_val(
        "SELECT 1 FROM webhook_events e WHERE e.status = :pending AND e.next_attempt_at <= :now" + only + " LIMIT 1",
        {k: v for k, v in values.items() if k in ("pending", "now", "event_id")},
    )
    if not due:
        return []
    async with db.transaction():
        await _fail_abandoned(gateway, now)
        rows = await db.fetch_all(
            "SELECT e.event_id, e.merchant_id, e.event_type, e.body, e.event_timestamp, e.request_id, e.attempts,"
            " COALESCE(NULLIF(e.url_override, ''), m.webhook_url) AS url,"
            " COALESCE(NULLIF(e.signing_secret, ''), m.webhook_secret) AS secret"
            " FROM webhook_events e JOIN merchants m ON m.id = e.merchant_id"
            " WHERE e.status = :pending AND e.next_attempt_at <= :now AND e.attempts < :max" + only +
            " ORDER BY e.next_attempt_at, e.event_id LIMIT :limit" + lock,
            values,
        )
        if not rows:
            return []
        token = secrets.token_hex(12)
        placeholders, ids = _in_list("id", [row["event_id"] for row in rows])
        lease = now + cfg.timeout_seconds + LEASE_MARGIN_SECONDS
        await db.execute(
            "UPDATE webhook_events SET attempts = attempts + 1, next_attempt_at = :lease,"
            f" claim_token = :token, updated_at = :now WHERE event_id IN ({placeholders})",
            {"lease": lease, "token": token, "now": now, **ids},
        )
    return [
        Claim(
            event_id=row["event_id"], merchant_id=row["merchant_id"], event_type=row["event_type"],
            body=row["body"], event_timestamp=int(row["event_timestamp"]), request_id=row["request_id"],
            url=row["url"] or None, secret=row["secret"] or None, attempt=int(row["attempts"]) + 1, token=token,
            leased_until=lease,
        )
        for row in rows
    ]


async def _fail_abandoned(gateway: "Gateway", now: int) -> None:
    """Rows whose last attempt was claimed but never recorded (worker died): give up."""
    await gateway.db.execute(
        "UPDATE webhook_events SET status = :failed, next_attempt_at = NULL, claim_token = NULL,"
        " last_error = :error, updated_at = :now"
        " WHERE status = :pending AND next_attempt_at <= :now AND attempts >= :max",
        {"failed": FAILED, "pending": PENDING, "now": now, "max": gateway.config.webhooks.max_attempts,
         "error": "the last attempt was interrupted"},
    )


# -- one attempt -----------------------------------------------------------------


def _preview(raw: bytes, secret: str | None) -> str:
    text = raw.decode("utf-8", errors="replace")
    if secret:
        text = text.replace(secret, REDACTED)  # a receiver echoing the secret must not leak it
    return text[:PREVIEW_CHARS]


async def attempt_delivery(gateway: "Gateway", http: aiohttp.ClientSession, claim: Claim) -> Outcome:
    """POST the sealed body once; never raises for anything the receiver does."""
    if not claim.secret:
        return Outcome(False, error="not sent: webhook_secret is not set", final_status=SKIPPED_NO_SECRET)
    if not claim.url:
        return Outcome(False, error="not sent: no webhook URL is configured", final_status=SKIPPED_NO_URL)
    cfg = gateway.config.webhooks
    try:
        # Checked before every attempt, not only when the URL was saved:
        # narrows the DNS-rebinding window.
        await check_public_url(claim.url, allow_private=cfg.allow_private_urls)
    except UnsafeUrl as exc:
        return Outcome(False, error=f"refused: URL {exc}")
    started = time.monotonic()
    try:
        async with http.post(
            claim.url,
            data=claim.body.encode("utf-8"),
            headers=delivery_headers(claim),
            timeout=aiohttp.ClientTimeout(total=cfg.timeout_seconds),
            # A redirect could point inside the network; it counts as a failure.
            allow_redirects=False,
        ) as response:
            raw = await response.content.read(RESPONSE_READ_BYTES)
            status = response.status
    except TimeoutError:
        return Outcome(False, error=f"timeout after {cfg.timeout_seconds}s", duration_ms=_ms(started),
                       unreachable=True)
    except aiohttp.ClientError as exc:
        reason = str(exc) or type(exc).__name__
        return Outcome(False, error=f"connection failed: {reason}"[:300], duration_ms=_ms(started),
                       unreachable=isinstance(exc, aiohttp.ClientConnectorError))
    success = 200 <= status < 300
    return Outcome(
        success,
        status_code=status,
        error=None if success else f"receiver answered HTTP {status}",
        response_preview=_preview(raw, claim.secret),
        duration_ms=_ms(started),
    )


def _ms(started: float) -> int:  # float ok: a monotonic clock reading
    return int((time.monotonic() - started) * 1000)


async def record_attempt(gateway: "Gateway", claim: Claim, outcome: Outcome) -> str | None:
    """Log the attempt and move the event on; returns its new status (None if the claim was lost)."""
    return (await record_attempts(gateway, [(claim, outcome)]))[0]


def _next_state(gateway: "Gateway", claim: Claim, outcome: Outcome, now: int) -> tuple[str, int | None]:
    if outcome.success:
        return DELIVERED, None
    if outcome.final_status:
        return outcome.final_status, None
    if claim.attempt >= gateway.config.webhooks.max_attempts:
        return FAILED, None
    return PENDING, now + retry_delay(claim.attempt)


async def record_attempts(gateway: "Gateway", results: list[tuple[Claim, Outcome]]) -> list[str | None]:
    """Record a batch of attempts in one transaction: one insert into the log, one update per kind of result.

    Why batched: at hundreds of deliveries a second, two statements per
    attempt were most of a run's database time. Deliveries (the common case)
    move together, per claim token; a failure's error and next attempt are
    its own, so each moves alone.
    """
    db = gateway.db
    now = gateway.now()
    moved: set[tuple[str, str]] = set()
    states = [_next_state(gateway, claim, outcome, now) for claim, outcome in results]
    async with db.transaction():
        await _log_attempts(gateway, results, now)
        delivered: dict[str, list[str]] = {}
        for (claim, outcome), (status, next_at) in zip(results, states):
            if status == DELIVERED:
                delivered.setdefault(claim.token, []).append(claim.event_id)
                continue
            # The claim token guards against a worker whose lease ran out
            # overwriting the result of a newer claim.
            if await db.fetch_val(
                "UPDATE webhook_events SET status = :status, next_attempt_at = :next_at, claim_token = NULL,"
                " last_error = :error, updated_at = :now"
                " WHERE event_id = :event_id AND claim_token = :token RETURNING event_id",
                {"status": status, "next_at": next_at, "error": outcome.error, "now": now,
                 "event_id": claim.event_id, "token": claim.token},
            ):
                moved.add((claim.event_id, claim.token))
        for token, event_ids in delivered.items():
            placeholders, ids = _in_list("id", event_ids)
            for row in await db.fetch_all(
                "UPDATE webhook_events SET status = :status, next_attempt_at = NULL, claim_token = NULL,"
                " last_error = NULL, updated_at = :now, delivered_at = :now"
                f" WHERE claim_token = :token AND event_id IN ({placeholders}) RETURNING event_id",
                {"status": DELIVERED, "now": now, "token": token, **ids},
            ):
                moved.add((row["event_id"], token))
    statuses = [status if (claim.event_id, claim.token) in moved else None
                for (claim, _), (status, _) in zip(results, states)]
    for (claim, outcome), new_status in zip(results, statuses):
        gateway.metrics.webhook_deliveries.labels(_OUTCOMES.get(new_status or "", "claimed_elsewhere")).inc()
        host = urlsplit(claim.url or "").hostname or "-"
        if outcome.success:
            log.info("webhook %s delivered to %s on attempt %d", claim.event_id, host, claim.attempt)
        else:
            log.info("webhook %s attempt %d to %s failed (%s); now %s", claim.event_id, claim.attempt, host,
                     outcome.error, new_status or "claimed elsewhere")
    return statuses


async def _log_attempts(gateway: "Gateway", results: list[tuple[Claim, Outcome]], now: int) -> None:
    """The delivery log's lines for these attempts, in one statement."""
    rows: list[str] = []
    values: dict[str, object] = {"now": now}
    for i, (claim, outcome) in enumerate(results):
        rows.append(f"(:event_id{i}, :merchant_id{i}, :url{i}, :status_code{i}, :success{i}, :attempt{i},"
                    f" :error{i}, :payload_preview{i}, :response_preview{i}, :duration_ms{i}, :now)")
        values.update({
            f"event_id{i}": claim.event_id, f"merchant_id{i}": claim.merchant_id, f"url{i}": claim.url,
            f"status_code{i}": outcome.status_code, f"success{i}": outcome.success, f"attempt{i}": claim.attempt,
            f"error{i}": outcome.error, f"payload_preview{i}": claim.body[:PREVIEW_CHARS],
            f"response_preview{i}": outcome.response_preview, f"duration_ms{i}": outcome.duration_ms,
        })
    await gateway.db.execute(
        "INSERT INTO webhook_deliveries (event_id, merchant_id, url, status_code, success, attempt, error,"
        " payload_preview, response_preview, duration_ms, created_at) VALUES " + ", ".join(rows),
        values,
    )


# -- entry points ------------------------------------------------------------------


@asynccontextmanager
async def _http_session(gateway: "Gateway") -> AsyncIterator[aiohttp.ClientSession]:
    """The app's shared session, or a short-lived one (CLI, service tests)."""
    shared = gateway.services.get("http")
    if shared is not None and not shared.closed:
        yield shared
        return
    config = gateway.config.webhooks
    async with outbound_session(
        allow_private=config.allow_private_urls, timeout_seconds=config.timeout_seconds
    ) as session:
        yield session


async def release_claims(gateway: "Gateway", claims: list[Claim], *, delay: int = 0) -> None:
    """Give back claims whose attempts never happened: due again after ``delay`` seconds, the attempt not counted.

    An attempt cut short by our own stop says nothing about the receiver;
    counted, a restart during the last attempt would fail the event. The
    receiver may have read the body already and will see the same event id
    again, which it deduplicates (docs/webhooks.md). Only rows still under
    these claims move (a recorded attempt cleared its token). A delivery run
    also gives back what it will not send in this run (core/events/delivery_run.py).
    """
    now = gateway.now()
    by_token: dict[str, list[str]] = {}
    for claim in claims:
        by_token.setdefault(claim.token, []).append(claim.event_id)
    for token in sorted(by_token):
        placeholders, ids = _in_list("id", by_token[token])
        await gateway.db.execute(
            "UPDATE webhook_events SET attempts = attempts - 1, next_attempt_at = :due, claim_token = NULL,"
            f" updated_at = :now WHERE claim_token = :token AND status = :pending AND event_id IN ({placeholders})",
            {"due": now + delay, "now": now, "token": token, "pending": PENDING, **ids})


async def deliver_due(gateway: "Gateway") -> int:
    """The delivery job: send every due event once, until none is left; returns the number of attempts claimed."""
    from .delivery_run import run_due  # it drives this module's claims and attempts

    async with _http_session(gateway) as http:
        return await run_due(gateway, http)


async def deliver_now(gateway: "Gateway", event_id: str) -> bool:
    """Best-effort immediate attempt after the enqueueing transaction committed.

    Returns True when the receiver accepted it. Never raises: if anything
    goes wrong the outbox row is still there and the tick delivers it.
    """
    from .delivery_run import run_claims

    try:
        claims = await claim_due(gateway, limit=1, event_id=event_id)
        if not claims:
            return False
        async with _http_session(gateway) as http:
            statuses = await run_claims(gateway, http, claims)
        return statuses.get(event_id) == DELIVERED
    except Exception:  # the tick retries; the caller's request must not fail
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
    """One merchant's delivery attempts, newest first (SPEC 2.16), and their total count."""
    db = gateway.db
    total = await db.fetch_val(
        "SELECT COUNT(*) FROM webhook_deliveries WHERE merchant_id = :m", {"m": merchant_id})
    rows = await db.fetch_all(
        "SELECT d.id, d.event_id, e.event_type, d.url, d.status_code, d.success, d.attempt, d.error,"
        " d.payload_preview, d.response_preview, d.created_at"
        " FROM webhook_deliveries d JOIN webhook_events e ON e.event_id = d.event_id"
        " WHERE d.merchant_id = :m ORDER BY d.id DESC LIMIT :limit OFFSET :offset",
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

REDELIVERABLE = (FAILED, SKIPPED_NO_SECRET, SKIPPED_NO_URL)


async def redeliverable_events(gateway: "Gateway", merchant_id: str, event_ids: list[str]) -> set[str]:
    """Those of ``event_ids`` (the merchant's own) that gave up and may be sent again."""
    if not event_ids:
        return set()
    placeholders, ids = _in_list("id", sorted(set(event_ids)))
    rows = await gateway.db.fetch_all(
        f"SELECT event_id, status FROM webhook_events WHERE merchant_id = :m AND event_id IN ({placeholders})",
        {"m": merchant_id, **ids})
    return {row["event_id"] for row in rows if row["status"] in REDELIVERABLE}


async def redeliver(gateway: "Gateway", merchant_id: str, event_id: str) -> bool:
    """Queue a failed (or skipped) event of this merchant for a fresh round of attempts.

    The event keeps its ``event_id`` and sealed body, so a receiver that
    deduplicates on it is safe; it gets the full attempt budget again and is
    tried at once. Returns False (nothing changed) for an event that is
    unknown, another merchant's, delivered or still being retried.
    """
    now = gateway.now()
    placeholders, statuses = _in_list("s", list(REDELIVERABLE))
    moved = await gateway.db.fetch_val(
        "UPDATE webhook_events SET status = :pending, attempts = 0, next_attempt_at = :now, claim_token = NULL,"
        " last_error = NULL, updated_at = :now"
        f" WHERE event_id = :e AND merchant_id = :m AND status IN ({placeholders}) RETURNING event_id",
        {"pending": PENDING, "now": now, "e": event_id, "m": merchant_id, **statuses})
    if moved is None:
        return False
    log.info("webhook %s queued again by its merchant", event_id)
    await deliver_now(gateway, event_id)
    return True
