"""The telegram plugin's tables: chat links, spent tokens, the bot's outbox and its update offset."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from ...core.gateway import Gateway

Row = Mapping[str, Any]
MAX_ATTEMPTS = 5
RETRY_SECONDS = (5, 30, 120, 600)  # after attempt 1, 2, 3, 4
LINK, INIT_DATA = "link", "init_data"


# -- links ------------------------------------------------------------------------------------


async def link_of(gateway: "Gateway", merchant_id: str) -> Row | None:
    return await gateway.db.fetch_one("SELECT * FROM telegram_links WHERE merchant_id = :m", {"m": merchant_id})


async def merchant_for_chat(gateway: "Gateway", chat_id: int) -> str | None:
    return await gateway.db.fetch_val("SELECT merchant_id FROM telegram_links WHERE chat_id = :c", {"c": chat_id})


async def bind(gateway: "Gateway", merchant_id: str, chat_id: int) -> None:
    """Bind the chat to the merchant, replacing the merchant's old chat and the chat's old merchant.

    Call inside a transaction: the two deletes and the insert land together.
    """
    await gateway.db.execute("DELETE FROM telegram_links WHERE merchant_id = :m OR chat_id = :c",
                             {"m": merchant_id, "c": chat_id})
    await gateway.db.execute(
        "INSERT INTO telegram_links (merchant_id, chat_id, linked_at) VALUES (:m, :c, :now)",
        {"m": merchant_id, "c": chat_id, "now": gateway.now()})


async def unbind(gateway: "Gateway", merchant_id: str) -> int | None:
    """Remove the merchant's link; the chat it was bound to, or None when there was none."""
    return await gateway.db.execute("DELETE FROM telegram_links WHERE merchant_id = :m RETURNING chat_id",
                                    {"m": merchant_id})


# -- spent tokens -----------------------------------------------------------------------------


def token_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def spend(gateway: "Gateway", kind: str, text: str, expires_at: int) -> bool:
    """Mark a one-time credential used; False when it already was (a replay)."""
    spent = await gateway.db.execute(
        "INSERT INTO telegram_spent_tokens (token_hash, kind, expires_at) VALUES (:h, :k, :e)"
        " ON CONFLICT DO NOTHING RETURNING token_hash", {"h": token_hash(text), "k": kind, "e": expires_at})
    return spent is not None


async def is_spent(gateway: "Gateway", text: str) -> bool:
    return await gateway.db.fetch_val("SELECT 1 FROM telegram_spent_tokens WHERE token_hash = :h",
                                      {"h": token_hash(text)}) is not None


async def prune(gateway: "Gateway") -> None:
    """Forget spent tokens past their expiry (they are refused as expired anyway)."""
    await gateway.db.execute("DELETE FROM telegram_spent_tokens WHERE expires_at < :now", {"now": gateway.now()})


# -- outbox -----------------------------------------------------------------------------------


async def enqueue(gateway: "Gateway", key: str, chat_id: int, payload: Mapping[str, Any]) -> bool:
    """Queue one ``sendMessage`` once per logical ``key``; False when it was already queued."""
    now = gateway.now()
    queued = await gateway.db.execute(
        "INSERT INTO telegram_messages (id, chat_id, body, attempts, next_attempt_at, created_at)"
        " VALUES (:id, :c, :b, 0, :now, :now) ON CONFLICT DO NOTHING RETURNING id",
        {"id": key, "c": chat_id, "b": json.dumps(dict(payload), separators=(",", ":")), "now": now})
    return queued is not None


async def due_messages(gateway: "Gateway", limit: int = 20) -> list[Row]:
    return await gateway.db.fetch_all(
        "SELECT * FROM telegram_messages WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= :now"
        " ORDER BY created_at, id LIMIT :limit", {"now": gateway.now(), "limit": limit})


async def mark_sent(gateway: "Gateway", message_id: str) -> None:
    await gateway.db.execute("UPDATE telegram_messages SET sent_at = :now, attempts = attempts + 1 WHERE id = :id",
                             {"now": gateway.now(), "id": message_id})


async def mark_failed(gateway: "Gateway", row: Row, error: str, *, final: bool) -> None:
    """One failed attempt; after ``MAX_ATTEMPTS`` (or a final refusal) the message is given up."""
    attempts = int(row["attempts"]) + 1
    now = gateway.now()
    give_up = final or attempts >= MAX_ATTEMPTS
    delay = RETRY_SECONDS[min(attempts, len(RETRY_SECONDS)) - 1]
    await gateway.db.execute(
        "UPDATE telegram_messages SET attempts = :a, last_error = :e, next_attempt_at = :next, failed_at = :failed"
        " WHERE id = :id",
        {"a": attempts, "e": error[:300], "next": now + delay, "failed": now if give_up else None, "id": row["id"]})


async def message(gateway: "Gateway", message_id: str) -> Row | None:
    return await gateway.db.fetch_one("SELECT * FROM telegram_messages WHERE id = :id", {"id": message_id})


# -- state ------------------------------------------------------------------------------------


async def get_state(gateway: "Gateway", name: str) -> str | None:
    return await gateway.db.fetch_val("SELECT value FROM telegram_state WHERE name = :n", {"n": name})


async def set_state(gateway: "Gateway", name: str, value: str) -> None:
    await gateway.db.execute(
        "INSERT INTO telegram_state (name, value) VALUES (:n, :v) ON CONFLICT (name) DO UPDATE SET value = :v",
        {"n": name, "v": value})
