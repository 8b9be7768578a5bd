"""Auto-settle (SPEC 4.2, 6.4): a payment's deposit converted into the merchant's settlement coin.

* ``settlement_coin`` on a white-label payment (a ``register_payment_fields``
  field) locks a venue quote for the payment's amount at creation.
* The account's ``default_settlement_coin`` (this plugin's setting, GET/PUT
  ``/dashboard/settings/settlement-coin``) applies to every credited payment
  deposit in another coin that has no settlement_coin of its own; the
  quote is then the one the venue gives when the order is opened.
* On crediting, ``filter_credit_postings`` sends the merchant's net (the platform
  fee is taken once, in the deposit's coin) to the venue account
  ``swap:<venue>`` and opens a swap row (kind ``settle``) in the same
  transaction; ``decide_credit_status`` holds the deposit CONFIRMED (its
  payment stays Paying). The swap job converts it; on CONFIRMED the target
  coin is credited, on a refused conversion (the venue promising
  materially less than the locked quote, or failing) the original coin is
  credited and ``swap_fallback`` is true. Either way ``complete_credit``
  then lets the payment become Paid, and ``payment.paid`` carries
  ``settled_coin``, ``settled_amount`` and ``swap_fallback``. No markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ...api import ValidationError, ledger
from . import store, venuein
from .service import pick_venue, platform_fee, venue_account
from .settings import read_settings
from .venue_registry import venues_of

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from ...api import Credit, PaymentView

FIELD = "settlement_coin"
WHITE_LABEL = "white_label"


def settlement_coin_symbol(gateway: "Gateway", value: Any, field: str = FIELD) -> str:
    """A coin the merchant can hold, or a 400 naming ``field``."""
    if not isinstance(value, str) or not value.strip() or len(value) > 20:
        raise ValidationError({field: "must be a coin symbol"})
    coin = gateway.coins.get(value.strip().upper())
    if coin is None:
        raise ValidationError({field: f"unknown coin {value.strip().upper()}"})
    if not coin.payable:
        raise ValidationError({field: f"{coin.symbol} cannot be held as a balance"})
    return coin.symbol


def parse_field(gateway: "Gateway", value: Any, payment_type: str, merchant_id: str) -> str:
    """``settlement_coin`` of a create body (white-label payments, SPEC 4.2)."""
    if payment_type != WHITE_LABEL:
        raise ValidationError({FIELD: "is accepted on white-label payments"})
    symbol = settlement_coin_symbol(gateway, value)
    if not len(venues_of(gateway)):
        pick_venue(gateway, symbol, symbol)  # raises the 503 "not configured"
    return symbol


async def store_field(gateway: "Gateway", payment: "PaymentView", value: str) -> None:
    """Lock the quote for the payment's amount, inside the transaction creating the payment."""
    from .service import venue_quote  # the quote's error mapping (503 venue down, 400 too small)

    if value == payment.pay_currency or payment.pay_amount is None:
        return
    venue = pick_venue(gateway, payment.pay_currency, value)
    quote = await venue_quote(gateway, payment.pay_currency, value, payment.pay_amount, venue)
    await store.lock_quote(gateway, track_id=payment.track_id, merchant_id=payment.merchant_id, venue=venue.name,
                           from_coin=payment.pay_currency, to_coin=value, from_amount=quote.from_amount,
                           to_amount=quote.to_amount)


# -- the credit ---------------------------------------------------------------------------------


async def _target(gateway: "Gateway", credit: "Credit") -> tuple[str, str] | None:
    """(venue, settlement coin) for this credit, or None: no conversion."""
    if credit.track_id is None or gateway.coins.require(credit.coin).settles_only_via_swap:
        return None  # a swap-only coin (XMR) is never a merchant net: swapin.py converts the whole deposit
    locked = await store.locked_quote(gateway, credit.track_id)
    if locked is not None and locked["from_coin"] == credit.coin:
        return locked["venue"], locked["to_coin"]
    default = await store.default_coin(gateway, credit.merchant_id)
    if default is None or default == credit.coin:
        return None
    venue = venues_of(gateway).for_pair(credit.coin, default, read_settings(gateway.config).venue)
    if venue is None:
        return None  # nothing converts it: the merchant keeps the coin paid (documented)
    return venue.name, default


async def credit_postings(gateway: "Gateway", credit: "Credit",
                          postings: list[ledger.Posting]) -> list[ledger.Posting] | None:
    """Send the merchant's net to the venue account and open the conversion, in the crediting transaction."""
    target = await _target(gateway, credit)
    if target is None:
        return None
    venue, to_coin = target
    mine = ledger.merchant_available(credit.merchant_id)
    net = sum(p.amount for p in postings if p.account == mine)
    if net <= 0:
        return None
    quoted = 0
    locked = await store.locked_quote(gateway, credit.track_id) if credit.track_id else None
    if locked is not None and locked["from_coin"] == credit.coin and locked["from_amount"]:
        # The rate locked at creation, applied to what is converted (the net of the fee).
        quoted = locked["to_amount"] * net // locked["from_amount"]
    now = gateway.now()
    settings = read_settings(gateway.config)
    await store.insert_swap(gateway, {
        "id": store.new_swap_id(), "merchant_id": credit.merchant_id, "kind": store.SETTLE, "venue": venue,
        "from_coin": credit.coin, "to_coin": to_coin, "from_amount": net, "to_amount_quoted": quoted,
        "floating": True, "status": store.QUOTED, "fallback": False, "deposit_id": credit.deposit.id,
        "track_id": credit.track_id, "credit_done": False, "idempotency_key": credit.reference, "attempts": 0,
        "next_attempt_at": now, "deadline_at": now + settings.create_timeout_seconds, "created_at": now,
        "updated_at": now,
    })
    return [p for p in postings if p.account != mine] + [ledger.Posting(venue_account(venue), credit.coin, net)]


async def credit_status(gateway: "Gateway", credit: "Credit") -> str | None:
    """CONFIRMED while this credit's conversion is open."""
    row = await store.by_key(gateway, credit.merchant_id, credit.reference)
    return "CONFIRMED" if row is not None and row["kind"] == store.SETTLE else None


async def webhook_fields(gateway: "Gateway", payment: "PaymentView") -> dict[str, Any] | None:
    """``settled_coin``, ``settled_amount``, ``swap_fallback`` once every conversion of the payment is final."""
    rows = await store.by_track_id(gateway, payment.track_id)
    through_venue = venuein.webhook_fields(gateway, rows)
    if through_venue is not None:
        return through_venue
    swaps = [s for s in rows
             if s["kind"] == store.SETTLE or (s["kind"] == store.SWAPIN and s["status"] != store.FAILED)]
    if not swaps or any(s["status"] in store.OPEN for s in swaps):
        return None
    confirmed = [s for s in swaps if s["status"] == store.CONFIRMED]
    if len(confirmed) == len(swaps):
        # What the merchant was credited: the delivery, less the platform fee a swap-in charges on it.
        coin = confirmed[0]["to_coin"]
        settled = sum((s["actual_to_amount"] or 0) - platform_fee(s, s["actual_to_amount"] or 0) for s in swaps)
        return {"settled_coin": coin, "swap_fallback": False,
                "settled_amount": gateway.coins.require(coin).format(settled)}
    failed = [s for s in swaps if s["status"] == store.FAILED]
    coin = failed[0]["from_coin"]
    return {"settled_coin": coin, "swap_fallback": True,
            "settled_amount": gateway.coins.require(coin).format(sum(s["from_amount"] for s in failed))}


def register_field(registry: Any) -> None:
    registry.add(FIELD, parse_field, store_field)
    registry.add(venuein.REFUND_FIELD, venuein.parse_refund_address, venuein.store_refund_address)


async def set_default(gateway: "Gateway", merchant_id: str, value: Any) -> str | None:
    """PUT the account's default_settlement_coin (null clears it)."""
    symbol = None if value is None else settlement_coin_symbol(gateway, value, "default_settlement_coin")
    await store.set_default_coin(gateway, merchant_id, symbol)
    return symbol


def settlement_coin_of(merchant: Mapping[str, Any]) -> str | None:
    """``decide_settlement_coin``: the account's default settlement coin, what a swap-only coin becomes.

    The core asks before it lets a merchant take XMR; the account row it
    passes carries the field this plugin sets (``set_default``).
    """
    return merchant.get("default_settlement_coin") or None


async def default_settlement_coin(gateway: "Gateway", merchant_id: str) -> str | None:
    """The account's default settlement coin, or None (for other plugins: XMR swap-in, the mini-app)."""
    return await store.default_coin(gateway, merchant_id)


async def deposit_reversed(gateway: "Gateway", deposit: Any) -> None:
    """A reorg took back a deposit whose conversion had not started: that conversion is dropped.

    The core's reversal already took the net back out of the venue account;
    a credit after the reorg opens a new conversion under its new reference.
    A conversion already at the venue cannot be undone (docs/swaps.md).
    """
    for row in await store.by_deposit(gateway, deposit.id):
        if row["kind"] == store.SETTLE and row["status"] == store.QUOTED:
            await store.move(gateway, row["id"], store.QUOTED, status=store.FAILED,
                             failure_reason="deposit_reversed", credit_done=True)

