"""The API's answer for one payment, encoded once per distinct payment and deposit rows.

A payment is read far more often than it changes (merchants poll it while
the payer pays), and its view (SPEC 2.2) is a function of its row and its
deposit rows alone. The encoded envelope is kept per process, keyed on every
value of those rows (``core.infra.bounded.values_key``): a status change, a new
deposit or a confirmation is a new key, so nothing needs invalidating and
no answer can be stale. The rows are still read on every request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..core.payments import service as svc
from ..core.infra.bounded import LruMap, remember, values_key
from .envelope import json_answer, kept_envelope_bytes
from ..core.types.services import ServiceKey

if TYPE_CHECKING:  # pragma: no cover
    from ..core.gateway import Gateway

# Distinct payment states kept per process: an answer and its key (every value of the rows) are 2-3 KB (the
# answer alone took 8-12 KB before ``kept_envelope_bytes``), so 1024 held about 10 MB per worker once full
# (docs/decisions.md, "Worker RSS growth").
CACHED_ANSWERS = 256
CACHE = ServiceKey[LruMap[Any, bytes]]("payment_answers")


async def payment_answer(gateway: "Gateway", merchant_id: str | None, track_id: str) -> web.Response:
    """``svc.show_payment`` as the success envelope; 404 for an unknown or another merchant's payment."""
    row, deposits = await svc.payment_with_deposits(gateway, merchant_id, track_id)
    body = remember(gateway.services, CACHE.name, CACHED_ANSWERS, values_key(row, deposits),
                    lambda: kept_envelope_bytes(svc.payment_view(gateway, row, deposits)))
    return json_answer(body)
