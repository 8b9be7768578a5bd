"""Captcha on dashboard sign-up and login (SPEC 4.7, 5.3) and on public forms, a feature plugin.

Configured with ``[plugin.captcha] secret = "..."`` (and optionally
``siteverify_url``, ``fail_open``, ``timeout_seconds``), it makes
``turnstile_token`` required on ``POST /dashboard/auth/signup`` and
``/login`` and checks it with the provider through the ``check_sign_in``
hook, before any account work; a failure answers 403 ``captcha_failed``.
Public forms that create something for an anonymous visitor (the
subscription enrolment at ``/subscribe/<plan>``) get the same check
through the ``check_public_form`` hook.
A sign-in whose token the provider confirmed has passed a human challenge:
the plugin says so through ``decide_sign_in_challenge``, so the e-mail's
password lockout checks the password instead of refusing it (issue 42: ten
wrong passwords from a stranger no longer lock the person out when a
captcha guards every try). A token let through unchecked by ``fail_open``
during an outage does not count as passed.
Without a secret it does nothing, so a fresh install signs in as before.
It uses only the public plugin contract, as a third-party package would.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Mapping

from ...api import HTTP_SESSION, Gateway, ServiceKey, SignInWidget, hookimpl
from .settings import PLUGIN_NAME, CaptchaSettings, parse_settings
from .siteverify import verify_sign_in

_SERVICE = ServiceKey("captcha.settings", CaptchaSettings)
# The token of a sign-in the provider confirmed in this request: aiohttp runs each request in its own task, and
# ``check_sign_in`` and ``decide_sign_in_challenge`` are awaited one after the other in that task, so the second
# sees what the first set and no other request ever does (a token is single-use at the provider, too).
_confirmed: ContextVar[str | None] = ContextVar("orbchain_captcha_confirmed", default=None)


def _settings(gateway: Any) -> CaptchaSettings:
    cached = gateway.services.get(_SERVICE)
    if cached is None:
        cached = gateway.services[_SERVICE] = parse_settings(
            gateway.config.plugin_config(PLUGIN_NAME),
            allow_plain_http=gateway.config.webhooks.allow_private_urls)
    return cached


@hookimpl
def check_config(gateway: Gateway) -> None:
    _settings(gateway)


@hookimpl
async def check_sign_in(gateway: Gateway, action: str, body: Mapping[str, Any], client_ip: str) -> None:
    settings = _settings(gateway)
    if not settings.enabled:
        return
    remote_ip = client_ip if client_ip and client_ip != "unknown" else None
    token = body.get("turnstile_token")
    if await verify_sign_in(gateway.services.get(HTTP_SESSION), settings, action, token, remote_ip):
        _confirmed.set(token if isinstance(token, str) else None)


@hookimpl
def decide_sign_in_challenge(gateway: Gateway, action: str, body: Mapping[str, Any], client_ip: str) -> bool | None:
    """True when this very sign-in's token was confirmed by the provider (not let through by ``fail_open``)."""
    token = body.get("turnstile_token")
    confirmed = _confirmed.get()
    return True if action == "login" and isinstance(token, str) and token and token == confirmed else None


@hookimpl
async def check_public_form(gateway: Gateway, form: str, body: Mapping[str, Any], client_ip: str) -> None:
    """The same check guards public forms that create something (a subscription enrolment)."""
    await check_sign_in(gateway, form, body, client_ip)


@hookimpl
def decide_sign_in_widget(gateway: Gateway) -> SignInWidget | None:
    """The Turnstile widget for browser sign-in pages, when a secret and a ``site_key`` are configured."""
    settings = _settings(gateway)
    return settings.widget if settings.enabled else None
