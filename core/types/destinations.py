"""A plugin's answer to ``decide_webhook_destination``: where a payment's webhooks go and what signs them.

Why on the ground floor: the hook specs name it, and the plugin contract stands below the events room.
"""

from __future__ import annotations

from typing import NamedTuple


class WebhookDestination(NamedTuple):
    """A plugin's override for a payment's webhooks; a None field inherits (key, then account)."""

    url: str | None = None
    secret: str | None = None
