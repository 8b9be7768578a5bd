"""The plugin's settings and provider, built once per gateway and kept in ``gateway.services``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...api import HTTP_SESSION, ServiceKey
from .provider import Provider
from .settings import PLUGIN_NAME, OidcSettings, parse_settings

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

_SETTINGS = ServiceKey("oidc.settings", OidcSettings)
_PROVIDER = ServiceKey("oidc.provider", Provider)


def settings_of(gateway: "Gateway") -> OidcSettings:
    cached = gateway.services.get(_SETTINGS)
    if cached is None:
        config = gateway.config
        cached = gateway.services[_SETTINGS] = parse_settings(
            config.plugin_config(PLUGIN_NAME), base_url=config.base_url,
            allow_plain_http=config.webhooks.allow_private_urls)
    return cached


def provider_of(gateway: "Gateway") -> Provider | None:
    """The configured provider with this process's caches; None when sign-in is not configured.

    Built on first use, when the outbound HTTP session exists; rebuilt if
    that session was replaced (a restarted app in tests).
    """
    settings = settings_of(gateway)
    http = gateway.services.get(HTTP_SESSION)
    if not settings.enabled or http is None:
        return None
    provider = gateway.services.get(_PROVIDER)
    if provider is None or provider.http is not http:
        provider = gateway.services[_PROVIDER] = Provider(settings, http)
    return provider
