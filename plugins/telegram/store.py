"""The telegram plugin's tables: chat links and profiles, spent tokens, the bot's outbox and its update offset."""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

Row = Mapping[str, Any]
MAX_ATTEMPTS = 5
RETRY_SECONDS = (5, 30, 120, 600)  # after attempt 1, 2, 3, 4
LINK, INIT_DATA = "link", "init_data"


# -- links ------------------------------------------------------------------------------------

_LINKED_CHAT = ("SELECT l.merchant_id, l.chat_id, l.linked_at, l.link_id, p.first_name, p.last_name, p.username"
                " FROM telegram_links l LEFT JOIN telegram_chat_profiles p ON p.chat_id = l.chat_id")


async def link_of(gateway: "Gateway", merchant_id: str) -> Row | None:
    """The merchant's link with the chat's profile (``first_name``, ``last_name``, ``username``: None when unknown)."""
    return await gateway.db.fetch_one(f"{_LINKED_CHAT} WHERE l.merchant_id = :m", {"m": merchant_id})


async def link_for_chat(gateway: "Gateway", chat_id: int) -> Row | None:
    """The link of a chat (``merchant_id``, ``link_id`` ...), or None when it is linked to nobody."""
    return await gateway.db.fetch_one(f"{_LINKED_CHAT} WHERE l.chat_id = :c", {"c": chat_id})


async def bind(gateway: "Gateway", merchant_id: str, chat_id: int) -> list[Row]:
    """Bind the chat to the merchant, replacing the merchant's old chat and the chat's old merchant.

    Call inside a transaction: the deletes and the insert land together. A
    fresh ``link_id`` ends every mini-app session of the links replaced.
    Returns the links it removed (with their profiles), to tell their owners.
    """
    replaced = await gateway.db.fetch_all(f"{_LINKED_CHAT} WHERE l.merchant_id = :m OR l.chat_id = :c",
                                          {"m": merchant_id, "c": chat_id})
    await gateway.db.execute("DELETE FROM telegram_links WHERE merchant_id = :m OR chat_id = :c",
                             {"m": merchant_id, "c": chat_id})
    await gateway.db.execute(
        "INSERT INTO telegram_links (merchant_id, chat_id, linked_at, link_id) VALUES (:m, :c, :now, :lk)",
        {"m": merchant_id, "c": chat_id, "now": gateway.now(), "lk": secrets.token_urlsafe(16)})
    return list(replaced)


async def unbind(gateway: "Gateway", merchant_id: str) -> Row | None:
    """Remove the merchant's link; the link it was (with the chat's profile), or None when there was none.

    Two unlinks at once remove it once: only the one whose delete found that link returns it.
    """
    link = await link_of(gateway, merchant_id)
    if link is None:
        return None
    removed = await gateway.db.execute(
        "DELETE FROM telegram_links WHERE merchant_id = :m AND link_id = :lk RETURNING chat_id",
        {"m": merchant_id, "lk": link["link_id"]})
    return link if removed is not None else None


# -- who a chat is ----------------------------------------------------------------------------


class ChatProfile(NamedTuple):
    """A private chat's Telegram user as the bot saw it at ``/start``; ``last_name``/``username`` may be None."""

    chat_id: int
    first_name: str
    last_name: str | None
    username: str | None

    @property
    def name(self) -> str:
        full = " ".join(part for part in (self.first_name, self.last_name) if part)
        return full or "a Telegram user without a name"


def profile_of_row(row: Row) -> ChatProfile | None:
    """The profile columns of a ``link_of``/``link_for_chat`` row (None for a chat never seen at /start)."""
    if row["first_name"] is None:
        return None
    return ChatProfile(int(row["chat_id"]), row["first_name"], row["last_name"], row["username"])


async def save_profile(gateway: "Gateway", profile: ChatProfile) -> None:
    await gateway.db.execute(
        "INSERT INTO telegram_chat_profiles (chat_id, first_name, last_name, username, updated_at)"
        " VALUES (:c, :f, :l, :u, :now) ON CONFLICT (chat_id) DO UPDATE SET first_name = :f, last_name = :l,"
        " username = :u, updated_at = :now",
        {"c": profile.chat_id, "f": profile.first_name, "l": profile.last_name, "u": profile.username,
         "now": gateway.now()})


async def profile_of(gateway: "Gateway", chat_id: int) -> ChatProfile | None:
    row = await gateway.db.fetch_one("SELECT * FROM telegram_chat_profiles WHERE chat_id = :c", {"c": chat_id})
    return None if row is None else ChatProfile(int(row["chat_id"]), row["first_name"], row["last_name"],
                                                row["username"])


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


async def prune(gateway: "Gateway", profile_ttl: int) -> None:
    """Forget spent tokens past their expiry (they are refused as expired anyway), and the profiles of
    unlinked chats not seen for ``profile_ttl`` seconds (no link token of theirs is still valid)."""
    now = gateway.now()
    await gateway.db.execute("DELETE FROM telegram_spent_tokens WHERE expires_at < :now", {"now": now})
    await gateway.db.execute(
        "DELETE FROM telegram_chat_profiles WHERE updated_at < :cut"
        " AND chat_id NOT IN (SELECT chat_id FROM telegram_links)", {"cut": now - profile_ttl})


# -- outbox -----------------------------------------------------------------------------------

PRUNE_BATCH = 500
PRUNE_MAX_BATCHES = 200  # a backlog (the first run after an upgrade) drains over several ticks


async def prune_messages(gateway: "Gateway", cut: int, batch: int = PRUNE_BATCH,
                         max_batches: int = PRUNE_MAX_BATCHES) -> int:
    """Delete sent or given-up messages queued before ``cut``, oldest first, one short statement per batch
    (never a message still to be sent); how many were deleted."""
    total = 0
    for _ in range(max_batches):
        deleted = await gateway.db.fetch_all(
            "DELETE FROM telegram_messages WHERE id IN (SELECT id FROM telegram_messages WHERE created_at < :cut"
            " AND (sent_at IS NOT NULL OR failed_at IS NOT NULL) ORDER BY created_at, id LIMIT :n) RETURNING id",
            {"cut": cut, "n": batch})
        total += len(deleted)
        if len(deleted) < batch:
            break
    return total



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
