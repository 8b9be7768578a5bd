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
