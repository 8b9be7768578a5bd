"""The one list of known burn / null destinations, and the all-zero rule.

Why: coins sent to these are gone for good; a payout to one is always a mistake
(or an attempt to make the platform burn money), so validators refuse them with
code ``burn_address`` before any money moves. Two mechanisms:

1. ``BURN_ADDRESSES``: literal, well-known addresses per family, compared after
   normalization (EVM and bech32 case-insensitively, Base58 exactly).
2. The all-zero rule: a destination whose hash, witness program or public key is
   all zero bytes (the "null address" of that format) is refused in every family
   that has one, whatever its prefix or network.

The list (also in docs/keys.md):

- evm: 0x0000000000000000000000000000000000000000 (zero address),
  0x000000000000000000000000000000000000dEaD (the conventional "dead" address)
- tron: T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb (0x41 + 20 zero bytes, Tron's zero address)
- btc: 1BitcoinEaterAddressDontSendf59kuE (vanity burn address, P2PKH),
  1111111111111111111114oLvT2 (P2PKH of the zero hash),
  bc1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq9e75rs (P2WPKH of the zero program)
- doge: D596YFweJQuHY1BbjazZYmAbt8jJPbKehC (P2PKH of the zero hash160)
- solana: 11111111111111111111111111111111 (all-zero key, the System Program),
  1nc1nerator11111111111111111111111111111111 (the Incinerator)
"""

from __future__ import annotations

from types import MappingProxyType

from .errors import AddressError

__all__ = ["BURN_ADDRESSES", "check_burn_literal", "check_zero_payload"]

BURN_ADDRESSES = MappingProxyType({
    "evm": frozenset({
        "0x0000000000000000000000000000000000000000",
        "0x000000000000000000000000000000000000dEaD",
    }),
    "tron": frozenset({"T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb"}),
    "btc": frozenset({
        "1BitcoinEaterAddressDontSendf59kuE",
        "1111111111111111111114oLvT2",
        "bc1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq9e75rs",
    }),
    "ltc": frozenset(),
    "doge": frozenset({"D596YFweJQuHY1BbjazZYmAbt8jJPbKehC"}),
    "solana": frozenset({
        "11111111111111111111111111111111",
        "1nc1nerator11111111111111111111111111111111",
    }),
    "xmr": frozenset(),
    "lightning": frozenset(),
})

# Families whose text form is case-insensitive (hex, bech32).
_CASELESS = {"evm", "btc", "ltc"}
_LOWER = {
    family: frozenset(a.lower() for a in addresses)
    for family, addresses in BURN_ADDRESSES.items()
    if family in _CASELESS
}


def check_burn_literal(family: str, text: str) -> None:
    """Refuse ``text`` if it is on the family's literal burn list."""
    listed = _LOWER.get(family) if family in _CASELESS else BURN_ADDRESSES.get(family)
    probe = text.lower() if family in _CASELESS else text
    if listed and probe in listed:
        raise AddressError.burn(f"known {family} burn address")


def check_zero_payload(payload: bytes, what: str) -> None:
    """Refuse an all-zero hash / program / key: nobody holds its key."""
    if not any(payload):
        raise AddressError.burn(f"all-zero {what} (null address)")

