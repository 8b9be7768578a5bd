"""Who a chat is, and which link a mini-app session belongs to (issue 29).

* ``telegram_chat_profiles``: the Telegram user's first and last name and
  @username, captured from the private chat's ``/start`` (never from a
  URL), so the dashboard's confirmation page and its linked-chat listing
  name the chat. Kept while the chat is linked; an unlinked chat's profile
  is pruned once its link tokens have expired.
* ``telegram_links.link_id``: a fresh id per binding, carried by every
  mini-app session (``lk``), so a session of a link that was undone never
  works again, even if the same chat is linked once more. Links made before
  this migration get an id of their own here.
"""


def up(dialect: str) -> list[str]:
    return [
        """CREATE TABLE telegram_chat_profiles (
            chat_id {bigint} PRIMARY KEY,
            first_name TEXT NOT NULL,
            last_name TEXT,
            username TEXT,
            updated_at {ts} NOT NULL
        )""",
        "CREATE INDEX telegram_chat_profiles_updated ON telegram_chat_profiles (updated_at)",
        "ALTER TABLE telegram_links ADD COLUMN link_id TEXT",
        "UPDATE telegram_links SET link_id = 'm0002-' || CAST(chat_id AS TEXT) || '-' || CAST(linked_at AS TEXT)",
    ]
