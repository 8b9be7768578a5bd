"""Where the webhooks a request caused go: SPEC 5.2 and 6.1's per-key and per-brand overrides.

A scoped key may carry its own ``webhook_url`` (and ``webhook_secret``); every
event its requests cause goes there: the transfer it sent, and the
``payment.*`` and ``deposit.*`` events of a payment it created (payments keep
``key_id``). One module so transfers, payment status and deposits pick the
destination by the same rule (docs/decisions.md, "Webhook destinations"):
a payment's ``callback_url`` first (the most specific), then the key's URL
with the key's secret (else the account's secret), then the account's URL.

A plugin may add a layer between the key and the account with the
``decide_webhook_destination`` hook (a brand's own URL and secret, SPEC 6.1-6.2):
its URL is used when neither the payment nor the key names one, and its
secret signs whenever the key has no secret of its own.

A transaction that sends several events of one payment (a credit: ``deposit.credited`` then ``payment.paid``)
looks the destination up once, at its first event, through one :class:`RunDestination` it passes on (issue 44).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..infra.db import Database
from ..types.destinations import WebhookDestination  # moved to the ground floor; importable here too
from ..types.views import payment_view_of
from ..contract.gateway import PluginGateway as Gateway
from .outbox import OutboxEvent, enqueue_events


async def key_destination(db: Database, merchant_id: str, key_id: str | None) -> tuple[str | None, str | None]:
    """A live key's own webhook URL and secret, or (None, None) for the account's.

    A revoked key's settings no longer speak for the merchant: its events fall back to the account.
    """
    if not key_id:
        return None, None
    key = await db.fetch_one(
        "SELECT webhook_url, webhook_secret FROM api_keys WHERE id = :id AND merchant_id = :m AND revoked_at IS NULL",
        {"id": key_id, "m": merchant_id},
    )
    if key is None or not key["webhook_url"]:
        return None, None
    return key["webhook_url"], key["webhook_secret"] or None


async def plugin_destination(gateway: "Gateway", payment: Mapping[str, Any]) -> WebhookDestination:
    """The first ``decide_webhook_destination`` answer for a payments row, or an empty override.

    Runs inside the transaction that enqueues the event, so a plugin's error
    propagates and rolls the change back (to be retried), like any money-path hook.
    """
    result = await gateway.hooks.decide_webhook_destination(merchant_id=payment["merchant_id"],
                                                            brand_id=payment.get("brand_id"),
                                                            payment=payment_view_of(gateway, payment))
    if result is None:
        return WebhookDestination()
    if not isinstance(result, WebhookDestination):
        raise TypeError(f"decide_webhook_destination returned {type(result).__name__}, not a WebhookDestination")
    return result


async def payment_destination(gateway: "Gateway", payment: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """URL and secret for an event of ``payment`` (a payments row); None means the account's."""
    override = await plugin_destination(gateway, payment)
    if payment["callback_url"]:
        return payment["callback_url"], override.secret
    url, secret = await key_destination(gateway.db, payment["merchant_id"], payment["key_id"])
    if url:
        return url, secret or override.secret
    return override.url, override.secret



class RunDestination:
    """Where one transaction's events of a payment go, looked up at its first event and reused by the rest.

    Why: a credit sends ``deposit.credited`` and then ``payment.paid``; each looked up the brand's and the key's
    destination and the account's URL again (issue 44). What decides the destination (the account, the payment's
    ``callback_url``, ``key_id`` and brand) does not change inside a crediting, expiring or reorganising
    transaction, so the first answer holds for the rest of it. ``payment``: the row as the transaction read it
    (None: a deposit without a payment, sent to the account's URL); ``merchant``: the account's row when the caller
    read it in this transaction (else its URL and secret are read at the first event).
    """

    def __init__(self, gateway: "Gateway", payment: Mapping[str, Any] | None,
                 merchant: Mapping[str, Any] | None = None) -> None:
        self.gateway = gateway
        self.payment = payment
        self.merchant = merchant
        self._override: tuple[str | None, str | None] | None = None

    async def enqueue(self, *, merchant_id: str, event_type: str, body: Mapping[str, Any], logical_key: str) -> str:
        """``enqueue_event`` to this payment's destination; returns the event id."""
        if self._override is None:
            self._override = (None, None) if self.payment is None else await payment_destination(
                self.gateway, self.payment)
        url, secret = self._override
        event = OutboxEvent(merchant_id, event_type, body, logical_key, url, None, secret)
        return (await enqueue_events(self.gateway, [event], merchants=await self._account(merchant_id)))[0]

    async def _account(self, merchant_id: str) -> dict[str, Mapping[str, Any]]:
        """The account's row for the outbox (its URL and secret), read once; empty: the outbox reads it, and
        refuses an unknown merchant."""
        if self.merchant is None:
            self.merchant = await self.gateway.db.fetch_one(
                "SELECT id, webhook_url, webhook_secret FROM merchants WHERE id = :m", {"m": merchant_id})
        if self.merchant is None or self.merchant["id"] != merchant_id:
            return {}
        return {merchant_id: self.merchant}
