"""The change feed: "payment <track_id>" on ``gateway.signals`` once a change to what a payer sees committed.

Why: live pages (web/live.py) re-read a payment only when it changed,
instead of polling. The core announces every change to a payment's status,
its deposits or their confirmations, after the commit (a rollback must not
announce), in this process and, on PostgreSQL, in every other one. The
signal carries only the payment id: readers fetch the state themselves, so
a signal lost or repeated costs a page nothing but a re-read. Announcing is
free on the hot path: no query, one closure per payment per transaction.
"""

from __future__ import annotations

from typing import Protocol

from ..events.after_commit import AfterCommit
from ..contract.gateway import PluginGateway as Gateway
from ..types.services import ServiceKey

TOPIC = "payment"


class ForgetsRows(Protocol):
    """What the feed needs of core/payments/row_cache.py's ``PaymentRows`` (which imports this module)."""

    def changed(self, track_id: str) -> None: ...


ROWS_CACHE = ServiceKey[ForgetsRows]("payment_rows")  # core/payments/row_cache.py's entry, as the feed sees it


class _Announce:
    """An after-commit action publishing one payment's change (compared by payment to stay one per list)."""

    __slots__ = ("gateway", "track_id")

    def __init__(self, gateway: "Gateway", track_id: str) -> None:
        self.gateway = gateway
        self.track_id = track_id

    async def __call__(self) -> None:
        announce_now(self.gateway, self.track_id)


def payment_changed(gateway: "Gateway", track_id: str | None, after: AfterCommit) -> None:
    """Announce ``track_id``'s change once ``after`` runs (after the commit); once per payment per list."""
    if not track_id:
        return
    for action in after:
        if type(action) is _Announce and action.track_id == track_id:
            return
    after.append(_Announce(gateway, track_id))
    # This process's cached rows go at the commit itself, before any after-commit action can read them.
    gateway.db.on_commit(_Forget(gateway, track_id))


class _Forget:
    """Drop one payment's rows from this process's cache (core/payments/row_cache.py), if it has one."""

    __slots__ = ("gateway", "track_id")

    def __init__(self, gateway: "Gateway", track_id: str) -> None:
        self.gateway = gateway
        self.track_id = track_id

    def __call__(self) -> None:
        rows = self.gateway.services.get(ROWS_CACHE)
        if rows is not None:
            rows.changed(self.track_id)


def announce_now(gateway: "Gateway", track_id: str | None) -> None:
    """Announce a change already committed (a statement outside any transaction)."""
    if track_id:
        gateway.signals.publish(TOPIC, track_id)
