"""Mailing the join link to the invited address: SMTP when configured, the log in development.

The mailed link is the proof that the person who joins holds the address,
so it goes to that mailbox only: never to the inviter's page, and never to
the log of a production server. Without ``[plugin.teams] smtp_host`` a
development server writes the message to its log instead (there is nobody
else to fool there), and a production server cannot mail at all (the Team
page says invitations then need an identity provider). Sending happens off
the event loop; a failure is reported to the inviter, never raised.
"""

from __future__ import annotations

import asyncio
import logging
import smtplib
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any, Literal

from ...api import NotConfigured
from .settings import TeamSettings, settings_of

log = logging.getLogger(__name__)
TIMEOUT_SECONDS = 10
Delivery = Literal["mailed", "failed", "logged"]


@dataclass(frozen=True)
class JoinMessage:
    """What the invited person reads: who invites them where, with which role, and the link to join."""

    to: str
    url: str
    account: str  # the account holder's e-mail: whose account it is
    inviter: str  # who pressed Create invitation (the holder, or "member <e-mail>")
    role: str

    @property
    def subject(self) -> str:
        return f"Join the Orbchain account of {self.account}"

    @property
    def body(self) -> str:
        return (f"{self.inviter} invited you to join the Orbchain account of {self.account} as {self.role}.\n\n"
                f"To join, open this link and choose your password:\n{self.url}\n\n"
                f"The link works once, only for {self.to}. Anyone holding it can join that account in your name:"
                " do not forward it. If you did not expect this invitation, ignore it and nothing happens.\n")


def can_mail(gateway: Any) -> bool:
    """Whether a join link can reach an invited person: an SMTP server, or a development server's log."""
    return bool(settings_of(gateway).smtp_host) or gateway.config.is_development


def _email(settings: TeamSettings, message: JoinMessage) -> EmailMessage:
    email = EmailMessage()
    email["Subject"] = message.subject
    email["From"] = settings.smtp_from or ""
    email["To"] = message.to
    email.set_content(message.body)
    return email


def _send(settings: TeamSettings, email: EmailMessage) -> None:
    with smtplib.SMTP(settings.smtp_host or "", settings.smtp_port, timeout=TIMEOUT_SECONDS) as smtp:
        if settings.smtp_starttls:
            smtp.starttls()
        if settings.smtp_user:
            smtp.login(settings.smtp_user, settings.smtp_password or "")
        smtp.send_message(email)


async def deliver(gateway: Any, message: JoinMessage) -> Delivery:
    """Send ``message``: mailed, failed (logged without the link), or logged in development without SMTP.

    503 ``not_configured`` on a production server without SMTP (:func:`can_mail` says so beforehand).
    """
    settings = settings_of(gateway)
    if not settings.smtp_host:
        if not gateway.config.is_development:  # a join link is a credential: never in a production log
            raise NotConfigured("this server has no mail server ([plugin.teams] smtp_host)", code="not_configured")
        log.warning("no mail server ([plugin.teams] smtp_host) in development: the invitation e-mail is written"
                    " here instead.\nTo: %s\nSubject: %s\n\n%s", message.to, message.subject, message.body)
        return "logged"
    try:
        await asyncio.to_thread(_send, settings, _email(settings, message))
    except (OSError, smtplib.SMTPException) as exc:
        log.warning("invitation e-mail to the SMTP server %s failed: %s", settings.smtp_host, exc)
        return "failed"
    return "mailed"
