"""A signed test event to a merchant's webhook URL, on request (issue 32; beyond SPEC 6.3).

A merchant setting up an endpoint wants to see it receive and verify a
webhook without making a payment. The test event is an ordinary outbox
event of kind ``webhook.test``: signed with the webhook secret, sent by the
delivery job with its retries (and its refusal of private addresses), and
listed in the delivery log with every attempt, so it tries exactly the path
a real event takes. Its body says ``"type": "test"``; receivers that switch
on ``event_type`` ignore it.

At most ``PER_WINDOW`` per merchant in each ``WINDOW_SECONDS``: the event's
logical key names the window and one of its slots, so the limit holds
across processes with no counter to keep. A slot is taken once its event
row exists (a primary-key look-up); two requests racing for one slot
enqueue one event and both answer with it.
"""

from __future__ import annotations

from typing import Any

from ..types.errors import RateLimited, ValidationError
from .outbox import TEST_EVENT_TYPE, enqueue_event, event_id_for, outbox_row
from ..contract.gateway import PluginGateway as Gateway

WINDOW_SECONDS = 60
PER_WINDOW = 3
NO_URL = "set a webhook URL first"
MESSAGE = "A test event from Orbchain: your endpoint received it. Check its HMAC header with your webhook secret."


async def send_test_event(gateway: "Gateway", merchant_id: str, *, request_id: str | None = None) -> dict[str, Any]:
    """Queue a ``webhook.test`` event to the merchant's webhook URL; its event id, type and URL.

    400 (``webhook_url``) without a URL; 429 with ``Retry-After`` past the limit.
    """
    url = await gateway.db.fetch_val("SELECT webhook_url FROM merchants WHERE id = :id", {"id": merchant_id})
    if not url:
        raise ValidationError({"webhook_url": NO_URL})
    now = gateway.now()
    window = now // WINDOW_SECONDS
    for slot in range(PER_WINDOW):
        logical_key = f"{TEST_EVENT_TYPE}:{merchant_id}:{window}:{slot}"
        if await outbox_row(gateway, event_id_for(logical_key)) is None:
            break
    else:
        retry_after = (window + 1) * WINDOW_SECONDS - now
        raise RateLimited(f"at most {PER_WINDOW} test events a minute; try again in {retry_after} s",
                          code="test_event_rate_limited", headers={"Retry-After": str(retry_after)})
    body = {"type": "test", "merchant_id": merchant_id, "message": MESSAGE, "created_at": now}
    event_id = await enqueue_event(gateway, merchant_id=merchant_id, event_type=TEST_EVENT_TYPE, body=body,
                                   logical_key=logical_key, request_id=request_id)
    return {"event_id": event_id, "event_type": TEST_EVENT_TYPE, "webhook_url": url}
