"""``[plugin.teams]``: how long an invitation lasts, and the SMTP server that mails it (optional).

Without ``smtp_host`` no e-mail is sent: the invite link is shown to copy,
which is all a gateway needs. ``smtp_password`` may also come from
``ORBCHAIN_PLUGIN__TEAMS__SMTP_PASSWORD`` like every plugin key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...api import ConfigError, checked_block, int_setting, text_setting
from ...api import ServiceKey

PLUGIN_NAME = "teams"
KEYS = ("invite_hours", "smtp_host", "smtp_port", "smtp_from", "smtp_user", "smtp_password", "smtp_starttls")
_SERVICE = ServiceKey["TeamSettings"]("teams.settings")


@dataclass(frozen=True)
class TeamSettings:
    invite_seconds: int
    smtp_host: str | None
    smtp_port: int
    smtp_from: str | None
    smtp_user: str | None
    smtp_password: str | None
    smtp_starttls: bool


def parse(config: Any) -> TeamSettings:
    block = checked_block(config, PLUGIN_NAME, KEYS)
    prefix = f"plugin.{PLUGIN_NAME}"
    hours = int_setting(block, prefix, "invite_hours", 72, minimum=1)
    if hours > 24 * 30:
        raise ConfigError(f"config key '{prefix}.invite_hours' must be at most 720 (30 days), got {hours}")
    starttls = block.get("smtp_starttls", True)
    if not isinstance(starttls, bool):
        raise ConfigError(f"config key '{prefix}.smtp_starttls' must be true or false")
    host = text_setting(block, prefix, "smtp_host")
    sender = text_setting(block, prefix, "smtp_from")
    if host and not sender:
        raise ConfigError(f"config key '{prefix}.smtp_from' is required with smtp_host (the invitation's sender)")
    return TeamSettings(hours * 3600, host, int_setting(block, prefix, "smtp_port", 587, minimum=1), sender,
                        text_setting(block, prefix, "smtp_user"), text_setting(block, prefix, "smtp_password"),
                        starttls)


def settings_of(gateway: Any) -> TeamSettings:
    found = gateway.services.get(_SERVICE)
    if found is None:
        found = gateway.services[_SERVICE] = parse(gateway.config)
    return found
