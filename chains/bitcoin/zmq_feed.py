"""Bitcoin Core's ZMQ notifications: ``rawtx`` and ``hashblock`` over a SUB socket.

For nodes built with ZMQ (``-zmqpubrawtx=tcp://...``, ``-zmqpubhashblock=...``).
Each notification is three frames: the topic, the body (the serialized
transaction, or the 32-byte block hash) and a 4-byte little-endian sequence
number counted per topic by the publisher. A gap in the sequence means
notifications were lost (a high-water mark hit, a reconnect): it is logged,
and the poll catches up. ZMQ reconnects by itself, silently; a socket
monitor makes a lost connection end :func:`listen` with ``ChainUnavailable``
so the core's backoff and logging see it like any other stream.
"""

from __future__ import annotations

import logging
import struct
from typing import Callable, Mapping

import zmq
import zmq.asyncio

from ...api import ChainUnavailable
from ..zmq_messages import messages

log = logging.getLogger(__name__)

TOPICS: Mapping[str, str] = {"rawtx": "tx", "hashblock": "block"}  # ZMQ topic -> what heard() is told
MAX_RAWTX = 4_000_000  # a transaction cannot be larger than a block's weight limit
RECEIVE_HWM = 10_000


class MalformedNotification(ChainUnavailable):
    """A message that is not in Bitcoin Core's (topic, body, sequence) format."""


class Sequences:
    """The last sequence number per topic; reports how many were skipped."""

    def __init__(self) -> None:
        self.last: dict[str, int] = {}

    def gap(self, topic: str, sequence: int) -> int:
        previous = self.last.get(topic)
        self.last[topic] = sequence
        if previous is None:
            return 0
        return (sequence - previous - 1) % 2**32


def parse(frames: list[bytes]) -> tuple[str, int]:
    """(topic, sequence) of one notification, its body checked for the topic's shape."""
    if len(frames) != 3:
        raise MalformedNotification(f"ZMQ notification of {len(frames)} frames, expected 3")
    raw_topic, body, raw_sequence = frames
    topic = raw_topic.decode("ascii", "replace")
    if topic not in TOPICS:
        raise MalformedNotification(f"ZMQ notification on unexpected topic {topic!r}")
    if len(raw_sequence) != 4:
        raise MalformedNotification(f"ZMQ {topic}: sequence of {len(raw_sequence)} bytes, expected 4")
    if topic == "hashblock" and len(body) != 32:
        raise MalformedNotification(f"ZMQ hashblock: body of {len(body)} bytes, expected 32")
    if topic == "rawtx" and not 0 < len(body) <= MAX_RAWTX:
        raise MalformedNotification(f"ZMQ rawtx: body of {len(body)} bytes")
    return topic, struct.unpack("<I", raw_sequence)[0]


def _subscriptions(endpoints: Mapping[str, str]) -> dict[str, list[str]]:
    """URL -> topics: one connection per distinct endpoint (a node may publish both topics on one)."""
    urls: dict[str, list[str]] = {}
    for topic, url in endpoints.items():
        urls.setdefault(url, []).append(topic)
    return urls


async def listen(endpoints: Mapping[str, str], heard: Callable[[str], None], label: str,
                 context: zmq.asyncio.Context | None = None) -> None:
    """Subscribe to ``endpoints`` ({"rawtx": url, "hashblock": url}, either optional) until a connection drops."""
    context = context or zmq.asyncio.Context.instance()
    socket = context.socket(zmq.SUB)
    socket.setsockopt(zmq.RCVHWM, RECEIVE_HWM)
    socket.setsockopt(zmq.LINGER, 0)
    monitor = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
    sequences = Sequences()
    try:
        for url, topics in _subscriptions(endpoints).items():
            for topic in topics:
                socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
            socket.connect(url)
        async for message in messages(socket, monitor, label):
            topic, sequence = parse(message)
            skipped = sequences.gap(topic, sequence)
            if skipped:
                log.warning("%s: %d ZMQ %s notification(s) missed (sequence %d); the poll catches up",
                            label, skipped, topic, sequence)
            heard(TOPICS[topic])
    except zmq.ZMQError as exc:
        raise ChainUnavailable(f"{label}: ZMQ: {exc}") from None
    finally:
        socket.disable_monitor()
        monitor.close(linger=0)
        socket.close(linger=0)
