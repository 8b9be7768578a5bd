"""The activity log's exact total kept by the database, like the core's lists (issue 48 item 1).

``GET /dashboard/activity`` and the page answer a total; ``COUNT(*)`` read the
merchant's whole log. The log is counted per merchant and actor (the filter a
team member's own view uses; the holder's NULL actor is kept as ``''``), folded,
checked and recounted with the core's lists (``KeptList`` in ``orbchain.api``).
"""

from ..store import KEPT


def up(dialect: str) -> list[str]:
    return KEPT.counted("security_events", dialect)
