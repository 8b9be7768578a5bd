"""Stopping a long-running command (``serve``, ``payouts work``) on SIGTERM or SIGINT.

A stop has one deadline, ``server.drain_seconds`` after the first signal:
work in flight (requests, job runs, a payout tick) may finish until then,
what is left is cancelled, then every connection is closed and the process
exits 0. Cancelling is safe because every job is idempotent and resumable
(scans re-read blocks they did not record, webhook and payout claims are
released, a payout never signs or sends twice: docs/operations.md,
"Stopping"); :data:`CANCELLED_IS_SAFE` says so in the log.

Signals (``StopSignals``): the first one begins the stop. The same stop
often arrives twice: ``make`` forwards SIGTERM to a child that already got
it from the process group, a supervisor forwards it to workers the service
manager signalled too, a terminal's Ctrl-C reaches every process of the
group. A repeat within ``REPEAT_SECONDS`` of the first is therefore taken as
that same stop; a later one means "now": the process exits at once with
status 128 + the signal's number, without finishing the stop (what was in
flight ends as in a crash, which every job survives).

The backstop (``arm_exit_deadline``): once a stop began, a daemon thread
ends the process with status 1 if it is still alive ``HARD_MARGIN_SECONDS``
after the drain deadline (and ``HARD_MARGIN_SECONDS`` after a command's loop
ended for any other reason), logging the threads still running and their
stacks. Nothing should ever reach it: it is there so that a connection left
open by a bug (whose non-daemon thread would keep the interpreter waiting in
``threading._shutdown`` forever, issue 34) costs seconds, not a hung service.
"""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import os
import signal
import sys
import threading
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable

log = logging.getLogger("orbchain.stop")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
REPEAT_SECONDS = 1.0
# After the drain deadline: cancelled work unwinds (releasing its claims) and connections close.
CANCEL_SECONDS = 1.0
# The drain deadline plus this bounds a stop; the supervisor of ``serve --workers`` waits a second longer.
HARD_MARGIN_SECONDS = 5.0
EXIT_STATUS_STUCK = 1
CANCELLED_IS_SAFE = ("cancelling is safe: every job is idempotent and resumable (a scan re-reads the blocks it did"
                     " not record, webhook and payout claims were given back), so the next run, after a restart or"
                     " in another process, does the work again, and a payout is never signed or sent twice")


class Stop:
    """One process's stop: when it was requested, and until when work in flight may run.

    ``requested`` is set once, by ``begin``; long loops (a payout tick, a
    plugin's job) may look at it to end early. Times are ``time.monotonic()``.
    """

    def __init__(self, drain_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.drain_seconds = drain_seconds
        self.requested = asyncio.Event()
        self.reason: str | None = None
        self.began: float | None = None
        # What the stop cancelled at its deadline ("job chain.bitcoin.scan", "2 requests"), for the log.
        self.cancelled: list[str] = []
        self._clock = clock

    @property
    def deadline(self) -> float | None:
        return None if self.began is None else self.began + self.drain_seconds

    def begin(self, reason: str) -> bool:
        """Start the stop (the first call only); returns whether this call started it."""
        if self.began is not None:
            return False
        self.began, self.reason = self._clock(), reason
        self.requested.set()
        return True

    def remaining(self) -> float:
        """Seconds left until the deadline (the whole drain while no stop began), never negative."""
        deadline = self.deadline
        if deadline is None:
            return self.drain_seconds
        return max(0.0, deadline - self._clock())

    def elapsed(self) -> float:
        return 0.0 if self.began is None else self._clock() - self.began

    def report(self, command: str) -> None:
        """The stop's last log line: how long it took and what it had to cancel."""
        if self.cancelled:
            log.info("%s: stop ended after %.1f s; cancelled at the %g s deadline: %s; %s", command, self.elapsed(),
                     self.drain_seconds, ", ".join(self.cancelled), CANCELLED_IS_SAFE)
        else:
            log.info("%s: stop ended after %.1f s; everything in flight finished", command, self.elapsed())


class StopSignals:
    """SIGTERM and SIGINT of one command: begin ``stop``; a repeat is the same stop or, later, "exit now".

    ``install`` hooks the running loop (or, without one, the process, as the
    supervisor of ``serve --workers`` does); ``uninstall`` (once the loop
    is done) keeps the same meaning with plain signal handlers, so that a
    signal during the last moments of the process (closing, waiting for
    threads) still exits at once instead of being ignored or raising in odd
    places. ``on_begin`` and ``on_exit_now`` let a supervisor pass either on
    to its workers; ``hard_seconds`` (default: the drain plus
    ``HARD_MARGIN_SECONDS``) arms the backstop.
    """

    def __init__(self, stop: Stop, command: str, *, on_begin: Callable[[], None] | None = None,
                 on_exit_now: Callable[[], None] | None = None, hard_seconds: float | None = None) -> None:
        self.stop = stop
        self.command = command
        self._on_begin = on_begin
        self._on_exit_now = on_exit_now
        self._hard_seconds = stop.drain_seconds + HARD_MARGIN_SECONDS if hard_seconds is None else hard_seconds
        self._loop: asyncio.AbstractEventLoop | None = None

    def install(self) -> None:
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self.uninstall()
            return
        for signum in STOP_SIGNALS:
            self._loop.add_signal_handler(signum, self.received, signum)

    def uninstall(self) -> None:
        """Hand the signals from the loop to plain handlers without a moment of the default action.

        ``loop.remove_signal_handler`` resets a signal to its default action (death by SIGTERM, exit
        status -15) before the plain handler could be set, and so does a loop closing with handlers;
        a repeated stop signal (make passes one on) landed in that gap under load. Blocking the signal
        does not close it: the backstop's thread (``arm_exit_deadline``) would take it. So the plain
        handler is set first and the loop forgets its own without resetting it (asyncio's selector
        loops keep them in ``_signal_handlers``; another loop falls back to its public removal). Call
        it while the loop still runs.
        """
        loop, self._loop = self._loop, None
        for signum in STOP_SIGNALS:
            signal.signal(signum, lambda number, _frame: self.received(number))
        if loop is None or loop.is_closed():
            return
        registered = getattr(loop, "_signal_handlers", None)
        if not isinstance(registered, dict):
            for signum in STOP_SIGNALS:
                loop.remove_signal_handler(signum)
            for signum in STOP_SIGNALS:  # set again after the fallback's reset
                signal.signal(signum, lambda number, _frame: self.received(number))
            return
        for signum in STOP_SIGNALS:
            registered.pop(signum, None)
        if not registered:
            signal.set_wakeup_fd(-1)  # as the loop does once it has no handler left

    def received(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.stop.begin(name):
            log.info("%s: stop began (%s): no new connections or job runs; work in flight may finish within %g s",
                     self.command, name, self.stop.drain_seconds)
            arm_exit_deadline(self._hard_seconds, self.command)
            if self._on_begin is not None:
                self._on_begin()
            return
        if self.stop.elapsed() < REPEAT_SECONDS:
            log.info("%s: %s again within %g s of the first: the same stop delivered twice (a parent such as make"
                     " or a supervisor passes it on); still stopping", self.command, name, REPEAT_SECONDS)
            return
        if self._on_exit_now is not None:
            self._on_exit_now()
        exit_now(signum, self.command)


@asynccontextmanager
async def undone_if_cancelled(undo: Callable[[], Awaitable[Any]], what: str) -> AsyncIterator[None]:
    """Run ``undo`` when the block is cancelled (a stop's deadline), then let the cancellation go on.

    For claims a job took on rows it did not finish: given back, the next
    run (here after a restart, or in another process) takes them at once
    instead of after their lease. ``undo`` must be safe whatever the block
    did before it was cancelled (a conditional update on the claim token).
    """
    try:
        yield
    except asyncio.CancelledError:
        try:
            await undo()
        except Exception as exc:  # noqa: BLE001 - the lease frees them later anyway
            log.warning("%s was cancelled; giving back its claims failed (%s: %s): they return when their lease"
                        " ends", what, type(exc).__name__, exc)
        else:
            log.info("%s was cancelled; its claims were given back", what)
        raise


async def run_until_stopped(stop: Stop, command: str, work: Awaitable[int]) -> int:
    """Run a command's main loop under ``StopSignals``: on a stop it may finish until the deadline.

    ``work`` should itself return soon after ``stop.requested`` is set (at
    its next pause); past the deadline it is cancelled. Returns its status,
    or 0 when the stop cancelled it.
    """
    signals = StopSignals(stop, command)
    signals.install()
    task = asyncio.ensure_future(work)
    stopping = asyncio.ensure_future(stop.requested.wait())
    try:
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            await asyncio.wait({task}, timeout=stop.remaining())
        if not task.done():
            task.cancel()
            stop.cancelled.append(command)
            await asyncio.wait({task}, timeout=CANCEL_SECONDS)
        status = task.result() if task.done() and not task.cancelled() else 0
    finally:
        stopping.cancel()
        signals.uninstall()
    if stop.began is not None:
        stop.report(command)
    return status


def exit_now(signum: int, command: str) -> None:
    """A second stop signal: leave at once, status 128 + its number (what a shell shows for a signal death)."""
    status = 128 + signum
    log.warning("%s: %s again: exiting now with status %d without finishing the stop; work in flight ends as"
                " after a crash, which every job survives", command, signal.Signals(signum).name, status)
    _flush_logs()
    os._exit(status)


def ignore_late_stop_signals() -> None:
    """The command is done and the process only exits: a stop signal now repeats one already obeyed.

    The interpreter's finalization puts every signal with a Python handler back to the default
    action, so a SIGTERM arriving then (make passes the stop on to its child a moment later) killed a
    process that had stopped cleanly: exit status -15 instead of 0. Ignored signals are left ignored.
    A process stuck while exiting is still ended by ``arm_exit_deadline``'s backstop.
    """
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def arm_exit_deadline(seconds: float, command: str) -> threading.Thread:
    """The backstop: exit with status 1 if the process is still alive ``seconds`` from now.

    Armed when a stop begins, and again when a command's loop has ended
    (however it ended: a failed start-up too), so that nothing, not even a
    non-daemon thread nobody stopped, keeps the interpreter from exiting.
    Only for a command's own process: never call it in a process that goes
    on (a test run).
    """

    def expire() -> None:
        time.sleep(seconds)
        alive = [t.name for t in threading.enumerate() if t is not threading.current_thread() and t.is_alive()]
        log.error("%s: the stop did not finish within %g s: exiting now with status %d; threads still running: %s"
                  " (their stacks follow on stderr)", command, seconds, EXIT_STATUS_STUCK, ", ".join(alive) or "none")
        _flush_logs()
        try:
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        except (OSError, ValueError):  # stderr closed: the log line above is what is left
            pass
        os._exit(EXIT_STATUS_STUCK)

    watchdog = threading.Thread(target=expire, name="orbchain-stop-deadline", daemon=True)
    watchdog.start()
    return watchdog


def _flush_logs() -> None:
    for handler in logging.getLogger().handlers:
        try:
            handler.flush()
        except Exception:  # noqa: BLE001 - leaving matters more than a log line
            pass
