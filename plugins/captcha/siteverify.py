"""Turnstile-compatible server-side validation (``siteverify``).

The widget's token is worth nothing until the provider confirms it: POST
``secret``, ``response`` (the token) and ``remoteip`` form-encoded, read the
JSON answer's ``success`` boolean and ``error-codes`` list. Any provider
speaking this format (Turnstile, hCaptcha, reCAPTCHA) works.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp

from ...api import Forbidden
from .settings import CaptchaSettings

log = logging.getLogger("orbchain.plugins.captcha")

# Codes that mean the operator's configuration is wrong, not the visitor's token.
OPERATOR_ERRORS = frozenset({"missing-input-secret", "invalid-input-secret"})


class ProviderUnavailable(Exception):
    """The siteverify service could not give a verdict (down, slow, nonsense answer)."""


def refused() -> Forbidden:
    return Forbidden("captcha failed", code="captcha_failed")


async def siteverify(http: aiohttp.ClientSession, settings: CaptchaSettings, token: str,
                     remote_ip: str | None) -> tuple[bool, list[str]]:
    """The provider's verdict on ``token``: (success, error codes); ``ProviderUnavailable`` without one."""
    form = {"secret": settings.secret, "response": token}
    if remote_ip:
        form["remoteip"] = remote_ip
    try:
        async with http.post(settings.siteverify_url, data=form, allow_redirects=False,
                             timeout=aiohttp.ClientTimeout(total=settings.timeout_seconds)) as response:
            if response.status != 200:
                raise ProviderUnavailable(f"HTTP {response.status}")
            answer: Any = await response.json(content_type=None)
    except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
        raise ProviderUnavailable(type(exc).__name__) from exc
    if not isinstance(answer, dict) or not isinstance(answer.get("success"), bool):
        raise ProviderUnavailable("answer without a boolean 'success'")
    codes = answer.get("error-codes")
    codes = [str(c) for c in codes] if isinstance(codes, list) else []
    return answer["success"], codes


async def verify_sign_in(http: aiohttp.ClientSession | None, settings: CaptchaSettings, action: str,
                         token: object, remote_ip: str | None) -> bool:
    """Return when the sign-in may go on: True when the provider confirmed the token, False when an outage
    let it through unchecked; raise 403 ``captcha_failed`` otherwise.

    No token refuses without asking the provider. An outage refuses unless
    ``fail_open``, in which case it is let through and logged at WARNING so
    the operator sees sign-ins passing unchecked.
    """
    if not isinstance(token, str) or not token.strip():
        raise refused()
    try:
        if http is None or http.closed:
            raise ProviderUnavailable("no outbound HTTP session")
        success, codes = await siteverify(http, settings, token.strip(), remote_ip)
    except ProviderUnavailable as exc:
        if settings.fail_open:
            log.warning("captcha provider unavailable (%s): %s allowed unchecked (fail_open)", exc, action)
            return False
        log.warning("captcha provider unavailable (%s): %s refused (fail closed)", exc, action)
        raise refused() from None
    if not success:
        if OPERATOR_ERRORS.intersection(codes):
            log.error("captcha provider rejects the configured secret (%s)", ", ".join(codes))
        raise refused()
    return True
