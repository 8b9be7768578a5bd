"""Which errors mean "the database is away" (503), and one log line per outage (core/infra/db_faults.py)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3

import asyncpg
import pytest

from orbchain.core.infra import db_faults
from orbchain.core.infra.db_faults import DatabaseOutage, DatabaseUnavailable, unavailable_cause


@pytest.mark.parametrize(("exc", "cause"), [
    (asyncpg.CannotConnectNowError("the database system is shutting down"), "starting up or shutting down"),
    (asyncpg.AdminShutdownError("terminating connection due to administrator command"),
     "shut down or connection terminated"),
    (asyncpg.CrashShutdownError("crash"), "crashed"),
    (asyncpg.TooManyConnectionsError("sorry, too many clients already"), "too many connections"),
    (asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"), "connection lost"),
    (asyncpg.InterfaceError("cannot call Connection.fetch(): connection is closed"), "connection lost"),
    (asyncpg.InternalClientError("cannot switch to state 12; another operation (2) is in progress"),
     "connection lost"),
    (sqlite3.OperationalError("database or disk is full"), "disk full"),
    (sqlite3.OperationalError("attempt to write a readonly database"), "read-only database file"),
    (sqlite3.OperationalError("disk I/O error"), "disk I/O error"),
    (sqlite3.OperationalError("database is locked"), "locked by another process"),
])
def test_outages_are_named(exc, cause):
    assert unavailable_cause(exc) == cause
    wrapped = RuntimeError("while crediting")
    wrapped.__cause__ = exc
    assert unavailable_cause(wrapped) == cause  # raised from one: still the database's


@pytest.mark.parametrize("exc", [
    asyncpg.UniqueViolationError("duplicate key"),  # the statement's fault: a 4xx or a bug, never a 503
    asyncpg.InterfaceError("cannot perform operation: another operation is in progress"),
    sqlite3.OperationalError("no such table: payments"),
    sqlite3.IntegrityError("UNIQUE constraint failed"),
    ValueError("bad"),
    ConnectionRefusedError(111, "refused"),  # not raised by the database layer: a node's, a webhook's
])
def test_other_errors_are_not_outages(exc):
    assert unavailable_cause(exc) is None


def test_a_refused_connect_of_the_driver_is_named_without_its_address():
    async def connect() -> None:
        raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)")

    # Run the raise in a frame that claims to be asyncpg's: what the traceback walk looks for.
    code = compile("async def connect():\n    raise ConnectionRefusedError(111, 'Connect call failed')\n",
                   db_faults._ASYNCPG_DIR + "/connect_utils.py", "exec")
    namespace: dict = {}
    exec(code, namespace)  # a function compiled under the driver's file name
    with pytest.raises(ConnectionRefusedError) as raised:
        asyncio.run(namespace["connect"]())
    assert unavailable_cause(raised.value) == "unreachable: connection refused"
    with pytest.raises(ConnectionRefusedError) as elsewhere:
        asyncio.run(connect())
    assert unavailable_cause(elsewhere.value) is None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_line_when_an_outage_begins_and_one_when_it_ends(caplog):
    caplog.set_level(logging.INFO, logger="orbchain.core.infra.db_faults")
    counted: list[str] = []
    up: list[bool] = []
    clock = Clock()
    outage = DatabaseOutage(counted.append, up.append, clock)
    outage.answered()  # nothing wrong: nothing logged
    for where in ("POST /v1/payment", "job payouts.process", "the readiness probe"):
        error = outage.failed("connection lost", where)
        assert isinstance(error, DatabaseUnavailable) and error.status == 503
        assert error.headers["Retry-After"] == str(db_faults.RETRY_AFTER_SECONDS)
        assert error.error_object()["code"] == "database_unavailable"
    assert counted == ["connection lost"] * 3 and up == [False] and outage.down
    clock.now += db_faults.QUIET_SECONDS / 2
    outage.answered()  # too soon after an error: a server going down still answers on some sessions
    assert outage.down
    clock.now += db_faults.QUIET_SECONDS
    outage.answered()
    assert not outage.down and up == [False, True]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "database unavailable (connection lost), first met by POST /v1/payment" in lines[0]
    assert "database available again after" in lines[1] and "3 error(s)" in lines[1]
