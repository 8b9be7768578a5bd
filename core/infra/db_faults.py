"""A database that is away (restart, killed connections, full disk, read-only file): named, counted, logged once.

Why its own module: a PostgreSQL restart or a full disk is not a bug in the
request that met it. Every layer that meets one (a request, a job run, the
readiness probe) asks :func:`unavailable_cause` what kind of fault it is, and
reports it to the process's one :class:`DatabaseOutage`: the request answers
503 with Retry-After in the spec's envelope, ``/metrics`` counts each error
by cause, and the log names the database once when the outage begins and
once when it ends, not once per failed request.

Nothing here reconnects: asyncpg's pool replaces a closed connection on the
next acquire, and SQLite opens its file again; an outage ends by itself when
the database answers again.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Callable

import asyncpg

from ..types.errors import ServiceUnavailable

log = logging.getLogger(__name__)

COMPONENT = "database"
RETRY_AFTER_SECONDS = 5  # a restart takes seconds; clients retry soon rather than give up
QUIET_SECONDS = 1.0  # an outage ends when the database answered and no error came for this long
_ASYNCPG_DIR = str(Path(asyncpg.__file__).parent)
_DB_LAYER = str(Path(__file__).parent / "db")  # core/infra/db*.py: connecting, acquiring

# PostgreSQL errors that say the server (or this session) is gone, not that the statement was wrong.
_PG_AWAY: tuple[tuple[type[BaseException], str], ...] = (
    (asyncpg.CannotConnectNowError, "starting up or shutting down"),  # 57P03
    (asyncpg.AdminShutdownError, "shut down or connection terminated"),  # 57P01, pg_terminate_backend too
    (asyncpg.CrashShutdownError, "crashed"),  # 57P02
    (asyncpg.TooManyConnectionsError, "too many connections"),
    # target_session_attrs=read-write met only standbys: the primary is gone and none is promoted yet.
    (asyncpg.TargetServerAttributeNotMatched, "no read-write server (failover under way)"),
    (asyncpg.PostgresConnectionError, "connection lost"),  # class 08, ConnectionDoesNotExistError
)
# SQLite's messages for a file it cannot write (sqlite3 gives no error code before Python 3.11's attributes).
_SQLITE_AWAY = (
    ("disk is full", "disk full"),
    ("readonly database", "read-only database file"),
    ("disk i/o error", "disk I/O error"),
    ("unable to open database file", "cannot open database file"),
    ("database is locked", "locked by another process"),
)


class DatabaseUnavailable(ServiceUnavailable):
    """503: the database is away for now; the request may be sent again after Retry-After."""

    default_message = "database unavailable, retry shortly"

    def __init__(self, cause: str) -> None:
        super().__init__(code="database_unavailable", detail={"component": COMPONENT, "cause": cause},
                         headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


def unavailable_cause(exc: BaseException) -> str | None:
    """What kind of database outage ``exc`` (or what it was raised from) is; None for any other error."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        cause = _cause_of(current)
        if cause is not None:
            return cause
        current = current.__cause__ or current.__context__
    return None


def connection_gone(conn: asyncpg.Connection, exc: BaseException) -> bool:
    """Whether ``exc`` ended ``conn``'s session (closed, or the server said it is going away).

    A statement that failed this way must not be followed by another on the
    same connection: asyncpg may not have seen the socket close yet, and
    the next statement fails as "another operation is in progress".
    """
    return conn.is_closed() or unavailable_cause(exc) is not None


def _cause_of(exc: BaseException) -> str | None:
    for kind, cause in _PG_AWAY:
        if isinstance(exc, kind):
            return cause
    if isinstance(exc, asyncpg.InterfaceError) and "connection is closed" in str(exc):
        return "connection lost"
    if isinstance(exc, asyncpg.InternalClientError) and "another operation" in str(exc):
        # The server ended an idle session (shutdown, pg_terminate_backend) with a message asyncpg got
        # between two statements: the next statement finds the protocol still busy with it. Statements
        # of one connection never overlap here otherwise (core/infra/db_pinning.py).
        return "connection lost"
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return next((cause for marker, cause in _SQLITE_AWAY if marker in text), None)
    if isinstance(exc, OSError) and _raised_in_database_layer(exc):
        # Refused, reset, unreachable, a connect timeout: only when the driver or the pool raised it.
        reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__  # no address: a label value
        return "unreachable: " + reason.lower()
    return None


def _raised_in_database_layer(exc: BaseException) -> bool:
    """Whether ``exc`` came out of asyncpg or the database handle (an OSError of a chain node's call is not ours)."""
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.startswith(_ASYNCPG_DIR) or filename.startswith(_DB_LAYER):
            return True
        tb = tb.tb_next
    return False


class QuietTraceback(logging.Filter):
    """asyncpg's pool logs a traceback each time it fails to reopen its minimum of connections (backing off
    1, 2, 4 ... 60 s): during an outage that is the same refused connect, so its line keeps the cause, not the
    stack. Installed on the ``asyncpg.pool`` logger by ``Database.connect``."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            cause = unavailable_cause(record.exc_info[1])
            if cause is not None:
                record.msg = f"{COMPONENT} unavailable ({cause}): {record.msg}"
                record.exc_info = record.exc_text = None
        return True


def quiet_pool_tracebacks() -> None:
    """Install ``QuietTraceback`` once per process."""
    pool_log = logging.getLogger("asyncpg.pool")
    if not any(isinstance(f, QuietTraceback) for f in pool_log.filters):
        pool_log.addFilter(QuietTraceback())


class DatabaseOutage:
    """This process's view of the database being away: one log line per outage, a counter per error.

    ``failed`` is called for every error :func:`unavailable_cause` names,
    ``answered`` whenever the database answered again (a request that ran
    queries, a job run, the readiness probe): cheap when nothing is wrong.
    """

    def __init__(self, count: Callable[[str], None], up: Callable[[bool], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._count = count
        self._up = up
        self._clock = clock
        self.down_since: float | None = None  # float ok: a monotonic clock reading
        self.cause: str | None = None
        self.errors = 0  # errors in the current (or last) outage
        self._last_error = float("-inf")  # float ok: a monotonic clock reading
        self._when_back: list[Callable[[], None]] = []

    def when_back(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` each time an outage ends (held event hook calls go again, core/contract/held.py)."""
        self._when_back.append(listener)

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failed(self, cause: str, where: str) -> DatabaseUnavailable:
        """Count one error; log the first of an outage, naming the component and where it was met."""
        self._count(cause)
        self._last_error = self._clock()
        if self.down_since is None:
            self.down_since, self.cause, self.errors = self._clock(), cause, 0
            self._up(False)
            log.error("%s unavailable (%s), first met by %s: requests get 503 with Retry-After until it is back;"
                      " later errors of this outage are only counted (orbchain_database_errors)",
                      COMPONENT, cause, where, extra={"component": COMPONENT, "cause": cause})
        self.errors += 1
        return DatabaseUnavailable(cause)

    def absorb(self, exc: BaseException, where: str) -> bool:
        """For code that must not raise (event hooks, a delivery after commit): True when ``exc`` is the
        database being away, now counted and logged once per outage; False for anything else, to log as before."""
        cause = unavailable_cause(exc)
        if cause is None:
            return False
        self.failed(cause, where)
        return True

    def answered(self) -> None:
        """The database answered: end the outage, if there was one, with one line.

        Only once no error came for ``QUIET_SECONDS``: while a server shuts down, sessions not yet told
        still answer for a moment, and an outage ended at once would be logged again a moment later.
        """
        if self.down_since is None or self._clock() - self._last_error < QUIET_SECONDS:
            return
        seconds = self._clock() - self.down_since
        self.down_since = None
        self._up(True)
        log.warning("%s available again after %.1f s (%s; %d error(s) answered 503)", COMPONENT, seconds,
                    self.cause, self.errors, extra={"component": COMPONENT, "cause": self.cause})
        for listener in self._when_back:
            listener()
