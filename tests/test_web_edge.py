"""The API edge: envelope, validation detail, request ids, maintenance, rate limits."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from orbchain.core.types.errors import InsufficientBalance
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.web.envelope import envelope, read_json
from orbchain.web.app import create_app
from orbchain.web.keys import GATEWAY, REQUEST_ID
from orbchain.web.server import GatewayAppRunner
from orbchain.web.validation import Field, coin_units, validate


class EdgeRoutes:
    """A plugin that adds routes exercising the edge."""

    PLUGIN_NAME = "edge_routes"

    @hookimpl
    def register_routes(self, registry):
        routes = web.RouteTableDef()

        @routes.post("/test/amount")
        async def amount(request):
            body = validate(await read_json(request), [
                Field("currency", required=True, upper=True, choices=("BTC", "ETH")),
                Field("amount", "amount", required=True),
                Field("order_id", max_len=128),
            ])
            coin = request.app[GATEWAY].coins.require(body["currency"])
            return envelope({"units": str(coin_units(coin, body["amount"])), "request_id": request[REQUEST_ID]})

        @routes.post("/test/poor")
        async def poor(request):
            raise InsufficientBalance()

        @routes.get("/test/crash")
        async def crash(request):
            raise RuntimeError("secret internals")

        registry.add(routes)


async def edge_client(make_client, make_config, **sections):
    pm = get_plugin_manager([EdgeRoutes()])
    return await make_client(make_config(**sections), pm)


async def test_amounts_as_strings_or_exact_numbers(make_client, make_config):
    client = await edge_client(make_client, make_config)
    for raw in ('"0.1"', "0.1", "0.10000000"):
        response = await client.post("/test/amount", data='{"currency":"btc","amount":%s,"extra":1}' % raw,
                                     headers={"content-type": "application/json"})
        body = await response.json()
        assert response.status == 200, body
        assert body["data"]["units"] == "10000000"
    response = await client.post("/test/amount", json={"currency": "ETH", "amount": "123456789.123456789012345678"})
    assert (await response.json())["data"]["units"] == "123456789123456789012345678"


async def test_validation_errors_list_every_field(make_client, make_config):
    client = await edge_client(make_client, make_config)
    response = await client.post("/test/amount", json={"currency": "DOGE", "amount": "-1", "order_id": "x" * 129})
    body = await response.json()
    assert response.status == 400
    assert body["data"] is None and body["status"] == 400 and body["version"] == "2.0.0"
    assert body["error"]["type"] == "validation"
    assert body["message"].startswith("validation error: ")
    assert set(body["error"]["detail"]) == {"currency", "amount", "order_id"}


async def test_too_many_decimals_and_bad_json(make_client, make_config):
    client = await edge_client(make_client, make_config)
    response = await client.post("/test/amount", json={"currency": "BTC", "amount": "0.000000001"})
    assert response.status == 400 and "decimal places" in (await response.json())["message"]
    for data in ("{", "[1,2]", "", "null", "[" * 33 + "]" * 33):
        response = await client.post("/test/amount", data=data, headers={"content-type": "application/json"})
        body = await response.json()
        assert response.status == 400 and body["error"]["type"] == "validation", data
    for amount in ('"1e900000"', "1e900000", '"\u0661"', '"\uff11"'):  # huge; Arabic-Indic and full-width 1
        response = await client.post("/test/amount", data='{"currency":"BTC","amount":%s}' % amount,
                                     headers={"content-type": "application/json"})
        assert response.status == 400 and "amount" in (await response.json())["error"]["detail"], amount
    response = await client.post("/test/amount", data='{"currency":"BTC","amount":"1"}')  # text/plain
    assert response.status == 400 and "Content-Type" in (await response.json())["error"]["detail"]["body"]


async def test_business_error_carries_code(make_client, make_config):
    client = await edge_client(make_client, make_config)
    body = await (await client.post("/test/poor", json={})).json()
    assert body["error"] == {"type": "invalid_request", "message": "insufficient balance", "code": "insufficient_balance"}


async def test_unexpected_errors_hide_internals(make_client, make_config):
    client = await edge_client(make_client, make_config)
    response = await client.get("/test/crash")
    text = await response.text()
    assert response.status == 500 and "secret internals" not in text and "Traceback" not in text
    assert (await response.json())["error"]["type"] == "internal"


async def test_method_not_allowed_and_oversized_body(make_client, make_config):
    client = await edge_client(make_client, make_config)
    response = await client.delete("/test/amount")
    assert response.status == 405 and (await response.json())["status"] == 405
    response = await client.post("/test/amount", data=b"x" * (1024 * 1024 + 10))
    assert response.status == 413 and (await response.json())["error"]["type"] == "validation"


async def test_request_id_accepted_generated_and_echoed(make_client, make_config):
    client = await edge_client(make_client, make_config)
    response = await client.post("/test/amount", json={"currency": "BTC", "amount": "1"},
                                 headers={"X-Request-Id": "abc_DEF-123"})
    assert response.headers["X-Request-Id"] == "abc_DEF-123"
    assert (await response.json())["data"]["request_id"] == "abc_DEF-123"
    for bad in ("short", "x" * 65, "has space!"):
        response = await client.get("/health", headers={"X-Request-Id": bad})
        generated = response.headers["X-Request-Id"]
        assert generated != bad and len(generated) == 16 and int(generated, 16) >= 0
    response = await client.get("/missing")
    assert len(response.headers["X-Request-Id"]) == 16


async def test_maintenance_rejects_writes_only(make_client, make_config):
    client = await edge_client(make_client, make_config, server={"maintenance": True})
    response = await client.post("/test/amount", json={"currency": "BTC", "amount": "1"})
    body = await response.json()
    assert response.status == 503 and body["message"] == "maintenance"
    assert (await client.get("/v1/common/currencies")).status == 200


async def test_write_rate_limit_answers_429_with_retry_after(make_client, make_config):
    client = await edge_client(make_client, make_config, rate_limits={"write_per_minute": 3})
    gateway = client.app[GATEWAY]
    gateway.clock = lambda: 1_800_000_010.0  # 50 s left in the window
    statuses = []
    for _ in range(5):
        response = await client.post("/test/amount", json={"currency": "BTC", "amount": "1"})
        statuses.append(response.status)
    assert statuses == [200, 200, 200, 429, 429]
    body = await response.json()
    assert body["error"]["type"] == "rate_limit" and body["message"] == "too many requests"
    assert response.headers["Retry-After"] == "50"
    # A public route counts per IP: a key header the route ignores buys no new bucket.
    other = await client.post("/test/amount", json={"currency": "BTC", "amount": "1"},
                              headers={"merchant_api_key": "some-other-key"})
    assert other.status == 429
    # The next window starts afresh.
    gateway.clock = lambda: 1_800_000_070.0
    assert (await client.post("/test/amount", json={"currency": "BTC", "amount": "1"})).status == 200


async def test_reads_have_their_own_larger_limit(make_client, make_config):
    client = await edge_client(make_client, make_config, rate_limits={"write_per_minute": 1, "read_per_minute": 4})
    results = await asyncio.gather(*(client.get("/v1/common/currencies") for _ in range(6)))
    assert sorted(r.status for r in results) == [200] * 4 + [429] * 2
    assert (await client.get("/health")).status == 200  # health is never limited


async def test_a_client_that_leaves_mid_body_costs_no_traceback(make_config, caplog):
    """Content-Length promises more than arrives, then the socket closes: logged quietly, no ERROR.

    Served like ``orbchain serve`` does (GatewayAppRunner), where the handler sees the reset.
    """
    caplog.set_level(logging.INFO)
    runner = GatewayAppRunner(create_app(make_config(scheduler={"enabled": False})))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /dashboard/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n{\"email\": \"a")
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        for _ in range(200):
            if any("went away" in r.getMessage() for r in caplog.records):
                break
            await asyncio.sleep(0.01)
        assert any("client went away during POST /dashboard/auth/login" in r.getMessage() for r in caplog.records)
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    finally:
        await runner.cleanup()
