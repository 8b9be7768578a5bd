"""Payouts (single and a CSV batch) and internal transfers (with the TOTP step-up), as forms.

Each form carries an idempotency key minted when the page was rendered, so a
double click or a re-post after a timeout replays the first payout or
transfer instead of sending twice (SPEC 8 idempotency, the API's own keys).
"""

from __future__ import annotations

import csv
import io
from typing import Any

from aiohttp import web

from ...api import ApiError, GATEWAY, InvalidRequest, REQUEST_ID, ValidationError, pagination, text_problem, validate
from ...api.merchant import (
    BATCH_ITEM_FIELDS, BATCH_NS, DASHBOARD, KEY_NS, MAX_BATCH_ITEMS, PAYOUT_FIELDS, PayoutRequest, check_destination,
    create_and_send, fingerprint, item_error, list_payouts, list_transfers, namespaced, parse_transfer, payout_route,
    payout_units, require_merchant, send_transfer, servable_coins,
)
from .routes_payments import form_body, pager, principal
from .session import Session
from .views import error_text, render, see_other, signed_in, signed_in_with_files

routes = web.RouteTableDef()

CSV_COLUMNS = ("currency", "address", "amount", "external_id")
MAX_CSV_BYTES = 64 * 1024


def payout_request(gateway: Any, values: dict[str, Any], idem_key: str | None, **extra: Any) -> PayoutRequest:
    """A validated payout body as the core's request (the same checks as ``POST /v1/payout``)."""
    route = payout_route(gateway, values["currency"])
    if len(values["address"]) > route.coin.max_destination_length:
        raise ValidationError({"address": f"must be at most {route.coin.max_destination_length} characters"})
    units = payout_units(route.coin, values["amount"])
    destination = check_destination(route, values["address"])
    # The fingerprint covers what the API's route covers, so a replay with other values is refused alike.
    covered = {"description": values["description"], "callback_url": None} if "description" in values else {}
    return PayoutRequest(route=route, destination=destination, amount=units,
                         description=values.get("description"), idem_key=idem_key,
                         request_hash=fingerprint(coin=route.coin.symbol, destination=destination,
                                                  amount=units, **covered),
                         **extra)


async def _ledger_page(request: web.Request, session: Session, template: str, rows: str, list_rows: Any,
                       limits: tuple[int, int], *, status: int = 200, **context: Any) -> web.Response:
    """A page listing one kind of the account's money movements (``rows``), a page at a time,
    with the send form's coin choices; ``context`` adds a notice, an error or the form's values."""
    gateway = request.app[GATEWAY]
    limit, offset = pagination(request.query, default_limit=limits[0], max_limit=limits[1])
    listed = await list_rows(gateway, session.merchant_id, limit=limit, offset=offset)
    merchant = await require_merchant(gateway.db, session.merchant_id)
    return render(request, session, template, {
        rows: listed[rows], "page": pager(listed["total"], limit, offset, {}),
        "coins": servable_coins(gateway, merchant), "values": {}, **context}, status=status)


async def _payouts_page(request: web.Request, session: Session, **context: Any) -> web.Response:
    return await _ledger_page(request, session, "dashboard/payouts.html", "payouts", list_payouts, (20, 200),
                              **context)


@routes.get("/app/payouts")
@signed_in
async def payouts(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    return await _payouts_page(request, session)


@routes.post("/app/payouts")
@signed_in
async def create_payout(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    body = form_body(form, ("currency", "address", "amount", "description", "idempotency_key"))
    try:
        values = validate(body, PAYOUT_FIELDS)
        payout = payout_request(gateway, values, namespaced(KEY_NS, values["idempotency_key"]),
                                request_id=request.get(REQUEST_ID))
        await create_and_send(gateway, session.merchant_id, payout)
    except ApiError as exc:
        return await _payouts_page(request, session, error=error_text(exc), values=body, status=exc.status)
    raise see_other("/app/payouts", "payout-created")


def parse_csv(data: bytes) -> list[dict[str, str]]:
    """Rows of a batch file: a header naming currency, address, amount, external_id; at most 100 rows."""
    if len(data) > MAX_CSV_BYTES:
        raise ValidationError({"file": f"must be at most {MAX_CSV_BYTES // 1024} KiB"})
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValidationError({"file": "must be UTF-8 text"}) from None
    problem = text_problem(text)  # the edge's rule for text (a file's content is not a form field)
    if problem:
        raise ValidationError({"file": problem})
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip().lower() for name in reader.fieldnames or []]
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise ValidationError({"file": f"the header row must name {', '.join(CSV_COLUMNS)}"
                                       f" (missing {', '.join(missing)})"})
    reader.fieldnames = header
    rows: list[dict[str, str]] = []
    for row in reader:
        if len(rows) == MAX_BATCH_ITEMS:
            raise InvalidRequest(f"batch exceeds max of {MAX_BATCH_ITEMS}", code="batch_too_large")
        rows.append({name: (row.get(name) or "").strip() for name in CSV_COLUMNS})
    if not rows:
        raise InvalidRequest("batch is empty", code="batch_empty")
    return rows


async def _batch_item(gateway: Any, merchant_id: str, index: int, item: dict[str, str],
                      request_id: str | None) -> dict[str, Any]:
    result = {"index": index, "external_id": item.get("external_id"), "track_id": None, "status": "failed",
              "error": None}
    try:
        values = validate(item, BATCH_ITEM_FIELDS)
        payout = payout_request(gateway, values, namespaced(BATCH_NS, values["external_id"]),
                                external_id=values["external_id"], request_id=request_id)
        outcome = await create_and_send(gateway, merchant_id, payout)
    except ApiError as exc:
        result["error"] = item_error(exc)
        return result
    result.update(track_id=outcome.row["track_id"], status="idempotent" if outcome.replay else "created")
    return result


@routes.post("/app/payouts/batch")
@signed_in_with_files
async def batch(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """Each row is paid (or refused) on its own, idempotent by its external_id, like ``POST /v1/payout/batch``."""
    gateway = request.app[GATEWAY]
    upload, pasted = form.get("file"), form.get("rows")
    try:
        if isinstance(upload, web.FileField) and upload.filename:
            data = upload.file.read(MAX_CSV_BYTES + 1)
        elif isinstance(pasted, str) and pasted.strip():
            data = pasted.encode()
        else:
            raise ValidationError({"file": "choose a CSV file or paste its rows"})
        rows = parse_csv(data)
        seen: set[str] = set()
        for row in rows:
            if row["external_id"] and row["external_id"] in seen:
                raise InvalidRequest("duplicate external_id within batch", code="duplicate_external_id")
            seen.add(row["external_id"])
    except ApiError as exc:
        return await _payouts_page(request, session, error=error_text(exc), status=exc.status)
    request_id = request.get(REQUEST_ID)
    results = [await _batch_item(gateway, session.merchant_id, i, row, request_id) for i, row in enumerate(rows)]
    summary = {s: sum(1 for r in results if r["status"] == s) for s in ("created", "idempotent", "failed")}
    return await _payouts_page(request, session, batch={"summary": {"total": len(results), **summary},
                                                        "results": results})


# -- transfers ----------------------------------------------------------------------------------


async def _transfers_page(request: web.Request, session: Session, **context: Any) -> web.Response:
    return await _ledger_page(request, session, "dashboard/transfers.html", "transfers", list_transfers,
                              (100, 500), **context)


@routes.get("/app/transfers")
@signed_in
async def transfers_page(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    return await _transfers_page(request, session)


@routes.post("/app/transfers")
@signed_in
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
