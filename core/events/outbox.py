"""Event ids and the transactional outbox for webhooks (SPEC 6.1-6.4).

A state change and the webhook announcing it must commit together, or a
crash between the two either loses the webhook or announces something that
never happened. So callers write the outbox row with :func:`enqueue_event`
inside their own ``db.transaction()``; the delivery job in
``core/events/webhooks.py`` sends it, as often as it takes: woken once the
transaction committed (``core/events/delivery_wake.py``), else at its tick.

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
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Mapping, Sequence

from ..contract.gateway import PluginGateway as Gateway
from ..infra.db_dialect import in_list
from .delivery_wake import wake_delivery
from ..types.services import ServiceKey

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

# A merchant's test of their endpoint (core/events/test_event.py; beyond SPEC 6.3).
TEST_EVENT_TYPE = "webhook.test"
# The core's event kinds (SPEC 6.3); plugins declare theirs with ``register_event_kinds``.
CORE_EVENT_KINDS: Mapping[str, str] = {
    "payment.paying": "A payment's first deposit was seen below its confirmation threshold.",
    "payment.paid": "A payment reached Paid.",
    "payment.expired": "A payment's lifetime elapsed before it was paid (underpaid ones: once nothing is on its way).",
    "payment.reverted": "A payment stepped back (to Paying or Waiting): a deposit was replaced, double-spent,"
                        " dropped or left the best chain.",
    "deposit.credited": "A deposit was credited to the merchant.",
    "deposit.reversed": "A credited deposit left the best chain; its credit was reversed.",
    "payout.confirmed": "A payout reached Confirmed.",
    "payout.failed": "A payout reached Failed.",
    "transfer.sent": "An internal transfer, to the sender.",
    "transfer.received": "An internal transfer, to the recipient.",
    TEST_EVENT_TYPE: "A test event the merchant asked for (Settings, or POST /dashboard/settings/webhook/test).",
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


@dataclass(frozen=True)
class OutboxEvent:
    """One webhook to enqueue; the fields are :func:`enqueue_event`'s arguments."""

    merchant_id: str
    event_type: str
    body: Mapping[str, Any]
    logical_key: str
    url: str | None = None
    request_id: str | None = None
    secret: str | None = None


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
    event = OutboxEvent(merchant_id, event_type, body, logical_key, url, request_id, secret)
    return (await enqueue_events(gateway, [event]))[0]


async def enqueue_events(
    gateway: "Gateway", events: Sequence[OutboxEvent], *, merchants: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """:func:`enqueue_event` for several events at once; their ids in order.

    Why: a money operation announces itself to both sides (a transfer's
    ``transfer.sent`` and ``transfer.received``), and one event at a time
    costs five statements and a savepoint each inside the caller's
    transaction. Here the whole batch is usually three: the merchants'
    destinations, one insert of the rows and one of the delivery-log lines
    of never-sent ones (a fourth reads back the rows of ids that were
    already there). No savepoint: inside a caller's transaction the rows
    commit or roll back with it, outside one the batch is its own
    transaction. A refused batch (undeclared type, unknown merchant: before
    any write; a key reused for another event: after) raises, and the
    caller's transaction must then roll back, as ``async with
    db.transaction()`` does.

    ``merchants`` (id -> row with ``webhook_url`` and ``webhook_secret``)
    are merchant rows the caller has just read: their destinations are not
    read again. The merchant's secret itself is still read at delivery.
    """
    ids = [_checked_id(gateway, event) for event in events]
    batch: dict[str, OutboxEvent] = {}
    for event_id, event in zip(ids, events):
        first = batch.setdefault(event_id, event)
        _check_same_event({"merchant_id": first.merchant_id, "event_type": first.event_type},
                          event.merchant_id, event.event_type, event.logical_key)
    if not batch:
        return ids
    db = gateway.db
    if db.in_transaction:
        await _write_batch(gateway, batch, merchants or {})
    else:
        async with db.transaction():
            await _write_batch(gateway, batch, merchants or {})
    return ids


def _checked_id(gateway: "Gateway", event: OutboxEvent) -> str:
    if not _EVENT_TYPE.match(event.event_type or ""):
        raise ValueError(f"malformed event type {event.event_type!r}")
    if event.event_type not in gateway.event_kinds:
        raise ValueError(f"undeclared event type {event.event_type!r}: declare it with register_event_kinds")
    return event_id_for(event.logical_key)



async def _write_batch(
    gateway: "Gateway", batch: dict[str, OutboxEvent], known: Mapping[str, Mapping[str, Any]]
) -> None:
    db = gateway.db
    merchant_ids = sorted({event.merchant_id for event in batch.values()})
    destinations = {m: known[m] for m in merchant_ids if m in known}
    unknown = [m for m in merchant_ids if m not in destinations]
    if unknown:
        marks, values = in_list("m", unknown)
        destinations.update({row["id"]: row for row in await db.fetch_all(
            f"SELECT id, webhook_url, webhook_secret FROM merchants WHERE id IN ({marks})", values)})
    for merchant_id in merchant_ids:
        if merchant_id not in destinations:
            raise LookupError(f"webhook for unknown merchant {merchant_id!r}")
    now = gateway.now()
    rows: list[str] = []
    params: dict[str, Any] = {"ts": now}
    skipped: dict[str, tuple[str | None, str, str]] = {}
    for i, (event_id, event) in enumerate(batch.items()):
        merchant = destinations[event.merchant_id]
        target = event.url or merchant["webhook_url"]
        if not target:  # a merchant who wants no webhooks: recorded as not sent, nothing to warn about
            status, reason = SKIPPED_NO_URL, "not sent: no webhook URL is configured"
        elif not (event.secret or merchant["webhook_secret"]):
            status, reason = SKIPPED_NO_SECRET, "not sent: webhook_secret is not set"
        else:
            status, reason = PENDING, None
        text = seal_body(event.body, event_id=event_id, event_type=event.event_type, event_timestamp=now,
                         request_id=event.request_id)
        if reason:
            skipped[event_id] = (target, reason, text)
        rows.append(f"(:id{i}, :m{i}, :type{i}, :key{i}, :url{i}, :secret{i}, :body{i}, :ts, :req{i}, :status{i},"
                    f" 0, :next{i}, :error{i}, :ts, :ts)")
        params.update({
            f"id{i}": event_id, f"m{i}": event.merchant_id, f"type{i}": event.event_type,
            f"key{i}": event.logical_key, f"url{i}": event.url,
            # Only an override is copied; the merchant's own secret is read
            # at delivery time so a rotation applies to pending retries.
            f"secret{i}": event.secret, f"body{i}": text, f"req{i}": event.request_id, f"status{i}": status,
            f"next{i}": now if status == PENDING else None, f"error{i}": reason,
        })
    inserted = {row["event_id"] for row in await db.fetch_all(
        "INSERT INTO webhook_events (event_id, merchant_id, event_type, logical_key, url_override,"
        " signing_secret, body, event_timestamp, request_id, status, attempts, next_attempt_at,"
        " last_error, created_at, updated_at) VALUES " + ", ".join(rows)
        # An event enqueued before (a re-emission, a concurrent twin) keeps its row: same event, one row.
        + " ON CONFLICT (event_id) DO NOTHING RETURNING event_id",
        params,
    )}
    if any(params[f"status{i}"] == PENDING for i, event_id in enumerate(batch) if event_id in inserted):
        db.on_commit(lambda: wake_delivery(gateway))  # the first attempt leaves now, not at the next tick
    already = [event_id for event_id in batch if event_id not in inserted]
    if already:
        marks, values = in_list("e", already)
        for row in await db.fetch_all(
            f"SELECT event_id, merchant_id, event_type FROM webhook_events WHERE event_id IN ({marks})", values
        ):
            event = batch[row["event_id"]]
            _check_same_event(row, event.merchant_id, event.event_type, event.logical_key)
    await _log_never_sent(gateway, {k: v for k, v in skipped.items() if k in inserted}, batch, now)


UNSIGNED_WARNED = ServiceKey[set[str]]("webhooks.unsigned_warned")
UNSIGNED_WARNED_MAX = 10_000


def _first_unsigned(gateway: "Gateway", merchant_id: str) -> bool:
    """True the first time this process meets ``merchant_id`` with a URL and no secret: a configuration
    problem is stated once (and on the dashboard's settings page), not once per event."""
    warned = gateway.services.setdefault(UNSIGNED_WARNED, set())
    if merchant_id in warned:
        return False
    if len(warned) >= UNSIGNED_WARNED_MAX:
        warned.clear()  # bounded: at worst a merchant is warned about again
    warned.add(merchant_id)
    return True


async def _log_never_sent(gateway: "Gateway", skipped: dict[str, tuple[str | None, str, str]],
                          batch: dict[str, OutboxEvent], now: int) -> None:
    """Each event's delivery log says why it was not sent (never with the secret); the process log says it
    only for a URL without a secret, once per merchant: no URL means the merchant wants no webhooks."""
    if not skipped:
        return
    rows: list[str] = []
    values: dict[str, Any] = {"ts": now}
    for i, (event_id, (target, reason, text)) in enumerate(skipped.items()):
        event = batch[event_id]
        if target and _first_unsigned(gateway, event.merchant_id):
            log.warning("merchant %s has a webhook URL but webhook_secret is not set: no event is sent until one is"
                         " set (said once per process; each event is in the webhook log)", event.merchant_id)
        rows.append(f"(:id{i}, :m{i}, :url{i}, NULL, FALSE, 0, :error{i}, :preview{i}, NULL, :ts)")
        values.update({f"id{i}": event_id, f"m{i}": event.merchant_id, f"url{i}": target, f"error{i}": reason,
                       f"preview{i}": text[:PREVIEW_CHARS]})
    await gateway.db.execute(
        "INSERT INTO webhook_deliveries (event_id, merchant_id, url, status_code, success, attempt,"
        " error, payload_preview, response_preview, created_at) VALUES " + ", ".join(rows),
        values,
    )


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
