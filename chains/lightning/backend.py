"""The Lightning backend contract: what a node plugin implements for BTC_LN.

Why: the ``lightning`` plugin owns the money rules (invoices tied to
payments, one credit per payment hash, the fee ceiling, Lightning Address
payouts); a node backend only talks to its node. Backends are contributed
through the ``register_lightning_backends`` hook (declared in this plugin's
hookspecs.py), like chain adapters, and chosen by ``[plugin.lightning]
backend = "<name>"``. The
built-ins: ``lnd`` (LND's REST API) and ``devnet`` (a simulated node for
``make run``).

Every method talks to the node and may raise :class:`BackendUnavailable`
when it cannot; results are immutable value objects. Amounts are
millisatoshi (the node's unit) unless a name says ``_sat``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Iterator

from ...api import NodeIdentity

__all__ = ["BackendUnavailable", "InvoiceState", "LightningBackend", "LightningBackendRegistry", "NewInvoice",
           "PaymentState", "OPEN", "SETTLED", "CANCELED", "ACCEPTED", "IN_FLIGHT", "SUCCEEDED", "FAILED"]

# Invoice states (LND's Invoice.InvoiceState names).
OPEN, SETTLED, CANCELED, ACCEPTED = "OPEN", "SETTLED", "CANCELED", "ACCEPTED"
# Outgoing payment states (LND's Payment.PaymentStatus names; INITIATED counts as IN_FLIGHT).
IN_FLIGHT, SUCCEEDED, FAILED = "IN_FLIGHT", "SUCCEEDED", "FAILED"


class BackendUnavailable(RuntimeError):
    """The node could not be reached or answered something we cannot use; ask again later."""


@dataclass(frozen=True)
class NewInvoice:
    """An invoice the node just issued."""

    bolt11: str
    payment_hash: str  # hex
    add_index: int


@dataclass(frozen=True)
class InvoiceState:
    """Where an invoice of ours stands at the node."""

    payment_hash: str  # hex
    state: str  # OPEN, SETTLED, CANCELED or ACCEPTED
    amount_paid_msat: int = 0
    settled_at: int | None = None  # Unix seconds, when SETTLED
    settle_index: int = 0  # the node's settlement counter (0 until settled): where a catch-up resumes


@dataclass(frozen=True)
class PaymentState:
    """Where an outgoing payment stands; ``failure_reason`` is a short code such as ``no_route``."""

    payment_hash: str
    status: str  # IN_FLIGHT, SUCCEEDED or FAILED
    preimage: str | None = None  # hex, once SUCCEEDED: the proof of payment
    fee_msat: int = 0
    failure_reason: str | None = None


class LightningBackend(ABC):
    """One Lightning node. ``name`` is what ``[plugin.lightning] backend`` selects."""

    name: str = ""

    @abstractmethod
    async def create_invoice(self, amount_msat: int, memo: str, expiry_seconds: int) -> NewInvoice:
        """Issue a BOLT 11 invoice for exactly ``amount_msat`` that expires after ``expiry_seconds``."""

    @abstractmethod
    async def lookup_invoice(self, payment_hash: str) -> InvoiceState | None:
        """One invoice by payment hash; None when the node has never issued it."""

    @abstractmethod
    def settled_invoices(self, after_settle_index: int) -> AsyncIterator[InvoiceState]:
        """Every invoice settled after ``after_settle_index`` (a catch-up), then each new one as it settles.

        A long-lived stream: it ends (or raises ``BackendUnavailable``) when
        the connection drops; the caller resumes from the last settle index it
        recorded, so nothing settled while it was away is missed.
        """

    @abstractmethod
    async def pay(self, bolt11: str, *, amount_msat: int | None, fee_limit_sat: int,
                  timeout_seconds: int) -> PaymentState:
        """Pay ``bolt11`` spending at most ``fee_limit_sat`` in routing fees.

        ``amount_msat`` only for an invoice without an amount. Waits for the
        final state up to about ``timeout_seconds``; a payment still on its
        way then is reported IN_FLIGHT (ask :meth:`payment` later). The node
        never pays one payment hash twice, so calling this again is harmless.
        """

    @abstractmethod
    async def payment(self, payment_hash: str) -> PaymentState | None:
        """An outgoing payment by hash; None when the node never tried to pay it."""

    async def node_identity(self) -> NodeIdentity:
        """The node's network as ``"<chain>:<network>"`` (``"bitcoin:mainnet"``), whether it is synced to the
        chain, and its best block's time; the plugin refuses a node on another network, unsynced or stale
        (vetted.py). Not implemented: the node is used unchecked (a simulated node has nothing to check)."""
        raise NotImplementedError(f"{type(self).__name__} does not report its node's identity")

    def payment_seal_key(self) -> bytes | None:
        """A key only the process able to pay can hold (LND: derived from its macaroon), sealing each invoice
        ``sign_payout`` fixes so ``broadcast`` never pays one written into the database by anyone else
        (payouts.py). None (the default; the devnet's simulated node): invoices are not sealed."""
        return None

    async def close(self) -> None:  # noqa: B027 - optional: a backend may hold nothing
        """Release connections; called once at shutdown, must not raise."""


class LightningBackendRegistry:
    """Backends by name, filled through ``register_lightning_backends``.

    ``registry.add(name, factory)``: ``factory(settings)`` builds the backend
    from the plugin's validated settings when it is selected (a backend that
    is not selected never opens a connection). A name added twice fails.
    """

    def __init__(self) -> None:
        self._factories: dict[str, Callable[..., LightningBackend]] = {}
        self.current_plugin = "core"
        self._owners: dict[str, str] = {}

    def add(self, name: str, factory: Callable[..., LightningBackend]) -> None:
        if name in self._factories:
            raise ValueError(f"Lightning backend {name!r} registered by both {self._owners[name]!r}"
                             f" and {self.current_plugin!r}")
        self._factories[name] = factory
        self._owners[name] = self.current_plugin

    def get(self, name: str) -> Callable[..., LightningBackend] | None:
        return self._factories.get(name)

    def names(self) -> list[str]:
        return sorted(self._factories)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._factories))
