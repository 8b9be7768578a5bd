"""The ``[plugin.oidc]`` block, checked once at startup.

A bad block stops ``orbchain serve`` with a message naming the key, so a
typo never leaves sign-in half-configured. Without ``client_id`` the plugin
is installed but off: its routes answer 503 ``not_configured``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

from ...api import ConfigError

PLUGIN_NAME = "oidc"
# Google's published discovery document; any OpenID Connect provider works.
GOOGLE_DISCOVERY_URL = "https://accounts.google.com/.well-known/openid-configuration"
CALLBACK_PATH = "/dashboard/auth/google/callback"
DEFAULT_SCOPES = ("openid", "email", "profile")
DEFAULT_TIMEOUT_SECONDS = 10.0
MAX_TIMEOUT_SECONDS = 60.0
DEFAULT_LOGIN_TTL = 600  # seconds a started sign-in may take at the provider
_KEYS = {"client_id", "client_secret", "discovery_url", "redirect_uri", "scopes", "timeout_seconds",
         "login_ttl_seconds", "app_path"}


@dataclass(frozen=True)
class OidcSettings:
    client_id: str
    client_secret: str
    discovery_url: str
    redirect_uri: str
    scopes: tuple[str, ...]
    timeout_seconds: float
    login_ttl_seconds: int
    app_path: str

    @property
    def enabled(self) -> bool:
        return bool(self.client_id)

    def __repr__(self) -> str:  # the client secret never reaches a log line
        return f"<OidcSettings client_id={self.client_id!r} discovery_url={self.discovery_url!r}>"


def _key(name: str) -> str:
    return f"plugin.{PLUGIN_NAME}.{name}"


def _string(block: Mapping[str, Any], name: str, default: str = "") -> str:
    value = block.get(name, default)
    if not isinstance(value, str):
        raise ConfigError(f"config key '{_key(name)}' must be a string")
    return value.strip()


def _url(value: str, name: str, schemes: tuple[str, ...]) -> str:
    parts = urlsplit(value)
    if parts.scheme not in schemes or not parts.hostname:
        raise ConfigError(f"config key '{_key(name)}' must be an {' or '.join(schemes)} URL")
    return value


def parse_settings(block: Mapping[str, Any], *, base_url: str, allow_plain_http: bool) -> OidcSettings:
    """The settings of ``block``, or ``ConfigError`` naming the first bad key.

    ``allow_plain_http`` (``webhooks.allow_private_urls``, the local-development
    switch) permits an ``http://`` discovery URL; otherwise it must be https,
    since the token request carries the client secret.
    """
    unknown = sorted(set(block) - _KEYS)
    if unknown:
        raise ConfigError(f"unknown config key '{_key(unknown[0])}' (known: {', '.join(sorted(_KEYS))})")
    client_id, client_secret = _string(block, "client_id"), _string(block, "client_secret")
    if client_id and not client_secret:
        raise ConfigError(f"config key '{_key('client_secret')}' is required with '{_key('client_id')}'")
    schemes = ("https", "http") if allow_plain_http else ("https",)
    discovery_url = _url(_string(block, "discovery_url", GOOGLE_DISCOVERY_URL), "discovery_url", schemes)
    redirect_uri = _url(_string(block, "redirect_uri", base_url.rstrip("/") + CALLBACK_PATH), "redirect_uri",
                        ("https", "http"))
    if urlsplit(redirect_uri).path != CALLBACK_PATH:
        raise ConfigError(f"config key '{_key('redirect_uri')}' must end in {CALLBACK_PATH}")
    scopes = block.get("scopes", list(DEFAULT_SCOPES))
    if not isinstance(scopes, list) or not all(isinstance(s, str) and s and " " not in s for s in scopes):
        raise ConfigError(f"config key '{_key('scopes')}' must be a list of scope names")
    if "openid" not in scopes or "email" not in scopes:
        raise ConfigError(f"config key '{_key('scopes')}' must include openid and email")
    timeout = block.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT_SECONDS:
        raise ConfigError(f"config key '{_key('timeout_seconds')}' must be a number above 0"
                          f" and at most {MAX_TIMEOUT_SECONDS:g}")
    ttl = block.get("login_ttl_seconds", DEFAULT_LOGIN_TTL)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 60 <= ttl <= 3600:
        raise ConfigError(f"config key '{_key('login_ttl_seconds')}' must be an integer from 60 to 3600")
    app_path = _string(block, "app_path", "/app")
    if not app_path.startswith("/") or app_path.startswith("//") or "#" in app_path:
        raise ConfigError(f"config key '{_key('app_path')}' must be a path on this server, like /app")
    return OidcSettings(client_id, client_secret, discovery_url, redirect_uri, tuple(scopes), float(timeout), ttl,
                        app_path)
