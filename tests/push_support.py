"""What the core's push supervisor does for a chain, reduced to what the chain plugins' push tests need.

``Watch`` runs the adapter's ``push`` (called again after a short pause
whenever it ends, as the core reconnects) and a scan loop that runs
``scan_chain`` when ``heard`` fires and at least every ``poll`` seconds:
the safety net the gateway keeps under every push. The tests use it to
prove an adapter's notifications and its recovery, not the core's
scheduling (core/watching/push.py has its own tests).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable

from orbchain.core.types.chains import ChainUnavailable


class Watch:
    def __init__(self, gateway: Any, adapter: Any, *, poll: float = 1.0, pause: float = 0.2) -> None:
        self.gateway, self.adapter, self.poll, self.pause = gateway, adapter, poll, pause
        self.heard: list[str] = []
        self.losses = 0  # times push ended (raised ChainUnavailable)
        self.scans = 0
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    def hear(self, what: str) -> None:
        self.heard.append(what)
        self._wake.set()

    async def _pushing(self) -> None:
        while True:
            try:
                await self.adapter.push(self.hear)
            except ChainUnavailable:
                self.losses += 1
            await asyncio.sleep(self.pause)

    async def _scanning(self) -> None:
        from orbchain.core.watching.scanner import scan_chain

        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self.poll)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await scan_chain(self.gateway, self.adapter)
                self.scans += 1
            except ChainUnavailable:
                pass  # the node is down: the next poll or notification tries again

    async def __aenter__(self) -> "Watch":
        self._tasks = [asyncio.create_task(self._pushing()), asyncio.create_task(self._scanning())]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def until(check: Callable[[], Awaitable[bool] | bool], what: str, seconds: float = 60.0,
                step: Callable[[], None] | None = None) -> None:
    """Wait until ``check()`` holds (calling ``step`` between tries); fail naming ``what`` after ``seconds``.

    The bound only ends a broken run: no test asserts how long anything took.
    """
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {seconds} s: {what}")
        if step is not None:
            step()
        await asyncio.sleep(0.05)
