"""The landing of a sign-in: the ``#google-auth=`` payload works once, in the browser that started it.

The payload is a credential handed to the browser. Without a binding, a
payload an attacker got for their own account and sent as a link would sign
a victim's browser in to the attacker's account (login CSRF, a session swap:
whatever the victim then enters lands with the attacker). So:

* the start route sets, next to the state cookie, an HttpOnly cookie on the
  app's path holding a random browser key; the pending sign-in keeps only
  its SHA-256 (``logins.py``);
* the callback, which already proved the browser by the state cookie, adds
  a random ``landing`` value to the payload and records a row keyed by its
  hash, with the browser key's hash, the merchant and a hash of the token;
* the page the payload lands on asks :func:`redeem`: the browser's key must
  hash to the row's and the payload's token must be the one issued (both
  compared in constant time); only then is the row deleted, with
  ``DELETE ... RETURNING``, which hands it to exactly one request across
  worker processes. A refused landing changes nothing, not even the row.

The dashboard reaches this through the ``oidc_landing`` gateway service
(:class:`LandingService`), so neither plugin imports the other.
"""

from __future__ import annotations

import hmac
import re
from typing import TYPE_CHECKING, Any, Mapping

from aiohttp import web

from ...api import AccountSession, Forbidden, InvalidRequest
from ...api import ServiceKey
from . import payload
from .logins import keep_hashed, secret_hash

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

    from .settings import OidcSettings

COOKIE_NAME = "orbchain_oidc_landing"
SERVICE_NAME = ServiceKey["LandingService"]("oidc_landing")
_SECRET = re.compile(r"^[A-Za-z0-9_-]{32,128}$")  # what secrets.token_urlsafe makes (43 characters here)


class NotThisBrowser(Forbidden):
    def __init__(self) -> None:
        super().__init__("this sign-in was not started in this browser, so it was not used and nothing changed."
                         " To sign in, start again from this browser", code="landing_not_bound")


class LandingSpent(InvalidRequest):
    def __init__(self) -> None:
        super().__init__("this sign-in link was already used or has expired, so nothing changed."
                         " Please sign in again", code="landing_used")


def remember_browser(response: web.StreamResponse, browser_key: str, settings: "OidcSettings") -> None:
    """Set the landing cookie on the start route's answer: the app's path, as long as start plus landing may take."""
    response.set_cookie(COOKIE_NAME, browser_key, max_age=2 * settings.login_ttl_seconds, path=settings.app_path,
                        httponly=True, samesite="Lax", secure=settings.redirect_uri.startswith("https:"))


async def record(gateway: "Gateway", binding_hash: str, session: AccountSession, ttl_seconds: int) -> str:
    """Record the landing of ``session`` for the browser whose key hashes to ``binding_hash``; its value."""
    return await keep_hashed(gateway, "oidc_landings", {"binding_hash": binding_hash,
                                                        "token_hash": secret_hash(session.token),
                                                        "merchant_id": session.merchant_id}, ttl_seconds)


async def send_to_app(gateway: "Gateway", binding_hash: str, session: AccountSession,
                      settings: "OidcSettings") -> web.Response:
    """The redirect that lands ``session`` at ``app_path#google-auth=``, recorded for that browser."""
    landing = await record(gateway, binding_hash, session, settings.login_ttl_seconds)
    return web.Response(status=302, headers={"Location": payload.fragment(settings.app_path, session, landing)})


async def redeem(gateway: "Gateway", landing: str, token: str, browser_key: str | None) -> str:
    """Spend the landing for this browser and token; the merchant id it signs in to.

    Raises 400 ``landing_used`` when the landing is unknown, expired or
    already spent (so a replay says so), else 403 ``landing_not_bound`` when
    the browser holds no key or another one, or the token is not the one
    issued; nothing is spent then.
    """
    if not _SECRET.match(landing):
        raise LandingSpent()
    key = secret_hash(landing)
    row = await gateway.db.fetch_one(
        "SELECT binding_hash, token_hash, expires_at FROM oidc_landings WHERE landing_hash = :h", {"h": key})
    if row is None or int(row["expires_at"]) <= gateway.now():
        raise LandingSpent()
    if not isinstance(browser_key, str) or not _SECRET.match(browser_key):
        raise NotThisBrowser()
    binding = secret_hash(browser_key)
    same_browser = hmac.compare_digest(row["binding_hash"].encode(), binding.encode())
    same_token = hmac.compare_digest(row["token_hash"].encode(), secret_hash(token).encode())
    if not (same_browser and same_token):
        raise NotThisBrowser()
    spent = await gateway.db.fetch_one(
        "DELETE FROM oidc_landings WHERE landing_hash = :h AND binding_hash = :b RETURNING merchant_id",
        {"h": key, "b": binding})
    if spent is None:  # another request (any worker) spent it a moment ago
        raise LandingSpent()
    return str(spent["merchant_id"])


class LandingService:
    """What ``gateway.services[SERVICE_NAME]`` (``"oidc_landing"``) holds, for the page the payload lands on.

    ``await redeem(gateway, landing, token, cookies)`` returns the merchant id
    or raises the errors of :func:`redeem`; ``forget(response)`` clears the
    browser's landing cookie once it has signed in.
    """

    def __init__(self, app_path: str) -> None:
        self.app_path = app_path

    async def redeem(self, gateway: Any, landing: str, token: str, cookies: Mapping[str, str]) -> str:
        return await redeem(gateway, landing, token, cookies.get(COOKIE_NAME))

    def forget(self, response: web.StreamResponse) -> None:
        response.del_cookie(COOKIE_NAME, path=self.app_path)


def offer(gateway: Any, settings: "OidcSettings") -> None:
    """Put the service in place at startup when sign-in is configured (else a landing is refused)."""
    if settings.enabled:
        gateway.services[SERVICE_NAME] = LandingService(settings.app_path)
    else:
        gateway.services.pop(SERVICE_NAME, None)
