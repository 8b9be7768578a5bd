"""Connecting to PostgreSQL on a multi-host URL: each host in turn, each given its own time.

Why: asyncpg tries the hosts of ``postgresql://h1:p1,h2:p2/db`` in order
under ONE timeout (60 s by default). A primary that refuses (its process
killed, its host up) is passed over at once; but a primary whose machine
is gone (packets dropped) or whose postmaster is frozen takes the whole
timeout, the next host (the promoted standby) is never tried, and every
request waits a minute for a 503. libpq's ``connect_timeout`` is per host;
:func:`connect` gives asyncpg the same, so a failover costs a few seconds
per new connection, not the whole timeout (docs/operations.md, "Failover").

Each host keeps the URL's user, database and options, ``target_session_attrs``
included: asyncpg checks it on the one host and refuses a standby with
``TargetServerAttributeNotMatched``, which core/infra/db_faults.py names an
outage (503) like a refused connection.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg

HOST_CONNECT_SECONDS = 5.0  # per host: a connect on a live server takes milliseconds, a busy one well under this


def single_host_dsns(dsn: str) -> list[str]:
    """One DSN per host of ``dsn`` (``h1:p1,h2:p2`` in its address), in the URL's order; ``[dsn]`` for one host."""
    parts = urlsplit(dsn)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    if "," not in hosts:
        return [dsn]
    return [urlunsplit(parts._replace(netloc=f"{userinfo}{at}{host}")) for host in hosts.split(",") if host]


async def connect(dsn: str, **options: Any) -> asyncpg.Connection:
    """``asyncpg.connect`` trying each host of ``dsn`` for at most ``HOST_CONNECT_SECONDS``; the last host's
    error when none answers as asked (the pool's ``connect``: ``options`` are asyncpg's)."""
    hosts = single_host_dsns(dsn)
    for index, host in enumerate(hosts):
        try:
            return await asyncpg.connect(host, **{"timeout": HOST_CONNECT_SECONDS, **options})
        except (OSError, asyncpg.TargetServerAttributeNotMatched, asyncpg.CannotConnectNowError):
            # Refused, unreachable, timed out (TimeoutError is an OSError), a standby, starting up: next host.
            if index == len(hosts) - 1:
                raise
    raise AssertionError("unreachable: a DSN has at least one host")  # pragma: no cover
