"""Mailing an invitation when ``[plugin.teams] smtp_host`` is set: one plain-text message, off the event loop.

A failure to send is reported to the inviter (the link is still shown to
copy), never raised: the invitation exists either way.
"""

from __future__ import annotations

import asyncio
import logging
import smtplib
from email.message import EmailMessage
from typing import Any

from .settings import TeamSettings, settings_of

log = logging.getLogger(__name__)
TIMEOUT_SECONDS = 10


def _message(settings: TeamSettings, to: str, url: str, account: str) -> EmailMessage:
    message = EmailMessage()
    message["Subject"] = "You are invited to an Orbchain account"
    message["From"] = settings.smtp_from or ""
    message["To"] = to
    message.set_content(f"{account} invited you to their Orbchain account.\n\nChoose your password and join:\n"
                        f"{url}\n\nThe link works once. If you did not expect it, ignore this e-mail.\n")
    return message


def _send(settings: TeamSettings, message: EmailMessage) -> None:
    with smtplib.SMTP(settings.smtp_host or "", settings.smtp_port, timeout=TIMEOUT_SECONDS) as smtp:
        if settings.smtp_starttls:
            smtp.starttls()
        if settings.smtp_user:
            smtp.login(settings.smtp_user, settings.smtp_password or "")
        smtp.send_message(message)


async def send_invite(gateway: Any, to: str, url: str, account: str) -> bool | None:
    """Mail the link: True sent, False failed (logged), None when no SMTP server is configured."""
    settings = settings_of(gateway)
    if not settings.smtp_host:
        return None
    try:
        await asyncio.to_thread(_send, settings, _message(settings, to, url, account))
    except (OSError, smtplib.SMTPException) as exc:
        log.warning("invitation e-mail to the SMTP server %s failed: %s", settings.smtp_host, exc)
        return False
    return True
