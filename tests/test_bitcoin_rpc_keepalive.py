"""The node closes an idle keep-alive connection (``-rpcservertimeout``) just as the gateway reuses it.

Seen in CI: the shared litecoind runs with ``-rpcservertimeout=2`` and a live-page test's scan failed with
"0 of 1 node(s) answered" because the request went into a connection the node had just closed. A raw
server here plays that node exactly: it answers, keeps the connection, and drops it unanswered on the
next request; the client asks once more on a new connection. A node that drops every request is still
reported unavailable, after two tries, never a loop.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from orbchain.api import ChainUnavailable
from orbchain.chains.bitcoin.rpc import NodeRpc


class DroppingNode:
    """Answers ``getblockcount``; ``drop_after`` requests per connection are answered, the next is dropped."""

    def __init__(self, drop_after: int) -> None:
        self.drop_after = drop_after
        self.requests = 0
        self.connections = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        answered = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length"))
                request = json.loads(await reader.readexactly(length))
                self.requests += 1
                if answered >= self.drop_after:
                    return  # closed with no answer, as a node whose idle timer fired
                body = json.dumps({"result": 101, "error": None, "id": request["id"]}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
                answered += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


async def started(node: DroppingNode) -> tuple[asyncio.Server, NodeRpc]:
    server = await asyncio.start_server(node.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, NodeRpc(f"http://127.0.0.1:{port}", user="u", password="p", timeout=5, label="litecoin")


async def test_a_connection_the_node_closed_is_asked_again_on_a_new_one():
    node = DroppingNode(drop_after=1)
    server, rpc = await started(node)
    try:
        assert await rpc.call("getblockcount") == 101
        assert await rpc.call("getblockcount") == 101  # the kept connection is dropped; a new one answers
        assert (node.requests, node.connections) == (3, 2)
    finally:
        await rpc.close()
        server.close()


async def test_a_node_that_never_answers_is_unavailable_after_two_tries():
    node = DroppingNode(drop_after=0)
    server, rpc = await started(node)
    try:
        with pytest.raises(ChainUnavailable, match="cannot reach"):
            await rpc.call("getblockcount")
        assert node.requests == 2
    finally:
        await rpc.close()
        server.close()
