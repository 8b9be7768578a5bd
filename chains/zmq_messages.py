"""A ZMQ SUB socket's messages until its publisher goes away (Bitcoin Core's and monerod's notifications).

A ZMQ subscriber reconnects by itself and never says its publisher left, so
a restarted node would leave a push stream waiting on a dead connection.
Both chains that follow ZMQ watch the socket with a monitor; this turns the
monitor's disconnect event into ``ChainUnavailable``, the end of a stream in
``ChainAdapter.push``'s contract, so the core's backoff and logging see it.
"""

from __future__ import annotations

from typing import AsyncIterator

import zmq
import zmq.asyncio
from zmq.utils.monitor import parse_monitor_message

from ..api import ChainUnavailable


async def messages(socket: zmq.asyncio.Socket, monitor: zmq.asyncio.Socket, label: str) -> AsyncIterator[list[bytes]]:
    """Each multipart message ``socket`` receives; ``ChainUnavailable`` once ``monitor`` reports a disconnect."""
    poller = zmq.asyncio.Poller()
    poller.register(socket, zmq.POLLIN)
    poller.register(monitor, zmq.POLLIN)
    while True:
        ready = dict(await poller.poll())
        if monitor in ready:
            event = parse_monitor_message(await monitor.recv_multipart())
            if event["event"] == zmq.EVENT_DISCONNECTED:
                endpoint = event["endpoint"]
                raise ChainUnavailable(f"{label}: ZMQ publisher {endpoint!r} disconnected")
        if socket in ready:
            yield await socket.recv_multipart()
