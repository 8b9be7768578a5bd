"""``orbchain serve`` fixes glibc's mmap threshold, so a large buffer goes back to the system when freed.

Without it glibc raises the threshold to the size of each large block
freed and later buffers of that size fragment the heap: the soak's workers
grew by glibc's free space, not by live objects (core/infra/allocator.py,
docs/decisions.md "Worker RSS after warm-up"). Each case runs in a fresh
interpreter, whose allocator nothing else has touched. No database.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from orbchain.core.infra.allocator import fix_mmap_threshold

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")

# A 4 MiB block freed (glibc's dynamic threshold would rise to 4 MiB), then a 1 MiB block: mmapped or not?
PROBE = """
import ctypes, sys
from orbchain.core.infra.allocator import fix_mmap_threshold

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
fixed = fix_mmap_threshold() if sys.argv[1] == "fix" else False
libc.free(libc.malloc(4 << 20))
before = libc.mallinfo2().hblkhd
block = libc.malloc(1 << 20)
print(fixed, libc.mallinfo2().hblkhd - before)
"""


def probe(mode: str) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k not in ("MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")}
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, env=env, check=True)
    fixed, mapped = out.stdout.split()
    return fixed, int(mapped)


def test_a_large_block_stays_mmapped_after_a_larger_one_was_freed():
    assert probe("fix") == ("True", pytest.approx(1 << 20, abs=1 << 13))


def test_without_the_fix_glibc_puts_it_on_the_heap():
    """What the fix is for: the premise, so the test above cannot pass by glibc's default alone."""
    assert probe("default") == ("False", 0)


def test_the_operators_own_setting_wins():
    assert not fix_mmap_threshold({"MALLOC_MMAP_THRESHOLD_": "65536"})
    assert not fix_mmap_threshold({"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=262144"})
