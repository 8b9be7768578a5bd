"""One listener per process fans payment changes out to the open event streams (live pages).

Why one: a thousand payers watching their pages must not mean a thousand
subscriptions or a thousand reads per change. The hub subscribes once to
the change feed (``payment``, core/payments/changes.py) and to ``RESET``;
on a signal for a payment someone watches it reads that payment once (a
signal heard during the read gets one more read after it, never one per
signal) and hands the state to each of its streams. While idle nothing
holds a database connection: a read borrows one per statement.

It also bounds the streams. In total, this process's budget (503 past it):
its share of ``live.max_streams`` (web/serve.py gives each of N workers
its share), never more than its open-file limit leaves room for
(web/stream_budget.py). Then 429 past any of: one payment's share of the
budget (``live.max_page_share_percent``); for the public pages' streams
``live.max_streams_per_ip`` per IPv4 address or IPv6 /64
(web/client_address.py); for the dashboard's ``live.max_streams_per_merchant``
per merchant and ``live.max_dashboard_streams_per_ip`` per address. Each
refusal carries ``Retry-After`` and is counted by bound
(``orbchain_live_streams_refused_total``). A slot is given back when its
handler ends or, sooner, when the client's connection closes
(web/connection_guard.py). At shutdown every stream ends, so a stop never
waits on a payer's open page (the browser reconnects to a process still
serving).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Awaitable, Callable

from ..core.types.errors import RateLimited, ServiceUnavailable
from ..core.gateway import Gateway
from ..core.infra.signals import RESET
from ..core.payments.changes import TOPIC
from .client_address import address_group
from .live_state import State, read_state
from .stream_budget import STREAM_BUDGET, StreamBudget, measure
from ..core.types.services import ServiceKey

log = logging.getLogger(__name__)

RETRY_SECONDS = 30  # Retry-After of a refused stream; the page meanwhile reloads on its own
Reader = Callable[[Gateway, str], Awaitable["State | None"]]
Key = tuple[str, str]  # ("page", track id), ("ip", address group), ("merchant", id), ("dashboard-ip", group)
Bound = tuple[Key, int, str]  # a key, how many streams it may hold, and how a refusal names it


class Stream:
    """One open stream: the latest state the hub handed it, and a flag the stream's handler waits on."""

    __slots__ = ("track_id", "keys", "latest", "ended", "_wake")

    def __init__(self, track_id: str, keys: tuple[Key, ...]) -> None:
        self.track_id = track_id
        self.keys = keys  # the bounds it counts in (its page's, its address's, its merchant's)
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

    def __init__(self, gateway: Gateway, budget: StreamBudget, reader: Reader = read_state) -> None:
        self.gateway = gateway
        self.budget = budget
        self._reader = reader
        self._streams: dict[str, set[Stream]] = {}
        self._held: Counter[Key] = Counter()
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
        """Register a public page's stream, or refuse it past the bounds (429 per page or address, 503 in
        total)."""
        live = self.gateway.config.live
        return self._open(track_id, (("ip", address_group(ip)), live.max_streams_per_ip, "from this address"))

    def open_for_merchant(self, track_id: str, merchant_id: str, ip: str) -> Stream:
        """Register a dashboard stream, or refuse it past the bounds (429 per page, merchant or address, 503 in
        total)."""
        live = self.gateway.config.live
        return self._open(track_id, (("merchant", merchant_id), live.max_streams_per_merchant, "for this merchant"),
                          (("dashboard-ip", address_group(ip)), live.max_dashboard_streams_per_ip,
                           "from this address"))

    def _open(self, track_id: str, *bounds: Bound) -> Stream:
        retry = {"Retry-After": str(RETRY_SECONDS)}
        if self._open_count >= self.budget.streams:
            self._refused("total")
            raise ServiceUnavailable("too many open event streams", headers=retry)
        for key, most, whose in ((("page", track_id), self.budget.per_page, "for this payment"), *bounds):
            if self._held[key] >= most:
                self._refused(key[0])
                raise RateLimited(f"too many open event streams {whose}", headers=retry)
        stream = Stream(track_id, (("page", track_id), *(key for key, _, _ in bounds)))
        self._streams.setdefault(track_id, set()).add(stream)
        for key in stream.keys:
            self._held[key] += 1
        self._open_count += 1
        self.gateway.metrics.live_streams_open.inc()
        return stream

    def close(self, stream: Stream) -> None:
        """Give ``stream``'s slot back (once, however often it is called)."""
        streams = self._streams.get(stream.track_id)
        if streams is None or stream not in streams:
            return
        streams.discard(stream)
        if not streams:
            del self._streams[stream.track_id]
        for key in stream.keys:
            self._held[key] -= 1
            if self._held[key] <= 0:
                del self._held[key]
        self._open_count -= 1
        self.gateway.metrics.live_streams_open.dec()

    def _refused(self, bound: str) -> None:
        self.gateway.metrics.live_streams_refused.labels(_BOUND_NAMES.get(bound, bound)).inc()

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


_BOUND_NAMES = {"ip": "address", "dashboard-ip": "address"}
LIVE_HUB = ServiceKey("live_hub", LiveHub)


def live_hub(gateway: Gateway) -> LiveHub:
    """This process's hub (one per gateway), made with the first stream on the budget ``state_budget`` measured."""
    hub = gateway.services.get(LIVE_HUB)
    if hub is None:
        budget = gateway.services.get(STREAM_BUDGET) or measure(gateway.config)
        hub = gateway.services[LIVE_HUB] = LiveHub(gateway, budget)
    return hub


def state_budget(gateway: Gateway) -> StreamBudget:
    """Once the process serves (``on_startup``): its stream budget, measured now and stated in the log (a
    warning when the open-file limit, not ``max_streams``, decides it: then raise ``LimitNOFILE``)."""
    budget = gateway.services[STREAM_BUDGET] = measure(gateway.config)
    if budget.limited_by_files:
        log.warning("%s: the open-file limit decides it; raise it (LimitNOFILE, ulimit -n) to serve"
                    " [live] max_streams", budget.describe())
    else:
        log.info("%s", budget.describe())
    return budget


async def end_streams(gateway: Gateway) -> None:
    """At shutdown: every open stream ends, so stopping never waits on a payer's page."""
    hub = gateway.services.pop(LIVE_HUB, None)
    if hub is not None:
        await hub.shutdown()
