"""Settlement: a paid invoice credits its payment once, however often and late we hear of it.

Three ways we hear, all ending in :func:`record_settlement`:

* the node's invoice stream (``settled_invoices``), followed by a task
  started with the server; it resumes from the stored settle index, so
  what settled while the gateway was down is replayed (catch-up);
* the polling job ``lightning.poll``: every open invoice of ours is looked
  up, for when the stream is down or dropped mid-way;
* both at once, or a replay after a restart: harmless. The credit is a core
  final deposit keyed by (chain, payment hash), so it is made once.

A settlement after the payment expired (the node's expiry and ours are the
same lifetime, so only a clock skew or a long outage gets here) follows the
on-chain late-deposit rule: credited to the merchant in full with no
payment attached; the payment stays Expired (docs/lightning.md).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ...api import Transfer, observe_final
from . import store
from .backend import CANCELED, SETTLED, BackendUnavailable, InvoiceState, LightningBackend

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

CHAIN = "lightning"
COIN = "BTC_LN"
# Invoices are still polled this long after they expire (a settlement racing the expiry).
POLL_GRACE_SECONDS = 600
RECONNECT_SECONDS = (1, 2, 5, 10, 30)


def lightning_block(invoice: store.IssuedInvoice, **more: Any) -> dict[str, Any]:
    """SPEC 2.9: the lightning block of a payment."""
    return {"bolt11": invoice.bolt11, "payment_hash": invoice.payment_hash,
            "amount_sat": str(invoice.amount_msat // 1000), "expires_at": invoice.expires_at, **more}


async def record_settlement(gateway: "Gateway", state: InvoiceState) -> bool:
    """Credit a settled invoice of ours; True when this call credited it (False: not ours, not settled, or done)."""
    invoice = await store.invoice_by_hash(gateway, state.payment_hash)
    if invoice is None:
        return False  # the node serves others too: not an invoice we issued
    if state.state == CANCELED and invoice.state != SETTLED:
        await store.mark_state(gateway, invoice.payment_hash, CANCELED)
        return False
    if state.state != SETTLED:
        return False
    settled_at = state.settled_at or gateway.now()
    amount_sat = state.amount_paid_msat // 1000  # BTC_LN is kept in satoshi; a sub-satoshi part is not credited
    block = lightning_block(invoice, settled_at=settled_at, settle_amount_sat=str(amount_sat))
    credited = False
    if amount_sat > 0:
        credited = await observe_final(
            gateway, CHAIN, Transfer(invoice.payment_hash, 0, invoice.bolt11, COIN, amount_sat),
            merchant_id=invoice.merchant_id, track_id=invoice.track_id, extra={"lightning": block})
    if invoice.state != SETTLED:
        await store.mark_state(gateway, invoice.payment_hash, SETTLED, settle_index=state.settle_index,
                               settled_at=settled_at, amount_paid_msat=state.amount_paid_msat)
    if state.settle_index:
        await store.advance_cursor(gateway, state.settle_index)
    if credited:
        log.info("lightning invoice %s settled: %d sat credited", invoice.payment_hash, amount_sat)
    return credited


async def poll_open_invoices(gateway: "Gateway", backend: LightningBackend) -> int:
    """The polling fallback: look up every open invoice of ours; returns how many were credited."""
    now = gateway.now()
    credited = 0
    for invoice in await store.open_invoices(gateway, now - POLL_GRACE_SECONDS):
        try:
            state = await backend.lookup_invoice(invoice.payment_hash)
        except BackendUnavailable as exc:
            log.warning("lightning poll: %s", exc)
            return credited
        if state is not None:
            credited += await record_settlement(gateway, state)
    await store.close_expired(gateway, now - POLL_GRACE_SECONDS)
    return credited


async def follow_stream(gateway: "Gateway", backend: LightningBackend, *, once: bool = False) -> None:
    """Follow the node's settlements forever, resuming from the stored cursor after every drop.

    ``once``: stop when the stream ends (tests drive one connection at a time).
    """
    failures = 0
    while True:
        try:
            async for state in backend.settled_invoices(await store.cursor(gateway)):
                failures = 0
                try:
                    await record_settlement(gateway, state)
                except Exception:  # one bad settlement must not stop the stream; the poll retries it
                    log.exception("lightning settlement %s could not be recorded", state.payment_hash)
        except BackendUnavailable as exc:
            log.warning("lightning invoice stream dropped: %s", exc)
        if once:
            return
        await asyncio.sleep(RECONNECT_SECONDS[min(failures, len(RECONNECT_SECONDS) - 1)])
        failures += 1
