"""A stand-in LND node speaking LND's REST API, for the Lightning tests.

It follows LND's published REST definition (lnrpc/lightning.swagger.json,
lnrpc/routerrpc/router.swagger.json; the definitions it uses are kept in
tests/upstream/lnd_rest.json at a pinned commit, its request field tables are
read from there and its answers are checked against them by
tests/test_upstream_interfaces.py) and judges what the gateway sends the way
LND does, independently of the gateway's code:

* the ``Grpc-Metadata-macaroon`` header must hold the macaroon (hex), else
  the gRPC "verification failed" error; TLS with its own certificate; a
  second, receiving-only macaroon (``invoice_macaroon_path``: what ``lncli
  bakemacaroon info:read invoices:read invoices:write`` gives) opens GetInfo
  and the invoice calls and is refused "permission denied" on the rest
  (paying, tracking, decoding), as LND refuses a macaroon without the
  ``offchain`` permissions;
* request bodies are proto3 JSON: unknown field names and wrong types are
  refused (int64 as a string or number, bytes as base64, bools as bools);
* invoices are real BOLT 11 invoices signed with the node key by the
  ``bolt11`` library (not the gateway's decoder), and payments decode the
  invoice they are given with the same library (signature and network);
* SendPaymentV2 and TrackPaymentV2 and SubscribeInvoices stream one JSON
  object per line (``{"result": ...}``), int64 fields as strings, enums by name.

Test controls (Python calls, not HTTP): ``settle``, ``drop_streams``,
``until_listening`` (returns once that many SubscribeInvoices streams have
sent their backlog and wait for settlements: an event, not a sleep),
``route_fee_sat`` (the cheapest route's fee; above the caller's
``fee_limit_sat`` means FAILURE_REASON_NO_ROUTE), ``fail_with`` and
``hold_payments``; ``network`` (GetInfo's, from the invoice currency) and
``synced_to_chain``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bolt11
import coincurve
import trustme
from aiohttp import web

VERIFICATION_FAILED = {"code": 2, "message": "verification failed: signature mismatch after caveat verification",
                       "details": []}
PERMISSION_DENIED = {"code": 2, "message": "verification failed: permission denied", "details": []}
RECEIVING_PATHS = ("/v1/getinfo", "/v1/invoices", "/v1/invoice/")  # info:read, invoices:read, invoices:write

UPSTREAM = json.loads((Path(__file__).resolve().parent / "upstream" / "lnd_rest.json").read_text(encoding="utf-8"))


NETWORK_OF_CURRENCY = {"bc": "mainnet", "tb": "testnet", "bcrt": "regtest"}  # BOLT 11 prefix -> LND network


def proto_json_kind(schema: dict[str, Any]) -> str:
    """A swagger property's proto3 JSON kind, by grpc-gateway's mapping (64-bit integers are strings,
    32-bit unsigned ones ``integer``/``int64``, bytes ``string``/``byte``)."""
    kind, fmt = schema.get("type"), schema.get("format")
    if kind == "string":
        return {"int64": "int64", "uint64": "uint64", "byte": "bytes"}.get(fmt, "string")
    if kind == "integer":
        return "int32" if fmt == "int32" else "uint32"
    return {"boolean": "bool", "number": "double", "array": "array"}.get(kind or "", "message")


def request_fields(definition: str) -> dict[str, str]:
    """Every field of an upstream request message, with its proto3 JSON kind (grpc-gateway accepts each)."""
    return {name: proto_json_kind(schema) for name, schema in UPSTREAM["definitions"][definition]["properties"].items()}


# The request fields LND accepts, with their types: read from LND's definitions, not typed here.
INVOICE_FIELDS = request_fields("lnrpcInvoice")
SEND_PAYMENT_FIELDS = request_fields("routerrpcSendPaymentRequest")


class ProtoJsonError(ValueError):
    pass


def _check_type(name: str, kind: str, value: Any) -> None:
    if kind in ("int64", "uint64", "int32", "uint32"):
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.lstrip("-").isdigit())):
            raise ProtoJsonError(f"proto: ({name}): invalid value for {kind} type: {json.dumps(value)}")
        if kind.startswith("u") and int(value) < 0:
            raise ProtoJsonError(f"proto: ({name}): invalid value for {kind} type: {json.dumps(value)}")
    elif kind == "bool" and not isinstance(value, bool):
        raise ProtoJsonError(f"proto: ({name}): invalid value for bool type: {json.dumps(value)}")
    elif kind == "string" and not isinstance(value, str):
        raise ProtoJsonError(f"proto: ({name}): invalid value for string type: {json.dumps(value)}")
    elif kind == "bytes":
        if not isinstance(value, str):
            raise ProtoJsonError(f"proto: ({name}): invalid value for bytes type: {json.dumps(value)}")
        base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_" if "-" in value or "_" in value else None)


def parse_body(raw: bytes, fields: dict[str, str]) -> dict[str, Any]:
    """proto3 JSON as grpc-gateway reads it: unknown fields and wrong types are errors."""
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise ProtoJsonError("invalid character in JSON body") from None
    if not isinstance(body, dict):
        raise ProtoJsonError("proto: syntax error: unexpected token")
    for name, value in body.items():
        if name not in fields:
            raise ProtoJsonError(f'proto: (line 1:2): unknown field "{name}"')
        _check_type(name, fields[name], value)
    return body


@dataclass
class Invoice:
    r_hash: bytes
    r_preimage: bytes
    payment_request: str
    value_msat: int
    memo: str
    creation_date: int
    expiry: int
    add_index: int
    payment_addr: bytes
    state: str = "OPEN"
    settle_date: int = 0
    settle_index: int = 0
    amt_paid_msat: int = 0

    def json(self) -> dict[str, Any]:
        return {
            "memo": self.memo, "r_preimage": base64.b64encode(self.r_preimage).decode(),
            "r_hash": base64.b64encode(self.r_hash).decode(), "value": str(self.value_msat // 1000),
            "value_msat": str(self.value_msat), "settled": self.state == "SETTLED",
            "creation_date": str(self.creation_date), "settle_date": str(self.settle_date),
            "payment_request": self.payment_request, "description_hash": "", "expiry": str(self.expiry),
            "fallback_addr": "", "cltv_expiry": "80", "route_hints": [], "private": False,
            "add_index": str(self.add_index), "settle_index": str(self.settle_index),
            "amt_paid": str(self.amt_paid_msat), "amt_paid_sat": str(self.amt_paid_msat // 1000),
            "amt_paid_msat": str(self.amt_paid_msat), "state": self.state, "htlcs": [], "features": {},
            "is_keysend": False, "payment_addr": base64.b64encode(self.payment_addr).decode(), "is_amp": False,
        }


@dataclass
class Payment:
    payment_hash: str
    value_msat: int
    payment_request: str
    status: str = "IN_FLIGHT"
    fee_msat: int = 0
    preimage: str = ""
    failure_reason: str = "FAILURE_REASON_NONE"
    creation_date: int = field(default_factory=lambda: int(time.time()))

    def json(self) -> dict[str, Any]:
        return {
            "payment_hash": self.payment_hash, "value": str(self.value_msat // 1000),
            "creation_date": str(self.creation_date), "fee": str(self.fee_msat // 1000),
            "payment_preimage": self.preimage or "0" * 64, "value_sat": str(self.value_msat // 1000),
            "value_msat": str(self.value_msat), "payment_request": self.payment_request, "status": self.status,
            "fee_sat": str(self.fee_msat // 1000), "fee_msat": str(self.fee_msat),
            "creation_time_ns": str(self.creation_date * 10**9), "htlcs": [], "payment_index": "1",
            "failure_reason": self.failure_reason, "first_hop_custom_records": {},
        }


class LndStandIn:
    """The node. ``await start(tmp_path)`` writes tls.cert and admin.macaroon and serves HTTPS on 127.0.0.1."""

    def __init__(self, currency: str = "bcrt") -> None:
        self.currency = currency
        # GetInfo's chains[0].network: the network the node's invoices are for, as LND names it.
        self.network = NETWORK_OF_CURRENCY[currency]
        self.synced_to_chain = True
        self.node_key = coincurve.PrivateKey()
        self.macaroon = os.urandom(48)
        self.invoice_macaroon = os.urandom(48)
        self.invoices: dict[str, Invoice] = {}
        self.payments: dict[str, Payment] = {}
        self.add_index = 0
        self.settle_index = 0
        self.route_fee_msat = 1_000
        self.fail_with: str | None = None
        self.hold_payments = False
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        self.preimages: dict[str, str] = {}  # the payees' secrets of foreign invoices, by payment hash
        self._subscribers: list[asyncio.Queue] = []
        self.listening = 0  # SubscribeInvoices streams that sent their backlog and wait (ever, not at once)
        self._listening_changed = asyncio.Condition()
        self._stream_responses: list[web.StreamResponse] = []
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.macaroon_path = ""
        self.invoice_macaroon_path = ""
        self.cert_path = ""

    # -- controls ----------------------------------------------------------------------------

    def settle(self, payment_hash: str, amount_msat: int | None = None) -> Invoice:
        """A payer paid the invoice: SETTLED with the next settle index, announced to subscribers."""
        invoice = self.invoices[payment_hash]
        if invoice.state != "SETTLED":
            self.settle_index += 1
            invoice.state, invoice.settle_index = "SETTLED", self.settle_index
            invoice.settle_date = int(time.time())
            invoice.amt_paid_msat = amount_msat or invoice.value_msat
            for queue in self._subscribers:
                queue.put_nowait(invoice)
        return invoice

    def complete(self, payment_hash: str) -> None:
        """A held (in-flight) payment succeeds."""
        payment = self.payments[payment_hash]
        payment.status, payment.fee_msat = "SUCCEEDED", self.route_fee_msat
        payment.preimage = self.preimages.get(payment_hash, "")

    async def drop_streams(self) -> None:
        """Cut every open stream mid-way (the connection drops, no final message)."""
        for queue in self._subscribers:
            queue.put_nowait(None)
        for response in list(self._stream_responses):
            transport = response._req.transport if response._req is not None else None
            if transport is not None:
                transport.close()
        self._stream_responses.clear()
        await asyncio.sleep(0.05)

    async def until_listening(self, count: int, timeout: float = 30.0) -> None:
        """Return once ``count`` subscriptions (in all) are listening; the timeout only catches a hang."""
        async with self._listening_changed:
            await asyncio.wait_for(self._listening_changed.wait_for(lambda: self.listening >= count), timeout)

    def issue_foreign_invoice(self, amount_msat: int | None, *, expiry: int = 3600, currency: str | None = None,
                              description: str = "coffee", description_hash: str | None = None,
                              key: coincurve.PrivateKey | None = None, date: int | None = None) -> tuple[str, str]:
        """An invoice of another node (a payout destination): (bolt11, payment_hash hex)."""
        preimage = os.urandom(32)
        payment_hash = hashlib.sha256(preimage).hexdigest()
        self.preimages[payment_hash] = preimage.hex()
        return self._encode(payment_hash, amount_msat, expiry, description, description_hash,
                            key or coincurve.PrivateKey(), currency or self.currency, date), payment_hash

    # -- server -----------------------------------------------------------------------------

    async def start(self, directory) -> None:
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost")
        self.cert_path = str(directory / "tls.cert")
        ca.cert_pem.write_to_path(self.cert_path)
        self.macaroon_path = str(directory / "admin.macaroon")
        (directory / "admin.macaroon").write_bytes(self.macaroon)
        self.invoice_macaroon_path = str(directory / "invoice.macaroon")
        (directory / "invoice.macaroon").write_bytes(self.invoice_macaroon)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        app = web.Application(middlewares=[self._auth])
        app.router.add_post("/v1/invoices", self._add_invoice)
        app.router.add_get("/v1/invoice/{r_hash_str}", self._lookup_invoice)
        app.router.add_get("/v1/invoices/subscribe", self._subscribe_invoices)
        app.router.add_get("/v1/payreq/{pay_req}", self._decode_pay_req)
        app.router.add_post("/v2/router/send", self._send_payment)
        app.router.add_get("/v2/router/track/{payment_hash}", self._track_payment)
        app.router.add_get("/v1/getinfo", self._get_info)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.url = f"https://127.0.0.1:{port}"

    async def _get_info(self, request: web.Request) -> web.Response:
        """GetInfo, the fields the gateway reads and a few more; the best header is "now" (a live chain)."""
        return web.json_response({
            "identity_pubkey": self.node_key.public_key.format().hex(), "alias": "stand-in",
            "best_header_timestamp": str(int(time.time())), "synced_to_chain": self.synced_to_chain,
            "synced_to_graph": True, "testnet": self.network == "testnet",
            "chains": [{"chain": "bitcoin", "network": self.network}]})

    async def close(self) -> None:
        await self.drop_streams()
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        given = request.headers.get("Grpc-Metadata-macaroon")
        if given == self.invoice_macaroon.hex():
            if not request.path.startswith(RECEIVING_PATHS):
                self.requests.append((request.method, request.path, {"refused": "permission denied"}))
                return web.json_response(PERMISSION_DENIED, status=500)
        elif given != self.macaroon.hex():
            return web.json_response(VERIFICATION_FAILED, status=500)
        try:
            return await handler(request)
        except ProtoJsonError as exc:
            return web.json_response({"code": 3, "message": str(exc), "details": []}, status=400)

    def _encode(self, payment_hash: str, amount_msat: int | None, expiry: int, description: str,
                description_hash: str | None, key: coincurve.PrivateKey, currency: str, date: int | None = None) -> str:
        tags = bolt11.Tags()
        tags.add(bolt11.TagChar.payment_hash, payment_hash)
        tags.add(bolt11.TagChar.payment_secret, os.urandom(32).hex())
        if description_hash:
            tags.add(bolt11.TagChar.description_hash, description_hash)
        else:
            tags.add(bolt11.TagChar.description, description)
        tags.add(bolt11.TagChar.expire_time, expiry)
        tags.add(bolt11.TagChar.min_final_cltv_expiry, 80)
        invoice = bolt11.Bolt11(currency=currency, date=date or int(time.time()), tags=tags,
                                amount_msat=bolt11.MilliSatoshi(amount_msat) if amount_msat else None)
        return bolt11.encode(invoice, key.secret.hex())

    async def _add_invoice(self, request: web.Request) -> web.Response:
        body = parse_body(await request.read(), INVOICE_FIELDS)
        self.requests.append(("POST", "/v1/invoices", body))
        value_msat = int(body.get("value_msat") or 0) or int(body.get("value") or 0) * 1000
        expiry = int(body.get("expiry") or 86400)
        preimage = os.urandom(32)
        r_hash = hashlib.sha256(preimage).digest()
        bolt = self._encode(r_hash.hex(), value_msat or None, expiry, body.get("memo", ""), None, self.node_key,
                            self.currency)
        self.add_index += 1
        decoded = bolt11.decode(bolt)
        invoice = Invoice(r_hash, preimage, bolt, value_msat, body.get("memo", ""), decoded.date, expiry,
                          self.add_index, bytes.fromhex(decoded.payment_secret))
        self.invoices[r_hash.hex()] = invoice
        return web.json_response({"r_hash": base64.b64encode(r_hash).decode(), "payment_request": bolt,
                                  "add_index": str(self.add_index),
                                  "payment_addr": base64.b64encode(invoice.payment_addr).decode()})

    async def _lookup_invoice(self, request: web.Request) -> web.Response:
        invoice = self.invoices.get(request.match_info["r_hash_str"])
        if invoice is None:
            return web.json_response({"code": 5, "message": "unable to locate invoice", "details": []}, status=404)
        return web.json_response(invoice.json())

    async def _open_stream(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        self._stream_responses.append(response)
        return response

    @staticmethod
    async def _send(response: web.StreamResponse, result: dict[str, Any]) -> None:
        await response.write(json.dumps({"result": result}).encode() + b"\n")

    async def _subscribe_invoices(self, request: web.Request) -> web.StreamResponse:
        for name in ("add_index", "settle_index"):
            _check_type(name, "uint64", request.query.get(name, "0"))
        add_index = int(request.query.get("add_index", "0"))
        settle_index = int(request.query.get("settle_index", "0"))
        self.requests.append(("GET", "/v1/invoices/subscribe", dict(request.query)))
        queue: asyncio.Queue = asyncio.Queue()
        self._subscribers.append(queue)
        response = await self._open_stream(request)
        try:
            backlog = sorted((i for i in self.invoices.values() if add_index and i.add_index > add_index),
                             key=lambda i: i.add_index)
            backlog += sorted((i for i in self.invoices.values() if settle_index and 0 < settle_index < i.settle_index),
                              key=lambda i: i.settle_index)
            for invoice in backlog:
                await self._send(response, invoice.json())
            async with self._listening_changed:
                self.listening += 1
                self._listening_changed.notify_all()
            while True:
                invoice = await queue.get()
                if invoice is None:
                    break
                await self._send(response, invoice.json())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self._subscribers.remove(queue)
        return response

    async def _decode_pay_req(self, request: web.Request) -> web.Response:
        try:
            decoded = bolt11.decode(request.match_info["pay_req"])
        except Exception as exc:  # noqa: BLE001 - LND answers any decode failure the same way
            return web.json_response({"code": 2, "message": f"invalid payment request: {exc}", "details": []},
                                     status=500)
        return web.json_response({
            "destination": decoded.payee, "payment_hash": decoded.payment_hash,
            "num_satoshis": str((decoded.amount_msat or 0) // 1000), "timestamp": str(decoded.date),
            "expiry": str(decoded.expiry), "description": decoded.description or "",
            "description_hash": decoded.description_hash or "", "cltv_expiry": "80",
            "num_msat": str(decoded.amount_msat or 0), "payment_addr": base64.b64encode(
                bytes.fromhex(decoded.payment_secret or "")).decode()})

    def _stream_error(self, code: int, message: str) -> web.Response:
        return web.json_response({"error": {"code": code, "message": message, "details": []}}, status=200)

    async def _send_payment(self, request: web.Request) -> web.StreamResponse:
        body = parse_body(await request.read(), SEND_PAYMENT_FIELDS)
        self.requests.append(("POST", "/v2/router/send", body))
        if "fee_limit_sat" not in body and "fee_limit_msat" not in body:
            return self._stream_error(2, "no fee limit given")  # LND would route with a zero fee limit
        try:
            decoded = bolt11.decode(body.get("payment_request", ""))
        except Exception as exc:  # noqa: BLE001
            return self._stream_error(2, f"invalid payment request: {exc}")
        expected_currency = {"bcrt": "bcrt"}.get(self.currency, self.currency)
        if decoded.currency != expected_currency:
            return self._stream_error(2, "invoice not for current active network")
        if decoded.has_expired():
            return self._stream_error(2, "invoice expired")
        amount = int(body.get("amt_msat") or 0) or int(body.get("amt") or 0) * 1000
        if decoded.amount_msat and amount:
            return self._stream_error(2, "amount must not be specified when paying a non-zero amount invoice")
        if not decoded.amount_msat and not amount:
            return self._stream_error(2, "amount must be specified when paying a zero amount invoice")
        existing = self.payments.get(decoded.payment_hash)
        if existing is not None and existing.status == "SUCCEEDED":
            return self._stream_error(6, "invoice is already paid")
        if existing is not None and existing.status == "IN_FLIGHT":
            return self._stream_error(6, "payment is in transition")
        fee_limit_msat = int(body.get("fee_limit_msat") or 0) or int(body.get("fee_limit_sat") or 0) * 1000
        payment = Payment(decoded.payment_hash, decoded.amount_msat or amount, body["payment_request"])
        self.payments[decoded.payment_hash] = payment
        response = await self._open_stream(request)
        if self.hold_payments:
            await self._send(response, payment.json()) if not body.get("no_inflight_updates") else None
            await asyncio.sleep(float(body.get("timeout_seconds", 60)) + 10)
            return response
        if self.fail_with:
            payment.status, payment.failure_reason = "FAILED", self.fail_with
        elif self.route_fee_msat > fee_limit_msat:
            payment.status, payment.failure_reason = "FAILED", "FAILURE_REASON_NO_ROUTE"
        else:
            payment.status, payment.fee_msat = "SUCCEEDED", self.route_fee_msat
            payment.preimage = self.preimages.get(decoded.payment_hash, "")  # revealed by the payee
        await self._send(response, payment.json())
        return response

    async def _track_payment(self, request: web.Request) -> web.StreamResponse:
        raw = request.match_info["payment_hash"]
        try:
            payment_hash = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).hex()
        except ValueError:
            return web.json_response({"code": 3, "message": "invalid payment hash", "details": []}, status=400)
        payment = self.payments.get(payment_hash)
        if payment is None:
            return web.json_response({"code": 5, "message": "payment isn't initiated", "details": []}, status=404)
        response = await self._open_stream(request)
        await self._send(response, payment.json())
        return response
