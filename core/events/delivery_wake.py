"""Wake the delivery job once a new webhook committed: its first attempt leaves at once, not at the next tick.

A burst (a block crediting hundreds of deposits, a batch of transfers)
commits many transactions within milliseconds; one delivery run takes every
due event anyway, so the wakes go through one :class:`~..infra.wakes.JobWake`
per process with a :data:`WINDOW`: the first at once, the ones asked for
while it is busy folded into one more, so no new event waits longer than
the window (plus one NOTIFY) for a run to start. The scheduler runs
``webhooks.deliver`` when it hears ``wake`` with that name, in whichever
process leads the job, and once more after a run that was in flight
(scheduler/runner.py).
"""

from __future__ import annotations

from ..infra.wakes import JobWake
from ..contract.gateway import PluginGateway as Gateway
from ..types.services import ServiceKey

JOB = "webhooks.deliver"
WINDOW = 0.05  # seconds
_SERVICE = ServiceKey("webhooks.wake", JobWake)


def wake_delivery(gateway: "Gateway") -> None:
    """Ask for a run of the delivery job now (call it after the commit: ``db.on_commit``)."""
    wake = gateway.services.get(_SERVICE)
    if wake is None:
        wake = gateway.services[_SERVICE] = JobWake(gateway.signals, JOB, WINDOW)
    wake.request()
