"""Waking one scheduled job in every process, a burst of reasons folded into few signals.

A chain node announcing fifty transactions in a second, or a block crediting
hundreds of deposits (each committing a webhook), each asks for a run of one
job (``chain.<name>.scan``, ``webhooks.deliver``). One run does all the work
there is, and each ``wake`` is a ``NOTIFY`` every process hears on
PostgreSQL, so :class:`JobWake` publishes the first at once and folds every
request made while it is *busy* into a single follow-up. Busy means: its
last publication is still on its way to the other processes, or less than
``window`` seconds old. The last request is never dropped, so no reason to
run waits longer than one NOTIFY plus the window. The scheduler runs the job
when it hears ``wake`` with its name, in whichever process leads it
(scheduler/runner.py).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from ..types.services import ServiceKey, Services
from .signals import WAKE, Signals


class _Waking(Protocol):
    """What :func:`wake_after_commit` needs of a gateway."""

    db: Any
    services: Services
    signals: Signals


def wake_after_commit(gateway: _Waking, job: str, window: float = 0.0) -> None:
    """Ask for a run of ``job`` (this process's one :class:`JobWake` for it), once the caller's transaction, if
    any, has committed: a job woken before the commit could run and find nothing."""

    def request() -> None:
        key = ServiceKey(f"wake:{job}", JobWake)
        wake = gateway.services.get(key)
        if wake is None:
            wake = gateway.services[key] = JobWake(gateway.signals, job, window)
        wake.request()

    if gateway.db.in_transaction:
        gateway.db.on_commit(request)
    else:
        request()


class JobWake:
    """At most one ``wake`` for ``job`` in flight (and per ``window``), the first at once, the last never lost."""

    def __init__(self, signals: Signals, job: str, window: float = 0.0) -> None:
        self.signals, self.job, self.window = signals, job, window
        self.published = 0
        self._busy = False
        self._again = False  # asked for while busy: one more publication once free

    @property
    def idle(self) -> bool:
        """Nothing in flight and nothing owed (for tests and the stop sequence)."""
        return not self._busy and not self._again

    def request(self) -> None:
        """Ask for a run of the job: a wake now when free, else one more as soon as it is."""
        if self._busy:
            self._again = True
            return
        self._publish()

    def _publish(self) -> None:
        self._busy = True
        self.published += 1
        started = asyncio.get_running_loop().time()
        forward = self.signals.publish(WAKE, self.job)
        if forward is None:
            self._after_window(started)
        else:
            forward.add_done_callback(lambda _task: self._after_window(started))

    def _after_window(self, started: float) -> None:
        loop = asyncio.get_running_loop()
        wait = started + self.window - loop.time()
        if wait > 0:
            loop.call_later(wait, self._free)
        else:
            self._free()

    def _free(self) -> None:
        self._busy = False
        if self._again:
            self._again = False
            self._publish()
