"""Following each chain node's own notifications, so a scan starts the moment the node announces something.

For every adapter declaring ``Capability.PUSH`` one supervised task calls
``adapter.push(heard)``. ``heard`` asks for a ``wake`` of the chain's scan
job (core/infra/wakes.py): every process hears it and the one leading the
scan runs it at once (scheduler/runner.py). A burst of announcements keeps
at most one publication in flight per chain, and the first one always
leaves at once. When ``push`` returns or raises, the stream
is opened again after a backoff; the periodic scan keeps crediting
meanwhile, so an outage only costs latency. One warning per outage, one
info line when the stream is back.

Started and stopped with the scheduler (web/app.py), only where it runs and
``scheduler.push`` is on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..types.chains import Capability, ChainAdapter
from ..infra.stopping import CANCEL_SECONDS
from ..infra.wakes import JobWake
from .scanner import scan_job_name
from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

KINDS = frozenset({"tx", "block"})  # what ``heard`` is documented to take; anything else is counted as "other"


@dataclass(frozen=True)
class Backoff:
    """Reconnect delays: ``first`` doubling up to ``longest``. A stream is *up* once it delivered a
    notification or stayed open ``healthy_after`` seconds; the next outage then starts at ``first``."""

    first: float = 1.0
    longest: float = 30.0
    healthy_after: float = 10.0

    def after(self, delay: float) -> float:
        return min(self.longest, delay * 2)


class ChainPush:
    """One chain's stream: wakes its scan on every announcement, reopens the stream when it ends."""

    def __init__(self, gateway: "Gateway", adapter: ChainAdapter, backoff: Backoff = Backoff(),
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
        self.gateway, self.adapter, self.backoff, self._sleep = gateway, adapter, backoff, sleep
        self.chain = adapter.name
        self.job = scan_job_name(adapter.name)
        self.up = False
        self.wake = JobWake(gateway.signals, self.job)  # one publication in flight, the first at once
        self._alive: asyncio.Event | None = None  # set by the first notification of the current stream
        self._down_since: float | None = None  # when the outage being reported began
        metrics = gateway.metrics
        self._connected = metrics.push_connected.labels(self.chain)
        self._reconnects = metrics.push_reconnects.labels(self.chain)
        self._connected.set(0)

    # -- notifications ---------------------------------------------------------------------------

    def heard(self, kind: str) -> None:
        """The adapter's callback: count the notification and wake the chain's scan."""
        self.gateway.metrics.push_notifications.labels(self.chain, kind if kind in KINDS else "other").inc()
        if self._alive is not None:
            self._alive.set()
        self.wake.request()

    # -- the stream ------------------------------------------------------------------------------

    async def follow(self) -> None:
        """Keep the stream open until cancelled."""
        delay = self.backoff.first
        while True:
            reason = await self._stream()
            if self.up:  # it had been working: a new outage, backing off from the start
                self.up = False
                self._connected.set(0)
                delay = self.backoff.first
            if self._down_since is None:
                self._down_since = self.gateway.clock()
                log.warning("push stream of chain %s lost (%s); scanning every %g s until it is back, reconnecting"
                            " with backoff", self.chain, reason, self.adapter.scan_seconds)
            else:
                log.debug("push stream of chain %s still down (%s); next try in %g s", self.chain, reason, delay)
            await self._sleep(delay)
            delay = self.backoff.after(delay)
            self._reconnects.inc()

    async def _stream(self) -> str:
        """One call of ``push``, marked up once it proved itself; why it ended."""
        self._alive = alive = asyncio.Event()
        stream = asyncio.ensure_future(self.adapter.push(self.heard))
        waiting = asyncio.ensure_future(alive.wait())
        try:
            await asyncio.wait({stream, waiting}, timeout=self.backoff.healthy_after,
                               return_when=asyncio.FIRST_COMPLETED)
            if not stream.done() or alive.is_set():
                self._mark_up()
            await stream
            return "the stream ended"
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # we are stopping
            return "the stream was cancelled"
        except Exception as exc:  # noqa: BLE001 - any failure of the stream: reconnect, the poll covers it
            return str(exc) or type(exc).__name__
        finally:
            self._alive = None
            waiting.cancel()
            if not stream.done():
                stream.cancel()  # the adapter closes its connection
                await asyncio.wait({stream}, timeout=CANCEL_SECONDS)
            if stream.done() and not stream.cancelled():
                stream.exception()  # retrieved: an error while closing is the stream's end, reported above

    def _mark_up(self) -> None:
        if self.up:
            return
        self.up = True
        self._connected.set(1)
        if self._down_since is None:
            log.info("push stream of chain %s connected: announced transactions and blocks are scanned at once",
                     self.chain)
        else:
            log.info("push stream of chain %s restored after %.0f s", self.chain,
                     self.gateway.clock() - self._down_since)
            self._down_since = None


class PushStreams:
    """Every PUSH chain's stream of this process, as supervised tasks."""

    def __init__(self, gateway: "Gateway", backoff: Backoff = Backoff(),
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
        self.chains = [ChainPush(gateway, adapter, backoff, sleep)
                       for adapter in gateway.chains if adapter.supports(Capability.PUSH)]
        self._tasks: list[asyncio.Task] = []

    def start(self) -> None:
        self._tasks = [asyncio.get_running_loop().create_task(push.follow(), name=f"orbchain-push-{push.chain}")
                       for push in self.chains]
        if self.chains:
            log.info("following the push streams of %s", ", ".join(push.chain for push in self.chains))

    async def stop(self) -> None:
        """Cancel every stream (each adapter closes its connection); safe to call again."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=CANCEL_SECONDS)
            for task in stuck:
                log.warning("%s ignored its cancellation for %g s; left behind", task.get_name(), CANCEL_SECONDS)
