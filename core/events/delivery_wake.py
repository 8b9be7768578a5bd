"""Wake the delivery job once a new webhook committed: its first attempt leaves at once, not at the next tick.

Why coalesced: a burst (a block crediting hundreds of deposits, a batch of
transfers) commits many transactions within milliseconds, and each wake is a
``NOTIFY`` every process hears on PostgreSQL. One delivery run takes every
due event anyway, so :class:`DeliveryWake` publishes at most one wake per
:data:`WINDOW`: the first at once, the ones asked for inside the window
folded into a single wake at its end, so no new event waits longer than the
window for a run to start. The scheduler runs ``webhooks.deliver`` when it
hears ``wake`` with that name, in whichever process leads the job, and once
more after a run that was in flight (scheduler/runner.py).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..infra.signals import WAKE

if TYPE_CHECKING:  # pragma: no cover
    from ..gateway import Gateway
    from ..infra.signals import Signals

JOB = "webhooks.deliver"
WINDOW = 0.05  # seconds
_SERVICE = "webhooks.wake"


class DeliveryWake:
    """At most one ``wake`` for the delivery job per :data:`WINDOW`, never dropping the last one asked for."""

    def __init__(self, signals: "Signals") -> None:
        self.signals = signals
        self.published = 0
        self._last: float | None = None
        self._pending: asyncio.TimerHandle | None = None

    def request(self) -> None:
        """Ask for a wake: now if none went out within the window, else one at the window's end."""
        if self._pending is not None:
            return  # already folded into the coming wake
        loop = asyncio.get_running_loop()
        wait = 0.0 if self._last is None else self._last + WINDOW - loop.time()
        if wait <= 0:
            self._publish()
        else:
            self._pending = loop.call_later(wait, self._publish)

    def _publish(self) -> None:
        self._pending = None
        self._last = asyncio.get_running_loop().time()
        self.published += 1
        self.signals.publish(WAKE, JOB)


def wake_delivery(gateway: "Gateway") -> None:
    """Ask for a run of the delivery job now (call it after the commit: ``db.on_commit``)."""
    wake = gateway.services.get(_SERVICE)
    if wake is None:
        wake = gateway.services[_SERVICE] = DeliveryWake(gateway.signals)
    wake.request()
