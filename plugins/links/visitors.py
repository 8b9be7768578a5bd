"""Who is opening a payment link, so that a visit that is not a purchase mints nothing (issue 29).

SPEC 4.14 has ``GET /l/<slug>`` of a fixed-amount link mint a fresh invoice
and 302 to it. Two kinds of GET are not a payer starting a purchase:

* **Previews and prefetches.** A chat or social app unfurling a pasted link
  (Slackbot, Twitterbot, TelegramBot, WhatsApp, facebookexternalhit, ...)
  and a browser prefetching one (``Sec-Purpose``/``Purpose: prefetch``) get
  a small page naming the link and a "Continue to payment" link instead: no
  invoice, no address, no use counted. That link (and the amount prompt's
  form) carries ``continue=1``, which mints whatever the User-Agent says, so
  a person whose browser looks like a bot can still pay. A bot that lies
  about itself is left to the per-IP mint budget.
* **The same browser again.** Reloading, going back or reopening the link
  while its invoice is still open shows that invoice again instead of a new
  one: the 302 sets a cookie scoped to the link's path holding the track id,
  kept no longer than the invoice's lifetime. The cookie is the visitor's,
  never an IP (visitors behind one NAT must never share an invoice), and a
  value naming anything but an open invoice of this link is ignored.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from aiohttp import web

from ...api import find_payment
from . import store

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

# Lower-case fragments of User-Agent strings of link unfurlers, crawlers and preview services.
PREVIEW_AGENTS = re.compile(
    r"bot\b|bot/|crawl|spider|slurp|preview|facebookexternalhit|facebot|whatsapp|embedly|iframely|vkshare"
    r"|pinterest|outbrain|nuzzel|bitly|linkexpander|google-pagerenderer|mastodon|skypeuripreview")
PREFETCH_HEADERS = ("Sec-Purpose", "Purpose", "X-Purpose", "X-Moz")
COOKIE_PREFIX = "orb_l_"


CONTINUE = "continue"  # query parameter of the preview's own link: a person chose to pay


def is_preview(request: web.Request) -> bool:
    """A link unfurler, crawler or prefetch: not a payer starting a purchase."""
    if request.query.get(CONTINUE) == "1":
        return False
    if any("prefetch" in request.headers.get(name, "").lower() or "preview" in request.headers.get(name, "").lower()
           for name in PREFETCH_HEADERS):
        return True
    return PREVIEW_AGENTS.search(request.headers.get("User-Agent", "").lower()) is not None


def _cookie(link: Mapping[str, Any]) -> str:
    return COOKIE_PREFIX + link["slug"]


async def open_invoice(gateway: "Gateway", request: web.Request, link: Mapping[str, Any]) -> str | None:
    """The track id of this browser's still-open invoice of ``link``, or None."""
    track_id = request.cookies.get(_cookie(link), "")
    if not 0 < len(track_id) <= 64 or not await store.minted_by(gateway, link["id"], track_id):
        return None
    payment = await find_payment(gateway, track_id)
    return track_id if payment is not None and payment.is_open else None


def remember(gateway: "Gateway", request: web.Request, response: web.StreamResponse, link: Mapping[str, Any],
             track_id: str, seconds: int) -> None:
    """Let this browser find ``track_id`` again on ``/l/<slug>`` for ``seconds`` (the invoice's life)."""
    secure = request.secure or gateway.config.base_url.startswith("https://")
    response.set_cookie(_cookie(link), track_id, max_age=max(1, seconds), path=f"/l/{link['slug']}", httponly=True,
                        samesite="Lax", secure=secure)
