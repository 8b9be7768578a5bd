"""core/infra/stopping.py: the stop's deadline, what its signals mean, and the backstop that ends a stuck exit.

Signals are sent to small child processes (``python -c``), never to the
test process. The end-to-end stops of ``orbchain serve``, its workers and
``orbchain payouts work`` are in tests/test_stop_e2e.py.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap

import pytest

from orbchain.core.infra.stopping import REPEAT_SECONDS, Stop, undone_if_cancelled

PROBE_TIMEOUT = 60  # only catches a hang


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_stop_begins_once_and_counts_down_to_its_deadline():
    clock = FakeClock()
    stop = Stop(25, clock=clock)
    assert stop.remaining() == 25 and stop.deadline is None and not stop.requested.is_set()
    assert stop.begin("SIGTERM") is True
    clock.now += 10
    assert stop.begin("SIGINT") is False and stop.reason == "SIGTERM"  # the first one counts
    assert stop.requested.is_set() and stop.deadline == 125 and stop.remaining() == 15 and stop.elapsed() == 10
    clock.now += 60
    assert stop.remaining() == 0


PROBE_HEADER = """
import asyncio, logging, os, signal, sys
from orbchain.core.infra.stopping import Stop, StopSignals
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")

async def main():
    stop = Stop(30)
    signals = StopSignals(stop, "probe")
    signals.install()
"""


def probe(body: str) -> subprocess.CompletedProcess:
    """Run ``body`` inside an async ``main`` (``stop``, ``signals``, ``os``, ``signal``, ``asyncio`` in scope)
    in a child process; its output and exit status."""
    script = (PROBE_HEADER + textwrap.indent(textwrap.dedent(body), "    ") + "    signals.uninstall()\n"
              "asyncio.run(main())\nprint('returned from main', flush=True)\n")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=PROBE_TIMEOUT)


def test_the_same_stop_delivered_twice_is_one_stop():
    """make passes SIGTERM on to a child that got it from the process group already; a terminal's Ctrl-C
    reaches a worker as SIGINT while its supervisor sends SIGTERM. Before issue 34 the second one, handled
    during the cleanup, aborted it and the process hung on its database threads (or died by the signal)."""
    done = probe("""
        os.kill(os.getpid(), signal.SIGTERM)
        await stop.requested.wait()
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(0.2)
        print("still stopping", flush=True)
    """)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "probe: stop began (SIGTERM)" in done.stdout and "the same stop delivered twice" in done.stdout
    assert "still stopping" in done.stdout and "returned from main" in done.stdout


def test_a_later_second_signal_exits_at_once_with_128_plus_its_number():
    done = probe(f"""
        os.kill(os.getpid(), signal.SIGTERM)
        await stop.requested.wait()
        await asyncio.sleep({REPEAT_SECONDS} + 0.3)
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(50)
        print("never", flush=True)
    """)
    assert done.returncode == 128 + signal.SIGINT, done.stdout + done.stderr
    assert "SIGINT again: exiting now with status 130" in done.stdout and "never" not in done.stdout


def test_a_second_signal_after_the_loop_ended_still_exits_at_once():
    """Once the loop is gone (closing, waiting for threads) the handlers stay: a second signal is not ignored
    (PID 1 in a container ignores a default SIGTERM) and does not raise in the middle of the exit."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import asyncio, os, signal, threading, time
        from orbchain.core.infra.stopping import Stop, StopSignals
        stop = Stop(30)
        signals = StopSignals(stop, "probe")

        async def main():
            signals.install()
            os.kill(os.getpid(), signal.SIGTERM)
            await stop.requested.wait()

        asyncio.run(main())
        signals.uninstall()
        time.sleep(1.5)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(50)
    """)], capture_output=True, text=True, timeout=PROBE_TIMEOUT)
    assert done.returncode == 128 + signal.SIGTERM, done.stdout + done.stderr


def test_a_thread_left_running_cannot_keep_the_process_alive():
    """The backstop: a non-daemon thread nobody ends (what a connection left open leaves, issue 34) kept the
    interpreter waiting in threading._shutdown forever; once a stop began, the process exits with status 1
    at its hard deadline, naming the thread and dumping its stack."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import asyncio, os, signal, threading
        from orbchain.core.infra.stopping import Stop, StopSignals

        async def main():
            stop = Stop(0.2)
            StopSignals(stop, "probe", hard_seconds=1).install()
            threading.Thread(target=threading.Event().wait, name="leaked-connection-thread").start()
            os.kill(os.getpid(), signal.SIGTERM)
            await stop.requested.wait()

        asyncio.run(main())
    """)], capture_output=True, text=True, timeout=PROBE_TIMEOUT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the stop did not finish within 1 s" in done.stderr and "leaked-connection-thread" in done.stderr


async def test_undone_if_cancelled_runs_its_undo_then_lets_the_cancellation_go_on():
    undone: list[str] = []

    async def undo() -> None:
        undone.append("given back")

    async def work(outcome: str) -> None:
        async with undone_if_cancelled(undo, "work"):
            if outcome == "raise":
                raise ValueError("a bug")
            if outcome == "hang":
                await asyncio.Event().wait()

    await work("finish")
    with pytest.raises(ValueError):
        await work("raise")
    assert undone == []  # only a cancellation gives back: an error leaves the claim to its lease
    task = asyncio.create_task(work("hang"))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert undone == ["given back"]


def test_a_repeated_stop_signal_in_the_handover_to_plain_handlers_is_the_same_stop():
    """Removing a loop's handler resets the signal to its default action until the plain handler is set;
    ``make`` passing a SIGTERM on lands there now and then (under load the serve test saw exit -15). The
    probe sends the repeat after every change of SIGTERM's handler once the stop began, so also in
    that gap when there is one."""
    result = probe("""
        real_signal = signal.signal

        def signal_with_repeat(signum, handler):
            previous = real_signal(signum, handler)
            if signum == signal.SIGTERM:
                os.kill(os.getpid(), signal.SIGTERM)  # the repeat, right after the change
            return previous

        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(stop.requested.wait(), 10)
        signal.signal = signal_with_repeat
    """)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    assert "returned from main" in result.stdout and "the same stop delivered twice" in result.stdout
