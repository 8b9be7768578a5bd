"""Migrations: versioned, idempotent, plugin-owned, refused at start in production."""

from __future__ import annotations

import pytest

from orbchain.core.infra.config import ConfigError
from orbchain.core.startup import build_gateway
from orbchain.core.infra.migrate import Migration, MigrationError, MigrationRegistry, applied, migrate, pending
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.web.app import create_app


class WidgetPlugin:
    PLUGIN_NAME = "widgets"

    @hookimpl
    def register_migrations(self, registry):
        registry.add(Migration("widgets", 1, "create", lambda d: ["CREATE TABLE widgets (id TEXT PRIMARY KEY, price {amount})"]))


async def test_plugin_migrations_apply_once(config):
    gateway = build_gateway(config, get_plugin_manager([WidgetPlugin()]))
    await gateway.db.connect()
    try:
        first = await migrate(gateway.db, gateway.migrations)
        assert [(m.namespace, m.version) for m in first][-1] == ("widgets", 1)
        assert first[0].namespace == "core"
        assert await migrate(gateway.db, gateway.migrations) == []
        assert ("widgets", 1) in await applied(gateway.db)
        await gateway.db.execute("INSERT INTO widgets (id, price) VALUES ('w', :p)", {"p": gateway.db.amount_param(10**40)})
        assert gateway.db.to_int(await gateway.db.fetch_val("SELECT price FROM widgets")) == 10**40
    finally:
        await gateway.db.disconnect()


def test_duplicate_versions_are_refused():
    registry = MigrationRegistry()
    registry.add(Migration("x", 1, "a", lambda d: []))
    with pytest.raises(MigrationError):
        registry.add(Migration("x", 1, "b", lambda d: []))


async def test_failed_migration_leaves_nothing_behind(config):
    gateway = build_gateway(config)
    await gateway.db.connect()
    try:
        await migrate(gateway.db, gateway.migrations)
        bad = Migration("bad", 1, "half", lambda d: ["CREATE TABLE half_done (id INTEGER)", "THIS IS NOT SQL"])
        with pytest.raises(Exception):  # noqa: B017 - each database raises its own error type
            await migrate(gateway.db, [bad])
        assert ("bad", 1) not in await applied(gateway.db)
        assert len(await pending(gateway.db, [bad])) == 1
    finally:
        await gateway.db.disconnect()


async def test_production_refuses_to_start_with_pending_migrations(make_config, aiohttp_client):
    cfg = make_config(server={"environment": "production"}, secrets={
        "jwt_secret": "x" * 40, "seed_mnemonic": "00" * 32,
        "receipt_signing_key": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="})
    with pytest.raises(ConfigError, match="orbchain migrate"):
        await aiohttp_client(create_app(cfg))
