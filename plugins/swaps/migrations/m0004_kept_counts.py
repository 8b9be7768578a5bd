"""The swaps list's exact total kept by the database, like the core's lists (issue 48 item 1).

``GET /v1/swaps`` (and the dashboard's list) answered a total with ``COUNT(*)``
over the merchant's swaps; the list has no filter, so it is counted per
merchant (``KeptList`` in ``orbchain.api``), folded, checked and recounted with
the core's lists.
"""

from ..store import KEPT


def up(dialect: str) -> list[str]:
    return KEPT.counted("swaps", dialect)
