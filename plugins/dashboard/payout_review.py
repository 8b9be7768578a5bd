"""What a payout's review page shows and what its confirm pays: one payout, or a batch row by row.

The review runs the API's own checks (``POST /v1/payout``: coin, amount and
minimum, destination) and adds the one the API leaves to the ledger, the
available balance, so an overdraft is refused beside the amount before
anything moves. The confirm pays what the sealed review (``review_seal``)
names, through the same idempotent path as the API, so it pays at most once.
"""

from __future__ import annotations

import secrets
from typing import Any

from ...api import ApiError, Conflict, InsufficientBalance, InvalidRequest, PayoutOrder, ValidationError, validate
from ...api.merchant import (
    BATCH_ITEM_FIELDS, BATCH_NS, KEY_NS, PayoutRequest, check_destination, create_and_send, failure_reasons,
    fingerprint, item_error, list_payouts, merchant_balances, namespaced, payout_route, payout_units,
)
from .review_seal import seal, unseal
from .session import Session
from .views import error_text

SINGLE, BATCH = "payout", "payout-batch"
FEE_NOTE = "Paid by the gateway, not from your balance"
# Refusals of a destination that the API names by code only: on the form they sit beside the address.
ADDRESS_CODES = ("invalid_address", "burn_address", "self_transfer")
# failure_reason of the payout worker (core/payouts/service.py) in words; "<code>: <why>" keeps its why.
FAILURES = {
    "broadcast_timeout": "the network did not take the transaction in time",
    "dropped": "the transaction was dropped by the network",
    "reverted": "the transaction was reverted on chain",
    "broadcast_rejected": "the network refused the transaction",
    "sign_rejected": "the transaction could not be signed",
    "rejected": "rejected by an approver",  # the approvals plugin
    "expired": "not approved in time",
}


def payout_request(gateway: Any, values: dict[str, Any], idem_key: str | None, **extra: Any) -> PayoutRequest:
    """A validated payout body as the core's request (the same checks as ``POST /v1/payout``)."""
    route = payout_route(gateway, values["currency"])
    if len(values["address"]) > route.coin.max_destination_length:
        raise ValidationError({"address": f"must be at most {route.coin.max_destination_length} characters"})
    units = payout_units(route.coin, values["amount"])
    try:
        destination = check_destination(route, values["address"])
    except InvalidRequest as exc:
        raise ValidationError({"address": exc.message}, code=exc.code) from None
    # The fingerprint covers what the API's route covers, so a replay with other values is refused alike.
    covered = {"description": values["description"], "callback_url": None} if "description" in values else {}
    return PayoutRequest(route=route, destination=destination, amount=units,
                         description=values.get("description"), idem_key=idem_key,
                         request_hash=fingerprint(coin=route.coin.symbol, destination=destination,
                                                  amount=units, **covered),
                         **extra)


async def _checked(gateway: Any, values: dict[str, Any]) -> PayoutRequest:
    """``payout_request``, then the chain's own refusals (a Lightning invoice's amount or expiry), as at confirm."""
    payout = payout_request(gateway, values, None)
    route = payout.route
    await route.sender.check_payout(PayoutOrder("", route.coin.symbol, payout.destination, payout.amount))
    return payout


def _over_balance(payout: PayoutRequest, available: int) -> ValidationError:
    coin = payout.route.coin
    return ValidationError({"amount": f"is more than your available balance of {coin.format(available)}"
                                      f" {coin.symbol}"}, code="insufficient_balance")


def _facts(payout: PayoutRequest, available: int) -> dict[str, Any]:
    """One payout as the review shows it: every amount in the coin's own format."""
    route, coin = payout.route, payout.route.coin
    return {"coin": coin.symbol, "network": f"{route.chain} ({route.network})", "destination": payout.destination,
            "amount": coin.format(payout.amount), "fee": FEE_NOTE, "debit": coin.format(payout.amount),
            "available": coin.format(available), "after": coin.format(available - payout.amount),
            "minimum": coin.min_payout or coin.format(1)}


async def review_payout(gateway: Any, session: Session, values: dict[str, Any]) -> dict[str, Any]:
    """The review of one validated form (``PAYOUT_FIELDS``): what it pays, and its token.

    The form's idempotency key goes into the token (one is minted if the form
    had none), so every confirm of this review names the same payout.
    """
    values = {**values, "idempotency_key": values.get("idempotency_key") or secrets.token_urlsafe(18)}
    payout = await _checked(gateway, values)
    available = (await merchant_balances(gateway.db, session.merchant_id)).get(payout.route.coin.symbol, 0)
    if payout.amount > available:
        raise _over_balance(payout, available)
    hold_notice = await gateway.hooks.decide_payout_hold_notice(
        merchant_id=session.merchant_id, coin=payout.route.coin.symbol, amount=payout.amount,
        requested_by=session.requester)
    return {**_facts(payout, available), "description": values.get("description"), "hold_notice": hold_notice,
            "token": seal(gateway, session, SINGLE, values)}


async def confirm_payout(gateway: Any, session: Session, token: Any, request_id: str | None) -> Any:
    """Pay the reviewed payout; 409 ``review_used`` when this review was paid already (nothing more is sent)."""
    values = unseal(gateway, session, SINGLE, token)
    payout = payout_request(gateway, values, namespaced(KEY_NS, values["idempotency_key"]), request_id=request_id,
                            requested_by=session.requester)
    try:
        outcome = await create_and_send(gateway, session.merchant_id, payout)
    except InsufficientBalance:  # the balance fell since the review: said beside the amount, as at review
        available = (await merchant_balances(gateway.db, session.merchant_id)).get(payout.route.coin.symbol, 0)
        raise _over_balance(payout, available) from None
    if outcome.replay:
        raise Conflict(f"This payout was already confirmed (track id {outcome.row['track_id']}) and is sent"
                       " once: nothing more was sent.", code="review_used")
    return outcome


async def review_batch(gateway: Any, session: Session, rows: list[dict[str, str]]) -> dict[str, Any]:
    """Every row checked on its own, the balance drawn down row by row; the payable rows' token and totals."""
    balances = await merchant_balances(gateway.db, session.merchant_id)
    left = dict(balances)
    lines: list[dict[str, Any]] = []
    payable: list[dict[str, Any]] = []
    totals: dict[str, dict[str, Any]] = {}
    for index, row in enumerate(rows):
        line: dict[str, Any] = {"row": index + 1, **row, "error": None}
        try:
            values = validate(row, BATCH_ITEM_FIELDS)
            payout = await _checked(gateway, values)
            symbol = payout.route.coin.symbol
            if payout.amount > left.get(symbol, 0):
                raise _over_balance(payout, left.get(symbol, 0))
        except ApiError as exc:
            line["error"] = error_text(exc)
            lines.append(line)
            continue
        left[symbol] -= payout.amount
        payable.append(values)
        lines.append({**line, **_facts(payout, balances.get(symbol, 0))})
        total = totals.setdefault(symbol, {"coin": symbol, "rows": 0, "units": 0})
        total["rows"] += 1
        total["units"] += payout.amount
    coins = {t["coin"]: gateway.coins.require(t["coin"]) for t in totals.values()}
    summary = [{"coin": s, "rows": t["rows"], "debit": coins[s].format(t["units"]),
                "available": coins[s].format(balances.get(s, 0)), "after": coins[s].format(left[s])}
               for s, t in totals.items()]
    return {"lines": lines, "totals": summary, "payable": len(payable), "failed": len(lines) - len(payable),
            "token": seal(gateway, session, BATCH, payable) if payable else None}


async def confirm_batch(gateway: Any, session: Session, token: Any, request_id: str | None) -> list[dict[str, Any]]:
    """Pay each reviewed row, idempotent by its external_id; 409 ``review_used`` when every row was paid before."""
    rows = unseal(gateway, session, BATCH, token)
    results = [await _batch_item(gateway, session, i, values, request_id) for i, values in enumerate(rows)]
    if all(r["status"] == "idempotent" for r in results):
        raise Conflict("This batch was already confirmed and each row is paid once: nothing more was sent.",
                       code="review_used")
    return results


async def _batch_item(gateway: Any, session: Session, index: int, values: dict[str, Any],
                      request_id: str | None) -> dict[str, Any]:
    result = {"index": index, "external_id": values["external_id"], "track_id": None, "status": "failed",
              "error": None}
    try:
        payout = payout_request(gateway, values, namespaced(BATCH_NS, values["external_id"]),
                                external_id=values["external_id"], request_id=request_id,
                                requested_by=session.requester)
        outcome = await create_and_send(gateway, session.merchant_id, payout)
    except ApiError as exc:
        result["error"] = item_error(exc)
        return result
    result.update(track_id=outcome.row["track_id"], status="idempotent" if outcome.replay else "created")
    return result


async def payout_history(gateway: Any, merchant_id: str, limit: int, offset: int = 0) -> dict[str, Any]:
    """A page of payouts, newest first, each with its status in words (the payouts page's and Home's)."""
    listed = await list_payouts(gateway, merchant_id, limit=limit, offset=offset)
    reasons = await failure_reasons(gateway, merchant_id,
                                    [p["id"] for p in listed["payouts"] if p["status"] == "FAILED"])
    rows = [{**p, "words": _held_words(p) or status_words(p["status"], reasons.get(p["id"]))}
            for p in listed["payouts"]]
    return {"payouts": rows, "total": listed["total"]}


def _held_words(payout: dict[str, Any]) -> str | None:
    """Why a Confirming payout waits: an approval, the operator's signing policy (its reason code) or the fee."""
    if payout.get("waitingForFees"):
        return f"Waiting for network fees to fall ({payout['waitingForFees']}); it is sent when they do"
    if payout.get("awaitingApproval"):
        return "Awaiting approval by a second person (Approvals)"
    if payout.get("heldByPolicy"):
        return f"Held by the operator's signing policy ({payout['heldByPolicy']}); the operator releases or cancels it"
    return None


def status_words(status: str, reason: str | None) -> str:
    """A payout's status as the dashboard says it: Sending, Confirmed, or Failed with why."""
    if status.upper() == "CONFIRMING":
        return "Sending"
    if status.upper() == "CONFIRMED":
        return "Confirmed"
    code, _, why = (reason or "").partition(": ")
    words = FAILURES.get(code, reason or "no reason recorded")
    return f"Failed: {words}{f' ({why})' if why and code in FAILURES else ''}; the amount is back in your balance"
