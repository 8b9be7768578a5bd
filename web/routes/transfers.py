"""Internal transfers (SPEC 4.4, 4.12): POST /v1/transfer, its dashboard twin, the history.

Transfer responses carry only ``data`` (SPEC 2.1); errors use the full
envelope like everywhere else. The history is a dashboard list and uses the
envelope like the other lists.
"""

from __future__ import annotations

from typing import Any, Mapping

from aiohttp import web

from ...core.transfers import service as svc
from ...core.types.errors import ValidationError
from ...core.gateway import Gateway
from ..auth import Principal, ensure_coin_allowed, principal_of, requires
from ..envelope import data_only, envelope, read_json
from ..keys import REQUEST_ID, gateway_of
from ..validation import IDEMPOTENCY_KEY, Field, coin_units, idempotency_key, pagination, validate

routes = web.RouteTableDef()

FIELDS = [
    Field("to_account_id", required=True, max_len=64,
          check=lambda v: None if svc.is_account_id(v) else "must be an account id (ORB- and 20 base58 characters)"),
    Field("coin", required=True, upper=True, max_len=20),
    Field("amount", "amount", required=True),
    IDEMPOTENCY_KEY,
]


def parse_transfer(
    gateway: Gateway, request: web.Request, body: Mapping[str, Any], principal: Principal, source: str
) -> svc.TransferRequest:
    """Validate a transfer body (shared by /v1 and /dashboard) into a ``TransferRequest``."""
    values = validate(body, FIELDS)
    coin = gateway.coins.get(values["coin"])
    if coin is None:
        raise ValidationError({"coin": f"{values['coin']} is not a supported coin"}, code="coin_not_supported")
    ensure_coin_allowed(principal, coin.symbol)
    return svc.TransferRequest(
        to_account_id=values["to_account_id"], coin=coin.symbol, amount=coin_units(coin, values["amount"]),
        idempotency_key=idempotency_key(request.headers, values["idempotency_key"]),
        # Checked only when the sender has 2FA on; any other value then reads as a wrong code (401).
        totp_code=body.get("totp_code"), source=source, key_id=principal.key_id, member_id=principal.member_id,
        request_id=request.get(REQUEST_ID), key_has_webhook=principal.webhook_url is not None,
        requested_by=principal.requester,
    )


async def _send(request: web.Request, source: str) -> web.Response:
    gateway = gateway_of(request)
    principal = principal_of(request)
    transfer = parse_transfer(gateway, request, await read_json(request), principal, source)
    result = await svc.send_transfer(gateway, principal.merchant_id, transfer)
    return data_only(svc.transfer_view(gateway, result.row, idempotent=result.idempotent))


@routes.post("/v1/transfer")
@requires("merchant_key", scope="transfer:create")
async def create_transfer(request: web.Request) -> web.Response:
    return await _send(request, svc.API)


@routes.post("/dashboard/transfer")
@requires("jwt", scope="transfer:create")
async def dashboard_transfer(request: web.Request) -> web.Response:
    return await _send(request, svc.DASHBOARD)


@routes.get("/dashboard/transfers")
@requires("jwt", scope="balance:read")
async def dashboard_transfers(request: web.Request) -> web.Response:
    limit, offset = pagination(request.query, default_limit=100, max_limit=500)
    return envelope(await svc.list_transfers(gateway_of(request), principal_of(request).merchant_id,
                                             limit=limit, offset=offset))
