"""The process's open-file limit: raised at start as far as the hard limit allows, and what is open now.

Every connection a gateway holds is an open file. systemd and most shells
start a service with a soft limit of 1,024 (the hard one is often far
higher); a gateway that ran into it stopped accepting connections at all,
``/health`` included (issue 42). ``orbchain serve`` raises the soft limit to
the hard one before it forks its workers (they inherit it), as Go's runtime
and nginx's ``worker_rlimit_nofile`` do; the live streams' budget is then
derived from what it got (web/stream_budget.py).
"""

from __future__ import annotations

import logging
import os
import resource
from pathlib import Path

log = logging.getLogger(__name__)

# The kernel refuses a soft limit above fs.nr_open (1,048,576 by default), even under an unlimited hard one.
NR_OPEN = Path("/proc/sys/fs/nr_open")
DEFAULT_NR_OPEN = 1 << 20
# Where this process's open descriptors are listed: Linux, then the BSDs and macOS.
FD_FOLDERS = ("/proc/self/fd", "/dev/fd")


def open_file_limit() -> int:
    """The soft limit on open files of this process."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else _ceiling()


def raise_open_file_limit() -> tuple[int, int]:
    """Raise the soft limit on open files to the hard limit (at most the kernel's ceiling); (before, after).

    Nothing is changed when the soft limit is already there (the unit's
    ``LimitNOFILE`` sets both). A refusal leaves the limit as it was, with
    one warning: the stream budget is then derived from the lower limit.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _ceiling() if hard == resource.RLIM_INFINITY else min(hard, _ceiling())
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-file limit from %d to %d (%s): streams are budgeted on %d",
                        soft, target, exc, soft)
            return soft, soft
        log.info("open-file limit raised from %d to %d (the hard limit)", soft, target)
        return soft, target
    return soft, open_file_limit()


def files_open() -> int:
    """How many files this process holds open now (0 where the system does not list them)."""
    for folder in FD_FOLDERS:
        try:
            return max(0, len(os.listdir(folder)) - 1)  # listing the folder opens one descriptor itself
        except OSError:
            continue
    return 0


def _ceiling() -> int:
    try:
        return int(NR_OPEN.read_text().strip())
    except (OSError, ValueError):
        return DEFAULT_NR_OPEN
