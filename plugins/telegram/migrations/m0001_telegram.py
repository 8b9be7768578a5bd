"""The telegram plugin's own tables (never a core one).

* ``telegram_links``: one chat per merchant and one merchant per chat.
* ``telegram_spent_tokens``: link tokens and init data already used
  (by their MAC / hash), kept until they would have expired anyway.
* ``telegram_messages``: the bot's outbox; a logical key per message, so an
  event hook that runs twice queues one message; the job delivers and retries.
* ``telegram_state``: the ``getUpdates`` offset, so an update is handled once.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE telegram_links (
            merchant_id TEXT PRIMARY KEY,
            chat_id {bigint} NOT NULL UNIQUE,
            linked_at {ts} NOT NULL
        )""",
        """CREATE TABLE telegram_spent_tokens (
            token_hash TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            expires_at {ts} NOT NULL
        )""",
        "CREATE INDEX telegram_spent_tokens_expiry ON telegram_spent_tokens (expires_at)",
        """CREATE TABLE telegram_messages (
            id TEXT PRIMARY KEY,
            chat_id {bigint} NOT NULL,
            body TEXT NOT NULL,
            attempts {bigint} NOT NULL,
            next_attempt_at {ts} NOT NULL,
            sent_at {ts},
            failed_at {ts},
            last_error TEXT,
            created_at {ts} NOT NULL
        )""",
        "CREATE INDEX telegram_messages_due ON telegram_messages (sent_at, failed_at, next_attempt_at)",
        """CREATE TABLE telegram_state (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )""",
    ]
