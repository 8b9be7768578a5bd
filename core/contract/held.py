"""Event hook calls that met the database away: held in this process and called again once it is back.

Why: the event caller (core/contract/hook_caller.py) isolates plugins, so an implementation that raises is
logged and the others still run. When it raised because the database was
away (a restart, a failover, a full disk), that is not the plugin's bug, and
the event must not be lost: the money already moved, and a plugin that
enqueues its own webhook or keeps its own rows would never hear of it again.
Such a call is kept here with its arguments, and that implementation alone
(the others already ran) is called again when :class:`DatabaseOutage` says
the database answers again, in the order the calls were held, until it goes
through or fails for another reason (then it is logged, as any plugin error).

Held in memory, not in the database, because the database is what is away.
A process stopped before the database came back loses what it held: the
stop logs each such call (plugin, hook) so the operator can act, and the
events that matter for money have their own durable record (the outbox, a
deposit's or payout's row) that the periodic jobs read again. An
implementation called again must be idempotent (``enqueue_event``'s
``logical_key`` is).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Mapping

log = logging.getLogger(__name__)

MAX_HELD = 10_000  # past this the oldest call is dropped (logged): memory stays bounded in a long outage


@dataclass(frozen=True)
class HeldCall:
    plugin: str
    hook_name: str
    function: Callable[..., Any]
    kwargs: Mapping[str, Any]  # just the arguments the implementation takes

    async def run(self) -> None:
        result = self.function(**self.kwargs)
        if inspect.isawaitable(result):
            await result


class HeldEvents:
    """This process's held hook calls; ``absorbs(exc, where)`` is the outage's ``absorb``."""

    def __init__(self, absorbs: Callable[[BaseException, str], bool], shown: Callable[[int], None] = lambda n: None,
                 limit: int = MAX_HELD) -> None:
        self._absorbs = absorbs
        self._shown = shown  # the gauge orbchain_event_hooks_held
        self._calls: deque[HeldCall] = deque()
        self._limit = limit
        self._replay: asyncio.Task[int] | None = None

    def __len__(self) -> int:
        return len(self._calls)

    def hold(self, call: HeldCall) -> None:
        if len(self._calls) >= self._limit:
            lost = self._calls.popleft()
            log.error("held event hook calls over %d: plugin %s's %s dropped", self._limit, lost.plugin,
                      lost.hook_name)
        self._calls.append(call)
        self._shown(len(self._calls))
        log.warning("plugin %s in hook %s met the database away: held, called again once it is back",
                    call.plugin, call.hook_name)

    def database_back(self) -> None:
        """The outage ended (called by ``DatabaseOutage``, inside the event loop): replay in the background."""
        if not self._calls or (self._replay is not None and not self._replay.done()):
            return
        try:
            self._replay = asyncio.get_running_loop().create_task(self.replay())
        except RuntimeError:  # no loop (a CLI's last answer): the next outage's end, or the stop, sees them
            return

    async def replay(self) -> int:
        """Call the held calls again, oldest first; stop at the first that meets the database away again
        (it stays first, the outage's end calls this again). Returns how many went through."""
        done = 0
        while self._calls:
            call = self._calls[0]
            try:
                await call.run()
            except Exception as exc:  # the same isolation as an event call: one plugin's failure is logged
                if self._absorbs(exc, f"plugin {call.plugin} in hook {call.hook_name}, called again"):
                    break
                log.exception("plugin %s failed in hook %s, called again after the database was back",
                              call.plugin, call.hook_name)
            else:
                done += 1
            self._calls.popleft()
            self._shown(len(self._calls))
        if done:
            log.info("%d held event hook call(s) went through now that the database is back", done)
        return done

    async def close(self) -> None:
        """At the stop: wait for a replay under way; log what is still held, which this process loses."""
        if self._replay is not None and not self._replay.done():
            await asyncio.gather(self._replay, return_exceptions=True)
        for call in self._calls:
            log.error("plugin %s in hook %s was held while the database was away and is lost with this"
                      " process's stop", call.plugin, call.hook_name)
        self._calls.clear()
        self._shown(0)
