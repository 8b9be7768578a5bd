"""``orbchain serve --workers N``: N full gateway processes on one port.

The supervisor binds N listening sockets to the port with SO_REUSEPORT (so
a busy port fails before anything starts), then forks N workers that each
build their own app (database pool, side connection, scheduler) after the
fork and accept on their own socket; the kernel spreads new connections
evenly among them (one shared socket would wake them all and usually hand
every connection to the same one). The first worker is started alone and the rest only once it
serves: in development it applies migrations, and N processes creating the
bookkeeping tables at once would collide. Nothing with threads or an event loop exists in the supervisor
before it forks. Jobs still run once: each worker's scheduler competes for
the same PostgreSQL advisory locks as separate ``orbchain serve`` processes
do. SQLite is refused (one writer process by design, docs/decisions.md).

SIGTERM or SIGINT to the supervisor stops every worker gracefully: it
passes SIGTERM on and waits for them, bounded (each worker drains and
closes as a single ``orbchain serve`` does, core/infra/stopping.py); a worker
still alive after the drain plus ``SUPERVISOR_MARGIN_SECONDS`` is killed
and the supervisor exits 1, as it does at once on a second signal. If a
worker dies on its own the supervisor stops the others and exits non-zero,
so the service manager restarts the whole set.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
from typing import Any, Callable

from aiohttp import web

from ..core.infra.stopping import HARD_MARGIN_SECONDS, Stop, StopSignals
from .listen import listen
from .server import run

log = logging.getLogger("orbchain")

WORKER_HEADER = "X-Worker"
COMMAND = "orbchain serve supervisor"
# A worker ends its stop within the drain plus HARD_MARGIN_SECONDS (its own backstop); the supervisor
# waits a second more before it kills what is left.
SUPERVISOR_MARGIN_SECONDS = HARD_MARGIN_SECONDS + 1
POLL_SECONDS = 0.2  # how often the supervisor looks for exited workers


async def worker_header(request: web.Request, response: web.StreamResponse) -> None:
    """Development only: which worker answered (tests and benchmarks check the spread)."""
    response.headers[WORKER_HEADER] = str(os.getpid())


def serve_workers(make_app: Callable[[], web.Application], host: str, port: int, workers: int,
                  drain_seconds: float, development: bool = False, ready: Callable[[], None] | None = None,
                  **runner_kwargs: Any) -> int:
    """Fork ``workers`` processes serving ``make_app()`` on one socket; returns the exit status.

    ``ListenError`` (web/listen.py) when the port cannot be bound; ``ready`` is called once every worker runs.
    """
    first = listen(host, port, reuse_port=True)
    bound_port = first.getsockname()[1]
    socks = [first] + [listen(host, bound_port, reuse_port=True) for _ in range(workers - 1)]
    children: list[int] = []
    waiting: list[int] = []  # the other workers' ready pipes, read once all are forked
    for index, sock in enumerate(socks):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child (covered by the subprocess test)
            os.close(read_end)
            for other in socks:
                if other is not sock:
                    other.close()
            os._exit(_worker(make_app, sock, development, runner_kwargs, write_end))
        os.close(write_end)
        children.append(pid)
        if index == 0 and not os.read(read_end, 1):
            # The first worker migrates (development) and creates what the others would race to create.
            os.close(read_end)
            log.error("the first worker failed to start; not starting the others")
            os.waitpid(pid, 0)
            for other in socks:
                other.close()
            return 1
        if index == 0:
            os.close(read_end)
        else:
            waiting.append(read_end)
    for sock in socks:
        sock.close()
    started = [bool(os.read(fd, 1)) for fd in waiting]  # EOF: that worker died; _supervise sees its exit
    for fd in waiting:
        os.close(fd)
    log.info("Orbchain supervisor %d started %d workers: %s", os.getpid(), workers, ", ".join(map(str, children)))
    return _supervise(children, drain_seconds, ready if all(started) else None)


def _worker(make_app: Callable[[], web.Application], sock: socket.socket, development: bool,
            runner_kwargs: dict[str, Any], ready_fd: int) -> int:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)

    def ready() -> None:
        try:
            os.write(ready_fd, b"1")
        except BrokenPipeError:
            pass  # the supervisor gave up waiting (it is stopping)
        os.close(ready_fd)

    try:
        app = make_app()
        if development:
            app.on_response_prepare.append(worker_header)
        run(app, "", 0, sock=sock, ready=ready, command=f"orbchain serve worker {os.getpid()}", **runner_kwargs)
        return 0
    except BaseException:  # the supervisor learns it from the exit status
        log.exception("worker %d failed", os.getpid())
        return 1


def _supervise(children: list[int], drain_seconds: float, ready: Callable[[], None] | None = None) -> int:
    """Wait for the workers; on a stop pass it on and wait for them, bounded; returns the exit status.

    The workers finish their stop within the drain plus their own margin
    (core/infra/stopping.py); one still alive a second after that is killed, and
    the supervisor exits 1. A second signal kills the workers at once.
    """
    alive = set(children)
    stop = Stop(drain_seconds)
    signals = StopSignals(stop, COMMAND, on_begin=lambda: _signal_all(alive, signal.SIGTERM),
                          on_exit_now=lambda: _kill_all(alive),
                          hard_seconds=drain_seconds + SUPERVISOR_MARGIN_SECONDS + 1)
    signals.install()
    if ready is not None:
        ready()  # once a stop would be handled: a SIGTERM right after "serving on" is a clean stop
    status = 0
    while alive:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            alive.discard(pid)
            code = os.waitstatus_to_exitcode(code)
            if stop.began is None:
                log.error("worker %d exited (status %d); stopping the others", pid, code)
                stop.begin("a worker exited")
                status = 1
                _signal_all(alive, signal.SIGTERM)
            elif code:
                log.warning("worker %d ended its stop with status %d", pid, code)
                status = 1
            continue
        if stop.began is not None and stop.elapsed() > drain_seconds + SUPERVISOR_MARGIN_SECONDS:
            log.error("%s: workers %s still running %g s after the stop began: killing them", COMMAND,
                      ", ".join(map(str, sorted(alive))), stop.elapsed())
            _kill_all(alive)
            return 1
        time.sleep(POLL_SECONDS)
    if stop.began is not None:
        log.info("%s: stop ended after %.1f s; every worker exited", COMMAND, stop.elapsed())
    return status


def _signal_all(pids: set[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def _kill_all(pids: set[int]) -> None:
    """SIGKILL and reap (a worker left unreaped would linger as a zombie under init)."""
    _signal_all(pids, signal.SIGKILL)
    for pid in list(pids):
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        pids.discard(pid)
