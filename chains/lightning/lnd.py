"""The ``lnd`` Lightning backend: LND's REST API (the grpc-gateway of lnrpc and routerrpc).

Why REST and not gRPC: one HTTP client the gateway already has, and LND
publishes the REST definition (lnrpc/lightning.swagger.json,
lnrpc/routerrpc/router.swagger.json) we follow field by field: int64 values
travel as JSON strings, ``bytes`` as base64, enums as their names, and a
streaming call answers one ``{"result": ...}`` (or ``{"error": ...}``) JSON
object per line.

Authentication is LND's: the macaroon file's bytes, hex encoded, in the
``Grpc-Metadata-macaroon`` header; the node's self-signed ``tls.cert`` is the
only certificate trusted for its URL.

Calls used: ``POST /v1/invoices`` (AddInvoice), ``GET /v1/invoice/{r_hash_str}``
(LookupInvoice), ``GET /v1/invoices/subscribe`` (SubscribeInvoices, with
``settle_index`` for the catch-up), ``GET /v1/payreq/{pay_req}`` (DecodePayReq),
``POST /v2/router/send`` (SendPaymentV2), ``GET /v2/router/track/{payment_hash}``
(TrackPaymentV2) and ``GET /v1/getinfo`` (GetInfo: the node's network and sync, vetted.py).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import ssl
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

import aiohttp

from ...api import NodeIdentity
from .backend import (
    FAILED, IN_FLIGHT, SETTLED, SUCCEEDED, BackendUnavailable, InvoiceState, LightningBackend, NewInvoice,
    PaymentState,
)
from .settings import LightningSettings

__all__ = ["LndBackend", "failure_code"]

# LND's PaymentFailureReason -> our short failure_reason codes.
_FAILURES = {
    "FAILURE_REASON_TIMEOUT": "payment_timeout",
    "FAILURE_REASON_NO_ROUTE": "no_route",
    "FAILURE_REASON_ERROR": "payment_error",
    "FAILURE_REASON_INCORRECT_PAYMENT_DETAILS": "incorrect_payment_details",
    "FAILURE_REASON_INSUFFICIENT_BALANCE": "insufficient_node_balance",
    "FAILURE_REASON_CANCELED": "payment_canceled",
}


SEAL_LABEL = b"orbchain/lightning/payment-seal/v1"


def failure_code(reason: str | None) -> str:
    return _FAILURES.get(reason or "", "payment_failed")


def _hex_of(b64: str | None) -> str | None:
    return base64.b64decode(b64).hex() if b64 else None


def _int(value: Any) -> int:
    """An int64/uint64 field: a JSON string per grpc-gateway (a number tolerated); absent is 0."""
    if value is None or value == "":
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise BackendUnavailable(f"LND sent {value!r} where an integer belongs")
    try:
        return int(value)
    except ValueError:
        raise BackendUnavailable(f"LND sent {value!r} where an integer belongs") from None


def invoice_state(invoice: Mapping[str, Any]) -> InvoiceState:
    """An lnrpc Invoice as our InvoiceState."""
    payment_hash = _hex_of(invoice.get("r_hash"))
    if not payment_hash:
        raise BackendUnavailable("LND sent an invoice without r_hash")
    state = invoice.get("state") or "OPEN"
    return InvoiceState(
        payment_hash=payment_hash, state=state, amount_paid_msat=_int(invoice.get("amt_paid_msat")),
        settled_at=_int(invoice.get("settle_date")) or None if state == SETTLED else None,
        settle_index=_int(invoice.get("settle_index")),
    )


def payment_state(payment: Mapping[str, Any]) -> PaymentState:
    """An lnrpc Payment as our PaymentState."""
    status = payment.get("status")
    if status == "SUCCEEDED":
        preimage = payment.get("payment_preimage") or None
        return PaymentState(payment["payment_hash"], SUCCEEDED, preimage=preimage,
                            fee_msat=_int(payment.get("fee_msat")))
    if status == "FAILED":
        return PaymentState(payment["payment_hash"], FAILED, failure_reason=failure_code(payment.get("failure_reason")))
    return PaymentState(payment["payment_hash"], IN_FLIGHT)


class LndBackend(LightningBackend):
    """LND over REST. One aiohttp session, opened on first use."""

    name = "lnd"

    def __init__(self, settings: LightningSettings) -> None:
        macaroon_path = settings.macaroon_path or settings.invoice_macaroon_path  # paying, else receiving only
        assert settings.lnd_url and macaroon_path, "validated by read_settings"
        self._url = settings.lnd_url.rstrip("/")
        macaroon = Path(macaroon_path).read_bytes()
        self._macaroon = macaroon.hex()
        self._seal_key = hmac.new(macaroon, SEAL_LABEL, hashlib.sha256).digest()
        self._ssl: ssl.SSLContext | bool = True
        if settings.tls_cert_path:
            self._ssl = ssl.create_default_context(cafile=settings.tls_cert_path)
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers={"Grpc-Metadata-macaroon": self._macaroon},
                connector=aiohttp.TCPConnector(ssl=self._ssl), timeout=aiohttp.ClientTimeout(total=None))
        return self._session

    def payment_seal_key(self) -> bytes:
        """Derived from the macaroon: whoever can pay with it can seal, nobody else (a web process beside a
        signer holds none, or only the receiving one: a different key, so it cannot seal a payment either)."""
        return self._seal_key

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()

    async def node_identity(self) -> NodeIdentity:
        """GetInfo: ``chains[0]`` (chain and network), ``synced_to_chain``, ``best_header_timestamp``."""
        info = await self._call("GET", "/v1/getinfo") or {}
        chains = info.get("chains") or [{}]
        network = f"{chains[0].get('chain') or 'bitcoin'}:{chains[0].get('network')}"
        stamp = str(info.get("best_header_timestamp") or "")
        # A regtest LND is "not synced" until its chain backend mines a recent block: not a sync to wait for.
        syncing = not info.get("synced_to_chain", False) and not network.endswith(":regtest")
        return NodeIdentity(network, None, syncing, int(stamp) if stamp.isdigit() and stamp != "0" else None)

    async def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None,
                    *, timeout: float = 30, missing_ok: bool = False) -> dict[str, Any] | None:
        try:
            async with self._client().request(method, self._url + path, json=body,
                                              timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                text = await response.text()
                if response.status == 404 and missing_ok:
                    return None
                if response.status != 200:
                    message = _error_message(text)
                    if missing_ok and _not_found(message):
                        return None
                    raise BackendUnavailable(f"LND {path.split('?')[0]}: HTTP {response.status}: {message}")
                return json.loads(text)
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            raise BackendUnavailable(f"LND {path.split('?')[0]}: {type(exc).__name__}: {exc}") from None

    async def _stream(self, method: str, path: str, body: Mapping[str, Any] | None = None,
                      *, timeout: float | None = None) -> AsyncIterator[dict[str, Any]]:
        """The ``result`` objects of a streaming call, one per line; an ``error`` line raises."""
        try:
            async with self._client().request(method, self._url + path, json=body,
                                              timeout=aiohttp.ClientTimeout(total=timeout,
                                                                            sock_connect=30)) as response:
                if response.status != 200:
                    raise BackendUnavailable(f"LND {path}: HTTP {response.status}: "
                                             f"{_error_message(await response.text())}")
                async for line in response.content:
                    if not line.strip():
                        continue
                    message = json.loads(line)
                    if message.get("error"):
                        raise BackendUnavailable(f"LND {path}: {_error_message(json.dumps(message['error']))}")
                    if isinstance(message.get("result"), dict):
                        yield message["result"]
        except (aiohttp.ClientError, ValueError) as exc:
            raise BackendUnavailable(f"LND {path.split('?')[0]}: {type(exc).__name__}: {exc}") from None

    # -- receiving -----------------------------------------------------------------------------

    async def create_invoice(self, amount_msat: int, memo: str, expiry_seconds: int) -> NewInvoice:
        answer = await self._call("POST", "/v1/invoices", {
            "memo": memo, "value_msat": str(amount_msat), "expiry": str(expiry_seconds)})
        assert answer is not None
        payment_hash = _hex_of(answer.get("r_hash"))
        bolt11 = answer.get("payment_request")
        if not payment_hash or not isinstance(bolt11, str):
            raise BackendUnavailable("LND AddInvoice answered without r_hash or payment_request")
        return NewInvoice(bolt11=bolt11, payment_hash=payment_hash, add_index=_int(answer.get("add_index")))

    async def lookup_invoice(self, payment_hash: str) -> InvoiceState | None:
        answer = await self._call("GET", f"/v1/invoice/{payment_hash}", missing_ok=True)
        return None if answer is None else invoice_state(answer)

    async def settled_invoices(self, after_settle_index: int) -> AsyncIterator[InvoiceState]:
        # add_index far ahead: replay no OPEN invoices, only the settlements after our cursor.
        path = f"/v1/invoices/subscribe?settle_index={after_settle_index}&add_index={2**63 - 1}"
        async for invoice in self._stream("GET", path):
            state = invoice_state(invoice)
            if state.state == SETTLED:
                yield state

    # -- paying --------------------------------------------------------------------------------

    async def decode(self, bolt11: str) -> dict[str, Any]:
        """DecodePayReq as LND answers it (destination, payment_hash, num_msat, expiry ...)."""
        answer = await self._call("GET", f"/v1/payreq/{bolt11}")
        assert answer is not None
        return answer

    async def pay(self, bolt11: str, *, amount_msat: int | None, fee_limit_sat: int,
                  timeout_seconds: int) -> PaymentState:
        body: dict[str, Any] = {"payment_request": bolt11, "fee_limit_sat": str(fee_limit_sat),
                                "timeout_seconds": timeout_seconds, "no_inflight_updates": True}
        if amount_msat is not None:
            body["amt_msat"] = str(amount_msat)
        last: PaymentState | None = None
        try:
            async with asyncio.timeout(timeout_seconds + 5):
                async for payment in self._stream("POST", "/v2/router/send", body):
                    last = payment_state(payment)
                    if last.status != IN_FLIGHT:
                        return last
        except TimeoutError:
            pass
        if last is None:
            raise BackendUnavailable("LND SendPaymentV2 ended without a payment update")
        return last

    async def payment(self, payment_hash: str) -> PaymentState | None:
        path = f"/v2/router/track/{base64.urlsafe_b64encode(bytes.fromhex(payment_hash)).decode()}"
        try:
            async with asyncio.timeout(30):
                async for payment in self._stream("GET", path):  # the first update is the current state
                    return payment_state(payment)
        except BackendUnavailable as exc:
            if "HTTP 404" in str(exc) or _not_found(str(exc)):  # gRPC NotFound: "payment isn't initiated"
                return None
            raise
        except TimeoutError:  # still in flight: a final update never came
            return PaymentState(payment_hash, IN_FLIGHT)
        return None


def _error_message(text: str) -> str:
    try:
        error = json.loads(text)
    except ValueError:
        return text[:200]
    if isinstance(error, dict):
        return str(error.get("message") or error.get("error") or error)[:300]
    return str(error)[:300]


def _not_found(message: str) -> bool:
    lowered = message.lower()
    return "not found" in lowered or "unable to locate" in lowered
