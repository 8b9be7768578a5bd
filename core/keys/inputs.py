"""First checks on untrusted address text, shared by every validator.

Why: every family validator must answer arbitrary input (None, bytes, a 10 MB
string, control characters, non-ASCII look-alikes) with an AddressError and
nothing else; doing these checks once keeps the family code about its format.
"""

from __future__ import annotations

from .errors import AddressError

__all__ = ["MAX_ADDRESS_LENGTH", "clean"]

# SPEC section 8: "payout address max 128".
MAX_ADDRESS_LENGTH = 128


def clean(address: object, max_length: int = MAX_ADDRESS_LENGTH) -> str:
    """Strip surrounding whitespace and refuse non-text, empty, over-long or
    non-printable-ASCII input."""
    if not isinstance(address, str):
        raise AddressError("address must be a string")
    if len(address) > max_length + 64:  # refuse huge input before stripping it
        raise AddressError(f"longer than {max_length} characters")
    text = address.strip()
    if not text:
        raise AddressError("empty address")
    if len(text) > max_length:
        raise AddressError(f"longer than {max_length} characters")
    if not text.isascii() or not text.isprintable():
        raise AddressError("contains characters outside printable ASCII")
    if any(ch.isspace() for ch in text):
        raise AddressError("contains whitespace")
    return text
