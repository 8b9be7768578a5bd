"""``orbchain.api.addresses``: what a chain plugin needs to derive, find and encode addresses.

For adapters and payout senders: the operator's key store (and the key
store types, to build one by hand), named counters (change addresses), the
scanner's look-up of watched addresses, and the encoding and burn-address
checks the built-in address families share.
"""

# Keys and counters: the operator's seed (or watch-only xpubs) and atomic named counters.
from ..core.addresses.store import keystore, next_counter

# Key stores by hand (docs/keys.md, "Watch-only operation"): a seed's, or account xpubs' without the seed.
from ..core.keys import KeyStore, SeedKeyStore, WatchOnlyKeyStore

# Which of these addresses are ours (the deposit-address rows a scan credits).
from ..core.addresses.store import lookup

# Cleaning a destination before validating it.
from ..core.keys.inputs import clean

# Encodings and hashes of address formats.
from ..core.keys.base58check import B58_ALPHABET, b58check_decode, b58check_encode
from ..core.keys.hashing import double_sha256, hash160, keccak256

# Refusing burn addresses (raise AddressError.burn).
from ..core.keys.burn import burn_list, check_burn_literal, check_zero_payload

__all__ = [
    "keystore", "next_counter", "KeyStore", "SeedKeyStore", "WatchOnlyKeyStore", "lookup", "clean",
    "B58_ALPHABET", "b58check_decode", "b58check_encode", "double_sha256", "hash160", "keccak256",
    "burn_list", "check_burn_literal", "check_zero_payload",
]
