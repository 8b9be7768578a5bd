"""One listener per process fans payment changes out to the open event streams (live pages).

Why one: a thousand payers watching their pages must not mean a thousand
subscriptions or a thousand reads per change. The hub subscribes once to
the change feed (``payment``, core/payments/changes.py) and to ``RESET``;
on a signal for a payment someone watches it reads that payment once (a
signal heard during the read gets one more read after it, never one per
signal) and hands the state to each of its streams. While idle nothing
holds a database connection: a read borrows one per statement.

It also bounds the streams: ``live.max_streams`` in this process (503
past it; web/serve.py gives each of N workers its share), and per client
(429): ``live.max_streams_per_ip`` for the public pages' streams,
``live.max_streams_per_merchant`` for the dashboard's; each refusal with
``Retry-After``. At shutdown every stream ends, so a stop never waits
on a payer's open page (the browser reconnects to a process still serving).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Awaitable, Callable

from ..core.errors import RateLimited, ServiceUnavailable
from ..core.gateway import Gateway
from ..core.infra.signals import RESET
from ..core.payments.changes import TOPIC
from .live_state import State, read_state

log = logging.getLogger(__name__)

RETRY_SECONDS = 30  # Retry-After of a refused stream; the page meanwhile reloads on its own
Reader = Callable[[Gateway, str], Awaitable["State | None"]]


class Stream:
    """One open stream: the latest state the hub handed it, and a flag the stream's handler waits on."""

    __slots__ = ("track_id", "client", "latest", "ended", "_wake")

    def __init__(self, track_id: str, client: tuple[str, str]) -> None:
        self.track_id = track_id
        self.client = client  # ("ip", address) or ("merchant", id): whose bound it counts in
        self.latest: State | None = None
        self.ended = False
        self._wake = asyncio.Event()

    def offer(self, state: State | None) -> None:
        """A fresh read (None: the payment is gone from the pages); only the latest one matters."""
        if state is None:
            self.ended = True
        else:
            self.latest = state
        self._wake.set()

    def end(self) -> None:
        self.ended = True
        self._wake.set()

    async def wait(self, timeout: float) -> bool:
        """Whether something arrived within ``timeout`` seconds (False: time for a heartbeat)."""
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            return False
        self._wake.clear()
        return True


class LiveHub:
    """payment id -> its open streams, fed by one subscription per process."""

    def __init__(self, gateway: Gateway, reader: Reader = read_state) -> None:
        self.gateway = gateway
        self._reader = reader
        self._streams: dict[str, set[Stream]] = {}
        self._per_client: Counter[tuple[str, str]] = Counter()
        self._open_count = 0
        self._reading: set[str] = set()
        self._again: set[str] = set()
        self._tasks: set[asyncio.Task] = set()
        self.reads = 0  # reads made for signals (not the streams' first reads): one per change, not per stream
        self._unsubscribe = [gateway.signals.subscribe(TOPIC, self._heard),
                             gateway.signals.subscribe(RESET, self._reset)]

    @property
    def open_streams(self) -> int:
        return self._open_count

    def open(self, track_id: str, ip: str) -> Stream:
        """Register a public page's stream, or refuse it past the bounds (429 per IP, 503 in total)."""
        return self._open(track_id, ("ip", ip), self.gateway.config.live.max_streams_per_ip, "from this address")

    def open_for_merchant(self, track_id: str, merchant_id: str) -> Stream:
        """Register a dashboard stream, or refuse it past the bounds (429 per merchant, 503 in total)."""
        return self._open(track_id, ("merchant", merchant_id), self.gateway.config.live.max_streams_per_merchant,
                          "for this merchant")

    def _open(self, track_id: str, client: tuple[str, str], per_client: int, whose: str) -> Stream:
        retry = {"Retry-After": str(RETRY_SECONDS)}
        if self._open_count >= self.gateway.config.live.max_streams:
            raise ServiceUnavailable("too many open event streams", headers=retry)
        if self._per_client[client] >= per_client:
            raise RateLimited(f"too many open event streams {whose}", headers=retry)
        stream = Stream(track_id, client)
        self._streams.setdefault(track_id, set()).add(stream)
        self._per_client[client] += 1
        self._open_count += 1
        return stream

    def close(self, stream: Stream) -> None:
        streams = self._streams.get(stream.track_id)
        if streams is None or stream not in streams:
            return
        streams.discard(stream)
        if not streams:
            del self._streams[stream.track_id]
        self._per_client[stream.client] -= 1
        if self._per_client[stream.client] <= 0:
            del self._per_client[stream.client]
        self._open_count -= 1

    async def shutdown(self) -> None:
        """End every stream and stop listening (``on_shutdown``)."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        for streams in list(self._streams.values()):
            for stream in list(streams):
                stream.end()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _heard(self, track_id: str) -> None:
        if track_id in self._streams:
            self._schedule(track_id)

    def _reset(self, _payload: str) -> None:
        """Signals may have been missed: every watched payment is read again."""
        for track_id in list(self._streams):
            self._schedule(track_id)

    def _schedule(self, track_id: str) -> None:
        if track_id in self._reading:
            self._again.add(track_id)  # changed again during the read: one more read after it
            return
        self._reading.add(track_id)
        task = asyncio.get_running_loop().create_task(self._read(track_id), name=f"orbchain-live-{track_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _read(self, track_id: str) -> None:
        try:
            while True:
                self._again.discard(track_id)
                self.reads += 1
                try:
                    state = await self._reader(self.gateway, track_id)
                except Exception:  # a hint lost (database away): the page keeps what it shows, RESET re-reads
                    log.warning("live read of payment %s failed", track_id, exc_info=True)
                    return
                for stream in list(self._streams.get(track_id, ())):
                    stream.offer(state)
                if track_id not in self._again:
                    return
        finally:
            self._reading.discard(track_id)
            self._again.discard(track_id)


def live_hub(gateway: Gateway) -> LiveHub:
    """This process's hub, made with the first stream (one per gateway)."""
    hub = gateway.services.get("live_hub")
    if hub is None:
        hub = gateway.services["live_hub"] = LiveHub(gateway)
    return hub


async def end_streams(gateway: Gateway) -> None:
    """At shutdown: every open stream ends, so stopping never waits on a payer's page."""
    hub = gateway.services.pop("live_hub", None)
    if hub is not None:
        await hub.shutdown()
