"""Versioned schema migrations for the core and for every plugin.

A migration is a namespaced, numbered list of SQL statements produced for a
dialect. The core's live in the top-level ``migrations/`` package as modules
named ``m0001_<what>.py`` exposing ``up(dialect) -> list[str]``; a plugin
contributes its own through the ``register_migrations`` hook, either as
``Migration`` objects or a whole package of such modules.

SQL is written once with placeholders that expand per dialect (``{amount}``
is ``NUMERIC(78,0)`` on PostgreSQL and ``TEXT`` on SQLite), so the two schemas
cannot drift apart.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import re
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

from .db import Database

log = logging.getLogger(__name__)

_MODULE_NAME = re.compile(r"^m(\d{4})_(\w+)$")

SQL_TYPES = {
    "sqlite": {
        "amount": "TEXT",
        "ts": "INTEGER",
        "bigint": "INTEGER",
        "bool": "BOOLEAN",
        "json": "TEXT",
        "id_pk": "INTEGER PRIMARY KEY AUTOINCREMENT",
    },
    "postgresql": {
        "amount": "NUMERIC(78,0)",
        "ts": "BIGINT",
        "bigint": "BIGINT",
        "bool": "BOOLEAN",
        "json": "TEXT",
        "id_pk": "BIGSERIAL PRIMARY KEY",
    },
}


def expand(sql: str, dialect: str) -> str:
    """Fill ``{amount}``, ``{ts}``, ``{bigint}``, ``{bool}``, ``{json}``, ``{id_pk}``."""
    return sql.format(**SQL_TYPES[dialect])


_TABLE = re.compile(r"^[a-z][a-z0-9_]{0,40}$")


def append_only(table: str, refusal: str, dialect: str) -> list[str]:
    """Statements making ``table`` append-only in the database itself: UPDATE and DELETE refused.

    On PostgreSQL a trigger function ``<table>_refuse`` raising ``refusal``,
    row triggers before UPDATE or DELETE (``<table>_append_only``) and a
    statement trigger before TRUNCATE (``<table>_no_truncate``: TRUNCATE
    skips row triggers); on SQLite ``<table>_no_update`` and
    ``<table>_no_delete`` aborting with ``refusal``. Neither a bug nor a
    stray query can rewrite history; only dropping the table (an operator's
    deliberate act) removes rows. Put them in the migration after the
    ``CREATE TABLE``.
    """
    if not _TABLE.match(table) or "'" in refusal or "$" in refusal:
        raise ValueError("append_only takes a plain table name and a refusal without quotes")
    if dialect == "postgresql":
        return [
            f"""CREATE FUNCTION {table}_refuse() RETURNS trigger AS $$
            BEGIN RAISE EXCEPTION '{refusal}'; END; $$ LANGUAGE plpgsql""",
            f"""CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION {table}_refuse()""",
            f"""CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
            FOR EACH STATEMENT EXECUTE FUNCTION {table}_refuse()""",
        ]
    return [
        f"""CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
            BEGIN SELECT RAISE(ABORT, '{refusal}'); END""",
        f"""CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
            BEGIN SELECT RAISE(ABORT, '{refusal}'); END""",
    ]


@dataclass(frozen=True)
class Migration:
    """One schema step. ``up(dialect)`` returns the statements to run, in order."""

    namespace: str
    version: int
    name: str
    up: Callable[[str], Sequence[str]]


MIGRATION_LOCK = 7_302_023_001  # the session advisory lock one migrating process holds


class MigrationError(RuntimeError):
    pass


class MigrationRegistry:
    """Collects migrations from the core and plugins; duplicates fail loudly."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, int], Migration] = {}

    def add(self, migration: Migration) -> None:
        key = (migration.namespace, migration.version)
        if key in self._items:
            raise MigrationError(f"duplicate migration {migration.namespace}:{migration.version:04d}")
        self._items[key] = migration

    def add_package(self, namespace: str, package: str) -> None:
        """Register every ``mNNNN_name`` module of ``package`` under ``namespace``."""
        for migration in discover(namespace, package):
            self.add(migration)

    def ordered(self) -> list[Migration]:
        # Core first, then plugins by name: plugin tables may reference core ones.
        return sorted(self._items.values(), key=lambda m: (m.namespace != "core", m.namespace, m.version))

    def __iter__(self) -> Iterator[Migration]:
        return iter(self.ordered())


def discover(namespace: str, package: str) -> list[Migration]:
    mod = importlib.import_module(package)
    found = []
    for info in pkgutil.iter_modules(mod.__path__):
        match = _MODULE_NAME.match(info.name)
        if not match:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        found.append(Migration(namespace, int(match.group(1)), match.group(2), module.up))
    return sorted(found, key=lambda m: m.version)


async def _ensure_table(db: Database) -> None:
    await db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " namespace TEXT NOT NULL, version INTEGER NOT NULL, name TEXT NOT NULL,"
        " applied_at BIGINT NOT NULL, PRIMARY KEY (namespace, version))"
    )


async def applied(db: Database) -> set[tuple[str, int]]:
    await _ensure_table(db)
    rows = await db.fetch_all("SELECT namespace, version FROM schema_migrations")
    return {(r["namespace"], r["version"]) for r in rows}


async def migrate(db: Database, migrations: Iterable[Migration]) -> list[Migration]:
    """Apply every pending migration, each in its own transaction.

    Safe to run from several processes at once on PostgreSQL: one holds an
    advisory lock while the others wait, then find nothing left to do.
    """
    ran: list[Migration] = []
    async with db.waited_lock(MIGRATION_LOCK), db.connection():
        done = await applied(db)
        for migration in migrations:
            if (migration.namespace, migration.version) in done:
                continue
            async with db.transaction():
                for statement in migration.up(db.dialect):
                    await db.execute(expand(statement, db.dialect))
                await db.execute(
                    "INSERT INTO schema_migrations (namespace, version, name, applied_at)"
                    " VALUES (:ns, :v, :n, :t)",
                    {"ns": migration.namespace, "v": migration.version, "n": migration.name, "t": int(time.time())},
                )
            log.info("applied migration %s:%04d_%s", migration.namespace, migration.version, migration.name)
            ran.append(migration)
    return ran


async def pending(db: Database, migrations: Iterable[Migration]) -> list[Migration]:
    done = await applied(db)
    return [m for m in migrations if (m.namespace, m.version) not in done]
