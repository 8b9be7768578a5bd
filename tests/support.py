"""Helpers shared by the API and end-to-end tests (the merchant client comes from ``orbchain.testing``)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from orbchain.chains.devnet.adapter import devnet_chain
from orbchain.core.scanner import scan_chain
from orbchain.testing.api import Merchant, api, bearer, signup, signup_data  # noqa: F401 - re-exported
from orbchain.web.keys import GATEWAY


class WebhookReceiver:
    """A merchant endpoint on 127.0.0.1 recording raw webhook requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next = 0
        self.server: TestServer | None = None

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        if self.fail_next:
            self.fail_next -= 1
            return web.Response(status=503)
        self.requests.append({"headers": dict(request.headers), "raw": raw, "body": json.loads(raw)})
        return web.Response(text="ok")

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self.server = TestServer(app)
        await self.server.start_server()
        return str(self.server.make_url("/hook"))

    async def close(self) -> None:
        if self.server:
            await self.server.close()

    def verified(self, secret: str) -> list[dict[str, Any]]:
        """Bodies whose HMAC-SHA512 over the raw bytes matches ``secret`` (all of them, or fail)."""
        bodies = []
        for request in self.requests:
            expected = hmac.new(secret.encode(), request["raw"], hashlib.sha512).hexdigest()
            assert hmac.compare_digest(expected, request["headers"]["HMAC"]), "bad webhook signature"
            bodies.append(request["body"])
        return bodies

    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["body"]["event_type"] == event_type]


class Devnet:
    """Drive the devnet chain and the scanner from a test."""

    def __init__(self, client: Any) -> None:
        self.gateway = client.app[GATEWAY]
        self.chain = devnet_chain(self.gateway)
        self.adapter = self.gateway.chains.get("devnet")

    async def pay(self, coin: str, address: str, amount: str) -> str:
        symbol = self.gateway.coins.require(coin)
        tx = await self.chain.pay(symbol, address, symbol.to_units(amount))
        await self.scan()
        return tx

    async def mine(self, blocks: int = 1) -> None:
        await self.chain.mine(blocks)
        await self.scan()

    async def scan(self) -> Any:
        return await scan_chain(self.gateway, self.adapter)


def install_entry_point_package(site: Any, package: str, entry_name: str, files: dict[str, str],
                                target: str | None = None) -> None:
    """Install ``package`` under ``site`` the way pip would: its files plus a dist-info declaring
    ``entry_name = target`` in the ``orbchain`` entry-point group. Put ``site`` on ``sys.path``
    (``monkeypatch.syspath_prepend``) and drop the module from ``sys.modules`` afterwards."""
    from pathlib import Path

    site = Path(site)
    for relative, text in files.items():
        path = site / package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    dist = site / f"{package}-1.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package.replace('_', '-')}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[orbchain]\n{entry_name} = {target or package}\n")
