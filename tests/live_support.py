"""Reading a live page's event stream (``GET /pay/{id}/events``) in tests, every wait bounded."""

from __future__ import annotations

import asyncio
import json
from typing import Any

READ_TIMEOUT = 20.0


class EventStream:
    """The events and comments of one open ``text/event-stream`` response, in order."""

    def __init__(self, response: Any) -> None:
        self.response = response

    async def next(self, timeout: float = READ_TIMEOUT) -> dict[str, Any] | None:
        """The next event (``{"event", "id", "data"}``, data parsed), a comment as ``{"comment"}``,
        ``retry`` lines as ``{"retry"}``; None when the server ended the stream."""
        fields: dict[str, Any] = {}
        while True:
            line = await asyncio.wait_for(self.response.content.readline(), timeout)
            if not line:
                return None
            text = line.decode().rstrip("\n")
            if text:
                if text.startswith(":"):
                    fields["comment"] = text[1:].strip()
                else:
                    name, _, value = text.partition(": ")
                    fields[name] = json.loads(value) if name == "data" else value
                continue
            if fields:
                return fields

    async def event(self, timeout: float = READ_TIMEOUT) -> dict[str, Any] | None:
        """The next ``payment`` event's data, skipping heartbeats; None once the stream ended."""
        while True:
            item = await self.next(timeout)
            if item is None:
                return None
            if item.get("event") == "payment":
                return item["data"]

    async def until(self, status: str, timeout: float = READ_TIMEOUT) -> dict[str, Any]:
        """Events until one shows ``status``."""
        while True:
            state = await self.event(timeout)
            assert state is not None, f"the stream ended before showing {status}"
            if state["status"] == status:
                return state


async def open_stream(client: Any, track_id: str, **kwargs: Any) -> EventStream:
    response = await client.get(f"/pay/{track_id}/events", **kwargs)
    assert response.status == 200, await response.text()
    return EventStream(response)


class RawStream:
    """A stream request sent over its own socket (a chosen source address), as a browser's EventSource would."""

    def __init__(self, status: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: bytes) -> None:
        self.status = status
        self.reader = reader
        self.writer = writer
        self.body = body  # a refusal's envelope (empty for a 200: the stream is read from ``reader``)

    def close(self) -> None:
        self.writer.close()


async def raw_stream(port: int, path: str, source: str = "127.0.0.1", headers: str = "",
                     timeout: float = READ_TIMEOUT) -> RawStream:
    """``GET path`` from ``source`` (any 127/8 address is this machine's); the answer's status, and for a
    refusal its body (then the socket is closed)."""
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0)), timeout)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: gateway\r\nAccept: text/event-stream\r\n{headers}\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
    status = int(head.split(b" ", 2)[1])
    if status == 200:
        return RawStream(status, reader, writer, b"")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    body = await asyncio.wait_for(reader.readexactly(length), timeout)
    writer.close()
    return RawStream(status, reader, writer, body)
