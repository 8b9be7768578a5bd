"""A scratch PostgreSQL database, migrated, with one signed-up merchant: what the history benches fill.

Shared by bench_history.py and bench_analytics.py: each creates a database of its own (dropped after, even
on failure), builds the app on it with the rate limits out of the way, and fills its tables in SQL.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from orbchain.core.accounts import merchants as accounts
from orbchain.core.infra.config import load_config
from orbchain.core.infra.migrate import migrate
from orbchain.core.keys.secrets import load_secrets
from orbchain.web.app import create_app
from orbchain.web.keys import GATEWAY

DEFAULT_PG_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
UNLIMITED = {"read_per_minute": 10_000_000, "write_per_minute": 10_000_000}


@dataclass(frozen=True)
class ScratchShop:
    app: Any
    gateway: Any
    url: str  # the scratch database, for filling it with asyncpg
    signed: Any  # the merchant's sign-up: merchant_id, token, api_keys


def with_db(dsn: str, name: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


@asynccontextmanager
async def scratch_shop(prefix: str) -> AsyncIterator[ScratchShop]:
    """The app on a new database ``<prefix>_<random>`` (on ``ORBCHAIN_TEST_PG_DSN``'s server), migrated, with
    the merchant ``busy@example.com`` signed up; the database is dropped on the way out."""
    admin_dsn = os.environ.get("ORBCHAIN_TEST_PG_DSN") or DEFAULT_PG_DSN
    name = f"{prefix}_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(admin_dsn)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = with_db(admin_dsn, name)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = load_config(None, environ={}).with_overrides(
                server={"data_dir": str(Path(tmp) / "var"), "environment": "development"},
                database={"url": url}, scheduler={"enabled": False}, rate_limits=UNLIMITED)
            app = create_app(config)
            gateway = app[GATEWAY]
            await gateway.db.connect()
            await migrate(gateway.db, gateway.migrations)
            gateway.secrets = load_secrets(config)
            signed = await accounts.sign_up(gateway, "busy@example.com", "bench-pass-1234")
            await gateway.db.disconnect()
            yield ScratchShop(app, gateway, url, signed)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
