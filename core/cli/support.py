"""What every command of the ``orbchain`` CLI shares: its config and a database for the run.

A module of its own so command modules (``cli.py``, ``ops_cli.py``) use it
without importing each other.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Awaitable, Callable

from ..infra.config import Config, default_config_path, load_config
from ..gateway import Gateway


def config_from_args(args: argparse.Namespace) -> Config:
    """The config a command runs with: the file, the environment, then ``--host``/``--port``."""
    path = args.config or default_config_path()
    config = load_config(path)
    overrides = {}
    if getattr(args, "host", None):
        overrides["host"] = args.host
    if getattr(args, "port", None):
        overrides["port"] = args.port
    return config.with_overrides(server=overrides) if overrides else config


def close_chains(gateway: Gateway) -> None:
    """Close the adapters of a command that ran no event loop of its own (or already closed its loop)."""
    asyncio.run(gateway.close_chains())


async def with_db(gateway: Gateway, work: Callable[[Gateway], Awaitable[int]]) -> int:
    """Connect, run ``work``, then close the chain adapters and the database whatever happened."""
    await gateway.db.connect()
    try:
        return await work(gateway)
    finally:
        await gateway.close_chains()
        await gateway.db.disconnect()

