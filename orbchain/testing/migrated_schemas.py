"""A test's fresh PostgreSQL schema filled from a copy of one migrated once: the suite's set-up cost.

Each PostgreSQL test gets a new, empty schema (``databases.db_url``), and
building its gateway migrates it: about a hundred migrations, each in its own
transaction, 1-3 s of a test's set-up on the CI machine, against about 0.3 s
to replay the ``pg_dump`` of a schema migrated the same way. So the first
gateway of a process with a given migration list (the plugins a test enables
decide it) is migrated for real and its schema dumped; every later empty
schema with the same list is filled by replaying that dump under its own name.

What is replayed is what ``migrate`` made, statement for statement's effect
(tables, indexes, triggers, functions, sequences at their values, the rows a
migration inserts, ``schema_migrations``), so a test cannot tell. Only an
empty schema is filled (a test that migrates in steps, or re-runs ``migrate``,
gets the real one), SQLite always migrates for real (its set-up is cheap), and
so does every subprocess (``orbchain serve``, the signer): only this process's
``migrate`` is wrapped. ``ORBCHAIN_TEST_MIGRATE_EACH=1`` turns the copy off.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any, Awaitable, Callable, Iterable
from urllib.parse import parse_qs, urlsplit, urlunsplit

import asyncpg

OFF_ENV = "ORBCHAIN_TEST_MIGRATE_EACH"

Migrate = Callable[[Any, Iterable[Any]], Awaitable[list[Any]]]

# migration list -> (the schema it was dumped from, the dump), or None where no dump could be made (no pg_dump,
# or one of another major version than the server): one process's copies
_dumps: dict[tuple[tuple[str, int], ...], tuple[str, str] | None] = {}
# False while a test that may not start a process runs (tests/unit's guard): it migrates for real and leaves the
# dump to the next test that may run pg_dump; a copy made earlier is still used.
dumps_allowed = True


def _server_dsn_and_schema(url: str) -> tuple[str, str | None]:
    """The plain ``postgresql://`` DSN of a gateway URL and the schema its ``?schema=`` names."""
    parts = urlsplit(url)
    schema = parse_qs(parts.query).get("schema", [None])[0]
    scheme = "postgresql" if parts.scheme.startswith("postgres") else parts.scheme
    return urlunsplit((scheme, parts.netloc, parts.path, "", "")), schema


async def _is_empty(conn: asyncpg.Connection, schema: str) -> bool:
    return not await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = $1)", schema)


def _dump(dsn: str, schema: str) -> str | None:
    """The schema as SQL a plain connection can run: no psql meta-commands, no CREATE SCHEMA, data as INSERTs."""
    if shutil.which("pg_dump") is None:
        return None
    done = subprocess.run(["pg_dump", "--no-owner", "--no-privileges", "--inserts", "--schema", schema, dsn],
                          capture_output=True, text=True)
    if done.returncode != 0:  # e.g. a pg_dump older than the server: every schema is migrated for real
        return None
    text = done.stdout
    kept = [line for line in text.splitlines()
            if not line.startswith("\\") and not line.startswith(f"CREATE SCHEMA {schema};")]
    return "\n".join(kept)


def wrap(real_migrate: Migrate) -> Migrate:
    """``migrate`` that fills an empty PostgreSQL schema from this process's copy of the same migration list."""

    async def migrate(db: Any, migrations: Iterable[Any]) -> list[Any]:
        migrations = list(migrations)
        if getattr(db, "dialect", None) != "postgresql" or os.environ.get(OFF_ENV, "").strip() == "1":
            return await real_migrate(db, migrations)
        dsn, schema = _server_dsn_and_schema(db.url)
        if schema is None:
            return await real_migrate(db, migrations)
        key = tuple((m.namespace, m.version) for m in migrations)
        conn = await asyncpg.connect(dsn)
        try:
            if not await _is_empty(conn, schema):
                return await real_migrate(db, migrations)
            if key not in _dumps:
                ran = await real_migrate(db, migrations)
                if dumps_allowed:
                    dumped = _dump(dsn, schema)
                    _dumps[key] = None if dumped is None else (schema, dumped)
                return ran
            copy = _dumps[key]
            if copy is None:
                return await real_migrate(db, migrations)
            source, sql = copy
            async with conn.transaction():
                await conn.execute(sql.replace(source, schema))
            return migrations
        finally:
            await conn.close()

    migrate.__wrapped__ = real_migrate  # type: ignore[attr-defined]
    return migrate


def install() -> None:
    """Wrap ``migrate`` where this process's gateways call it (the fixtures, the app's start-up, ``orbchain.api``)."""
    from ..core.infra import migrate as migrate_module
    from ..web import app as web_app
    from .. import api

    if hasattr(migrate_module.migrate, "__wrapped__"):
        return
    wrapped = wrap(migrate_module.migrate)
    for module in (migrate_module, web_app, api):
        module.migrate = wrapped  # type: ignore[attr-defined]
