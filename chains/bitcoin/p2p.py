"""A light P2P peer of the operator's own node: it hears announcements, it asks for nothing.

The gateway connects to the node's P2P port like any peer (as BTCPay's
NBXplorer does), completes the version/verack handshake with the coin's
network magic, answers pings, and turns ``inv`` (transactions, blocks) and
``headers`` announcements into ``heard("tx")`` / ``heard("block")``. It never
sends ``getdata``: the scan reads what changed over RPC. Works with every
Bitcoin Core fork, also those built without ZMQ.

Bitcoin Core delays transaction announcements to inbound peers by seconds
(trickling) unless the peer has the ``noban`` permission, so the node should
run with ``-whitelist=noban@<gateway address>`` (docs/bitcoin.md).

A malformed message (wrong magic, bad checksum, oversized, truncated), a
peer silent past a ping, or a closed socket ends :func:`listen` with
``ChainUnavailable``; the core reconnects with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from typing import Callable

from ...api import ChainUnavailable
from . import p2p_wire as wire

log = logging.getLogger(__name__)

HANDSHAKE_SECONDS = 10.0
IDLE_SECONDS = 60.0  # silent this long: we ping; silent again as long: the connection is dead
USER_AGENT = "/orbchain:push/"


class Peer:
    """One connection: framed reads and writes with this network's magic."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, magic: bytes) -> None:
        self.reader, self.writer, self.magic = reader, writer, magic

    async def send(self, command: str, payload: bytes = b"") -> None:
        self.writer.write(wire.frame(self.magic, command, payload))
        await self.writer.drain()

    async def receive(self) -> tuple[str, bytes]:
        header = wire.parse_header(self.magic, await self.reader.readexactly(wire.HEADER_SIZE))
        payload = await self.reader.readexactly(header.length)
        wire.check_payload(header, payload)
        return header.command, payload


async def handshake(peer: Peer, host: str, port: int) -> int:
    """Send our ``version``, answer theirs with ``verack``, wait for their ``verack``; returns their version."""
    await peer.send("version", wire.version_payload(host, port, secrets.randbits(64), int(time.time()), USER_AGENT))
    version: int | None = None
    while True:
        command, payload = await peer.receive()
        if version is None:
            if command != "version":
                raise wire.WireError(f"{command!r} before the handshake's version")
            version = wire.peer_version(payload)
            await peer.send("verack")
        elif command == "verack":
            return version
        # anything else before verack (wtxidrelay, sendaddrv2, ...) is allowed and ignored


async def follow(peer: Peer, heard: Callable[[str], None], idle_seconds: float = IDLE_SECONDS) -> None:
    """Read messages forever, calling ``heard`` for announcements and answering pings."""
    pinged = False
    while True:
        try:
            command, payload = await asyncio.wait_for(peer.receive(), idle_seconds)
        except TimeoutError:
            if pinged:
                raise wire.WireError(f"no answer to a ping within {idle_seconds:g} s") from None
            await peer.send("ping", secrets.randbits(64).to_bytes(8, "little"))
            pinged = True
            continue
        pinged = False
        if command == "ping":
            if len(payload) != 8:
                raise wire.WireError("ping without an 8-byte nonce")
            await peer.send("pong", payload)
        elif command == "inv":
            for kind in sorted(wire.inventory_kinds(payload)):
                heard(kind)
        elif command == "headers":
            if wire.header_count(payload):
                heard("block")
        elif command in ("version", "verack"):
            raise wire.WireError(f"a second {command!r}")


async def listen(host: str, port: int, magic: bytes, heard: Callable[[str], None], label: str, *,
                 handshake_seconds: float = HANDSHAKE_SECONDS, idle_seconds: float = IDLE_SECONDS) -> None:
    """Connect, handshake and follow until the connection ends; always raises ``ChainUnavailable``."""
    where = f"{label}: P2P peer {host}:{port}"
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), handshake_seconds)
    except (TimeoutError, OSError) as exc:
        raise ChainUnavailable(f"{where}: cannot connect ({exc or type(exc).__name__})") from None
    peer = Peer(reader, writer, magic)
    try:
        version = await asyncio.wait_for(handshake(peer, host, port), handshake_seconds)
        log.info("%s: connected (protocol %d)", where, version)
        await follow(peer, heard, idle_seconds)
    except wire.WireError as exc:
        raise ChainUnavailable(f"{where} misbehaved, disconnected: {exc}") from None
    except TimeoutError:
        raise ChainUnavailable(f"{where}: no handshake within {handshake_seconds:g} s") from None
    except (OSError, asyncio.IncompleteReadError) as exc:
        raise ChainUnavailable(f"{where}: connection lost ({exc or type(exc).__name__})") from None
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), 1.0)
