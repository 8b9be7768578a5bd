"""The burn / null destination checks every address family applies.

Why: coins sent to a burn address are gone for good; a payout to one is always
a mistake (or an attempt to make the platform burn money), so validators
refuse them with code ``burn_address`` before any money moves. Two mechanisms:

1. A literal list of well-known burn addresses, owned by each family's chain
   plugin (``AddressFamily.burn_addresses``; the lists are in docs/keys.md),
   compared after normalization (case-insensitively for hex and bech32).
2. The all-zero rule: a destination whose hash, witness program or public key
   is all zero bytes (the "null address" of that format) is refused in every
   family that has one, whatever its prefix or network.
"""

from __future__ import annotations

from typing import Iterable

from .errors import AddressError

__all__ = ["burn_list", "check_burn_literal", "check_zero_payload"]


def burn_list(addresses: Iterable[str], caseless: bool = False) -> frozenset[str]:
    """A family's literal burn list in the form ``check_burn_literal`` compares."""
    return frozenset(a.lower() for a in addresses) if caseless else frozenset(addresses)


def check_burn_literal(text: str, listed: frozenset[str], family: str, caseless: bool = False) -> None:
    """Refuse ``text`` if it is on the family's literal burn list."""
    probe = text.lower() if caseless else text
    if probe in listed:
        raise AddressError.burn(f"known {family} burn address")


def check_zero_payload(payload: bytes, what: str) -> None:
    """Refuse an all-zero hash / program / key: nobody holds its key."""
    if not any(payload):
        raise AddressError.burn(f"all-zero {what} (null address)")
