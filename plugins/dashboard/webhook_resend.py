""""Send again" for one webhook event, from its payment's page and from the delivery log: one rule for both.

Any event that is not being sent right now may be sent again, a delivered
one included (at most once a minute per event, the core's
``RESEND_GAP_SECONDS``): the same event id and body, signed anew at the
attempt. The account's posts are bounded too (``RESENDS_PER_MINUTE``, the
shared rate limiter, so every process counts them), so a script cannot turn
the form into a flood of deliveries to the shop's own server.
"""

from __future__ import annotations

from aiohttp import web

from ...api import GATEWAY, count_request
from ...api.merchant import redeliver

RESENDS_PER_MINUTE = 20


async def send_again(request: web.Request, merchant_id: str, event_id: str) -> str | None:
    """The page's notice for what asking did ("redelivery-queued", "-too-soon", "-on-its-way"); None for an
    event that is not this merchant's (the caller answers 404). Past the account's bound: 429 ``RateLimited``
    with Retry-After, nothing queued."""
    await count_request(request, f"dashboard.resend:{merchant_id}", RESENDS_PER_MINUTE)
    outcome = await redeliver(request.app[GATEWAY], merchant_id, event_id)
    if outcome is None:
        return None
    if outcome.queued:
        return "redelivery-queued"
    return "redelivery-too-soon" if outcome.retry_after else "redelivery-on-its-way"
