"""``orbchain.api.venues``: the swap venue contract (``register_swap_venues``; docs/swaps.md).

A venue subclasses ``SwapVenue``; its orders move through the states below.
Raise ``VenueUnavailable`` for a transient failure, ``VenueRefused`` for a
final refusal.
"""

# The venue a plugin implements, and what its calls return.
from ..core.venues import SwapVenue, VenueOrder, VenueQuote, VenueStatus

# Its failures.
from ..core.venues import VenueError, VenueRefused, VenueUnavailable

# The states of an order (VenueStatus.state).
from ..core.venues import EXCHANGING, EXPIRED, FAILED, FINAL_STATES, FINISHED, REFUNDED, STATES, WAITING

__all__ = [
    "SwapVenue", "VenueOrder", "VenueQuote", "VenueStatus",
    "VenueError", "VenueRefused", "VenueUnavailable",
    "EXCHANGING", "EXPIRED", "FAILED", "FINAL_STATES", "FINISHED", "REFUNDED", "STATES", "WAITING",
]
