"""Where a worker's RSS goes: put this folder on ``PYTHONPATH`` of a soak and every ``orbchain serve`` worker logs it.

    PYTHONPATH=bench/rss_probe RSS_PROBE_DIR=/tmp/probe .venv/bin/python bench/soak.py --seconds 180 ...

Python imports ``sitecustomize`` at start-up; in a process whose command
line has ``serve`` this one starts a thread in each forked worker that
appends a JSON line to ``RSS_PROBE_DIR/<pid>.jsonl`` every 5 s: ``VmRSS``,
glibc's ``mallinfo2`` (heap size, bytes in use, bytes free), Python's
allocated blocks, and every 30 s pymalloc's arenas (``sys._debugmallocstats``)
and the 30 commonest types among the objects ``gc`` tracks. RSS growing with
glibc's free bytes is the allocator keeping memory; with its in-use bytes,
pymalloc's blocks or a type's count, live objects (docs/decisions.md,
"Worker RSS after warm-up"). A diagnostic: the thread, its second malloc
arena and the type counts cost a little memory and CPU themselves.
"""

from __future__ import annotations

import collections
import ctypes
import gc
import json
import os
import sys
import tempfile
import threading
import time

EVERY_SECONDS = 5
DETAIL_EVERY = 6  # samples: pymalloc and type counts every 30 s
PYMALLOC_LINES = ("# arenas allocated current", "# arenas highwater mark", "# bytes in allocated blocks",
                  "# bytes in available blocks")


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


def proc_status() -> dict[str, int]:
    """KiB of ``VmRSS`` and its anonymous and file parts."""
    wanted = ("VmRSS", "RssAnon", "RssFile")
    with open("/proc/self/status") as status:
        return {key: int(value.split()[0]) for key, _, value in (line.partition(":") for line in status)
                if key in wanted}


def pymalloc() -> dict[str, int]:
    """pymalloc's arenas and blocks, read from what ``sys._debugmallocstats`` writes to file descriptor 2."""
    with tempfile.TemporaryFile() as out:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        lines = out.read().decode().splitlines()
    return {line.split("=")[0].strip("# ").strip(): int(line.split("=")[-1].strip().replace(",", ""))
            for line in lines if line.startswith(PYMALLOC_LINES)}


def sample(mallinfo2, detail: bool) -> dict:
    heap = mallinfo2()
    record = {"t": round(time.time(), 1), **proc_status(), "malloc_heap": heap.arena, "malloc_mmapped": heap.hblkhd,
              "malloc_in_use": heap.uordblks, "malloc_free": heap.fordblks, "py_blocks": sys.getallocatedblocks()}
    if detail:
        record["pymalloc"] = pymalloc()
        record["types"] = dict(collections.Counter(type(o).__name__ for o in gc.get_objects()).most_common(30))
    return record


def probe(directory: str) -> None:
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{os.getpid()}.jsonl")
    count = 0
    while True:
        with open(path, "a") as out:
            out.write(json.dumps(sample(libc.mallinfo2, count % DETAIL_EVERY == 0)) + "\n")
        count += 1
        time.sleep(EVERY_SECONDS)


def _start() -> None:
    directory = os.environ.get("RSS_PROBE_DIR", os.path.join(tempfile.gettempdir(), "orbchain-rss-probe"))
    threading.Thread(target=probe, args=(directory,), daemon=True, name="rss-probe").start()


with open("/proc/self/cmdline", "rb") as _cmdline:
    if b"serve" in _cmdline.read().split(b"\0"):
        os.register_at_fork(after_in_child=_start)
