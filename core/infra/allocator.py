"""glibc's malloc in a long-running ``orbchain serve``: a fixed mmap threshold (docs/operations.md, "Memory").

glibc serves a block above its mmap threshold (128 KiB) with its own
``mmap`` and gives it back to the system when freed, but by default it also
*raises* the threshold to the size of every such block freed (up to 32 MiB
on 64-bit). After one large transient buffer (a big query result, a
startup burst) every later buffer of that size comes from the heap instead,
and the small long-lived objects allocated among them pin the holes they
leave: the heap's free space only grows. bench/soak.py measured exactly
that in the workers (docs/decisions.md, "Worker RSS after warm-up"): glibc's
free space 3 -> 28 MB while the live allocations stayed at 22 MB and
Python's own arenas were flat. Setting the threshold turns the adjustment
off (glibc's ``mallopt``), so large buffers keep going back to the system.
Measured and not chosen: ``MALLOC_ARENA_MAX=2`` changed nothing (3-4
threads a worker, few arenas); a periodic ``malloc_trim(0)`` returned whole
free pages but not the growing free space behind them, and held the event
loop up to 25 ms a call.

An operator's own choice wins: with ``MALLOC_MMAP_THRESHOLD_`` or the
``glibc.malloc.mmap_threshold`` tunable in the environment nothing is set here.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own default, kept fixed
M_MMAP_THRESHOLD = -3  # malloc.h


def fix_mmap_threshold(environ: Mapping[str, str] = os.environ) -> bool:
    """Fix glibc's mmap threshold at ``MMAP_THRESHOLD_BYTES`` for this process and those it forks.

    Returns whether it was set here: not on another C library (no ``mallopt``, or one that refuses it)
    and not when the operator set the threshold in the environment.
    """
    if environ.get("MALLOC_MMAP_THRESHOLD_") or "glibc.malloc.mmap_threshold" in environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
