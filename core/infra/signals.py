"""Signals: short named messages every process of one gateway hears.

Real time needs a process to tell the others that something happened now:
the process that heard a node announce a transaction wakes the one leading
that chain's scan; the process that credited a deposit tells every process
holding a payer's page open. ``publish(topic, payload)`` delivers to this
process's subscribers at once and, on PostgreSQL, to every other process
through one ``NOTIFY`` on :data:`CHANNEL`, which the side connection LISTENs
on (core/infra/pg_side.py); nothing holds a pool connection while idle. On
SQLite (one process by design) delivery stays in process.

Signals are hints, never the record: a signal lost while a side connection
was down only delays what it triggers (scans keep polling, a page re-reads
its payment). Subscribers of :data:`RESET` hear when this process may have
missed signals (its side connection dropped), so they can re-read.
Callbacks run on the event loop and must not block; one that raises is
logged and the others still run.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

CHANNEL = "orbchain_signals"
RESET = "signals.reset"
# Payload: a job's name. Every process hears it; the one that leads the job runs it now (scheduler/runner.py).
WAKE = "wake"
MAX_PAYLOAD = 7000  # NOTIFY's payload limit is 8000 bytes; topic and origin ride along

Callback = Callable[[str], None]
Sender = Callable[[str], Awaitable[object]]


class Signals:
    """Topic -> subscribers, in this process, bridged to the others by ``attach``."""

    def __init__(self) -> None:
        self.origin = secrets.token_hex(6)
        self._subscribers: dict[str, list[Callback]] = {}
        self._send: Sender | None = None
        self._sending: set[asyncio.Task] = set()

    def subscribe(self, topic: str, callback: Callback) -> Callable[[], None]:
        """Call ``callback(payload)`` for each signal on ``topic``; returns the unsubscribe function."""
        self._subscribers.setdefault(topic, []).append(callback)

        def unsubscribe() -> None:
            listeners = self._subscribers.get(topic, [])
            if callback in listeners:
                listeners.remove(callback)
            if not listeners:
                self._subscribers.pop(topic, None)

        return unsubscribe

    def subscribers(self, topic: str) -> int:
        return len(self._subscribers.get(topic, ()))

    def publish(self, topic: str, payload: str = "") -> asyncio.Task | None:
        """Deliver ``payload`` on ``topic`` here now and to the other processes soon (never blocks).

        Returns the forward to the other processes (done once the NOTIFY was
        sent), None when there are none (SQLite), so a caller can keep at
        most one in flight.
        """
        if " " in topic or not topic:
            raise ValueError(f"signal topic must be one non-empty word, not {topic!r}")
        if len(payload) > MAX_PAYLOAD:
            raise ValueError(f"signal payload longer than {MAX_PAYLOAD} characters")
        self._deliver(topic, payload)
        if self._send is not None:
            message = self.message(topic, payload)
            task = asyncio.get_running_loop().create_task(self._forward(self._send, message))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)
            return task
        return None

    def message(self, topic: str, payload: str = "") -> str:
        """The NOTIFY text of a signal from this process (a short-lived command sends it on its own connection)."""
        return f"{self.origin} {topic} {payload}"

    def attach(self, send: Sender) -> None:
        """Forward every publication through ``send(message)`` (the side connection's NOTIFY)."""
        self._send = send

    async def detach(self) -> None:
        """Stop forwarding; waits for the forwards in flight."""
        self._send = None
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)

    def received(self, message: str) -> None:
        """A NOTIFY from any process (this one's own are skipped: already delivered)."""
        origin, _, rest = message.partition(" ")
        topic, _, payload = rest.partition(" ")
        if origin != self.origin and topic:
            self._deliver(topic, payload)

    def lost(self) -> None:
        """Tell :data:`RESET` subscribers that signals may have been missed."""
        self._deliver(RESET, "")

    @staticmethod
    async def _forward(send: Sender, message: str) -> None:
        try:
            await send(message)
        except Exception as exc:  # noqa: BLE001 - a hint lost: the others poll
            log.info("signal not forwarded to other processes: %s", exc)

    def _deliver(self, topic: str, payload: str) -> None:
        for callback in list(self._subscribers.get(topic, ())):
            try:
                callback(payload)
            except Exception:  # one subscriber must not silence the others
                log.exception("signal subscriber for %r failed", topic)
