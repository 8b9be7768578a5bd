"""monerod's ZMQ publisher (``--zmq-pub tcp://...``) heard as the adapter's push.

monerod publishes one frame per event, ``<topic>:<json>``. Two topics are
followed: ``json-minimal-chain_main`` (new main-chain blocks: first height,
previous id, ids) wakes the scan with ``heard("block")``, and
``json-minimal-txpool_add`` (transactions entering the pool) with
``heard("tx")``, so a payment shows Paying as soon as the node has it. Only
the topic is read: the scan learns everything else over RPC as before (the
minimal bodies carry no amounts or addresses; only the view-key wallet can
tell what is ours).

Why a socket monitor: a ZMQ subscriber reconnects by itself and never says
its publisher went away, so a restarted monerod would leave ``push``
waiting forever on a dead connection while missing nothing it could
report. The monitor turns the disconnect into ``ChainUnavailable`` (the
contract of ``ChainAdapter.push``), and ZMTP heartbeats notice a publisher
that vanished without closing TCP.
"""

from __future__ import annotations

import asyncio
from typing import Callable

import zmq
import zmq.asyncio
from zmq.utils.monitor import parse_monitor_message

from ...api import ChainUnavailable
from ..zmq_messages import messages

TOPICS = {b"json-minimal-chain_main": "block", b"json-minimal-txpool_add": "tx"}


def is_zmq_url(value: object) -> bool:
    """Whether a setting names a ZMQ endpoint monerod can publish on (``tcp://host:port`` or ``ipc://path``)."""
    return isinstance(value, str) and (
        (value.startswith("tcp://") and ":" in value[len("tcp://"):]) or
        (value.startswith("ipc://") and len(value) > len("ipc://")))


async def follow(url: str, heard: Callable[[str], None], *, timeout: float = 10.0, heartbeat: float = 30.0) -> None:
    """Call ``heard`` for every block and pool transaction monerod publishes; never returns normally.

    Raises ``ChainUnavailable`` when the publisher cannot be reached within
    ``timeout`` or the connection is lost. Cancellation closes the sockets.
    """
    context = zmq.asyncio.Context.instance()
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.HEARTBEAT_IVL, int(heartbeat * 1000))
    sub.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(heartbeat * 2000))
    monitor = sub.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
    try:
        for topic in TOPICS:
            sub.setsockopt(zmq.SUBSCRIBE, topic)
        try:
            sub.connect(url)
        except zmq.ZMQError as exc:
            raise ChainUnavailable(f"monerod ZMQ publisher: {exc}") from None
        try:
            await asyncio.wait_for(_until_event(monitor, zmq.EVENT_CONNECTED), timeout)
        except TimeoutError:
            raise ChainUnavailable(f"monerod ZMQ publisher not reachable within {timeout} s") from None
        async for message in messages(sub, monitor, "monerod"):
            what = TOPICS.get(message[0].split(b":", 1)[0])
            if what is not None:
                heard(what)
    finally:
        sub.disable_monitor()
        monitor.close(linger=0)
        sub.close(linger=0)


async def _until_event(monitor: zmq.asyncio.Socket, wanted: int) -> None:
    while parse_monitor_message(await monitor.recv_multipart())["event"] != wanted:
        pass
