"""The ``[plugin.captcha]`` block, checked once at startup.

Kept apart from the HTTP check so a bad block stops ``orbchain serve`` with
a message naming the key, before any sign-in could be let through by a
typo (``fail_opne = true`` silently ignored would be worse than refusing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

from ...api import ConfigError, SignInWidget

PLUGIN_NAME = "captcha"
# Cloudflare Turnstile's published server-side validation endpoint.
DEFAULT_SITEVERIFY_URL = "https://challenges.cloudflare.com/turnstile/v0/siteverify"
# Turnstile's published browser script: the widget a sign-in page shows (``site_key`` set).
DEFAULT_SCRIPT_URL = "https://challenges.cloudflare.com/turnstile/v0/api.js"
DEFAULT_TIMEOUT_SECONDS = 10.0
MAX_TIMEOUT_SECONDS = 60.0
_KEYS = {"siteverify_url", "secret", "fail_open", "timeout_seconds", "site_key", "script_url"}


@dataclass(frozen=True)
class CaptchaSettings:
    siteverify_url: str
    secret: str
    fail_open: bool
    timeout_seconds: float
    widget: SignInWidget | None = None

    @property
    def enabled(self) -> bool:
        """No secret, no captcha: the plugin stays out of the way (the default install)."""
        return bool(self.secret)


def _key(name: str) -> str:
    return f"plugin.{PLUGIN_NAME}.{name}"


def parse_settings(block: Mapping[str, Any], *, allow_plain_http: bool) -> CaptchaSettings:
    """The settings of ``block``, or ``ConfigError`` naming the first bad key.

    ``allow_plain_http`` (the operator's ``webhooks.allow_private_urls``, the
    local-development switch) permits an ``http://`` siteverify URL; otherwise
    it must be https, since the request carries the secret.
    """
    unknown = sorted(set(block) - _KEYS)
    if unknown:
        raise ConfigError(f"unknown config key '{_key(unknown[0])}' (known: {', '.join(sorted(_KEYS))})")
    secret = block.get("secret", "")
    if not isinstance(secret, str):
        raise ConfigError(f"config key '{_key('secret')}' must be a string")
    url = block.get("siteverify_url", DEFAULT_SITEVERIFY_URL)
    parts = urlsplit(url) if isinstance(url, str) else None
    schemes = ("https", "http") if allow_plain_http else ("https",)
    if parts is None or parts.scheme not in schemes or not parts.hostname:
        raise ConfigError(f"config key '{_key('siteverify_url')}' must be an {' or '.join(schemes)} URL")
    fail_open = block.get("fail_open", False)
    if not isinstance(fail_open, bool):
        raise ConfigError(f"config key '{_key('fail_open')}' must be true or false")
    timeout = block.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT_SECONDS:
        raise ConfigError(f"config key '{_key('timeout_seconds')}' must be a number above 0"
                          f" and at most {MAX_TIMEOUT_SECONDS:g}")
    return CaptchaSettings(url, secret.strip(), fail_open, float(timeout), _widget(block))


def _widget(block: Mapping[str, Any]) -> SignInWidget | None:
    """The browser widget (``site_key``, optional ``script_url``) sign-in pages show; None without a site key."""
    site_key = block.get("site_key")
    if site_key is None:
        return None
    script_url = block.get("script_url", DEFAULT_SCRIPT_URL)
    if not isinstance(site_key, str) or not isinstance(script_url, str):
        raise ConfigError(f"config keys '{_key('site_key')}' and '{_key('script_url')}' must be strings")
    try:
        return SignInWidget(script_url, site_key.strip())
    except ValueError as exc:
        raise ConfigError(f"config key '{_key('site_key')}' or '{_key('script_url')}': {exc}") from None
