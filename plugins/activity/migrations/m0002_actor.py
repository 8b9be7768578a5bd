"""Who did it: the team member (``member <e-mail>``) or API key (``key <id>``) behind an event.

NULL for the account holder's own actions and for rows from before teams.
Adding a column rewrites no row, so the append-only triggers stand.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE security_events ADD COLUMN actor TEXT"]
