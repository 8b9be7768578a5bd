"""Lightning payouts: a chain adapter whose payouts are final within the request (SPEC 3.3, 4.3, 8).

The core's payout pipeline is reused as is: the request reserves the money,
then (``Capability.INSTANT_PAYOUTS``) drives the payout through the stages
before answering:

* ``check_payout`` (before anything is reserved): a BOLT 11 invoice must be
  for this network, unexpired, not already paid by our node, and for the
  payout amount (or carry none); a Lightning Address must resolve
  (SSRF-guarded), accept the amount and issue an invoice for exactly it
  that commits to its metadata. Refusals are 400 with a code.
* ``sign_payout``: fixes the invoice to pay, once (for a Lightning Address
  the one ``check_payout`` obtained, or a fresh one checked the same way);
  it is stored before any payment starts, so a crash never pays a second
  invoice. The payout claims the invoice's payment hash: a second payout to
  the same invoice fails (``invoice_already_paid``) instead of taking the
  first one's payment for its own.
* ``broadcast``: asks the node first (a payment it already knows is never
  sent again), then pays with ``fee_limit_sat`` = SPEC 8's ceiling
  ``max(10, floor(amount_sat * 0.005))`` and a timeout. No route under the
  ceiling fails the payout (``no_route``) and the core re-credits it.
* ``payout_status``: the node's word on the payment; SUCCEEDED is Confirmed
  with the preimage and the routing fee (booked as the platform's network
  fee), FAILED is Failed. A payment still in flight when the request gives
  up stays Confirming and the payout worker asks again.

With a separate signer (``[signer] url``) these stages run in ``orbchain
signer``, which holds the paying macaroon (``Capability.SIGNER_SENDS``): the
web process's request asks it to sign, pay and say where the payment stands,
records each answer and finishes the payout itself, so it still answers
Confirmed.
``sign_payout`` seals what it fixed (an HMAC under a key derived from the
paying macaroon) and ``broadcast`` pays only a sealed invoice: a row written
into the database at stage signed, by SQL or by a web process, is never paid
(``unsealed_payment``), since only the macaroon's holder can seal.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from ...api import (
    AddressError, Block, BlockRef, BroadcastError, Capability, ChainAdapter, ChainUnavailable, InvalidRequest,
    NodeState, PayoutOrder, PayoutSender, PayoutStatus, SignedPayout, node_name,
)
from . import lnurl, store
from .address import INVOICE_NETWORKS
from .backend import FAILED, SUCCEEDED, BackendUnavailable, LightningBackend
from .bolt11 import Bolt11Invoice, decode_bolt11
from .settlement import CHAIN, COIN
from .settings import NODE_NETWORKS
from .vetted import VettedBackend, checks_identity

if TYPE_CHECKING:  # pragma: no cover
    from .settings import LightningSettings

MIN_FEE_CEILING_SAT = 10


def max_fee_sat(amount_sat: int) -> int:
    """SPEC 8: ``max(10, floor(amount_sat * 0.005))`` in integers."""
    return max(MIN_FEE_CEILING_SAT, amount_sat * 5 // 1000)


def _block(bolt11: str, payment_hash: str, preimage: str | None = None) -> dict[str, Any]:
    """SPEC 2.9: the lightning block of a payout."""
    return {"lightning": {"bolt11": bolt11, "payment_hash": payment_hash, "preimage": preimage}}


class ResolvedInvoices:
    """Invoices a Lightning Address issued during ``check_payout``, for ``sign_payout`` to pay.

    Why: the request checks the whole resolution (limits, the invoice's amount
    and description hash) before any money is reserved, so a bad service is a
    400; the instant pipeline then signs within the same request and takes
    that invoice instead of asking the service for a second one. Each invoice
    is taken once; a payout signed later (by the worker, after a restart)
    finds nothing here and resolves afresh. Bounded: the oldest go first.
    """

    LIMIT = 1000
    FRESH_SECONDS = 60

    def __init__(self) -> None:
        self._invoices: dict[tuple[str, int], list[Bolt11Invoice]] = {}
        self._count = 0

    def put(self, address: str, amount_msat: int, invoice: Bolt11Invoice) -> None:
        if self._count >= self.LIMIT:
            self._invoices.pop(next(iter(self._invoices)))
            self._count = sum(len(v) for v in self._invoices.values())
        self._invoices.setdefault((address, amount_msat), []).append(invoice)
        self._count += 1

    def take(self, address: str, amount_msat: int, now: int) -> Bolt11Invoice | None:
        """The oldest invoice still good for a minute; expired ones (a request that reserved nothing) go."""
        waiting = self._invoices.get((address, amount_msat), [])
        found = None
        while waiting and found is None:
            invoice = waiting.pop(0)
            self._count -= 1
            if not invoice.is_expired(now + self.FRESH_SECONDS):
                found = invoice
        if not waiting:
            self._invoices.pop((address, amount_msat), None)
        return found


class LightningChain(ChainAdapter, PayoutSender):
    """BTC_LN on a Lightning backend: no blocks to scan; invoices in, payments out."""

    name = CHAIN
    coins = (COIN,)
    # REMOTE_SIGNING + SIGNER_SENDS: with a separate signer, the signer (holding the paying macaroon) signs, pays
    # and asks about the payment; serve records and finishes.
    capabilities = frozenset({Capability.PAYOUTS, Capability.INSTANT_PAYOUTS, Capability.REMOTE_SIGNING,
                              Capability.SIGNER_SENDS})
    payout_confirmations = 1
    drop_after_seconds = 600

    def __init__(self, backend: LightningBackend, settings: "LightningSettings", *, clock, lookup: lnurl.Lookup,
                 db: Any):
        if checks_identity(backend):
            backend = VettedBackend(backend, node_name(settings.lnd_url or f"{backend.name}://node"),
                                    networks=NODE_NETWORKS[settings.network],
                                    max_tip_age_seconds=settings.max_tip_age_seconds)
        self.backend = backend
        self._db = db
        self.network = settings.network
        self.scan_seconds = settings.poll_seconds
        self.pay_timeout_seconds = settings.pay_timeout_seconds
        # A receiving-only macaroon (a web process beside a signer) cannot ask the node about payments.
        self._asks_payments = not (settings.backend == "lnd" and settings.macaroon_path is None)
        self._clock = clock
        self._lookup = lookup
        self._accepted = INVOICE_NETWORKS[settings.network]
        self._resolved = ResolvedInvoices()

    # -- no blocks: settlement is followed by settlement.py ------------------------------------

    async def tip(self) -> BlockRef:
        raise ChainUnavailable("Lightning has no blocks to scan")

    async def block(self, height: int) -> Block:
        raise ChainUnavailable("Lightning has no blocks to scan")

    async def close(self) -> None:
        await self.backend.close()

    def node_states(self) -> Sequence[NodeState]:
        return (self.backend.state(),) if isinstance(self.backend, VettedBackend) else ()

    # -- before reserving ----------------------------------------------------------------------

    def _invoice(self, destination: str) -> Bolt11Invoice:
        try:
            invoice = decode_bolt11(destination)
        except AddressError:
            raise InvalidRequest("invalid destination address", code="invalid_address") from None
        if invoice.network not in self._accepted:
            raise InvalidRequest(f"a Lightning {invoice.network} invoice, not for this network",
                                 code="invoice_wrong_network")
        return invoice

    async def check_payout(self, order: PayoutOrder) -> None:
        amount_msat = order.amount * 1000
        if "@" in order.destination:
            try:
                invoice = await lnurl.resolve(self._lookup, order.destination, amount_msat, set(self._accepted))
            except lnurl.LnurlError as exc:
                raise InvalidRequest(str(exc), code=exc.code) from None
            self._resolved.put(order.destination, amount_msat, invoice)
            return
        invoice = self._invoice(order.destination)
        if invoice.is_expired(self._clock()):
            raise InvalidRequest("the Lightning invoice has expired", code="invoice_expired")
        if invoice.amount_msat is not None and invoice.amount_msat != amount_msat:
            raise InvalidRequest("the payout amount differs from the Lightning invoice's amount",
                                 code="invoice_amount_mismatch")
        try:
            known = await self.backend.payment(invoice.payment_hash) if self._asks_payments else None
        except BackendUnavailable:
            known = None  # the node decides at payment time; it never pays a hash twice
        if known is not None and known.status != FAILED:
            raise InvalidRequest("the Lightning invoice is already paid", code="invoice_already_paid")

    # -- the payout stages ---------------------------------------------------------------------

    async def sign_payout(self, order: PayoutOrder) -> SignedPayout:
        amount_msat = order.amount * 1000
        if "@" in order.destination:
            resolved = self._resolved.take(order.destination, amount_msat, int(self._clock()))
            try:
                invoice = resolved or await lnurl.resolve(self._lookup, order.destination, amount_msat,
                                                          set(self._accepted))
            except lnurl.LnurlError as exc:
                raise BroadcastError(str(exc), permanent=not exc.transient, reason=exc.code) from None
        else:
            try:
                invoice = self._invoice(order.destination)
            except InvalidRequest as exc:
                raise BroadcastError(exc.message, permanent=True, reason=exc.code) from None
            if invoice.amount_msat is not None and invoice.amount_msat != amount_msat:
                raise BroadcastError("amount differs from the invoice", permanent=True,
                                     reason="invoice_amount_mismatch")
        if invoice.is_expired(self._clock()):
            raise BroadcastError("the Lightning invoice has expired", permanent=True, reason="invoice_expired")
        holder = await store.claim_payment_hash(self._db, invoice.payment_hash, order.payout_id, int(self._clock()))
        if holder != order.payout_id:
            raise BroadcastError("this Lightning invoice is already paid by another payout", permanent=True,
                                 reason="invoice_already_paid")
        raw = SignedInvoice(invoice.invoice, None if invoice.amount_msat is not None else amount_msat,
                            order.payout_id).sealed(self.backend.payment_seal_key()).raw()
        return SignedPayout(tx_hash=invoice.payment_hash, raw=raw, network_fee=0,
                            details=_block(invoice.invoice, invoice.payment_hash))

    async def broadcast(self, signed: SignedPayout) -> None:
        paid = SignedInvoice.parse(signed.raw)
        try:
            known = await self.backend.payment(signed.tx_hash)
            if known is not None and known.status != FAILED:
                return  # already on its way or paid: never a second payment
            if not paid.sealed_by(self.backend.payment_seal_key()):
                raise BroadcastError("this Lightning payment was not sealed by the process holding the paying"
                                     " macaroon: not paid", permanent=True, reason="unsealed_payment")
            amount_msat = paid.amount_msat
            amount_sat = (amount_msat if amount_msat is not None
                          else decode_bolt11(paid.bolt11).amount_msat or 0) // 1000
            result = await self.backend.pay(
                paid.bolt11, amount_msat=amount_msat, fee_limit_sat=max_fee_sat(amount_sat),
                timeout_seconds=self.pay_timeout_seconds)
        except BackendUnavailable as exc:
            raise BroadcastError(str(exc)) from None  # transient: the worker asks the node again
        if result.status == FAILED:
            await store.release_payment_hash(self._db, signed.tx_hash, paid.payout_id)
            reason = result.failure_reason or "payment_failed"
            raise BroadcastError(_describe(reason), permanent=True, reason=reason)

    async def payout_status(self, signed: SignedPayout) -> PayoutStatus:
        try:
            payment = await self.backend.payment(signed.tx_hash)
        except BackendUnavailable as exc:
            raise ChainUnavailable(str(exc)) from None
        if payment is None:
            return PayoutStatus(found=False)
        if payment.status == SUCCEEDED:
            if not payment.preimage or hashlib.sha256(bytes.fromhex(payment.preimage)).hexdigest() != signed.tx_hash:
                raise ChainUnavailable(f"the node reports {signed.tx_hash} paid without its preimage")
            paid = SignedInvoice.parse(signed.raw)
            return PayoutStatus(found=True, confirmations=1, network_fee=-(-payment.fee_msat // 1000),
                                details=_block(paid.bolt11, signed.tx_hash, payment.preimage))
        if payment.status == FAILED:
            await store.release_payment_hash(self._db, signed.tx_hash, SignedInvoice.parse(signed.raw).payout_id)
            return PayoutStatus(found=False, failed=True, failure_reason=payment.failure_reason or "payment_failed")
        return PayoutStatus(found=True, confirmations=0)


@dataclass(frozen=True)
class SignedInvoice:
    """What a signed Lightning payout stores as its ``raw``: the invoice, the amount to send when the
    invoice names none, and the payout holding the invoice's claim.

    Why the payout id: the claim on a payment hash may be released only by the payout that holds
    it. A payout whose payment failed is asked about it again (the worker's "did it land?" check);
    releasing by hash alone then dropped the claim of the next payout to that invoice, letting two
    payouts pay one hash at once (issue 29). Rows signed before this format (``<bolt11>`` or
    ``<msat>:<bolt11>``) read with no holder and release by hash, as they always did.

    Why the seal: with a separate signer, sending is done where the paying macaroon is, from what the
    database says; the seal (HMAC-SHA256 of the other three fields under the backend's
    ``payment_seal_key``) proves that process fixed this invoice for this payout after its policy
    passed it. A backend with no key (the devnet's simulated node) neither seals nor checks.
    """

    bolt11: str
    amount_msat: int | None
    payout_id: str | None
    seal: str | None = None

    def _mac(self, key: bytes) -> str:
        message = json.dumps([self.bolt11, self.amount_msat, self.payout_id], separators=(",", ":")).encode()
        return hmac.new(key, message, hashlib.sha256).hexdigest()

    def sealed(self, key: bytes | None) -> "SignedInvoice":
        return self if key is None else SignedInvoice(self.bolt11, self.amount_msat, self.payout_id, self._mac(key))

    def sealed_by(self, key: bytes | None) -> bool:
        return key is None or (self.seal is not None and hmac.compare_digest(self.seal, self._mac(key)))

    def raw(self) -> str:
        fields: dict[str, Any] = {"bolt11": self.bolt11, "amount_msat": self.amount_msat, "claim": self.payout_id}
        if self.seal is not None:
            fields["seal"] = self.seal
        return json.dumps(fields, separators=(",", ":"))

    @classmethod
    def parse(cls, raw: str) -> "SignedInvoice":
        if raw.startswith("{"):
            fields = json.loads(raw)
            return cls(fields["bolt11"], fields["amount_msat"], fields["claim"], fields.get("seal"))
        if ":" in raw:
            amount, bolt11 = raw.split(":", 1)
            return cls(bolt11, int(amount), None)
        return cls(raw, None, None)


def _describe(reason: str) -> str:
    if reason == "no_route":
        return "no route under the fee ceiling"
    return reason.replace("_", " ")
