"""Database URLs: what each driver is given for a ``sqlite:///`` or ``postgresql://`` URL.

Why its own module: operators write one URL (with options such as
``schema`` or ``max_size``); turning it into a SQLite file or ``file:`` URI,
or into asyncpg's DSN and pool options, is parsing the handle need not hold.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit


def sqlite_target(url: str) -> tuple[str, bool]:
    """The file (or ``file:`` URI when the URL has options) of a ``sqlite[+aiosqlite]:///path`` URL."""
    parts = urlsplit(url)
    path = unquote(parts.path[1:]) if parts.path.startswith("/") else unquote(parts.path)
    if parts.query:
        return f"file:{path}?{parts.query}", True
    return path or ":memory:", False


def pg_options(url: str) -> tuple[str, dict[str, Any]]:
    """asyncpg's DSN and pool options from a ``postgresql[+asyncpg]://`` URL.

    ``min_size``/``max_size`` size the pool (1 and 20 unless given); ``schema``
    selects a dedicated schema through ``search_path`` (operators, and one per
    test). Other options go to asyncpg as they are (``sslmode``, ...).
    """
    url = re.sub(r"^postgres(?:ql)?(?:\+\w+)?://", "postgresql://", url)
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    taken = {k: v for k, v in pairs if k in ("schema", "min_size", "max_size", "ssl")}
    options: dict[str, Any] = {"min_size": int(taken.get("min_size", 1)), "max_size": int(taken.get("max_size", 20))}
    schema = taken.get("schema")
    if schema is not None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", schema):
            raise ValueError("database URL option 'schema' must be a plain SQL identifier")
        options["server_settings"] = {"search_path": schema}
    if "ssl" in taken:
        options["ssl"] = {"true": True, "false": False}.get(taken["ssl"].lower(), taken["ssl"])
    rest = urlencode([(k, v) for k, v in pairs if k not in taken])
    return urlunsplit(parts._replace(query=rest)), options


def redacted_url(url: str) -> str:
    """``url`` to print (``doctor``, ``config check``): the password, in the userinfo or a ``password``
    option, shown as ``***``; the user, host, port, database and other options kept, as the operator needs."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if parts.password is None and not any(k.lower() == "password" for k, _ in pairs):
        return url  # nothing to hide (and a sqlite:/// URL is printed as written)
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    query = urlencode([(k, "***" if k.lower() == "password" else v) for k, v in pairs], safe="*")
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def url_user(url: str) -> str:
    """The role a ``postgresql://`` URL connects as (its userinfo, else a ``user`` option); empty when it names
    none (the driver's default then: the OS user or ``PGUSER``)."""
    parts = urlsplit(url)
    if parts.username:
        return unquote(parts.username)
    return dict(parse_qsl(parts.query)).get("user", "")
