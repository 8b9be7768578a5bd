"""The ``[plugin.subscriptions]`` block, checked once at startup (a misspelt key stops the start).

* ``invoice_lifetime_minutes`` (1-43200, default 1440): how long each
  period's invoice stays payable.
* ``pending_per_ip`` (default 3, 0 turns it off): how many unpaid enrolments
  one client IP may hold at a time on one plan through the customer page;
  the next is refused with 429 until one is paid or lapses.
* ``unpaid_retention_days`` (7-3650, default 30): how long a lapsed page
  enrolment (its first invoice never paid) is kept after that invoice
  expired, invoice and all; then the core's prune job deletes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...api import ConfigError, checked_block, int_setting
from ...api import ServiceKey

PLUGIN_NAME = "subscriptions"
KEYS = ("invoice_lifetime_minutes", "pending_per_ip", "unpaid_retention_days")
MAX_LIFETIME_MINUTES = 43200  # SPEC 8: a payment lives 1-43200 minutes
MIN_RETENTION_DAYS = 7  # the core's catch-up after downtime looks at payments expired within 7 days
MAX_RETENTION_DAYS = 3650
MAX_PENDING_PER_IP = 1000
DEFAULT_LIFETIME_MINUTES = 1440  # an invoice stays payable a day
_SERVICE = ServiceKey["SubscriptionSettings"]("subscriptions.settings")


@dataclass(frozen=True)
class SubscriptionSettings:
    invoice_lifetime_minutes: int = DEFAULT_LIFETIME_MINUTES
    pending_per_ip: int = 3
    unpaid_retention_days: int = 30


def _bounded(block: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = int_setting(block, f"plugin.{PLUGIN_NAME}", name, default, minimum=low)
    if value > high:
        raise ConfigError(f"config key 'plugin.{PLUGIN_NAME}.{name}' must be an integer from {low} to {high}")
    return value


def read_settings(gateway: Any) -> SubscriptionSettings:
    """The parsed block, cached on the gateway (parsed first at ``check_config``)."""
    cached = gateway.services.get(_SERVICE)
    if cached is None:
        block = checked_block(gateway.config, PLUGIN_NAME, KEYS)
        defaults = SubscriptionSettings()
        cached = gateway.services[_SERVICE] = SubscriptionSettings(
            _bounded(block, "invoice_lifetime_minutes", defaults.invoice_lifetime_minutes, 1, MAX_LIFETIME_MINUTES),
            _bounded(block, "pending_per_ip", defaults.pending_per_ip, 0, MAX_PENDING_PER_IP),
            _bounded(block, "unpaid_retention_days", defaults.unpaid_retention_days, MIN_RETENTION_DAYS,
                     MAX_RETENTION_DAYS))
    return cached
