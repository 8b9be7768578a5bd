"""The Lightning node checked before it is used: on our network, synced, with a recent chain tip.

Why a wrapper: Lightning has no blocks for ``NodeQuorum`` to vet, yet an LND
on another network would issue invoices nobody can pay on ours and report
settlements of another network's money. Every backend call goes through
:class:`VettedBackend`, which reads ``node_identity`` (LND's ``GetInfo``)
on first use, after any failed call (the node went away: whatever answers
next is checked again) and every ``RECHECK_SECONDS``. A refused node answers
every call with ``BackendUnavailable``: no invoice issued, no settlement
credited, no payout sent. A backend without ``node_identity`` (the devnet's
simulated node, a third party's) is used as it is.
"""

from __future__ import annotations

import logging
import time
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

from ...api import NodeIdentity, NodeState, Refusal, judge_node
from .backend import BackendUnavailable, InvoiceState, LightningBackend, NewInvoice, PaymentState

log = logging.getLogger(__name__)

T = TypeVar("T")
RECHECK_SECONDS = 60.0


def checks_identity(backend: LightningBackend) -> bool:
    return type(backend).node_identity is not LightningBackend.node_identity


class VettedBackend(LightningBackend):
    def __init__(self, inner: LightningBackend, node: str, *, networks: frozenset[str], max_tip_age_seconds: int,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        self.inner, self.node = inner, node
        self.name = getattr(inner, "name", "backend")
        self._networks, self._max_age = networks, max_tip_age_seconds
        self._clock, self._wall = clock, wall
        self._checked_at: float | None = None
        self.refusal: Refusal | None = None
        self.error: str | None = None

    def state(self) -> NodeState:
        if self.refusal is not None:
            return NodeState(self.node, "refused", None, self.error, self.refusal.reason)
        if self.error is not None:
            return NodeState(self.node, "down", None, self.error)
        return NodeState(self.node, "up" if self._checked_at is not None else "unknown")

    async def vet(self) -> None:
        """Raise ``BackendUnavailable`` while the node is refused; read its identity when due."""
        due = self._checked_at is None or self._clock() - self._checked_at >= RECHECK_SECONDS
        if due:
            identity: NodeIdentity = await self._guarded(self.inner.node_identity)
            self._checked_at = self._clock()
            refusal = judge_node(identity, networks=self._networks, geneses=frozenset(),
                                 max_tip_age_seconds=self._max_age, now=self._wall())
            if refusal is not None and (self.refusal is None or self.refusal.reason != refusal.reason):
                log.error("lightning: node %s refused: it %s", self.node, refusal.message)
            elif refusal is None and self.refusal is not None:
                log.warning("lightning: node %s is accepted again (%s)", self.node, identity.network)
            self.refusal, self.error = refusal, (f"refused: it {refusal.message}" if refusal else None)
        if self.refusal is not None:
            raise BackendUnavailable(f"Lightning node {self.node} refused: it {self.refusal.message}")

    async def _guarded(self, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await call()
        except BackendUnavailable as exc:
            self._checked_at, self.error = None, str(exc)  # whatever answers next is checked again
            raise

    async def _use(self, call: Callable[[], Awaitable[T]]) -> T:
        await self.vet()
        answer = await self._guarded(call)
        self.error = None
        return answer

    async def create_invoice(self, amount_msat: int, memo: str, expiry_seconds: int) -> NewInvoice:
        return await self._use(lambda: self.inner.create_invoice(amount_msat, memo, expiry_seconds))

    async def lookup_invoice(self, payment_hash: str) -> InvoiceState | None:
        return await self._use(lambda: self.inner.lookup_invoice(payment_hash))

    async def settled_invoices(self, after_settle_index: int) -> AsyncIterator[InvoiceState]:
        await self.vet()
        try:
            async for state in self.inner.settled_invoices(after_settle_index):
                yield state
        except BackendUnavailable as exc:
            self._checked_at, self.error = None, str(exc)
            raise

    async def pay(self, bolt11: str, *, amount_msat: int | None, fee_limit_sat: int,
                  timeout_seconds: int) -> PaymentState:
        return await self._use(lambda: self.inner.pay(bolt11, amount_msat=amount_msat, fee_limit_sat=fee_limit_sat,
                                                      timeout_seconds=timeout_seconds))

    async def payment(self, payment_hash: str) -> PaymentState | None:
        return await self._use(lambda: self.inner.payment(payment_hash))

    async def node_identity(self) -> NodeIdentity:
        return await self._guarded(self.inner.node_identity)

    def payment_seal_key(self) -> bytes | None:
        return self.inner.payment_seal_key()

    async def close(self) -> None:
        await self.inner.close()

    def __getattr__(self, name: str) -> Any:  # a backend's own extras (the devnet's settle) pass through
        return getattr(self.inner, name)
