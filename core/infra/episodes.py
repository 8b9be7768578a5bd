"""Trouble that repeats, logged as episodes: one line when it begins, one with its count when it ends.

An event that can happen thousands of times a second (a refused accept, a
connection closed for sending nothing) must never mean a line each: the log
took 210,921 error lines in 40 s when the files ran out (issue 42). An
``Episode`` logs its first occurrence, counts the rest silently, and logs
how many there were and for how long when it ends: when the caller says so
(``over``, e.g. an accept that succeeded again), or after ``quiet_seconds``
without one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any


class Episode:
    """One kind of repeated trouble in this process; ``hit`` per occurrence, ``over`` when it stopped."""

    def __init__(self, logger: logging.Logger, begins: str, ends: str, *, level: int = logging.WARNING,
                 end_level: int | None = None, quiet_seconds: float | None = None) -> None:  # float ok: a duration
        """``begins`` is formatted with the first hit's arguments; ``ends`` with the count, the seconds and
        those same arguments (``%(count)d``, ``%(seconds).1f`` and the names the first hit gave), logged at
        ``end_level`` (default: ``level``)."""
        self._log = logger
        self._begins = begins
        self._ends = ends
        self._level = level
        self._end_level = level if end_level is None else end_level
        self._quiet = quiet_seconds
        self.count = 0
        self._first: dict[str, Any] = {}
        self._since = 0.0  # float ok: a monotonic clock reading
        self._last = 0.0  # float ok: a monotonic clock reading
        self._timer: asyncio.TimerHandle | None = None

    @property
    def ongoing(self) -> bool:
        return self.count > 0

    def hit(self, **details: Any) -> None:
        """One more occurrence: logged when it begins an episode, else only counted."""
        now = time.monotonic()
        self._last = now
        if not self.count:
            self._since, self._first = now, details
            self._log.log(self._level, self._begins, details)
            if self._quiet is not None:
                self._arm(self._quiet)
        self.count += 1

    def over(self) -> None:
        """The trouble stopped: one line with the count (nothing when there was none)."""
        if not self.count:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._log.log(self._end_level, self._ends,
                      {**self._first, "count": self.count, "seconds": time.monotonic() - self._since})
        self.count = 0

    def _arm(self, delay: float) -> None:  # float ok: a duration
        try:
            self._timer = asyncio.get_running_loop().call_later(delay, self._check_quiet)
        except RuntimeError:  # no loop (a synchronous caller): the episode ends at the next ``over``
            self._timer = None

    def _check_quiet(self) -> None:
        self._timer = None
        assert self._quiet is not None
        left = self._last + self._quiet - time.monotonic()
        if left > 0:
            self._arm(left)
        else:
            self.over()
