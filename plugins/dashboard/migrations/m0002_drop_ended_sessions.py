"""Drop ``dashboard_ended_sessions``: signing out now revokes the JWT in the core.

The core's per-token revocation (core/accounts/jwt_revocation.py) refuses the
signed-out token everywhere, as a Bearer on the JSON API and inside any
copy of the cookie, so the table of ended session ids (and its read on every
page view) guards nothing any more.
"""


def up(dialect: str) -> list[str]:
    return ["DROP TABLE IF EXISTS dashboard_ended_sessions"]
