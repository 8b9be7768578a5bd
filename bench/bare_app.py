"""The baseline of bench_hotpath: a bare aiohttp app, one GET and one POST handler, no database.

Run as its own process (``python bench/bare_app.py --port P``) so it gets a
core of its own like the gateway does; the ratios in the benchmark are the
gateway's figures over this app's, measured in the same run. The answers are
about the size of a payment view so the JSON work is comparable.
"""

from __future__ import annotations

import argparse

from aiohttp import web

PAYMENT = {
    "track_id": "12345678", "type": "white_label", "status": "Waiting", "amount": "0.01", "currency": "BTC",
    "pay_amount": "0.01", "pay_currency": "BTC", "network": "bitcoin", "address": "bc1q" + "x" * 38,
    "order_id": None, "description": None, "created_at": 1_700_000_000, "expires_at": 1_700_003_600,
    "transactions": [],
}


async def read(request: web.Request) -> web.Response:
    return web.json_response({"result": 100, "message": "ok", "data": PAYMENT})


async def create(request: web.Request) -> web.Response:
    body = await request.json()
    return web.json_response({"result": 100, "message": "ok", "data": {**PAYMENT, **body}})


async def health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def make_app() -> web.Application:
    app = web.Application()
    app.router.add_get("/get", read)
    app.router.add_post("/post", create)
    app.router.add_get("/health", health)
    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    web.run_app(make_app(), host="127.0.0.1", port=parser.parse_args().port, access_log=None, print=None)
