"""A live stream's slot, over real sockets against the server ``orbchain serve`` runs (issue 42 item 5).

Before, a stream's slot came back only at its next heartbeat's failed write:
with every slot taken, new streams were still refused 503 seconds after every
client had left. The per-address bound keyed on the full IPv6 address, and
one payment page could hold every stream of the process. Here the heartbeat
is five minutes, so a slot that comes back did so because the client left.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from orbchain.web.app import create_app
from orbchain.web.keys import GATEWAY

from .live_support import raw_stream
from .support import GatewayTestServer
from .test_pay_page import merchant_key, new_invoice

SLOW_HEARTBEAT = 300  # no heartbeat comes while a test runs
POLLS = 200  # bounded polls for the server to handle a closed connection (each 0.05 s): catch a hang only


@pytest.fixture
async def served(make_config, aiohttp_client):
    """``served(live={...}, server={...})``: (client, port, merchant key) of the app behind ``GatewayAppRunner``."""

    async def serve(**sections):
        config = make_config(scheduler={"enabled": False}, **sections)
        client = await aiohttp_client(GatewayTestServer(create_app(config)))
        return client, client.server.port, await merchant_key(client)

    return serve


async def slots_free(hub, expected: int) -> int:
    for _ in range(POLLS):
        if hub.open_streams == expected:
            break
        await asyncio.sleep(0.05)
    return hub.open_streams


async def test_a_client_that_leaves_frees_its_slot_without_waiting_for_a_heartbeat(served):
    client, port, key = await served(live={"max_streams": 2, "heartbeat_seconds": SLOW_HEARTBEAT,
                                           "max_page_share_percent": 100})
    track_id = (await new_invoice(client, key))["track_id"]
    streams = [await raw_stream(port, f"/pay/{track_id}/events") for _ in range(2)]
    assert [s.status for s in streams] == [200, 200]
    assert (await raw_stream(port, f"/pay/{track_id}/events")).status == 503  # full
    hub = client.app[GATEWAY].services["live_hub"]
    for stream in streams:
        stream.close()  # every payer leaves
    assert await slots_free(hub, 0) == 0  # long before the heartbeat
    again = await raw_stream(port, f"/pay/{track_id}/events")
    assert again.status == 200
    again.close()


async def test_a_dashboard_stream_frees_its_slot_when_the_merchant_leaves(served):
    from .dashboard_support import Visitor

    client, port, _ = await served(live={"max_streams": 1, "heartbeat_seconds": SLOW_HEARTBEAT})
    visitor = Visitor(client)
    keys = await visitor.sign_up("leaves@example.com")
    track_id = (await new_invoice(client, keys["merchant_api_key"]))["track_id"]
    cookies = "; ".join(f"{c.key}={c.value}" for c in client.session.cookie_jar)
    stream = await raw_stream(port, f"/app/payments/{track_id}/events", headers=f"Cookie: {cookies}\r\n")
    assert stream.status == 200
    hub = client.app[GATEWAY].services["live_hub"]
    assert hub.open_streams == 1
    stream.close()
    assert await slots_free(hub, 0) == 0


async def test_the_addresses_of_one_ipv6_slash_64_share_one_bound(served):
    client, port, key = await served(server={"trust_forwarded_for": True},
                                     live={"max_streams_per_ip": 2, "heartbeat_seconds": SLOW_HEARTBEAT})
    tracks = [(await new_invoice(client, key))["track_id"] for _ in range(4)]

    async def stream_from(address: str, track_id: str):
        return await raw_stream(port, f"/pay/{track_id}/events", headers=f"X-Forwarded-For: {address}\r\n")

    held = [await stream_from("2001:db8:1:2::1", tracks[0]), await stream_from("2001:db8:1:2::2", tracks[1])]
    assert [s.status for s in held] == [200, 200]
    third = await stream_from("2001:db8:1:2:ffff::3", tracks[2])  # a third address of the same /64
    assert third.status == 429 and b"from this address" in third.body
    other = await stream_from("2001:db8:1:3::1", tracks[2])  # the neighbouring /64 is another client
    assert other.status == 200
    for stream in [*held, other]:
        stream.close()


async def test_one_payment_page_holds_at_most_its_share_of_the_streams(served):
    client, port, key = await served(server={"trust_forwarded_for": True},
                                     live={"max_streams": 20, "heartbeat_seconds": SLOW_HEARTBEAT})  # 10 %: 2
    hot, other = [(await new_invoice(client, key))["track_id"] for _ in range(2)]
    held = [await raw_stream(port, f"/pay/{hot}/events", headers=f"X-Forwarded-For: 198.51.100.{i}\r\n")
            for i in (1, 2)]
    assert [s.status for s in held] == [200, 200]
    refused = await raw_stream(port, f"/pay/{hot}/events", headers="X-Forwarded-For: 198.51.100.3\r\n")
    assert refused.status == 429
    assert json.loads(refused.body)["error"] == {"type": "rate_limit",
                                                 "message": "too many open event streams for this payment"}
    elsewhere = await raw_stream(port, f"/pay/{other}/events", headers="X-Forwarded-For: 198.51.100.3\r\n")
    assert elsewhere.status == 200  # every other payer still gets a stream
    assert client.app[GATEWAY].metrics.live_streams_refused.labels("page")._value.get() == 1
    for stream in [*held, elsewhere]:
        stream.close()
