"""Public endpoints (SPEC 4.1): health, coin table, prices, receipt public key."""

from __future__ import annotations

import base64

from aiohttp import web

from ...core.errors import NotConfigured
from ..envelope import JsonNumber, envelope
from ..keys import gateway_of
from ..middlewares import rate_class

routes = web.RouteTableDef()


@routes.get("/health")
@rate_class(None)
async def health(request: web.Request) -> web.Response:
    # A bare object, not the envelope (SPEC 2.1); 200 while the process runs.
    return web.json_response({"ok": True})


@routes.get("/v1/common/currencies")
async def currencies(request: web.Request) -> web.Response:
    return envelope([coin.currency_entry() for coin in gateway_of(request).coins])


@routes.get("/v1/common/prices")
async def prices(request: web.Request) -> web.Response:
    service = gateway_of(request).services.get("prices")
    if service is None:
        raise NotConfigured()
    table = await service.prices()
    return envelope({symbol: JsonNumber(value) for symbol, value in table.items()})


@routes.get("/v1/common/receipt-public-key")
async def receipt_public_key(request: web.Request) -> web.Response:
    secrets = gateway_of(request).secrets
    verify_key = secrets.receipt_key.verify_key
    raw = bytes(verify_key)
    return envelope(
        {
            "public_key": base64.b64encode(raw).decode(),
            "public_key_pem": spki_pem(raw),
            "algorithm": "Ed25519",
            "ephemeral": secrets.receipt_key_generated,
        }
    )


# DER prefix of SubjectPublicKeyInfo for Ed25519 (RFC 8410, section 4).
_ED25519_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")


def spki_pem(raw_public_key: bytes) -> str:
    """The SPKI PEM of a 32-byte Ed25519 public key."""
    der = base64.b64encode(_ED25519_SPKI_PREFIX + raw_public_key).decode()
    return "-----BEGIN PUBLIC KEY-----\n" + der + "\n-----END PUBLIC KEY-----\n"
