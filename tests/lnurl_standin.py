"""A stand-in Lightning Address service (LUD-16 over LUD-06 payRequest), for the Lightning payout tests.

It behaves like a real LNURL-pay server and judges what the gateway sends
by the LUDs, independently of the gateway's code:

* ``GET /.well-known/lnurlp/<user>`` answers the payRequest: ``tag``,
  ``callback``, ``minSendable``/``maxSendable`` (millisatoshi), ``metadata``
  (a JSON array as a string, with ``text/plain`` and ``text/identifier``);
  an unknown user is ``{"status": "ERROR", "reason": ...}``;
* ``GET <callback>?amount=<msat>`` checks the amount itself (an integer in
  millisatoshi within the limits, else an ERROR answer) and returns
  ``{"pr": <BOLT 11>, "routes": []}``: a real invoice of another node issued
  through the LND stand-in (so the gateway's node can pay it and learn the
  preimage), whose ``description_hash`` is SHA-256 of the metadata string.

Faults on command (``fault``): ``wrong_amount``, ``wrong_hash``,
``callback_error``, ``slow``, ``oversized``, ``garbled``.

TLS with a certificate for ``domain`` from its own CA (``ca_path``);
:func:`hosts` points the name at the loopback port, like a hosts file, for
the gateway's resolver (the only way to reach it: LUD-16 fixes port 443).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import ssl
from typing import Any

import trustme
from aiohttp import web
from aiohttp.resolver import ThreadedResolver

from .lnd_standin import LndStandIn


class LnurlStandIn:
    def __init__(self, lnd: LndStandIn, domain: str = "pay.lnurl-standin.test", *, users=("alice",),
                 min_sendable: int = 1_000, max_sendable: int = 1_000_000_000) -> None:
        self.lnd = lnd
        self.domain = domain
        self.users = set(users)
        self.min_sendable = min_sendable
        self.max_sendable = max_sendable
        self.fault: str | None = None
        self.slow_seconds = 15.0
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.issued: list[str] = []
        self.port = 0
        self.ca_path = ""
        self._runner: web.AppRunner | None = None

    def metadata(self, user: str) -> str:
        return json.dumps([["text/plain", f"Pay {user} on {self.domain}"],
                           ["text/identifier", f"{user}@{self.domain}"]])

    async def start(self, directory) -> None:
        ca = trustme.CA()
        self.ca_path = str(directory / "lnurl-ca.pem")
        ca.cert_pem.write_to_path(self.ca_path)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(self.domain).configure_cert(context)
        app = web.Application()
        app.router.add_get("/.well-known/lnurlp/{user}", self._pay_request)
        app.router.add_get("/lnurlp/{user}/callback", self._callback)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def hosts(self):
        """A resolver class mapping ``domain`` (any port) to this server, every other name to the real DNS."""
        standin = self

        class Hosts(ThreadedResolver):
            async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET):
                if host == standin.domain:
                    return [{"hostname": host, "host": "127.0.0.1", "port": standin.port, "family": socket.AF_INET,
                             "proto": 0, "flags": socket.AI_NUMERICHOST}]
                return await super().resolve(host, port, family)

        return Hosts

    @staticmethod
    def _error(reason: str, status: int = 200) -> web.Response:
        return web.json_response({"status": "ERROR", "reason": reason}, status=status)

    async def _special(self) -> web.Response | None:
        if self.fault == "slow":
            await asyncio.sleep(self.slow_seconds)
        if self.fault == "oversized":
            return web.json_response({"status": "OK", "padding": "x" * 200_000})
        if self.fault == "garbled":
            return web.Response(text='{"tag": "payRequest", "callback": ', content_type="application/json")
        return None

    async def _pay_request(self, request: web.Request) -> web.Response:
        user = request.match_info["user"]
        self.requests.append((request.path, dict(request.query)))
        special = await self._special()
        if special is not None:
            return special
        if user not in self.users:
            return self._error(f"unknown user {user}", 404)
        return web.json_response({
            "tag": "payRequest", "callback": f"https://{self.domain}/lnurlp/{user}/callback",
            "minSendable": self.min_sendable, "maxSendable": self.max_sendable, "metadata": self.metadata(user),
            "commentAllowed": 0})

    async def _callback(self, request: web.Request) -> web.Response:
        user = request.match_info["user"]
        self.requests.append((request.path, dict(request.query)))
        if user not in self.users:
            return self._error(f"unknown user {user}", 404)
        amount_text = request.query.get("amount", "")
        if not amount_text.isdigit():
            return self._error("amount must be an integer number of millisatoshi")
        amount = int(amount_text)
        if not self.min_sendable <= amount <= self.max_sendable:
            return self._error(f"amount {amount} msat outside {self.min_sendable}-{self.max_sendable}")
        if self.fault == "callback_error":
            return self._error("this wallet is closed for maintenance")
        metadata = self.metadata(user)
        if self.fault == "wrong_hash":
            metadata += " "
        invoice_amount = amount + 1000 if self.fault == "wrong_amount" else amount
        bolt11, _ = self.lnd.issue_foreign_invoice(
            invoice_amount, description_hash=hashlib.sha256(metadata.encode()).hexdigest())
        self.issued.append(bolt11)
        body: dict[str, Any] = {"pr": bolt11, "routes": []}
        return web.json_response(body)
