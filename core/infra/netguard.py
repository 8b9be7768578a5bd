"""Refuse outbound URLs that point inside the operator's network (SSRF guard).

Webhook URLs, Lightning Address look-ups and logo URLs are chosen by
merchants; without this a merchant could make the gateway POST to
``http://127.0.0.1:5432`` or a cloud metadata endpoint. The check resolves
the host name and refuses it when any resolved address is private,
loopback, link-local, multicast, reserved or unspecified. An IPv6 address
that embeds an IPv4 one (mapped, compatible, 6to4, Teredo, NAT64) is judged
as that IPv4 address, since that is where its packets go. The operator can
allow them (tests, local development) with ``webhooks.allow_private_urls``.

Checking again right before each delivery (not only when the URL is saved)
closes most of the DNS-rebinding window.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver
from ..types.services import ServiceKey

MAX_URL_LENGTH = 500
# Said by `config check`, `doctor` and the log at start: the guard switched off where strangers sign up.
PRIVATE_URLS_IN_PRODUCTION = (
    "webhooks.allow_private_urls is on in production: merchants' webhook URLs (and identity-provider and"
    " captcha URLs) may reach this host's loopback and private network; turn it off unless every merchant"
    " on this gateway is trusted (docs/operations.md)")


class UnsafeUrl(ValueError):
    """The URL is malformed or resolves to a private or internal address."""


_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")


def _v4(value: int) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(value & 0xFFFFFFFF)


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 address(es) an IPv6 transition form carries; empty for a plain IPv6 address.

    A packet to any of these forms ends up at the embedded IPv4 host (through
    a 6to4 or Teredo relay, a NAT64 translator, or the host's own stack), so
    the address is only as public as that IPv4 address. Forms: IPv4-mapped
    ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, 6to4 ``2002:AABB:CCDD::``,
    Teredo ``2001:0:SERVER::~CLIENT`` (both the server and the client, whose
    address is stored bitwise inverted), NAT64 ``64:ff9b::a.b.c.d`` and the
    local-use ``64:ff9b:1::/48`` (RFC 8215; checked in both the RFC 6052 /48
    layout and the /96 one, since the operator picks the layout).
    """
    value = int(address)
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if address in _IPV4_COMPATIBLE or address in _NAT64_WELL_KNOWN:
        return [_v4(value)]
    if address in _SIX_TO_FOUR:
        return [_v4(value >> 80)]
    if address in _TEREDO:
        return [_v4(value >> 64), _v4(~value)]
    if address in _NAT64_LOCAL:
        # RFC 6052 /48: IPv4 bits 0-15 at 48-63, the zero "u" octet, bits 16-31 at 72-87.
        high, low = (value >> 64) & 0xFFFF, (value >> 40) & 0xFFFF
        return [_v4((high << 16) | low), _v4(value)]
    return []


def _outside_the_internet(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """The properties both families share: private, loopback, link-local, multicast, reserved, unspecified."""
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


def _is_internal_ipv4(address: ipaddress.IPv4Address) -> bool:
    return _outside_the_internet(address) or address in _SHARED_ADDRESS_SPACE


def _is_internal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``address`` reaches inside; an IPv6 form embedding IPv4 is judged as that IPv4."""
    if isinstance(address, ipaddress.IPv4Address):
        return _is_internal_ipv4(address)
    embedded = embedded_ipv4(address)
    if embedded:
        return any(_is_internal_ipv4(v4) for v4 in embedded)
    return _outside_the_internet(address) or address.is_site_local


def parse_http_url(url: str) -> tuple[str, int]:
    """Host and port of an http(s) URL, or ``UnsafeUrl`` saying what is wrong."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise UnsafeUrl(f"must be an http or https URL of at most {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise UnsafeUrl("is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeUrl("must be an http or https URL")
    if parts.username or parts.password:
        raise UnsafeUrl("must not contain credentials")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


async def resolve(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UnsafeUrl("host name does not resolve") from None
    return sorted({info[4][0] for info in infos})


async def check_public_url(url: str, *, allow_private: bool = False) -> None:
    """Raise ``UnsafeUrl`` unless ``url`` is http(s) and resolves only to public addresses."""
    host, port = parse_http_url(url)
    if allow_private:
        return
    lowered = host.lower().rstrip(".")
    if lowered == "localhost" or lowered.endswith((".localhost", ".internal", ".local")):
        raise UnsafeUrl("points to a private or internal address")
    try:
        literal = ipaddress.ip_address(lowered.strip("[]"))
    except ValueError:
        literal = None
    addresses = [str(literal)] if literal is not None else await resolve(lowered, port)
    for text in addresses:
        if _is_internal(ipaddress.ip_address(text.split("%")[0])):
            raise UnsafeUrl("points to a private or internal address")


class GuardedResolver(AbstractResolver):
    """An aiohttp resolver that refuses internal addresses at connect time.

    ``check_public_url`` runs before a request, but aiohttp resolves the name
    again when it connects; a hostile DNS server could answer differently the
    second time (DNS rebinding). Resolving through this closes that window.
    IP literals never reach a resolver; ``check_public_url`` covers them.
    """

    def __init__(self, allow_private: bool = False) -> None:
        self._inner = ThreadedResolver()
        self._allow_private = allow_private

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if not self._allow_private:
            for result in results:
                if _is_internal(ipaddress.ip_address(result["host"].split("%")[0])):
                    raise OSError(f"refused: {host} resolves to a private or internal address")
        return results

    async def close(self) -> None:
        await self._inner.close()


# The web app's shared outbound session (SSRF-guarded, the webhooks' timeout), open for the app's lifetime.
HTTP_SESSION = ServiceKey("http", aiohttp.ClientSession)


def outbound_session(*, allow_private: bool, timeout_seconds: float, **kwargs: Any) -> aiohttp.ClientSession:
    """An aiohttp session for merchant-chosen URLs: guarded DNS, no redirects by default."""
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(allow_private), limit=64)
    return aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=timeout_seconds),
        headers={"User-Agent": "Orbchain"}, **kwargs,
    )
