"""One webhook attempt: the claim, the signed request, the record of its result, the claim given back.

Claiming is safe with several processes: on PostgreSQL the claim takes
``FOR UPDATE SKIP LOCKED`` on the due rows, on SQLite the claim runs in the
single-writer transaction. A claim moves ``next_attempt_at`` forward by a
lease and stamps a claim token, so a worker that dies mid-attempt only
delays the event, and a late worker cannot overwrite a newer claim's result.
The HTTP request itself runs outside any database transaction. An attempt
cancelled by a stop gives its claim back (``release_claims``): the event is
due again at once, after a restart or in another process. Why its own
module: both entry points (``core/events/webhooks.py``) and a delivery run
(``core/events/delivery_run.py``) use these steps.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

from ..contract.gateway import PluginGateway as Gateway
from ..infra.db_dialect import in_list
from ..infra.netguard import UnsafeUrl, check_public_url
from .outbox import DELIVERED, FAILED, PENDING, PREVIEW_CHARS, SKIPPED_NO_SECRET, SKIPPED_NO_URL

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "HMAC"
# Seconds to wait after failed attempt n (index n-1) before attempt n+1:
# 0s, 10s, 1 min, 10 min, 1 h for the default five attempts. Operators who
# raise webhooks.max_attempts get doubling delays capped at one day.
RETRY_DELAYS = (10, 60, 600, 3600)
MAX_RETRY_DELAY = 86_400
CLAIM_BATCH = 100  # due events one claim takes
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



async def claim_due(gateway: "Gateway", *, limit: int = CLAIM_BATCH, event_id: str | None = None) -> list[Claim]:
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
        placeholders, ids = in_list("id", [row["event_id"] for row in rows])
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
    if not claim.url:
        return Outcome(False, error="not sent: no webhook URL is configured", final_status=SKIPPED_NO_URL)
    if not claim.secret:
        return Outcome(False, error="not sent: webhook_secret is not set", final_status=SKIPPED_NO_SECRET)
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
            placeholders, ids = in_list("id", event_ids)
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
        placeholders, ids = in_list("id", by_token[token])
        await gateway.db.execute(
            "UPDATE webhook_events SET attempts = attempts - 1, next_attempt_at = :due, claim_token = NULL,"
            f" updated_at = :now WHERE claim_token = :token AND status = :pending AND event_id IN ({placeholders})",
            {"due": now + delay, "now": now, "token": token, "pending": PENDING, **ids})
