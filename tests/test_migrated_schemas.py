"""A schema filled from the copy of a migrated one (orbchain/testing/migrated_schemas.py) is that schema.

The suite's PostgreSQL tests are built on such copies, so this is what lets them stand for a migrated database:
every column, default, constraint, index, trigger, function, sequence value and seeded row the real ``migrate``
makes is there, under the test's own schema name, and the copy's triggers act as the original's.
"""

from __future__ import annotations

import secrets

import asyncpg
import pytest

from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.gateway import collect_migrations
from orbchain.core.infra import migrate as migrate_module
from orbchain.core.infra.db import Database
from orbchain.testing import migrated_schemas

pytestmark = pytest.mark.postgresql_only("the copy is of a PostgreSQL schema; SQLite migrates for real")

CATALOG = {
    "columns": "SELECT table_name, column_name, data_type, column_default, is_nullable FROM information_schema.columns"
               " WHERE table_schema = $1",
    "constraints": "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(c.oid) FROM pg_constraint c"
                   " JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1",
    "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = $1",
    "triggers": "SELECT event_object_table, trigger_name, event_manipulation, action_timing, action_statement"
                " FROM information_schema.triggers WHERE trigger_schema = $1",
    "functions": "SELECT proname, prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
                 " WHERE n.nspname = $1",
    "sequences": "SELECT sequencename, last_value FROM pg_sequences WHERE schemaname = $1",
}


async def catalog(conn: asyncpg.Connection, schema: str) -> dict[str, object]:
    """Everything a migration makes, with the schema's own name written as ``S`` so two schemas compare."""
    found: dict[str, object] = {}
    for part, sql in CATALOG.items():
        rows = await conn.fetch(sql, schema)
        found[part] = sorted(tuple(str(v).replace(schema, "S") for v in row.values()) for row in rows)
    tables = [r["tablename"] for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1", schema)]
    found["rows"] = {t: sorted(tuple(map(str, r.values())) for r in await conn.fetch(f'SELECT * FROM "{schema}"."{t}"'))
                     for t in tables if t != "schema_migrations"}
    found["migrations"] = sorted(tuple(r.values()) for r in await conn.fetch(
        f'SELECT namespace, version, name FROM "{schema}".schema_migrations'))
    return found


async def test_a_copied_schema_is_the_migrated_one_and_its_triggers_act(pg_run_database, monkeypatch):
    monkeypatch.delenv(migrated_schemas.OFF_ENV, raising=False)
    migrations = list(collect_migrations(get_plugin_manager()))
    wrapped = migrate_module.migrate
    real = wrapped.__wrapped__  # type: ignore[attr-defined]
    conn = await asyncpg.connect(pg_run_database)
    names = [f"t_{secrets.token_hex(6)}" for _ in range(3)]
    databases: list[Database] = []
    try:
        for name in names:
            await conn.execute(f'CREATE SCHEMA "{name}"')
        url = pg_run_database.replace("postgresql://", "postgresql+asyncpg://", 1)
        for name in names:
            databases.append(Database(f"{url}?schema={name}"))
            await databases[-1].connect()
        await real(databases[0], migrations)  # the real thing, never a copy
        await wrapped(databases[1], migrations)  # the real thing and a dump, or a copy of an earlier test's
        await wrapped(databases[2], migrations)  # a copy, surely
        key = tuple((m.namespace, m.version) for m in migrations)
        assert migrated_schemas._dumps.get(key) is not None, "no copy was made: pg_dump missing or refused"
        real_catalog = await catalog(conn, names[0])
        assert real_catalog["migrations"], "nothing was migrated"
        assert await catalog(conn, names[2]) == real_catalog
        # The copy's count triggers write to the copy's own tables (kept counts, issue 48), not the dump's source.
        for db in (databases[0], databases[2]):
            await db.execute("INSERT INTO merchants (id, account_id, email, password_hash, key_account,"
                             " accepted_coins, confirmations, created_at, updated_at) VALUES ('mer_c', 'ORB-c',"
                             " 'c@example.com', 'x', 1, '[]', '{}', 1, 1)")
            await db.execute("INSERT INTO security_events (merchant_id, kind, details, client_ip, user_agent,"
                             " request_id, alert, actor, created_at) VALUES ('mer_c', 'sign_in', '{}', '', '', '',"
                             " :f, 'holder', 1)", {"f": False})
            assert await db.fetch_val("SELECT count(*) FROM kept_count_deltas") >= 1
        assert await catalog(conn, names[2]) == await catalog(conn, names[0])
        # A schema that is not empty is migrated for real (a test that migrates in steps).
        assert await wrapped(databases[2], migrations) == []
    finally:
        for db in databases:
            await db.disconnect()
        for name in names:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        await conn.close()
