"""Receiving BTC_LN: one node invoice per payment, for exactly its amount and lifetime.

Why the invoice is checked here: the node is trusted to issue it, but the
gateway shows it to payers as the payment's only destination, so it decodes
the invoice itself (BOLT 11 signature, network, amount, payment hash) before
storing it. The invoice's expiry is the payment's remaining lifetime, so the
node stops accepting payment when the payment expires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ...api import AddressError, InvalidRequest, ReceiveTarget, ServiceUnavailable
from . import store
from .address import INVOICE_NETWORKS
from .backend import OPEN, BackendUnavailable
from .bolt11 import decode_bolt11
from .payouts import LightningChain
from .settlement import CHAIN, COIN, lightning_block

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Coin
    from ...api import Gateway

MIN_EXPIRY_SECONDS = 60


def lightning_chain(gateway: "Gateway") -> LightningChain | None:
    adapter = gateway.chains.get(CHAIN)
    return adapter if isinstance(adapter, LightningChain) else None


async def receive_target(gateway: "Gateway", payment: Mapping[str, Any], coin: "Coin") -> ReceiveTarget | None:
    """The ``decide_receive_target`` answer for BTC_LN; None for other coins."""
    if coin.symbol != COIN:
        return None
    chain = lightning_chain(gateway)
    if chain is None:
        return None  # the core answers 503: no node configured
    amount = payment.get("pay_amount")
    if amount is None:
        raise InvalidRequest("BTC_LN payments need an amount: a Lightning invoice is for one payment",
                             code="lightning_amount_required")
    expires_at = payment.get("expires_at")
    if expires_at is None:
        raise InvalidRequest("BTC_LN payments need a lifetime", code="lightning_amount_required")
    amount_msat = int(amount) * 1000
    expiry = max(MIN_EXPIRY_SECONDS, int(expires_at) - gateway.now())
    try:
        issued = await chain.backend.create_invoice(amount_msat, f"Orbchain payment {payment['track_id']}", expiry)
    except BackendUnavailable as exc:
        raise ServiceUnavailable("Lightning node unavailable", code="lightning_unavailable") from exc
    try:
        invoice = decode_bolt11(issued.bolt11)
    except AddressError as exc:
        raise ServiceUnavailable(f"Lightning node issued an invalid invoice: {exc}",
                                 code="lightning_unavailable") from None
    if (invoice.payment_hash != issued.payment_hash or invoice.amount_msat != amount_msat
            or invoice.network not in INVOICE_NETWORKS[chain.network]):
        raise ServiceUnavailable("Lightning node issued an invoice that does not match the request",
                                 code="lightning_unavailable")
    record = store.IssuedInvoice(invoice.payment_hash, payment["track_id"], payment["merchant_id"], invoice.invoice,
                                 amount_msat, int(expires_at), OPEN, None)
    await store.add_invoice(gateway, record)
    return ReceiveTarget(None, {"lightning": lightning_block(record)})


def qr_payload(payment: Mapping[str, Any], coin: "Coin") -> str | None:
    """``lightning:<BOLT11>`` in upper case (the QR alphanumeric mode: a smaller code, BOLT 11 allows it)."""
    block = payment.get("lightning")
    if coin.symbol != COIN or not isinstance(block, Mapping) or not block.get("bolt11"):
        return None
    return "lightning:" + str(block["bolt11"]).upper()
