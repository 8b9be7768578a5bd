"""The outbox's messages by age (issue 48 item 3): the prune job finds sent or given-up messages past
``message_retention_days`` oldest first, a batch at a time, without scanning the table."""


def up(dialect: str) -> list[str]:
    return ["CREATE INDEX telegram_messages_created ON telegram_messages (created_at)"]
