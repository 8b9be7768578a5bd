"""Refuse outbound URLs that point inside the operator's network (SSRF guard).

Webhook URLs, Lightning Address look-ups and logo URLs are chosen by
merchants; without this a merchant could make the gateway POST to
``http://127.0.0.1:5432`` or a cloud metadata endpoint. The check resolves
the host name and refuses it when any resolved address is private,
loopback, link-local, multicast, reserved or unspecified. The operator can
allow them (tests, local development) with ``webhooks.allow_private_urls``.

Checking again right before each delivery (not only when the URL is saved)
closes most of the DNS-rebinding window.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

MAX_URL_LENGTH = 500


class UnsafeUrl(ValueError):
    """The URL is malformed or resolves to a private or internal address."""


def _is_internal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or (isinstance(address, ipaddress.IPv4Address) and address in ipaddress.ip_network("100.64.0.0/10"))
    )


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


class GuardedResolver:
    """An aiohttp resolver that refuses internal addresses at connect time.

    ``check_public_url`` runs before a request, but aiohttp resolves the name
    again when it connects; a hostile DNS server could answer differently the
    second time (DNS rebinding). Resolving through this closes that window.
    IP literals never reach a resolver; ``check_public_url`` covers them.
    """

    def __init__(self, allow_private: bool = False) -> None:
        from aiohttp.resolver import ThreadedResolver

        self._inner = ThreadedResolver()
        self._allow_private = allow_private

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list:
        results = await self._inner.resolve(host, port, family)
        if not self._allow_private:
            for result in results:
                if _is_internal(ipaddress.ip_address(result["host"].split("%")[0])):
                    raise OSError(f"refused: {host} resolves to a private or internal address")
        return results

    async def close(self) -> None:
        await self._inner.close()


def outbound_session(*, allow_private: bool, timeout_seconds: float, **kwargs):
    """An aiohttp session for merchant-chosen URLs: guarded DNS, no redirects by default."""
    import aiohttp

    connector = aiohttp.TCPConnector(resolver=GuardedResolver(allow_private), limit=64)
    return aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=timeout_seconds),
        headers={"User-Agent": "Orbchain"}, **kwargs,
    )
