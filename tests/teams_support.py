"""Helpers of the team tests (plugins/teams): the holder's Team page, the invited person's mailbox and browser.

A development server without SMTP writes each invitation e-mail to its log
(plugins/teams/mail.py): :func:`mailbox` reads those lines, as the invited
person reads their mail. The inviter's page never shows the join link.
"""

from __future__ import annotations

import contextlib
import html
import logging
import re
from typing import Iterator

from .dashboard_support import PASSWORD, Visitor
from .support import api

OWNER = "owner@example.com"
MAIL_LOGGER = "orbchain.plugins.teams.mail"
JOIN_LINK = re.compile(r"/app/team/accept\?token=[A-Za-z0-9_-]+")
PAGE_LINK = re.compile(r'id="invite-page-link"[^>]*>([^<]+)</code>')


class _Mailbox(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def mailbox() -> Iterator[list[str]]:
    """The invitation e-mails a development server writes to its log while the block runs."""
    logger, handler = logging.getLogger(MAIL_LOGGER), _Mailbox()
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)


def join_link_to(messages: list[str], email: str) -> str:
    """The join link (path and query) of the last e-mail to ``email`` among ``messages``."""
    mailed = [text for text in messages if f"\nTo: {email.lower()}\n" in text]
    assert mailed, f"no invitation e-mail to {email}: {messages}"
    found = JOIN_LINK.search(mailed[-1])
    assert found, mailed[-1]
    return found.group(0)


async def owner_of(client) -> Visitor:
    owner = Visitor(client)
    await owner.sign_up(OWNER)
    return owner


async def invite(owner: Visitor, email: str, role: str) -> str:
    """Invite ``email`` from the Team page; the join link mailed to it (path and query), never shown there."""
    with mailbox() as messages:
        await owner.get("/app/team")
        await owner.submit("/app/team", {"action": "invite", "email": email, "role": role}, expect=200)
    link = join_link_to(messages, email)
    assert link.split("token=")[1] not in owner.page  # the inviter never sees it
    return link


def page_link(owner: Visitor) -> str:
    """The invitation's page link the Team page shows the inviter (with an identity provider configured)."""
    found = PAGE_LINK.search(owner.page)
    assert found, owner.page[:2000]
    url = html.unescape(found.group(1))
    return url[url.index("/app/team/accept"):]


async def join(client, link: str, password: str = PASSWORD) -> Visitor:
    """Accept the mailed ``link`` in a fresh browser; the member's browser, signed in."""
    client.session.cookie_jar.clear()  # the invited person's own browser
    member = Visitor(client)
    await member.get(link)
    response = await member.submit("/app/team/accept", {"action": "join", "token": link.split("token=")[1],
                                                        "password": password, "password_confirm": password})
    location = response.headers["Location"]
    assert location.startswith("/app/login?") and "member-joined" in location
    email = re.search(r"email=([^&]+)", location).group(1).replace("%40", "@")
    page = await member.get(location)
    assert f'value="{email}"' in page and "You joined the account" in page
    await member.sign_in(email, password)
    return member


async def member_jwt(client, email: str, password: str = PASSWORD) -> str:
    status, body = await api(client, "POST", "/dashboard/auth/login", {}, json={"email": email, "password": password})
    assert status == 200, body
    return body["data"]["token"]
