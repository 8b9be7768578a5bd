"""Internal transfers (with the TOTP step-up) as a form; payouts are in ``routes_payouts``.

The form carries an idempotency key minted when the page was rendered, so a
double click or a re-post after a timeout replays the first transfer instead
of sending twice (SPEC 8 idempotency, the API's own keys).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ...api import ApiError, GATEWAY, pagination
from ...api.merchant import DASHBOARD, list_transfers, parse_transfer, require_merchant, send_transfer, servable_coins
from .routes_payments import form_body, pager, principal
from .session import Session
from .views import error_text, render, see_other, signed_in

routes = web.RouteTableDef()


async def _transfers_page(request: web.Request, session: Session, *, status: int = 200,
                          **context: Any) -> web.Response:
    """The transfers, a page at a time, with the form's coin choices; ``context`` adds an error or the values."""
    gateway = request.app[GATEWAY]
    limit, offset = pagination(request.query, default_limit=100, max_limit=500)
    listed = await list_transfers(gateway, session.merchant_id, limit=limit, offset=offset)
    merchant = await require_merchant(gateway.db, session.merchant_id)
    return render(request, session, "dashboard/transfers.html", {
        "transfers": listed["transfers"], "page": pager(listed["total"], limit, offset, {}),
        "coins": servable_coins(gateway, merchant), "values": {}, **context}, status=status)


@routes.get("/app/transfers")
@signed_in(scope="balance:read")
async def transfers_page(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    return await _transfers_page(request, session)


@routes.post("/app/transfers")
@signed_in(scope="transfer:create")
async def submit_transfer(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    body = form_body(form, ("to_account_id", "coin", "amount", "idempotency_key", "totp_code"))
    try:
        transfer = parse_transfer(gateway, request, body, principal(session), DASHBOARD)
        await send_transfer(gateway, session.merchant_id, transfer)
    except ApiError as exc:
        body.pop("totp_code", None)
        return await _transfers_page(request, session, error=error_text(exc), values=body, status=exc.status)
    raise see_other("/app/transfers", "transfer-sent")
