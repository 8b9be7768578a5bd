""""Send again" for one webhook event, from its payment's page and from the delivery log: one rule for both.

Any event that is not being sent right now may be sent again, a delivered
one included (at most once a minute per event, the core's
``RESEND_GAP_SECONDS``): the same event id and body, signed anew at the
attempt. The account's posts are bounded too (``RESENDS_PER_MINUTE``, the
shared rate limiter, so every process counts them), so a script cannot turn
the form into a flood of deliveries to the shop's own server.
"""

from __future__ import annotations

from typing import Awaitable, Callable

from aiohttp import web

from ...api import GATEWAY, RateLimited, count_request
from ...api.merchant import redeliver
from .views import error_text, see_other

RESENDS_PER_MINUTE = 20

Refused = Callable[[str, int], Awaitable[web.Response]]  # (error text, status) -> the page again, saying why


async def send_again(request: web.Request, merchant_id: str, event_id: str, *, back: str,
                     refused: Refused) -> web.StreamResponse:
    """Queue the event again and go ``back`` (303) saying what happened ("redelivery-queued", "-too-soon",
    "-on-its-way"); 404 for an event that is not this merchant's. Past the account's bound: ``refused``'s page
    with 429 and Retry-After, nothing queued."""
    try:
        await count_request(request, f"dashboard.resend:{merchant_id}", RESENDS_PER_MINUTE)
    except RateLimited as exc:
        response = await refused(error_text(exc), exc.status)
        response.headers.update(exc.headers)
        return response
    outcome = await redeliver(request.app[GATEWAY], merchant_id, event_id)
    if outcome is None:
        raise web.HTTPNotFound()
    if outcome.queued:
        raise see_other(back, "redelivery-queued")
    raise see_other(back, "redelivery-too-soon" if outcome.retry_after else "redelivery-on-its-way")
