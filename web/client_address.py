"""Which address a client counts as, for bounds kept per address: an IPv4 address, or an IPv6 /64.

One IPv6 subscriber is usually given a whole /64 (often a /56 or /48), so a
bound keyed on the full IPv6 address gave one machine 2**64 separate
allowances (issue 42). Every address of a /64 counts as one; an IPv4 address
mapped into IPv6 (``::ffff:198.51.100.7``, as a dual-stack socket reports it)
counts as that IPv4 address, and a link-local zone (``%eth0``) is dropped.
Text that is no address at all (``unknown``, a forwarded header's junk) is
kept as it is: it is still one key.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

IPV6_PREFIX = 64


@lru_cache(maxsize=4096)
def address_group(ip: str) -> str:
    """The key ``ip`` counts under: ``"198.51.100.7"``, ``"2001:db8:1:2::/64"``, or ``ip`` unchanged."""
    try:
        address = ipaddress.ip_address(ip.split("%", 1)[0])
    except ValueError:
        return ip
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_PREFIX), strict=False))
    return str(address)
