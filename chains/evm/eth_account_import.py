"""The one place that imports eth-account, and puts the recursion limit back after it.

eth-account imports py_ecc, whose import calls ``sys.setrecursionlimit(100000)``.
With that limit a deep recursion (a nested JSON body, a pathological regex)
overflows the C stack and kills the process instead of raising
``RecursionError``. This module reads the limit, imports eth-account and
restores the limit; the rest of the package imports ``Account`` from here, so
its own imports stay at the top of each module and the serving process never
runs with py_ecc's limit (tests/test_hostile_parsing.py checks it).
"""

import sys

# CPython's default; the limit in force when py_ecc is already loaded is its own.
_RECURSION_LIMIT = 1000 if "py_ecc" in sys.modules else sys.getrecursionlimit()
from eth_account import Account  # noqa: E402 - the limit must be read before this import raises it
from eth_account.typed_transactions import TypedTransaction  # noqa: E402 - loaded with Account above

sys.setrecursionlimit(min(_RECURSION_LIMIT, sys.getrecursionlimit()))

__all__ = ["Account", "TypedTransaction"]
