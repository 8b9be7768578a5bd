"""Payouts as forms: one payout or a CSV batch, each reviewed before anything moves, then confirmed.

The form posts to its review (``POST /app/payouts``, ``POST /app/payouts/batch``):
the checked values, the balance they draw on, or each refusal beside its
field or row. The review's "Confirm and pay" posts the sealed review
(``review_seal``), so what is paid is what was shown; "Back/Edit" returns to
the form with the input kept. No JavaScript anywhere (docs/decisions.md).
"""

from __future__ import annotations

import csv
import io
from typing import Any

from aiohttp import web

from ...api import ApiError, GATEWAY, InvalidRequest, REQUEST_ID, ValidationError, pagination, text_problem, validate
from ...api.merchant import (
    MAX_BATCH_ITEMS, PAYOUT_FIELDS, merchant_balances, require_merchant, servable_coins,
)
from .form_errors import error_context
from .payout_review import FEE_NOTE, confirm_batch, confirm_payout, payout_history, review_batch, review_payout
from .routes_payments import form_body, pager
from .session import Session
from .views import render, see_other, signed_in, signed_in_with_files

routes = web.RouteTableDef()

CSV_COLUMNS = ("currency", "address", "amount", "external_id")
MAX_CSV_BYTES = 64 * 1024
FORM_NAMES = ("currency", "address", "amount", "description", "idempotency_key")


async def _coin_table(gateway: Any, merchant_id: str, coins: list[str]) -> list[dict[str, Any]]:
    """The form's coins with what can leave: available balance, the coin's minimum, who pays the fee."""
    balances = await merchant_balances(gateway.db, merchant_id)
    table = []
    for symbol in dict.fromkeys([*coins, *balances]):
        coin = gateway.coins.get(symbol)
        if coin is not None and coin.payable:
            table.append({"coin": symbol, "available": coin.format(balances.get(symbol, 0)),
                          "minimum": coin.min_payout or coin.format(1), "fee": FEE_NOTE})
    return table


async def _payouts_page(request: web.Request, session: Session, *, status: int = 200, **context: Any) -> web.Response:
    """The payouts page: the forms (with balances and minimums), then the history in words."""
    gateway = request.app[GATEWAY]
    limit, offset = pagination(request.query, default_limit=20, max_limit=200)
    listed = await payout_history(gateway, session.merchant_id, limit, offset)
    merchant = await require_merchant(gateway.db, session.merchant_id)
    coins = servable_coins(gateway, merchant)
    return render(request, session, "dashboard/payouts.html", {
        "payouts": listed["payouts"], "page": pager(listed["total"], limit, offset, {}), "coins": coins,
        "balances": await _coin_table(gateway, session.merchant_id, coins), "values": {}, "rows_text": "",
        **context}, status=status)


@routes.get("/app/payouts")
@signed_in(scope="payout:read")
async def payouts(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    return await _payouts_page(request, session)


@routes.post("/app/payouts")
@signed_in(scope="payout:create")
async def review(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """The review of the payout form; nothing moves until its confirm."""
    body = form_body(form, FORM_NAMES)
    try:
        reviewed = await review_payout(request.app[GATEWAY], session, validate(body, PAYOUT_FIELDS))
    except ApiError as exc:
        return await _payouts_page(request, session, values=body, status=exc.status, **error_context(exc))
    return render(request, session, "dashboard/payout_review.html", {"review": reviewed, "values": body})


@routes.post("/app/payouts/confirm")
@signed_in(scope="payout:create")
async def confirm(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """"Confirm and pay" (the sealed review pays once) or "Back/Edit" (the form, input kept)."""
    body = form_body(form, FORM_NAMES)
    if form.get("action") == "edit":
        return await _payouts_page(request, session, values=body)
    try:
        outcome = await confirm_payout(request.app[GATEWAY], session, form.get("review_token"), request.get(REQUEST_ID))
    except ApiError as exc:
        return await _payouts_page(request, session, values=body, status=exc.status, **error_context(exc))
    raise see_other("/app/payouts", "payout-held" if outcome.held_for_approval else "payout-created")


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
    seen: set[str] = set()
    for row in reader:
        if len(rows) == MAX_BATCH_ITEMS:
            raise InvalidRequest(f"batch exceeds max of {MAX_BATCH_ITEMS}", code="batch_too_large")
        rows.append({name: (row.get(name) or "").strip() for name in CSV_COLUMNS})
        external_id = rows[-1]["external_id"]
        if external_id and external_id in seen:
            raise InvalidRequest("duplicate external_id within batch", code="duplicate_external_id")
        seen.add(external_id)
    if not rows:
        raise InvalidRequest("batch is empty", code="batch_empty")
    return rows


def _upload_text(form: Any) -> str:
    """The batch as text: the uploaded file, else the pasted rows."""
    upload, pasted = form.get("file"), form.get("rows")
    if isinstance(upload, web.FileField) and upload.filename:
        data = upload.file.read(MAX_CSV_BYTES + 1)
    elif isinstance(pasted, str) and pasted.strip():
        data = pasted.encode()
    else:
        raise ValidationError({"file": "choose a CSV file or paste its rows"})
    parse_csv(data)  # size and encoding first, so the text kept for Back/Edit is one the form can hold
    return data.decode("utf-8-sig")


@routes.post("/app/payouts/batch")
@signed_in_with_files(scope="payout:create")
async def batch(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """The batch's review: every row checked (each refusal on its row), totals per coin; nothing moves yet."""
    pasted = form.get("rows") if isinstance(form.get("rows"), str) else ""
    try:
        text = _upload_text(form)
        reviewed = await review_batch(request.app[GATEWAY], session, parse_csv(text.encode()))
    except ApiError as exc:
        return await _payouts_page(request, session, rows_text=pasted, status=exc.status, **error_context(exc))
    return render(request, session, "dashboard/payout_batch_review.html", {"review": reviewed, "rows_text": text})


@routes.post("/app/payouts/batch/confirm")
@signed_in(scope="payout:create")
async def batch_confirm(request: web.Request, session: Session, form: Any) -> web.StreamResponse:
    """"Confirm and pay" the reviewed rows (each once, by its external_id) or "Back/Edit" the pasted rows."""
    text = form.get("rows") if isinstance(form.get("rows"), str) else ""
    if form.get("action") == "edit":
        return await _payouts_page(request, session, rows_text=text)
    try:
        results = await confirm_batch(request.app[GATEWAY], session, form.get("review_token"),
                                      request.get(REQUEST_ID))
    except ApiError as exc:
        return await _payouts_page(request, session, rows_text=text, status=exc.status, **error_context(exc))
    summary = {s: sum(1 for r in results if r["status"] == s) for s in ("created", "idempotent", "failed")}
    return await _payouts_page(request, session, batch={"summary": {"total": len(results), **summary},
                                                        "results": results})
