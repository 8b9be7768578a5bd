"""The ``splits`` field of ``POST /v1/payment/white-label`` (SPEC 2.10, 7, 8): parse, check, store.

``parse`` checks the shape without the database (it runs before the payment
exists); ``store`` runs inside the payment's creating transaction and checks
what needs the payment's coin or the database: a recipient merchant that
exists, a recipient address valid for the pay currency. Either refusal
leaves nothing behind. Rows are inserted once and never updated: splits are
immutable after creation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ...api import InvalidRequest, NotFound, ValidationError, merchant_record, payout_destination
from .arithmetic import MAX_SPLITS, TOTAL_BPS

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from ...api import PaymentView

FIELD = "splits"
WHITE_LABEL = "white_label"
MAX_ID_LEN = 64
MAX_ADDRESS_LEN = 128  # SPEC 8: payout address max 128


class SplitEntry(NamedTuple):
    """One recipient: ``bps`` of the credited net, to a merchant's balance or paid out to an address."""

    bps: int
    recipient_merchant_id: str | None
    recipient_address: str | None


def parse(gateway: "Gateway", value: Any, payment_type: str, merchant_id: str) -> tuple[SplitEntry, ...]:
    """The cleaned entries, or a 400: validation for the shape, ``splits_bps_sum_not_10000`` for the sum."""
    if payment_type != WHITE_LABEL:
        raise ValidationError({FIELD: "splits are accepted on white-label payments only"})
    if not isinstance(value, list) or not value:
        raise ValidationError({FIELD: "must be a non-empty array"})
    if len(value) > MAX_SPLITS:
        raise ValidationError({FIELD: f"at most {MAX_SPLITS} entries"})
    entries = tuple(_entry(i, raw) for i, raw in enumerate(value))
    if sum(e.bps for e in entries) != TOTAL_BPS:
        raise InvalidRequest(f"splits bps must sum to exactly {TOTAL_BPS}", code="splits_bps_sum_not_10000",
                             detail={FIELD: f"bps sum to {sum(e.bps for e in entries)}, not {TOTAL_BPS}"})
    return entries


def _entry(index: int, raw: Any) -> SplitEntry:
    where = f"{FIELD}[{index}]"
    if not isinstance(raw, dict):
        raise ValidationError({where: "must be an object"})
    bps = raw.get("bps")
    if not isinstance(bps, int) or isinstance(bps, bool) or not 1 <= bps <= TOTAL_BPS:
        raise ValidationError({f"{where}.bps": f"must be an integer from 1 to {TOTAL_BPS}"})
    merchant, address = raw.get("recipient_merchant_id"), raw.get("recipient_address")
    if (merchant is None) == (address is None):
        raise ValidationError({where: "exactly one of recipient_merchant_id or recipient_address is required"})
    if merchant is not None and (not isinstance(merchant, str) or not 1 <= len(merchant.strip()) <= MAX_ID_LEN):
        raise ValidationError({f"{where}.recipient_merchant_id": f"must be a string of 1 to {MAX_ID_LEN} chars"})
    if address is not None and (not isinstance(address, str) or not 1 <= len(address.strip()) <= MAX_ADDRESS_LEN):
        raise ValidationError({f"{where}.recipient_address": f"must be a string of 1 to {MAX_ADDRESS_LEN} chars"})
    return SplitEntry(bps, merchant.strip() if merchant else None, address.strip() if address else None)


async def store(gateway: "Gateway", payment: "PaymentView", entries: tuple[SplitEntry, ...]) -> None:
    """Check recipients against the payment's coin and the database, then write the entries once."""
    coin = payment.pay_currency
    if gateway.coins.require(coin).settles_only_via_swap:
        # Its credit goes to a swap, not to a merchant: there is no net to split (docs/decisions.md).
        raise ValidationError({FIELD: f"splits are not available for {coin} payments"})
    rows = []
    for index, entry in enumerate(entries):
        address = None
        if entry.recipient_merchant_id is not None:
            await _require_merchant(gateway, index, entry.recipient_merchant_id)
        else:
            assert entry.recipient_address is not None
            address = payout_destination(gateway, coin, entry.recipient_address)
        rows.append({"t": payment.track_id, "p": index, "m": payment.merchant_id, "b": entry.bps,
                     "rm": entry.recipient_merchant_id, "ra": address, "now": gateway.now()})
    await gateway.db.execute_many(
        "INSERT INTO splits_entries (track_id, position, merchant_id, bps, recipient_merchant_id,"
        " recipient_address, created_at) VALUES (:t, :p, :m, :b, :rm, :ra, :now)", rows)


async def _require_merchant(gateway: "Gateway", index: int, merchant_id: str) -> None:
    try:
        await merchant_record(gateway, merchant_id)
    except NotFound:
        raise InvalidRequest("split recipient not found", code="recipient_not_found",
                             detail={f"{FIELD}[{index}].recipient_merchant_id": "no such merchant"}) from None


async def entries_of(gateway: "Gateway", track_id: str) -> list[Any]:
    """The payment's split entries in order (empty when it has none)."""
    return await gateway.db.fetch_all(
        "SELECT position, bps, recipient_merchant_id, recipient_address FROM splits_entries"
        " WHERE track_id = :t ORDER BY position", {"t": track_id})
