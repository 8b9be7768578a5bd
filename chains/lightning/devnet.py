"""The ``devnet`` Lightning backend: a simulated node, so ``make run`` takes BTC_LN with nothing to set up.

What is real: invoices are BOLT 11 strings signed with the devnet node's
key (any BOLT 11 decoder verifies them), payment hashes are SHA-256 of a
secret preimage, and settlement and payouts run the plugin's production
path (settlement.py, payouts.py) through the backend contract.

What is simulated: the network. A payer "pays" one of the node's invoices
with :meth:`DevnetLightningBackend.settle` (the hosted page's devnet form,
``orbchain lightning pay <bolt11>``); payouts reach only invoices of the
simulated payee (:meth:`issue_payee_invoice`, ``orbchain lightning invoice``),
whose preimage the devnet knows; every other invoice has no route. The
routing fee is 1 sat + 0.1 %, under SPEC 8's ceiling.

State lives in the gateway's database (migration m0002), so the server and
the CLI see one node. The keys are derived from fixed labels: devnet
invoices are worthless and must be recognisable, never secret.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from typing import TYPE_CHECKING, Any, AsyncIterator, Mapping

from coincurve import PrivateKey

from ...api import AddressError
from .backend import (
    FAILED, IN_FLIGHT, OPEN, SETTLED, SUCCEEDED, InvoiceState, LightningBackend, NewInvoice, PaymentState,
)
from .bolt11 import decode_bolt11
from .bolt11_encode import encode_bolt11

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Database
    from .settings import LightningSettings

__all__ = ["DevnetLightningBackend", "DevnetLightningError", "NODE_KEY", "PAYEE_KEY"]

NODE_KEY = PrivateKey(hashlib.sha256(b"orbchain devnet lightning node").digest())
PAYEE_KEY = PrivateKey(hashlib.sha256(b"orbchain devnet lightning payee").digest())
NODE, PAYEE = "node", "payee"
BASE_FEE_MSAT = 1_000
STREAM_POLL_SECONDS = 1.0


class DevnetLightningError(ValueError):
    """A devnet action that cannot be done (unknown, expired or already paid invoice): the tester's mistake."""


def route_fee_msat(amount_msat: int) -> int:
    """The simulated network's fee: 1 sat + 0.1 %."""
    return BASE_FEE_MSAT + amount_msat // 1000


class DevnetLightningBackend(LightningBackend):
    """A simulated node in the gateway's database."""

    name = "devnet"

    def __init__(self, settings: "LightningSettings", db: "Database", clock) -> None:
        self.network = settings.network
        self._db = db
        self._clock = clock

    # -- the node's side: the backend contract --------------------------------------------------

    async def _issue(self, kind: str, key: PrivateKey, amount_msat: int | None, memo: str,
                     expiry_seconds: int) -> NewInvoice:
        preimage = os.urandom(32)
        payment_hash = hashlib.sha256(preimage).hexdigest()
        now = int(self._clock())
        bolt11 = encode_bolt11(key, network=self.network, payment_hash=payment_hash, amount_msat=amount_msat,
                               timestamp=now, expiry=expiry_seconds, payment_secret=os.urandom(32).hex(),
                               description=memo)
        await self._db.execute(
            "INSERT INTO lightning_devnet_invoices (payment_hash, kind, preimage, bolt11, amount_msat, expires_at,"
            " state, created_at) VALUES (:h, :k, :p, :b, :a, :e, :s, :now)",
            {"h": payment_hash, "k": kind, "p": preimage.hex(), "b": bolt11,
             "a": None if amount_msat is None else self._db.amount_param(amount_msat),
             "e": now + expiry_seconds, "s": OPEN, "now": now})
        return NewInvoice(bolt11=bolt11, payment_hash=payment_hash, add_index=0)

    async def create_invoice(self, amount_msat: int, memo: str, expiry_seconds: int) -> NewInvoice:
        return await self._issue(NODE, NODE_KEY, amount_msat, memo, expiry_seconds)

    async def _invoice_row(self, payment_hash: str, kind: str) -> Mapping[str, Any] | None:
        return await self._db.fetch_one(
            "SELECT * FROM lightning_devnet_invoices WHERE payment_hash = :h AND kind = :k",
            {"h": payment_hash, "k": kind})

    def _state(self, row: Mapping[str, Any]) -> InvoiceState:
        return InvoiceState(payment_hash=row["payment_hash"], state=row["state"],
                            amount_paid_msat=self._db.to_int(row["amount_paid_msat"] or 0),
                            settled_at=None if row["settled_at"] is None else int(row["settled_at"]),
                            settle_index=int(row["settle_index"]))

    async def lookup_invoice(self, payment_hash: str) -> InvoiceState | None:
        row = await self._invoice_row(payment_hash, NODE)
        return None if row is None else self._state(row)

    async def settled_invoices(self, after_settle_index: int) -> AsyncIterator[InvoiceState]:
        """Settlements after the cursor, then new ones as the database shows them (polled each second)."""
        cursor = after_settle_index
        while True:
            rows = await self._db.fetch_all(
                "SELECT * FROM lightning_devnet_invoices WHERE kind = :k AND state = :s AND settle_index > :i"
                " ORDER BY settle_index", {"k": NODE, "s": SETTLED, "i": cursor})
            for row in rows:
                cursor = max(cursor, int(row["settle_index"]))
                yield self._state(row)
            await asyncio.sleep(STREAM_POLL_SECONDS)

    async def pay(self, bolt11: str, *, amount_msat: int | None, fee_limit_sat: int,
                  timeout_seconds: int) -> PaymentState:
        """Pay one invoice, once per payment hash, as a node does.

        The payment hash is taken first, in one conditional statement
        (``_begin``): a second call for a hash already in flight or paid gets
        that payment's state back and sends nothing, however many callers
        race (a real node answers "payment in transition"). Only a FAILED
        payment may be tried again.
        """
        try:
            invoice = decode_bolt11(bolt11)
        except AddressError as exc:
            return PaymentState("", FAILED, failure_reason=f"invalid invoice: {exc}")
        amount = invoice.amount_msat if invoice.amount_msat is not None else (amount_msat or 0)
        if not await self._begin(invoice.payment_hash, bolt11, amount):
            existing = await self.payment(invoice.payment_hash)
            assert existing is not None, "a payment that refused the start exists"
            return existing  # never a payment hash twice
        payee = await self._invoice_row(invoice.payment_hash, PAYEE)
        fee = route_fee_msat(amount)
        if payee is None or payee["state"] != OPEN or invoice.is_expired(self._clock()) \
                or fee > fee_limit_sat * 1000:
            return await self._finish(invoice.payment_hash, FAILED, 0, None, "no_route")  # not on the devnet
        settled = await self._db.fetch_val(
            "UPDATE lightning_devnet_invoices SET state = :s, settled_at = :now, amount_paid_msat = :a"
            " WHERE payment_hash = :h AND kind = :k AND state = :open RETURNING payment_hash",
            {"s": SETTLED, "now": int(self._clock()), "a": self._db.amount_param(amount), "h": invoice.payment_hash,
             "k": PAYEE, "open": OPEN})
        if settled is None:
            return await self._finish(invoice.payment_hash, FAILED, 0, None, "no_route")  # paid meanwhile
        return await self._finish(invoice.payment_hash, SUCCEEDED, fee, payee["preimage"], None)

    async def _begin(self, payment_hash: str, bolt11: str, amount: int) -> bool:
        """Record the payment IN_FLIGHT unless one of this hash exists and has not FAILED; True when started."""
        values = {"h": payment_hash, "b": bolt11, "a": self._db.amount_param(amount), "f": self._db.amount_param(0),
                  "s": IN_FLIGHT, "now": int(self._clock()), "failed": FAILED}
        started = await self._db.fetch_val(
            "INSERT INTO lightning_devnet_payments (payment_hash, bolt11, amount_msat, fee_msat, status, preimage,"
            " failure_reason, created_at) VALUES (:h, :b, :a, :f, :s, NULL, NULL, :now)"
            " ON CONFLICT (payment_hash) DO UPDATE SET bolt11 = excluded.bolt11, amount_msat = excluded.amount_msat,"
            " fee_msat = excluded.fee_msat, status = excluded.status, preimage = NULL, failure_reason = NULL,"
            " created_at = excluded.created_at WHERE lightning_devnet_payments.status = :failed"
            " RETURNING payment_hash", values)
        return started is not None

    async def _finish(self, payment_hash: str, status: str, fee: int, preimage: str | None,
                      reason: str | None) -> PaymentState:
        await self._db.execute(
            "UPDATE lightning_devnet_payments SET status = :s, fee_msat = :f, preimage = :p, failure_reason = :r"
            " WHERE payment_hash = :h AND status = :flight",
            {"s": status, "f": self._db.amount_param(fee), "p": preimage, "r": reason, "h": payment_hash,
             "flight": IN_FLIGHT})
        return PaymentState(payment_hash, status, preimage=preimage, fee_msat=fee, failure_reason=reason)

    async def payment(self, payment_hash: str) -> PaymentState | None:
        row = await self._db.fetch_one("SELECT * FROM lightning_devnet_payments WHERE payment_hash = :h",
                                       {"h": payment_hash})
        if row is None:
            return None
        status = row["status"] if row["status"] in (SUCCEEDED, FAILED) else IN_FLIGHT
        return PaymentState(payment_hash, status, preimage=row["preimage"], fee_msat=self._db.to_int(row["fee_msat"]),
                            failure_reason=row["failure_reason"])

    # -- the simulated world: payers and payees -------------------------------------------------

    async def settle(self, bolt11: str) -> InvoiceState:
        """A payer pays one of the node's invoices in full: SETTLED with the next settle index."""
        try:
            invoice = decode_bolt11(bolt11)
        except AddressError as exc:
            raise DevnetLightningError(f"not a BOLT 11 invoice: {exc}") from None
        row = await self._invoice_row(invoice.payment_hash, NODE)
        if row is None:
            raise DevnetLightningError("not an invoice of the devnet node")
        if row["state"] == SETTLED:
            raise DevnetLightningError("this invoice is already paid")
        if row["state"] != OPEN or int(row["expires_at"]) <= self._clock():
            raise DevnetLightningError("this invoice has expired")
        await self._db.execute(
            "UPDATE lightning_devnet_invoices SET state = :s, settled_at = :now, amount_paid_msat = amount_msat,"
            " settle_index = (SELECT COALESCE(MAX(settle_index), 0) + 1 FROM lightning_devnet_invoices"
            " WHERE kind = :k) WHERE payment_hash = :h AND kind = :k AND state = :open",
            {"s": SETTLED, "now": int(self._clock()), "k": NODE, "h": invoice.payment_hash, "open": OPEN})
        state = await self.lookup_invoice(invoice.payment_hash)
        assert state is not None
        return state

    async def issue_payee_invoice(self, amount_msat: int | None, memo: str = "devnet payee",
                                  expiry_seconds: int = 3600) -> NewInvoice:
        """An invoice of the simulated payee: a payout destination the devnet node can reach."""
        return await self._issue(PAYEE, PAYEE_KEY, amount_msat, memo, expiry_seconds)
