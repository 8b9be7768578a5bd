"""A job's wake (core/infra/wakes.py, as the delivery job uses it): a burst folds into few signals, the last
never lost."""

from __future__ import annotations

import asyncio

from orbchain.core.events.delivery_wake import JOB, WINDOW
from orbchain.core.infra.signals import WAKE, Signals
from orbchain.core.infra.wakes import JobWake


async def test_a_burst_in_one_moment_gives_one_wake_now_and_one_at_the_windows_end():
    signals = Signals()
    heard: list[str] = []
    signals.subscribe(WAKE, heard.append)
    wake = JobWake(signals, JOB, WINDOW)
    for _ in range(100):
        wake.request()
    assert heard == [JOB]  # the first at once
    await asyncio.sleep(WINDOW * 3)
    assert heard == [JOB, JOB]  # the other 99 folded into one at the window's end
    await asyncio.sleep(WINDOW * 2)
    assert wake.published == 2  # nothing more without a request


async def test_a_request_after_a_quiet_window_goes_out_at_once():
    signals = Signals()
    heard: list[str] = []
    signals.subscribe(WAKE, heard.append)
    wake = JobWake(signals, JOB, WINDOW)
    wake.request()
    await asyncio.sleep(WINDOW * 2)
    wake.request()
    assert heard == [JOB, JOB]
