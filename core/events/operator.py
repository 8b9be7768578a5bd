"""The operator's webhook: custody events sent to ``[operator] webhook_url``, signed like a merchant's webhook.

Announced: a payout held by the signing policy (``payout.held_by_policy``), a sweep to cold booked
(``custody.cold_sweep``), a coin found short by the custody check and one recovered (``custody.shortfall``,
``custody.recovered``), a hot wallet below the operator's floor (``custody.below_floor``), a chain node
refused (``node.refused``), a gas top-up over the signer's caps (``hot_wallet.spend_held``). Each is a row of
``operator_events`` written (inside the caller's transaction when there is one) with an id derived from its
logical key, so the same thing announced twice is one row; the job ``operator.notify`` posts due rows in order
with the header ``HMAC`` (HMAC-SHA512 of the body under ``webhook_secret``, as SPEC 6.2 signs a merchant's) and
retries with the merchants' schedule up to ``webhooks.max_attempts``, then marks the row failed and logs an
ERROR. Without a ``webhook_url`` nothing is written: the log lines, metrics and activity entries stay the record.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Mapping

import aiohttp

from ..infra.config import ConfigError
from ..infra.wakes import wake_after_commit
from .attempts import SIGNATURE_HEADER, retry_delay, sign
from .outbox import event_id_for, seal_body
from ..contract.gateway import PluginGateway as Gateway
from ..types.services import ServiceKey

log = logging.getLogger(__name__)

JOB_NAME = "operator.notify"
TICK_SECONDS = 10
BATCH = 50
WINDOW = 0.05  # seconds: wakes within it fold into one run
_SECRET = ServiceKey("operator.webhook_secret", str)

HELD = "payout.held_by_policy"
COLD_SWEEP = "custody.cold_sweep"
SHORTFALL = "custody.shortfall"
RECOVERED = "custody.recovered"
BELOW_FLOOR = "custody.below_floor"
NODE_REFUSED = "node.refused"
SPEND_HELD = "hot_wallet.spend_held"
KINDS = frozenset({HELD, COLD_SWEEP, SHORTFALL, RECOVERED, BELOW_FLOOR, NODE_REFUSED, SPEND_HELD})

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


def operator_webhook_on(gateway: "Gateway") -> bool:
    return bool(gateway.config.operator.webhook_url)


async def notify_operator(gateway: "Gateway", event_type: str, body: Mapping[str, Any], logical_key: str) -> None:
    """Queue one operator event (idempotent by ``logical_key``); a no-op without ``[operator] webhook_url``."""
    if event_type not in KINDS:
        raise ValueError(f"unknown operator event type {event_type!r}")
    if not operator_webhook_on(gateway):
        return
    db = gateway.db
    now = gateway.now()
    event_id = event_id_for(f"operator:{logical_key}")
    text = seal_body(body, event_id=event_id, event_type=event_type, event_timestamp=now, request_id=None)
    await db.execute(
        "INSERT INTO operator_events (event_id, event_type, body, status, attempts, next_attempt_at, created_at)"
        " VALUES (:id, :type, :body, :pending, 0, :now, :now) ON CONFLICT (event_id) DO NOTHING",
        {"id": event_id, "type": event_type, "body": text, "pending": PENDING, "now": now})
    wake_after_commit(gateway, JOB_NAME, WINDOW)


def _secret(gateway: "Gateway") -> str:
    cached = gateway.services.get(_SECRET)
    if isinstance(cached, str):
        return cached
    config = gateway.config.operator
    secret = config.webhook_secret
    if not secret:
        try:
            secret = Path(config.webhook_secret_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"config key 'operator.webhook_secret_file': cannot read"
                              f" {config.webhook_secret_file}: {exc.strerror}") from None
    gateway.services[_SECRET] = secret
    return secret


async def _post(http: aiohttp.ClientSession, url: str, body: str, secret: str) -> str | None:
    """None when the receiver took it (2xx), else why not."""
    data = body.encode("utf-8")
    try:
        async with http.post(url, data=data, headers={"Content-Type": "application/json",
                                                      SIGNATURE_HEADER: sign(data, secret)}) as response:
            if 200 <= response.status < 300:
                return None
            return f"HTTP {response.status}"
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"[:300]


async def deliver_operator_events(gateway: "Gateway") -> int:
    """The ``operator.notify`` job: post the due events oldest first; how many were delivered."""
    db = gateway.db
    now = gateway.now()
    due = await db.fetch_all(
        "SELECT event_id, event_type, body, attempts FROM operator_events WHERE status = :pending"
        " AND next_attempt_at <= :now ORDER BY created_at, event_id LIMIT :n",
        {"pending": PENDING, "now": now, "n": BATCH})
    if not due:
        return 0
    url, secret = gateway.config.operator.webhook_url, _secret(gateway)
    delivered, limit = 0, max(1, gateway.config.webhooks.max_attempts)
    timeout = aiohttp.ClientTimeout(total=gateway.config.webhooks.timeout_seconds)
    async with aiohttp.ClientSession(timeout=timeout) as http:  # the operator's own URL: no SSRF guard needed
        for row in due:
            error = await _post(http, url, row["body"], secret)
            attempts = int(row["attempts"]) + 1
            at = gateway.now()
            if error is None:
                delivered += 1
                await db.execute("UPDATE operator_events SET status = :s, attempts = :a, delivered_at = :at,"
                                 " last_error = NULL WHERE event_id = :id",
                                 {"s": DELIVERED, "a": attempts, "at": at, "id": row["event_id"]})
                continue
            final = attempts >= limit
            if final:
                log.error("operator webhook: %s %s not delivered after %d attempts: %s", row["event_type"],
                          row["event_id"], attempts, error)
            await db.execute("UPDATE operator_events SET status = :s, attempts = :a, next_attempt_at = :next,"
                             " last_error = :e WHERE event_id = :id",
                             {"s": FAILED if final else PENDING, "a": attempts, "e": error, "id": row["event_id"],
                              "next": None if final else at + retry_delay(attempts)})
            if error.startswith(("ClientConnectorError", "TimeoutError", "ServerTimeoutError")):
                break  # the receiver is down: the rest wait for the next run, uncounted
    return delivered


def _shown(gateway: "Gateway", coin: str, units: int) -> str:
    known = gateway.coins.get(coin)
    return known.format(units) if known is not None else str(units)


async def notify_cold_sweep(gateway: "Gateway", *, chain: str, coin: str, amount: int, destination: str,
                            tx_hash: str) -> None:
    """A sweep to cold booked (the chain plugins call it through ``orbchain.api``); once per transaction."""
    await notify_operator(gateway, COLD_SWEEP, {"chain": chain, "coin": coin, "amount": _shown(gateway, coin, amount),
                                                "destination": destination, "tx_hash": tx_hash},
                          f"{COLD_SWEEP}:{chain}:{tx_hash}")
