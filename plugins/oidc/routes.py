"""GET /dashboard/auth/google and its callback (SPEC 4.7, 5.3): the browser's sign-in redirects.

``POST /dashboard/auth/google/link`` (a signed-in person's JSON call: a team
member, or the account holder with their password or code) starts the same
flow marked as their link (``linking.py``); the callback then links instead
of looking up. Another plugin's address proof (``proofs.py``) starts it
marked with that plugin's request; the callback hands the address over.

Both are pages for people: every refusal renders the HTML error page with
a sentence saying what to do (never a 500, never the provider's raw
answer). Both count in the sign-in rate-limit class (SPEC 8: 10 a minute
per IP), like signup and login.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from aiohttp import web

from ...api import (
    EVERYONE, DashboardRedirect, InvalidRequest, NotConfigured, SecondFactorDue, SecondFactorRequired,
    ServiceUnavailable, Unauthorized, envelope, gateway_of, html_page, principal_of, rate_class, read_json, requires,
)
from . import identities, landings, linking, logins, proofs, second_step
from .config import provider_of
from .provider import InvalidIdToken, Provider, ProviderRefused, ProviderUnavailable
from .settings import CALLBACK_PATH

log = logging.getLogger("orbchain.plugins.oidc")
routes = web.RouteTableDef()
START_PATH = "/dashboard/auth/google"
LINK_PATH = "/dashboard/auth/google/link"


def _no_store(response: web.StreamResponse) -> web.StreamResponse:
    # Nothing here may be cached, and the provider's callback URL (with its code) is never a Referer.
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def _redirect(location: str) -> web.Response:
    return web.Response(status=302, headers={"Location": location})


def _unavailable(exc: Exception) -> ServiceUnavailable:
    log.warning("identity provider unavailable: %s", exc)
    return ServiceUnavailable("the identity provider cannot be reached right now; please try again in a minute",
                              code="provider_unavailable")


def _provider(gateway: Any) -> Provider:
    """The configured identity provider; 503 ``not_configured`` on a server without one."""
    provider = provider_of(gateway)
    if provider is None:
        raise NotConfigured("sign-in with an identity provider is not configured on this server",
                            code="not_configured")
    return provider


async def started(gateway: Any, link: logins.LinkTarget | None = None,
                  proof: logins.AddressRequest | None = None) -> tuple[str, Callable[[Any], None]]:
    """Start a sign-in (a link, with ``link``; an address proof, with ``proof``): the provider URL, and what
    sets both cookies on the answer."""
    provider = _provider(gateway)
    try:
        await provider.metadata()  # before a row is written: a provider outage leaves nothing behind
    except ProviderUnavailable as exc:
        raise _unavailable(exc) from None
    settings = provider.settings
    login, browser_key = await logins.start(gateway, settings.login_ttl_seconds, link, proof)
    url = await provider.authorization_url(login.state, login.nonce, login.code_verifier)

    def set_cookies(response: Any) -> None:
        # SameSite=Lax: the provider's redirect back is a top-level GET, which carries Lax cookies.
        response.set_cookie(logins.COOKIE_NAME, logins.cookie_value(gateway, login),
                            max_age=settings.login_ttl_seconds, path=CALLBACK_PATH, httponly=True,
                            samesite="Lax", secure=settings.redirect_uri.startswith("https:"))
        landings.remember_browser(response, browser_key, settings)  # the payload will land only in this browser

    return url, set_cookies


async def start_proof(gateway: Any, purpose: str, reference: str) -> DashboardRedirect:
    """``AddressProver.start``: off to the provider to prove an address for ``purpose`` (``proofs.py``)."""
    url, set_cookies = await started(gateway, proof=logins.AddressRequest(purpose, reference))
    return DashboardRedirect(url, set_cookies)


async def _begin(gateway: Any, response_for: Callable[[str], web.StreamResponse],
                 link: logins.LinkTarget | None = None) -> web.StreamResponse:
    """Start a sign-in (a link, with ``link``): the answer ``response_for(provider URL)`` with both cookies."""
    url, set_cookies = await started(gateway, link)
    response = response_for(url)
    set_cookies(response)
    return _no_store(response)


@routes.get(START_PATH)
@rate_class("auth")
@html_page
async def start(request: web.Request) -> web.StreamResponse:
    return await _begin(gateway_of(request), _redirect)


@routes.post(LINK_PATH)
@rate_class("auth")
@requires("jwt", scope=EVERYONE)
async def start_link(request: web.Request) -> web.StreamResponse:
    """A signed-in person links their own identity: the provider URL to send their browser to.

    The account holder sends ``password`` (or ``totp_code`` with 2FA on) in the body; a member sends nothing.
    """
    gateway, principal = gateway_of(request), principal_of(request)
    answers = await read_json(request, required=False) if principal.member_id is None else {}
    link = await linking.target_for(gateway, principal, answers)
    return await _begin(gateway, lambda url: envelope({"authorization_url": url}), link)


@routes.get(CALLBACK_PATH)
@rate_class("auth")
@html_page
async def callback(request: web.Request) -> web.StreamResponse:
    gateway = gateway_of(request)
    provider = _provider(gateway)
    query = request.query
    state, code = query.get("state", ""), query.get("code", "")
    if not state or len(state) > 256 or not logins.cookie_matches(gateway, request.cookies.get(logins.COOKIE_NAME),
                                                                  state):
        raise InvalidRequest("this sign-in was started in another browser or has expired; please start again",
                             code="invalid_state")
    login = await logins.consume(gateway, state)
    if login is None:
        raise InvalidRequest("this sign-in link was already used or has expired; please start again",
                             code="invalid_state")
    if "error" in query:  # RFC 6749 4.1.2.1: the user said no, or the provider refused the request
        log.info("identity provider returned error %r", query["error"][:64])
        raise Unauthorized("sign-in was cancelled or refused at the identity provider", code="provider_refused")
    if not code or len(code) > 2048:
        raise InvalidRequest("the identity provider sent no sign-in code; please start again", code="invalid_state")
    try:
        token = await provider.exchange_code(code, login.code_verifier)
        identity = await provider.verify_id_token(token, login.nonce, gateway.now())
    except ProviderUnavailable as exc:
        raise _unavailable(exc) from None
    except ProviderRefused as exc:
        log.info("identity provider refused the code: %s", exc)
        raise Unauthorized("the identity provider refused this sign-in (the code is invalid or expired); "
                           "please start again", code="provider_refused") from None
    except InvalidIdToken as exc:
        log.warning("identity provider ID token rejected: %s", exc)
        raise Unauthorized("the identity provider's answer could not be verified", code="invalid_id_token") from None
    try:
        if login.proof is not None:
            session = await proofs.complete(gateway, identity, login.proof)
        elif login.link is not None:
            session = await linking.link(gateway, identity, login.link)
        else:
            session = await identities.sign_in(gateway, identity)
    except SecondFactorRequired as required:  # the holder's 2FA is on: no session from the provider alone
        session = required.due
    if isinstance(session, SecondFactorDue):  # the person's own code first (second_step.py)
        response = _redirect(second_step.STEP_PATH)
        await second_step.begin(gateway, session, login.binding_hash, provider.settings, response)
    else:
        response = await landings.send_to_app(gateway, login.binding_hash, session, provider.settings)
    response.del_cookie(logins.COOKIE_NAME, path=CALLBACK_PATH)
    return _no_store(response)
