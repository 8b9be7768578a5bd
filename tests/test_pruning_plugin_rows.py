"""Pruning an unpaid payment leaves no plugin row naming it: splits and swaps drop theirs through the
``payments_pruning`` hook (issue 48), never by the core reaching into their tables. On both databases."""

from __future__ import annotations

from orbchain.core.payments import pruning
from orbchain.core.payments.status import expire_payments
from orbchain.plugins.swaps import store as swaps_store
from orbchain.testing.fixtures import open_shop

from .support import advance_clock, api, freeze_clock

DAY = 86400
RETENTION_DAYS = 30
DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"


async def white_label(shop, **extra) -> str:
    status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.01", **extra})
    assert status == 200, body
    return body["data"]["track_id"]


async def venue_order(gateway, merchant_id: str, track_id: str, swap_id: str, payin_hash: str | None) -> None:
    """A deposit-venue order as ``venuein`` opens it with the payment (the devnet venue takes no XMR)."""
    now = gateway.now()
    await swaps_store.insert_swap(gateway, {
        "id": swap_id, "merchant_id": merchant_id, "kind": swaps_store.VENUEIN, "venue": "devnet",
        "from_coin": "XMR", "to_coin": "BTC", "from_amount": 10**12, "to_amount_quoted": 10**6, "floating": False,
        "status": swaps_store.PENDING, "venue_ref": "ref-" + swap_id, "deposit_address": "venue-" + swap_id,
        "funded": False, "fallback": False, "track_id": track_id, "credit_done": False,
        "idempotency_key": f"venuein:{swap_id}", "attempts": 0, "next_attempt_at": now, "deadline_at": now,
        "payin_hash": payin_hash, "created_at": now, "updated_at": now})


async def rows_naming(db, table: str, track_id: str) -> int:
    return int(await db.fetch_val(f"SELECT COUNT(*) FROM {table} WHERE track_id = :t", {"t": track_id}))


async def test_pruned_payments_take_their_splits_quotes_and_moneyless_venue_orders_with_them(make_config,
                                                                                            make_client):
    """Breaks caught: splits_entries, settle_quotes and venue orders left naming a payment that no longer
    exists (no ``payments_pruning`` implementation in those plugins); and a venue order that saw a pay-in
    deleted with it (money in flight must keep its record)."""
    shop = await open_shop(make_config, make_client, payments={"unpaid_retention_days": RETENTION_DAYS})
    gateway, db, merchant_id = shop.gateway, shop.gateway.db, shop.merchant.merchant_id
    freeze_clock(gateway)
    split = await white_label(shop, splits=[{"bps": 10000, "recipient_address": DEST}])
    settled = await white_label(shop, settlement_coin="ETH")
    with_payin = await white_label(shop)
    await venue_order(gateway, merchant_id, settled, "sw-nomoney", None)
    await venue_order(gateway, merchant_id, with_payin, "sw-payin", "payin-tx")
    assert await rows_naming(db, "splits_entries", split) == 1
    assert await rows_naming(db, "settle_quotes", settled) == 1

    advance_clock(gateway, 2 * 3600)
    assert await expire_payments(gateway) == 3
    advance_clock(gateway, (RETENTION_DAYS + 1) * DAY)
    young = await white_label(shop, splits=[{"bps": 10000, "recipient_address": DEST}])  # within its retention
    assert await pruning.drain(gateway, pruning.prune_expired) == 3

    assert await rows_naming(db, "splits_entries", split) == 0
    assert await rows_naming(db, "settle_quotes", settled) == 0
    assert await swaps_store.get(gateway, "sw-nomoney") is None
    assert (await swaps_store.get(gateway, "sw-payin"))["payin_hash"] == "payin-tx"
    assert await rows_naming(db, "splits_entries", young) == 1
    # Told again with the same ids (a crash between the hook and the DELETE): nothing more goes, nothing fails.
    await gateway.hooks.payments_pruning(track_ids=[split, settled, with_payin])
    assert await swaps_store.get(gateway, "sw-payin") is not None
