"""Core services for payouts: their statuses, checking a destination or amount, and asking for one.

Why its own module: plugins that send a merchant's money on a rule (schedules, auto-withdraw, the
messaging mini-app) go through the standard payout pipeline with the API's checks and errors.

Records, never rows: plugins reach these through ``orbchain.api`` (docs/plugins.md, "Core services").
"""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple

from . import worker as payout_worker, service as payouts
from ..contract.gateway import PluginGateway as Gateway


class PayoutRecord(NamedTuple):
    """A payout a plugin asked for: ``replay`` is True when its idempotency key already named one."""

    id: str
    track_id: str
    status: str
    amount: int
    replay: bool


# Plugin idempotency keys are "<namespace>:<rest>"; the core's own namespaces are refused
# so a plugin's key never replays a merchant's API payout, batch item or refund.
_CORE_KEY_NAMESPACES = frozenset({"key", "batch", "refund"})


async def payout_statuses(gateway: "Gateway", payout_ids: Iterable[str]) -> dict[str, str]:
    """The status (``Confirming``, ``Confirmed``, ``Failed``) of each known payout id; unknown ids are absent."""
    ids = sorted(set(payout_ids))
    found: dict[str, str] = {}
    for start in range(0, len(ids), 500):  # bounded IN lists on both databases
        chunk = ids[start:start + 500]
        names = {f"p{i}": payout_id for i, payout_id in enumerate(chunk)}
        rows = await gateway.db.fetch_all(
            f"SELECT id, status FROM payouts WHERE id IN ({', '.join(':' + n for n in names)})", names)
        found.update({r["id"]: r["status"] for r in rows})
    return found


def payout_destination(gateway: "Gateway", coin: str, destination: str) -> str:
    """``destination`` in canonical form, validated exactly like a payout's address.

    Raises the payout errors: 400 validation (unknown coin), invalid_address or
    burn_address; 503 payouts_not_configured when no chain here sends ``coin``.
    """
    route = payouts.payout_route(gateway, coin)
    return payouts.check_destination(route, destination)


def payout_amount(gateway: "Gateway", coin: str, amount: Any, field: str = "amount") -> int:
    """Base units of ``amount`` checked like a payout's: above 0, no finer than the coin, at
    least its minimum payout; a 400 validation naming ``field`` otherwise."""
    return payouts.payout_units(gateway.coins.require(coin), amount, field)


async def request_payout(gateway: "Gateway", merchant_id: str, *, coin: str, destination: str, amount: int,
                         idempotency_key: str, description: str | None = None,
                         request_id: str | None = None, holdable: bool = True) -> PayoutRecord:
    """Reserve and queue a payout through the standard pipeline (SPEC 4.3), once per key.

    The same checks as ``POST /v1/payout`` (destination, minimum, balance,
    backlog breaker) raise the same errors: 400 insufficient_balance,
    invalid_address, 503 payout_backlog_too_large. ``idempotency_key`` must
    carry the plugin's own namespace (``"sched:..."``); a second call with
    the key returns the first payout with ``replay=True`` and moves nothing.
    ``request_id``: the HTTP request that asked for it, if any (its webhooks carry it, SPEC 6.1).
    ``holdable=False``: the payout is one leg of an exchange already under way (a swap's deposit to the
    venue's address, for an order that expires): ``decide_payout_hold`` is not asked, so no approval
    policy can leave it waiting while the other leg runs out (docs/decisions.md).
    """
    namespace = idempotency_key.split(":", 1)[0]
    if ":" not in idempotency_key or not namespace or namespace in _CORE_KEY_NAMESPACES:
        raise ValueError(f"plugin idempotency key needs its own namespace: {idempotency_key!r}")
    route = payouts.payout_route(gateway, coin)
    target = payouts.check_destination(route, destination)
    units = payouts.payout_units(route.coin, route.coin.format(amount))
    request = payouts.PayoutRequest(
        route=route, destination=target, amount=units, description=description, idem_key=idempotency_key,
        request_id=request_id, holdable=holdable,
        request_hash=payouts.fingerprint(coin=coin, destination=target, amount=units, description=description))
    outcome = await payout_worker.create_and_send(gateway, merchant_id, request)
    row = outcome.row
    return PayoutRecord(row["id"], row["track_id"], row["status"], gateway.db.to_int(row["amount"]), outcome.replay)
