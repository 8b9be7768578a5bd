"""Connections that hold a file without asking anything (issue 42 item 6), over raw sockets.

Before, an idle partial request line stayed open for 100 s and 1,000
connections trickling their headers were held for 90 s; an idle kept-alive
connection lived an hour. Served here as ``orbchain serve`` serves
(``GatewayAppRunner``) with one-second deadlines: what is asserted is that
the connection was answered 408 and closed, and counted, not how fast.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from orbchain.web.app import create_app
from orbchain.web.keys import GATEWAY

from .support import GatewayTestServer, api, signup

HANG = 20  # a bound that only catches a connection left open for good
HEALTH = b"GET /health HTTP/1.1\r\nHost: gateway\r\n\r\n"


@pytest.fixture
def served(make_config, aiohttp_client):
    """``served(**server_keys)``: the app behind ``GatewayAppRunner`` on a free port, one-second deadlines."""

    async def serve(**server):
        keys = {"header_timeout_seconds": 1, "body_timeout_seconds": 1, "keepalive_seconds": 1, **server}
        client = await aiohttp_client(GatewayTestServer(create_app(make_config(scheduler={"enabled": False},
                                                                               server=keys))))
        return client.server

    return serve


async def connect(server, source: str = "127.0.0.1") -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(server.host, server.port, local_addr=(source, 0))


async def everything_until_closed(reader: asyncio.StreamReader) -> bytes:
    """What the server sent until it closed the connection (a hang fails the test)."""
    return await asyncio.wait_for(reader.read(), HANG)


def closed_for(server, reason: str) -> float:
    return server.app[GATEWAY].metrics.connections_closed.labels(reason)._value.get()


def answer_of(raw: bytes) -> tuple[int, dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


async def test_an_idle_partial_request_line_is_answered_408_and_closed(served, caplog):
    caplog.set_level(logging.INFO, logger="orbchain.web.connection_guard")
    server = await served()
    reader, writer = await connect(server)
    writer.write(b"GET /hea")  # and nothing more
    status, body = answer_of(await everything_until_closed(reader))
    assert status == 408 and body["status"] == 408 and body["error"]["type"] == "invalid_request"
    assert body["data"] is None and "request head" in body["message"]
    assert closed_for(server, "header_timeout") == 1
    assert "sent no complete request head within 1 s" in caplog.text
    writer.close()


async def test_a_connection_that_sends_nothing_is_closed_too(served):
    server = await served()
    reader, writer = await connect(server)
    assert (await everything_until_closed(reader)).startswith(b"HTTP/1.1 408 ")
    writer.close()


async def test_headers_trickled_a_byte_at_a_time_do_not_keep_the_connection(served):
    server = await served()
    reader, writer = await connect(server)
    request = b"GET /health HTTP/1.1\r\nHost: gateway\r\nX-Slow: " + b"a" * 200

    async def trickle() -> None:
        try:
            for byte in request:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.1)  # active all along, never complete
        except ConnectionError:
            pass

    trickling = asyncio.create_task(trickle())
    answer = await everything_until_closed(reader)
    assert answer.startswith(b"HTTP/1.1 408 ") and not trickling.done()  # closed while it was still sending
    trickling.cancel()
    writer.close()


async def test_a_body_that_does_not_arrive_in_time_gets_408_through_the_envelope(served):
    server = await served()
    reader, writer = await connect(server)
    writer.write(b"POST /dashboard/auth/login HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n{\"email\":")  # 9 of the 100 bytes announced
    status, body = answer_of(await everything_until_closed(reader))
    assert status == 408 and body["error"]["type"] == "invalid_request" and "body" in body["message"]
    assert closed_for(server, "body_timeout") == 1
    writer.close()


async def test_a_payer_form_whose_body_is_late_gets_the_408_page_in_the_payers_language(make_config, aiohttp_client):
    client = await aiohttp_client(GatewayTestServer(create_app(make_config(
        scheduler={"enabled": False}, server={"body_timeout_seconds": 1}))))
    merchant = await signup(client)
    status, body = await api(client, "GET", "/dashboard/account", merchant.jwt)
    assert status == 200, body
    reader, writer = await connect(client.server)
    writer.write(f"POST /tip/{body['data']['account']['account_id']} HTTP/1.1\r\nHost: gateway\r\n"
                 "Accept-Language: de\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                 "Content-Length: 100\r\n\r\ncoin=BTC&am".encode())  # the tip form, cut short
    head, _, page = (await everything_until_closed(reader)).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ") and b"text/html" in head
    text = page.decode()
    assert "Zeitüberschreitung der Anfrage" in text and "Bitte senden Sie es erneut." in text
    writer.close()


async def test_a_kept_alive_connection_may_idle_between_requests_and_is_closed_after_keepalive(served):
    """The head deadline starts at a later request's first byte, not at the previous answer; the idle
    connection itself is closed after ``keepalive_seconds`` (aiohttp's own default was an hour)."""
    server = await served(header_timeout_seconds=1, keepalive_seconds=3)
    reader, writer = await connect(server)
    writer.write(HEALTH)
    assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HANG)).startswith(b"HTTP/1.1 200 ")
    await asyncio.wait_for(reader.readuntil(b"}\n"), HANG)  # /health is one line
    await asyncio.sleep(1.5)  # longer than the head deadline, shorter than the keep-alive
    writer.write(HEALTH)
    assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HANG)).startswith(b"HTTP/1.1 200 ")
    await asyncio.wait_for(reader.readuntil(b"}\n"), HANG)  # /health is one line
    assert await everything_until_closed(reader) == b""  # then idle: closed without a word
    assert closed_for(server, "header_timeout") == 0
    writer.close()


async def test_a_kept_alive_connections_next_head_has_its_deadline_too(served):
    server = await served(header_timeout_seconds=1, keepalive_seconds=30)
    reader, writer = await connect(server)
    writer.write(HEALTH)
    assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HANG)).startswith(b"HTTP/1.1 200 ")
    await asyncio.wait_for(reader.readuntil(b"}\n"), HANG)  # /health is one line
    writer.write(b"GET /hea")  # the next request starts, and stops
    assert (await everything_until_closed(reader)).startswith(b"HTTP/1.1 408 ")
    assert closed_for(server, "header_timeout") == 1
    writer.close()


async def test_one_address_may_hold_only_so_many_connections_that_sent_no_request(served, caplog):
    server = await served(header_timeout_seconds=60, max_pending_connections_per_ip=3)
    waiting = [await connect(server, "127.0.0.5") for _ in range(3)]
    reader, writer = await connect(server, "127.0.0.5")  # the fourth from the address
    assert await everything_until_closed(reader) == b""  # closed at once
    assert closed_for(server, "pending_per_address") == 1
    assert "refused connections from 127.0.0.5: 3 already open without a request" in caplog.text
    other_reader, other_writer = await connect(server, "127.0.0.6")  # another address is not affected
    other_writer.write(HEALTH)
    assert (await asyncio.wait_for(other_reader.readuntil(b"\r\n\r\n"), HANG)).startswith(b"HTTP/1.1 200 ")
    first_reader, first_writer = waiting[0]
    first_writer.write(HEALTH)  # one of the three asks: it no longer counts as waiting
    assert (await asyncio.wait_for(first_reader.readuntil(b"\r\n\r\n"), HANG)).startswith(b"HTTP/1.1 200 ")
    again_reader, again_writer = await connect(server, "127.0.0.5")
    again_writer.write(HEALTH)
    assert (await asyncio.wait_for(again_reader.readuntil(b"\r\n\r\n"), HANG)).startswith(b"HTTP/1.1 200 ")
    for _, w in [*waiting, (reader, writer), (other_reader, other_writer), (again_reader, again_writer)]:
        w.close()


async def test_behind_a_proxy_the_per_address_cap_is_off(served):
    """With ``trust_forwarded_for`` every peer is the proxy: a cap on its address would refuse everyone."""
    server = await served(header_timeout_seconds=60, max_pending_connections_per_ip=2, trust_forwarded_for=True)
    connections = [await connect(server, "127.0.0.7") for _ in range(4)]
    for reader, writer in connections:
        writer.write(HEALTH)
        assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HANG)).startswith(b"HTTP/1.1 200 ")
        writer.close()
    assert closed_for(server, "pending_per_address") == 0
