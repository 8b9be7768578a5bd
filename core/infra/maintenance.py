"""Maintenance mode (SPEC 7: "all write operations rejected"): the one call a GET that writes makes.

The edge middleware refuses every write *method* (POST, PUT, PATCH,
DELETE) in maintenance mode without looking at the handler. A GET or HEAD
handler that writes (a page that mints an invoice, a read that derives a
missing address) is let through, so it calls ``refuse_in_maintenance``
right before its first write: the request then answers the spec's 503
``maintenance`` (an HTML page on ``html_page`` routes) and writes nothing,
while the same handler's reading branches keep working. Plugins use it the
same way (docs/plugins.md, ``register_routes``).
"""

from __future__ import annotations

from typing import Protocol

from ..types.errors import Maintenance


class Maintained(Protocol):
    """What the check reads of the gateway (infra stands below the contract's gateway protocol)."""

    maintenance: bool


def refuse_in_maintenance(gateway: Maintained) -> None:
    """Raise ``Maintenance`` (503) when the gateway is read-only; call it before a GET's first write."""
    if gateway.maintenance:
        raise Maintenance()
