"""Event ids and the transactional outbox for webhooks (SPEC 6.1-6.4).

A state change and the webhook announcing it must commit together, or a
crash between the two either loses the webhook or announces something that
never happened. So callers write the outbox row with :func:`enqueue_event`
inside their own ``db.transaction()``; the delivery tick in
``core/webhooks.py`` sends it later, as often as it takes.

Event ids are derived from a logical key ("payment.paid:<track_id>"), never
random: the same logical event gets the same id on every retry and every
re-emission (a monitor re-scan, a replayed job), so receivers can
deduplicate on ``event_id`` and the outbox can refuse a second row.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from .gateway import Gateway

log = logging.getLogger(__name__)

CROCKFORD_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
EVENT_ID_LENGTH = 26  # 130 bits, five per character
_EVENT_ID_DOMAIN = "orbchain-event:"
_EVENT_TYPE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")

# Outbox row states.
PENDING = "pending"
DELIVERED = "delivered"
FAILED = "failed"
SKIPPED_NO_SECRET = "skipped_no_secret"
SKIPPED_NO_URL = "no_url"
NEVER_SENT = (SKIPPED_NO_SECRET, SKIPPED_NO_URL)

# The delivery log keeps this much of each body and response (SPEC 2.16 previews).
PREVIEW_CHARS = 500

# The core's event kinds (SPEC 6.3); plugins declare theirs with ``register_event_kinds``.
CORE_EVENT_KINDS: Mapping[str, str] = {
    "payment.paying": "A payment's first deposit was seen below its confirmation threshold.",
    "payment.paid": "A payment reached Paid.",
    "deposit.credited": "A deposit was credited to the merchant.",
    "deposit.reversed": "A credited deposit left the best chain; its credit was reversed.",
    "payout.confirmed": "A payout reached Confirmed.",
    "payout.failed": "A payout reached Failed.",
    "transfer.sent": "An internal transfer, to the sender.",
    "transfer.received": "An internal transfer, to the recipient.",
}


def event_id_for(logical_key: str) -> str:
    """The 26-char Crockford base32 id of a logical event (first 130 bits of SHA-256)."""
    if not isinstance(logical_key, str) or not logical_key:
        raise ValueError("a logical event key is a non-empty string")
    digest = hashlib.sha256((_EVENT_ID_DOMAIN + logical_key).encode("utf-8")).digest()
    bits = int.from_bytes(digest, "big") >> (256 - 5 * EVENT_ID_LENGTH)
    chars = []
    for _ in range(EVENT_ID_LENGTH):
        chars.append(CROCKFORD_ALPHABET[bits & 31])
        bits >>= 5
    return "".join(reversed(chars))


def _no_floats(value: Any, path: str = "body") -> None:
    # Amounts are decimal strings on the wire; a float has already lost
    # exactness, so it is a programming error to hand one to the outbox.
    if isinstance(value, float):
        raise TypeError(f"{path} is a float; webhook amounts are decimal strings")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{path} has a non-string key {key!r}")
            _no_floats(item, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _no_floats(item, f"{path}[{index}]")


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")
    raise TypeError(f"webhook body value of type {type(value).__name__} is not JSON")


def seal_body(
    body: Mapping[str, Any], *, event_id: str, event_type: str, event_timestamp: int, request_id: str | None
) -> str:
    """The exact body text sent on every attempt: compact, ASCII-only JSON.

    The envelope fields come first; ``request_id`` is present only when a
    request caused the event (SPEC 6.1).
    """
    _no_floats(body)
    sealed: dict[str, Any] = {"event_id": event_id, "event_type": event_type, "event_timestamp": event_timestamp}
    for key, value in body.items():
        if key not in ("event_id", "event_type", "event_timestamp", "request_id"):
            sealed[key] = value
    if request_id:
        sealed["request_id"] = request_id
    return json.dumps(sealed, separators=(",", ":"), ensure_ascii=True, default=_json_default)


async def _destination(gateway: "Gateway", merchant_id: str) -> Mapping[str, Any]:
    row = await gateway.db.fetch_one(
        "SELECT webhook_url, webhook_secret FROM merchants WHERE id = :id", {"id": merchant_id}
    )
    if row is None:
        raise LookupError(f"webhook for unknown merchant {merchant_id!r}")
    return row


async def enqueue_event(
    gateway: "Gateway",
    *,
    merchant_id: str,
    event_type: str,
    body: Mapping[str, Any],
    logical_key: str,
    url: str | None = None,
    request_id: str | None = None,
    secret: str | None = None,
) -> str:
    """Write the sealed webhook for one logical event to the outbox; returns its event id.

    The one way core and plugins send webhooks (documented in
    docs/plugins.md): ``event_type`` must be a core kind or one a plugin
    declared with ``register_event_kinds``, else ValueError.
    Call it inside the ``db.transaction()`` that makes the state change, so
    both commit or neither does (it also works outside one). Enqueueing the
    same ``logical_key`` again is a no-op that returns the same id.

    ``url`` overrides the merchant's ``webhook_url`` (a payment's
    callback_url, a key's or a brand's URL); ``secret`` is a brand's or a
    key's own webhook secret, else the merchant's ``webhook_secret`` signs.
    With no secret or no URL the row is stored as never-to-be-sent
    (``skipped_no_secret`` / ``no_url``), since SPEC 6.2 forbids unsigned
    webhooks.
    """
    if not _EVENT_TYPE.match(event_type or ""):
        raise ValueError(f"malformed event type {event_type!r}")
    if event_type not in gateway.event_kinds:
        raise ValueError(f"undeclared event type {event_type!r}: declare it with register_event_kinds")
    event_id = event_id_for(logical_key)
    db = gateway.db
    async with db.transaction():
        existing = await db.fetch_one(
            "SELECT merchant_id, event_type FROM webhook_events WHERE event_id = :id", {"id": event_id}
        )
        if existing is not None:
            _check_same_event(existing, merchant_id, event_type, logical_key)
            return event_id
        merchant = await _destination(gateway, merchant_id)
        now = gateway.now()
        signing_secret = secret or merchant["webhook_secret"]
        target = url or merchant["webhook_url"]
        if not signing_secret:
            status, reason = SKIPPED_NO_SECRET, "not sent: webhook_secret is not set"
        elif not target:
            status, reason = SKIPPED_NO_URL, "not sent: no webhook URL is configured"
        else:
            status, reason = PENDING, None
        text = seal_body(body, event_id=event_id, event_type=event_type, event_timestamp=now, request_id=request_id)
        inserted = await db.fetch_val(
            "INSERT INTO webhook_events (event_id, merchant_id, event_type, logical_key, url_override,"
            " signing_secret, body, event_timestamp, request_id, status, attempts, next_attempt_at,"
            " last_error, created_at, updated_at)"
            " VALUES (:event_id, :merchant_id, :event_type, :logical_key, :url_override, :signing_secret,"
            " :body, :ts, :request_id, :status, 0, :next_at, :error, :ts, :ts)"
            " ON CONFLICT (event_id) DO NOTHING RETURNING event_id",
            {
                "event_id": event_id,
                "merchant_id": merchant_id,
                "event_type": event_type,
                "logical_key": logical_key,
                "url_override": url,
                # Only an override is copied; the merchant's own secret is read
                # at delivery time so a rotation applies to pending retries.
                "signing_secret": secret,
                "body": text,
                "ts": now,
                "request_id": request_id,
                "status": status,
                "next_at": now if status == PENDING else None,
                "error": reason,
            },
        )
        if inserted is None:  # a concurrent emitter won the race: same event, one row
            return event_id
        if reason:
            # Once per event, never with the secret: tells the operator why nothing arrives.
            log.warning("webhook %s (%s) for merchant %s %s", event_id, event_type, merchant_id, reason)
            await db.execute(
                "INSERT INTO webhook_deliveries (event_id, merchant_id, url, status_code, success, attempt,"
                " error, payload_preview, response_preview, created_at)"
                " VALUES (:event_id, :merchant_id, :url, NULL, FALSE, 0, :error, :preview, NULL, :ts)",
                {"event_id": event_id, "merchant_id": merchant_id, "url": target, "error": reason,
                 "preview": text[:PREVIEW_CHARS], "ts": now},
            )
    return event_id



def _check_same_event(existing: Mapping[str, Any], merchant_id: str, event_type: str, logical_key: str) -> None:
    if existing["merchant_id"] != merchant_id or existing["event_type"] != event_type:
        # Two different events hashing to one key means the caller's key is not
        # specific enough; failing loudly beats silently dropping a webhook.
        raise ValueError(f"logical event key {logical_key!r} is already used by another event")


async def outbox_row(gateway: "Gateway", event_id: str) -> Mapping[str, Any] | None:
    """The outbox row of ``event_id`` (tests, operators), secret column left out."""
    return await gateway.db.fetch_one(
        "SELECT event_id, merchant_id, event_type, logical_key, url_override, body, event_timestamp,"
        " request_id, status, attempts, next_attempt_at, last_error, created_at, delivered_at"
        " FROM webhook_events WHERE event_id = :id",
        {"id": event_id},
    )
