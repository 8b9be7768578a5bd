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
"""

from __future__ import annotations

from typing import Any, Mapping

from ..infra.db import Database
from ..types.destinations import WebhookDestination  # moved to the ground floor; importable here too
from ..types.views import payment_view_of
from ..contract.gateway import PluginGateway as Gateway


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

