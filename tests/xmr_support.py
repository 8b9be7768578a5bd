"""What the XMR swap tests (a venue's deposit address, the swap-in) read back as the merchant."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from .support import api


class MerchantReads:
    """Mixed into a test's ``Shop``, which sets ``client``, ``merchant`` and ``db``."""

    client: Any
    merchant: Any
    db: Any

    async def payment(self, track_id: str) -> dict:
        status, body = await api(self.client, "GET", f"/v1/payment/{track_id}", self.merchant.merchant_key)
        assert status == 200, body
        return body["data"]

    async def balances(self) -> dict[str, str]:
        """The dashboard's balances that are not zero, by coin."""
        status, body = await api(self.client, "GET", "/dashboard/balances", self.merchant.jwt)
        assert status == 200, body
        return {b["coin"]: b["amount"] for b in body["data"]["balances"] if Decimal(b["amount"])}

    async def paid_webhooks(self, track_id: str) -> list[dict]:
        """The ``payment.paid`` webhook bodies queued for ``track_id``."""
        rows = await self.db.fetch_all("SELECT body FROM webhook_events WHERE event_type = 'payment.paid'")
        return [b for b in (json.loads(r["body"]) for r in rows) if b["track_id"] == track_id]
