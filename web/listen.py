"""The listening socket of ``orbchain serve``, bound before anything else starts.

Binding first means a taken port is found before the database, scheduler and
chain watchers start (and have to be stopped again), the "serving on" line is
printed only once the port is really held, and the failure is one line
saying which address and what to do, not an ``OSError`` traceback (issue 32).
"""

from __future__ import annotations

import errno
import socket

from ..core.contract.registries import StartupError

BACKLOG = 1024

_ADVICE = {
    errno.EADDRINUSE: "address already in use: another process holds this port (`ss -ltnp` names it);"
                      " stop it, or serve on another port with --port or ORBCHAIN_PORT",
    errno.EACCES: "permission denied: ports below 1024 need privileges; serve on a port from 1024 up"
                  " (behind a reverse proxy, deploy/nginx.conf)",
    errno.EADDRNOTAVAIL: "no such address on this host: choose one of its addresses with --host or ORBCHAIN_HOST",
}


class ListenError(StartupError):
    """The port cannot be bound; the message says which address and what to do."""


def listen(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when the host is one); ``ListenError`` when refused."""
    where = f"[{host}]:{port}" if ":" in host else f"{host or '0.0.0.0'}:{port}"
    try:
        family = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        return socket.create_server((host, port), family=family, backlog=BACKLOG, reuse_port=reuse_port)
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {where}: unknown host ({exc.strerror});"
                          " check --host or ORBCHAIN_HOST") from None
    except OSError as exc:
        advice = _ADVICE.get(exc.errno or 0, exc.strerror or str(exc))
        raise ListenError(f"cannot listen on {where}: {advice}") from None
