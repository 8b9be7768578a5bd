"""``push`` for the bitcoin family: the configured notification streams of one node, run together.

The P2P peer (``p2p.py``) and the ZMQ subscription (``zmq_feed.py``) both
only wake the scan. When several are configured they run side by side and
the first to end ends them all: they come from one node, and the core's
reconnect (with backoff) starts them afresh together.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

from ...api import ChainUnavailable
from . import p2p, p2p_wire, zmq_feed
from .settings import CoinSettings


def streams(settings: CoinSettings, heard: Callable[[str], None], label: str) -> list[Awaitable[None]]:
    """One coroutine per configured stream."""
    found: list[Awaitable[None]] = []
    if settings.p2p is not None:
        host, port = settings.p2p
        magic = p2p_wire.MAGIC[(settings.spec.symbol, settings.network)]
        found.append(p2p.listen(host, port, magic, heard, label))
    if settings.zmq:
        found.append(zmq_feed.listen(settings.zmq, heard, label))
    return found


async def follow(settings: CoinSettings, heard: Callable[[str], None], label: str) -> None:
    """Run every configured stream until one ends; raises ``ChainUnavailable`` saying which and why."""
    tasks = [asyncio.ensure_future(stream) for stream in streams(settings, heard, label)]
    if not tasks:
        raise ChainUnavailable(f"{label}: no notification stream configured (p2p, zmq_rawtx, zmq_hashblock)")
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    error = next(iter(done)).exception()
    if error is not None:
        raise error
    raise ChainUnavailable(f"{label}: notification stream ended")
