"""Fixtures for a gateway under test: a config, a migrated gateway, a full app client, a merchant.

``merchant_shop`` is the one-line start: a running app (scheduler off) with
a signed-up merchant. The building blocks stay available for tests that
need a special config (``make_config``) or plugin set (``make_client``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import pytest
import pytest_asyncio

from .api import Merchant, signup


@pytest.fixture
def make_config(tmp_path: Path, db_url: str) -> Callable[..., Any]:
    """``make_config(server={...}, webhooks={...})``: a test config on this test's database."""
    from ..core.infra.config import load_config

    def make(**sections: dict[str, Any]) -> Any:
        base = load_config(None, environ={}).with_overrides(
            server={"data_dir": str(tmp_path / "var"), "environment": "development"},
            database={"url": db_url},
            webhooks={"allow_private_urls": True},
        )
        return base.with_overrides(**sections) if sections else base

    return make


@pytest.fixture
def config(make_config: Callable[..., Any]) -> Any:
    return make_config()


@pytest_asyncio.fixture
async def gateway(config: Any) -> AsyncIterator[Any]:
    """A migrated gateway without HTTP, for service-level tests."""
    from ..core.startup import build_gateway
    from ..core.infra.migrate import migrate
    from ..core.contract.plugins import get_plugin_manager
    from ..core.keys.secrets import load_secrets

    gw = build_gateway(config, get_plugin_manager(blocked=config.plugins.blocked))
    await gw.db.connect()
    await migrate(gw.db, gw.migrations)
    gw.secrets = load_secrets(config)
    try:
        yield gw
    finally:
        await gw.db.disconnect()


@pytest.fixture
def make_client(aiohttp_client: Callable) -> Callable:
    """``await make_client(config)``: a test client of a full app."""
    from ..web.app import create_app

    async def make(cfg: Any, plugin_manager: Any = None) -> Any:
        return await aiohttp_client(create_app(cfg, plugin_manager))

    return make


@pytest_asyncio.fixture
async def client(make_client: Callable, config: Any) -> Any:
    return await make_client(config)


def merge_sections(*layers: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Config sections merged table by table (a later layer's keys win inside a table)."""
    merged: dict[str, dict[str, Any]] = {}
    for layer in layers:
        for table, values in layer.items():
            merged[table] = {**merged.get(table, {}), **values}
    return merged


@dataclass
class Shop:
    """A running app with one merchant: the HTTP client, the merchant and the gateway behind them."""

    client: Any
    merchant: Merchant
    gateway: Any


async def open_shop(make_config: Callable[..., Any], make_client: Callable, *, blocked: tuple[str, ...] = (),
                    email: str = "merchant@example.com", **sections: dict[str, Any]) -> Shop:
    """An app on this test's database (scheduler off unless ``sections`` say otherwise) and a merchant."""
    from ..core.contract.plugins import get_plugin_manager
    from ..web.keys import GATEWAY

    config = make_config(**merge_sections({"scheduler": {"enabled": False}}, sections))
    client = await make_client(config, get_plugin_manager(blocked=list(blocked)) if blocked else None)
    merchant = await signup(client, email)
    return Shop(client, merchant, client.app[GATEWAY])


@pytest_asyncio.fixture
async def merchant_shop(make_config: Callable[..., Any], make_client: Callable) -> Shop:
    """A default app (devnet included, scheduler off) with a signed-up merchant."""
    return await open_shop(make_config, make_client)
