"""Balance swaps without HTTP: quote, commit, read (SPEC 3.5, 4.12, 4.13).

The dashboard routes and the mini-app call these functions; they take
plain values and return plain dicts, raising ``orbchain.api`` errors.

* ``quote`` asks the venue and changes nothing.
* ``commit`` asks for a fresh quote, then in ONE database transaction
  inserts the swap (QUOTED) and moves the source amount from the merchant's
  available balance into the venue's ledger account ``swap:<venue>``: the
  debit is atomic, an overdraft is refused under the ledger's row lock, and
  a crash leaves either both or neither. The job in ``engine.py`` then opens
  the order at the venue by swap id and drives it to CONFIRMED or FAILED
  (source credited back in full).
"""

from __future__ import annotations

from datetime import datetime, UTC
from decimal import ROUND_DOWN, Decimal
from typing import TYPE_CHECKING, Any, Mapping

from ...api import (
    AmountError, Conflict, Forbidden, InsufficientBalance, NotConfigured, NotFound, Principal, ServiceUnavailable,
    ValidationError, body_idempotency_key, ledger, verify_second_factor,
)
from ...api.merchant import DASHBOARD_CHANNEL, require_merchant
from .venues import SwapVenue, VenueQuote, VenueRefused, VenueUnavailable
from . import store
from .settings import read_settings
from .venue_registry import venues_of

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

LEDGER_KIND = "swap"
# XMR taken from the monero plugin's swap-in account waits here between conversion attempts (never a balance).
SWAPIN_HELD = "swaps:swap_in_held"
MAX_COIN_LEN = 20


def platform_fee(row: Mapping[str, Any], actual: int) -> int:
    """The platform fee charged on a conversion's delivery: swap-in rows carry the deposit's fee share (SPEC 1)."""
    fee, source = row.get("fee_amount"), int(row["from_amount"])
    if not fee or not source:
        return 0
    return min(actual, actual * int(fee) // source)


def venue_account(venue: str) -> str:
    """The ledger account holding what is on its way through ``venue`` (SPEC: postings through a venue account).

    This plugin's own account (the core opens none for venues); like the
    core's constructors it refuses a name that would spell another account.
    """
    if not isinstance(venue, str) or not venue or ledger.ACCOUNT_SEPARATOR in venue:
        raise ValueError(f"venue must be a non-empty string without {ledger.ACCOUNT_SEPARATOR!r}: {venue!r}")
    return f"swap:{venue}"


def venue_world(venue: str) -> str:
    """The venue as the outside world: the source coin leaves the books to it, the target coin arrives from it."""
    return ledger.world(f"venue-{venue}")


# -- requests ----------------------------------------------------------------------------------


def _coin_field(gateway: "Gateway", body: Mapping[str, Any], name: str) -> Any:
    value = body.get(name)
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_COIN_LEN:
        raise ValidationError({name: "is required: a coin symbol"})
    coin = gateway.coins.get(value.strip().upper())
    if coin is None:
        raise ValidationError({name: f"unknown coin {value.strip().upper()}"})
    if not coin.payable:
        raise ValidationError({name: f"{coin.symbol} is never held as a balance"})
    return coin


def parse_request(gateway: "Gateway", body: Mapping[str, Any]) -> tuple[str, str, int]:
    """(from_coin, to_coin, amount in base units of from_coin) of a quote or swap body, or a 400."""
    source, target = _coin_field(gateway, body, "from_coin"), _coin_field(gateway, body, "to_coin")
    if source.symbol == target.symbol:
        raise ValidationError({"to_coin": "must differ from from_coin"})
    amount = body.get("amount")
    if amount is None or isinstance(amount, (bool, float)):
        raise ValidationError({"amount": "is required: a decimal string"})
    try:
        units = source.to_units(amount)
    except AmountError as exc:
        raise ValidationError({"amount": str(exc)}) from None
    if units <= 0:
        raise ValidationError({"amount": "must be greater than 0"})
    return source.symbol, target.symbol, units


def pick_venue(gateway: "Gateway", from_coin: str, to_coin: str) -> SwapVenue:
    """The venue for the pair (the configured one first); 503 when none is installed, 400 when none converts it."""
    if not len(venues_of(gateway)):
        raise NotConfigured("not configured", code="swaps_not_configured",
                            detail={"venue": "no swap venue is enabled on this deployment"})
    venue = venues_of(gateway).for_pair(from_coin, to_coin, read_settings(gateway.config).venue)
    if venue is None:
        raise ValidationError({"to_coin": f"no venue converts {from_coin} to {to_coin}"})
    return venue


async def venue_quote(gateway: "Gateway", from_coin: str, to_coin: str, units: int,
                      venue: SwapVenue | None = None) -> VenueQuote:
    """A venue's quote, its errors mapped: 503 venue_unavailable, 400 for a refusal or a too small amount."""
    venue = venue or pick_venue(gateway, from_coin, to_coin)
    try:
        quote = await venue.quote(from_coin, to_coin, units)
    except VenueUnavailable:
        raise ServiceUnavailable("swap venue unavailable", code="venue_unavailable") from None
    except VenueRefused as exc:
        raise ValidationError({"amount": exc.reason}) from None
    if units < quote.min_from_amount:
        minimum = gateway.coins.require(from_coin).format(quote.min_from_amount)
        raise ValidationError({"amount": f"below the venue minimum of {minimum} {from_coin}"})
    if quote.to_amount <= 0:
        raise ValidationError({"amount": "too small to convert"})
    return quote


def _iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def rate_text(gateway: "Gateway", from_coin: str, to_coin: str, from_units: int, to_units: int) -> str:
    """Target coin units per source coin unit, for display only (amounts are what count)."""
    source, target = gateway.coins.require(from_coin), gateway.coins.require(to_coin)
    rate = (Decimal(to_units) / Decimal(10) ** target.decimals) / (Decimal(from_units) / Decimal(10) ** source.decimals)
    return format(rate.quantize(Decimal(1).scaleb(-18), rounding=ROUND_DOWN).normalize(), "f")


def quote_view(gateway: "Gateway", quote: VenueQuote) -> dict[str, Any]:
    """SPEC 4.12 quote response."""
    source, target = gateway.coins.require(quote.from_coin), gateway.coins.require(quote.to_coin)
    return {
        "venue": quote.venue, "from_coin": quote.from_coin, "to_coin": quote.to_coin,
        "from_amount": source.format(quote.from_amount), "to_amount": target.format(quote.to_amount),
        "rate": rate_text(gateway, quote.from_coin, quote.to_coin, quote.from_amount, quote.to_amount),
        "min_from_amount": source.format(quote.min_from_amount), "valid_until": _iso(quote.valid_until),
        "floating_rate": quote.floating,
    }


async def quote(gateway: "Gateway", body: Mapping[str, Any]) -> dict[str, Any]:
    """POST /dashboard/swap/quote and /tgapp/swap/quote: no state change."""
    from_coin, to_coin, units = parse_request(gateway, body)
    return quote_view(gateway, await venue_quote(gateway, from_coin, to_coin, units))


# -- commit ------------------------------------------------------------------------------------


async def _step_up(gateway: "Gateway", principal: Principal, code: Any, always: bool, channel: str) -> None:
    """TOTP of whoever swaps (a team member's own): the mini-app (the holder's chat) always asks (SPEC 5.4),
    the dashboard when that person has 2FA on, as for transfers. A wrong code counts against ``channel``'s
    lockout (core/accounts/lockout.py)."""
    if always and not (await require_merchant(gateway.db, principal.merchant_id))["totp_enabled"]:
        raise Forbidden("two-factor authentication must be set up first", code="totp_setup_required")
    await verify_second_factor(gateway, principal, code, channel=channel)


def _same(existing: Mapping[str, Any], from_coin: str, to_coin: str, units: int) -> dict[str, Any]:
    if (existing["from_coin"], existing["to_coin"], existing["from_amount"]) != (from_coin, to_coin, units):
        raise Conflict("idempotency_key was already used for a different swap", code="idempotency_key_reused")
    return dict(existing)


async def commit(gateway: "Gateway", merchant_id: str, body: Mapping[str, Any], *,
                 totp_always: bool = False, totp_channel: str = DASHBOARD_CHANNEL,
                 principal: Principal | None = None) -> dict[str, Any]:
    """POST /dashboard/swap and /tgapp/swap: debit the source atomically and schedule the swap.

    ``principal`` is who swaps (their own TOTP is asked); None: the account holder.

    Returns the swap view (status QUOTED; ``idempotent: true`` on a replay of
    ``idempotency_key``). 400 insufficient_balance, validation; 401/403 TOTP;
    503 venue_unavailable when no fresh quote can be had (nothing moved).
    """
    from_coin, to_coin, units = parse_request(gateway, body)
    key = body_idempotency_key(body)
    if key is not None:
        existing = await store.by_key(gateway, merchant_id, key)
        if existing is not None:
            return {**swap_view(gateway, _same(existing, from_coin, to_coin, units)), "idempotent": True}
    venue = pick_venue(gateway, from_coin, to_coin)
    fresh = await venue_quote(gateway, from_coin, to_coin, units, venue)
    if await ledger.balance(gateway.db, ledger.merchant_available(merchant_id), from_coin) < units:
        raise InsufficientBalance()  # early answer that spends no TOTP code; the ledger decides below
    actor = principal if principal is not None else Principal(merchant_id=merchant_id, via="jwt")
    await _step_up(gateway, actor, body.get("totp_code"), totp_always, totp_channel)
    settings = read_settings(gateway.config)
    now = gateway.now()
    row = {
        "id": store.new_swap_id(), "merchant_id": merchant_id, "kind": store.BALANCE, "venue": venue.name,
        "from_coin": from_coin, "to_coin": to_coin, "from_amount": units, "to_amount_quoted": fresh.to_amount,
        "floating": fresh.floating, "status": store.QUOTED, "fallback": False, "credit_done": True,
        "idempotency_key": key, "attempts": 0, "next_attempt_at": now,
        "deadline_at": now + settings.create_timeout_seconds, "created_at": now, "updated_at": now,
    }
    async with gateway.db.transaction():
        inserted = await store.insert_swap(gateway, row)
        if inserted is None:  # a twin with the same key committed first
            twin = await store.by_key(gateway, merchant_id, key or "")
            if twin is None:  # pragma: no cover - only the key can conflict
                raise RuntimeError("swap insert conflicted without an idempotency key")
            return {**swap_view(gateway, _same(twin, from_coin, to_coin, units)), "idempotent": True}
        posted = await ledger.transfer(
            gateway.db, from_account=ledger.merchant_available(merchant_id), to_account=venue_account(venue.name),
            coin=from_coin, amount=units, reference=f"swap:{row['id']}:debit", kind=LEDGER_KIND,
            merchant_id=merchant_id, memo=f"swap {from_coin}->{to_coin} via {venue.name}", savepoint=False)
    await ledger.notify_posted(gateway, posted)
    return swap_view(gateway, inserted)


# -- reads -------------------------------------------------------------------------------------


def _fmt(gateway: "Gateway", coin: str, units: int | None) -> str | None:
    return None if units is None else gateway.coins.require(coin).format(units)


def swap_view(gateway: "Gateway", row: Mapping[str, Any]) -> dict[str, Any]:
    """SPEC 2.16 swap record (plus venue, kind and times)."""
    return {
        "swap_id": row["id"], "kind": row["kind"], "venue": row["venue"],
        "from_coin": row["from_coin"], "from_amount": _fmt(gateway, row["from_coin"], row["from_amount"]),
        "to_coin": row["to_coin"], "to_amount_quoted": _fmt(gateway, row["to_coin"], row["to_amount_quoted"]),
        "rate": rate_text(gateway, row["from_coin"], row["to_coin"], row["from_amount"], row["to_amount_quoted"]),
        "floating_rate": bool(row["floating"]), "status": row["status"],
        "actual_to_amount": _fmt(gateway, row["to_coin"], row["actual_to_amount"]),
        "payin_hash": row["payin_hash"], "payout_hash": row["payout_hash"], "refund_hash": row["refund_hash"],
        "failure_reason": row["failure_reason"], "track_id": row["track_id"],
        "created_at": int(row["created_at"]), "updated_at": int(row["updated_at"]),
    }


async def get_swap(gateway: "Gateway", merchant_id: str, swap_id: str) -> dict[str, Any]:
    """One swap of the caller; unknown and foreign ids are 404 alike."""
    row = await store.get(gateway, swap_id)
    if row is None or row["merchant_id"] != merchant_id:
        raise NotFound()
    return swap_view(gateway, row)


async def list_swaps(gateway: "Gateway", merchant_id: str, *, limit: int, offset: int) -> dict[str, Any]:
    rows, total = await store.list_for(gateway, merchant_id, limit, offset)
    return {"swaps": [swap_view(gateway, r) for r in rows], "total": total, "limit": limit, "offset": offset}
