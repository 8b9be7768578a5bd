"""The listening socket of ``orbchain serve``, bound before anything else starts.

Binding first means a taken port is found before the database, scheduler and
chain watchers start (and have to be stopped again), the "serving on" line is
printed only once the port is really held, and the failure is one line
saying which address and what to do, not an ``OSError`` traceback (issue 32).

The socket is a ``Listener``: when the process has no file left for a new
connection, asyncio's accept loop (CPython 3.11's ``_accept_connection``)
goes on calling ``accept()`` up to the backlog's length after the first
failure, logging a traceback and scheduling one more retry for each; under a
stream flood that was 210,921 error lines in 40 s and a loop too busy to
serve anything (issue 42; CPython issue 151615). A ``Listener`` lets the
first failure of a loop turn through (asyncio then rests the socket for a
second) and answers the rest of that turn as "nothing to accept"; the
episode is logged once when it begins and once, with its count, when a
connection is accepted again. ``quiet_accept_errors`` keeps asyncio's own
traceback of those failures out of the log.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
from typing import Any

from ..core.contract.registries import StartupError
from ..core.infra.episodes import Episode
from ..core.infra.open_files import open_file_limit

log = logging.getLogger("orbchain.web.accept")

BACKLOG = 1024
# accept() failures that mean "no resource for one more connection" (asyncio rests the socket on these).
OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
ACCEPT_FAILED = "socket.accept() out of system resource"  # asyncio's message for them

_ADVICE = {
    errno.EADDRINUSE: "address already in use: another process holds this port (`ss -ltnp` names it);"
                      " stop it, or serve on another port with --port or ORBCHAIN_PORT",
    errno.EACCES: "permission denied: ports below 1024 need privileges; serve on a port from 1024 up"
                  " (behind a reverse proxy, deploy/nginx.conf)",
    errno.EADDRNOTAVAIL: "no such address on this host: choose one of its addresses with --host or ORBCHAIN_HOST",
}


class ListenError(StartupError):
    """The port cannot be bound; the message says which address and what to do."""


class Listener(socket.socket):
    """A listening socket that fails an accept for want of files once per loop turn, logged per episode."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._resting = False
        self.failed_accepts = Episode(
            log, "cannot accept connections on %(where)s: %(error)s (open-file limit %(limit)d); new connections"
                 " wait in the backlog and accepting is retried every second; later failures of this episode"
                 " are only counted",
            "accepting connections on %(where)s again after %(count)d failed accepts in %(seconds).1f s",
            level=logging.ERROR, end_level=logging.WARNING)

    def accept(self) -> tuple[socket.socket, Any]:
        if self._resting:
            raise BlockingIOError(errno.EAGAIN, "resting after an accept failed for want of resources")
        try:
            accepted = super().accept()
        except OSError as exc:
            if exc.errno in OUT_OF_RESOURCES:
                self._rest_this_turn(exc)
            raise
        if self.failed_accepts.ongoing:
            self.failed_accepts.over()
        return accepted

    def _rest_this_turn(self, exc: OSError) -> None:
        self.failed_accepts.hit(where=_where(self), error=exc.strerror or str(exc), limit=open_file_limit())
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # a blocking caller: nothing loops on it
        self._resting = True
        loop.call_soon(self._rest_over)

    def _rest_over(self) -> None:
        self._resting = False


def quiet_accept_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler: a ``Listener``'s failed accepts are its episode's, not a traceback each."""
    transport_socket = context.get("socket")
    if context.get("message") == ACCEPT_FAILED and isinstance(getattr(transport_socket, "_sock", None), Listener):
        return
    loop.default_exception_handler(context)


def _where(sock: socket.socket) -> str:
    try:
        host, port = sock.getsockname()[:2]
    except (OSError, ValueError):
        return "the listening socket"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def listen(host: str, port: int, *, reuse_port: bool = False, setting: str | None = None) -> Listener:
    """A listening TCP socket on ``host:port`` (IPv6 when the host is one); ``ListenError`` when refused.

    ``setting`` names the config key the address came from, when it is not the main port's (``--host``,
    ``--port``): the refusal then tells the operator to change that key.
    """
    where = f"[{host}]:{port}" if ":" in host else f"{host or '0.0.0.0'}:{port}"
    if setting is not None:
        where = f"{where} ({setting})"
    try:
        family = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        bound = socket.create_server((host, port), family=family, backlog=BACKLOG, reuse_port=reuse_port)
        return Listener(bound.family, bound.type, bound.proto, fileno=bound.detach())
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {where}: unknown host ({exc.strerror});"
                          " check --host or ORBCHAIN_HOST") from None
    except OSError as exc:
        advice = _ADVICE.get(exc.errno or 0, exc.strerror or str(exc)) if setting is None else \
            f"{os.strerror(exc.errno) if exc.errno else exc}: choose another address in {setting}"
        raise ListenError(f"cannot listen on {where}: {advice}") from None
