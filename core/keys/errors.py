"""Exceptions of the key and address layer.

Why a module of its own: every other module raises these, and callers (the web
layer, chain adapters) catch them without importing the machinery behind them.
No exception here ever carries a mnemonic, a seed or a private key; address
errors carry a short, fixed ``detail`` and never echo the input back.
"""

from __future__ import annotations

__all__ = [
    "AddressError",
    "DerivationError",
    "MnemonicError",
    "SeedError",
    "UnknownFamilyError",
    "WatchOnlyError",
]

INVALID_ADDRESS = "invalid_address"
BURN_ADDRESS = "burn_address"

_MESSAGES = {
    INVALID_ADDRESS: "invalid destination address",
    BURN_ADDRESS: "destination is a burn/null address",
}


class AddressError(ValueError):
    """A destination failed validation.

    ``code`` is ``"invalid_address"`` or ``"burn_address"`` (the error codes of
    SPEC section 7); ``str(err)`` is the matching public message; ``detail``
    says why (checksum, length, prefix, network byte, ...) for logs and for a
    more helpful API message.
    """

    def __init__(self, detail: str, code: str = INVALID_ADDRESS) -> None:
        if code not in _MESSAGES:
            raise ValueError(f"unknown address error code {code!r}")
        super().__init__(_MESSAGES[code])
        self.code = code
        self.detail = detail

    @property
    def message(self) -> str:
        return _MESSAGES[self.code]

    @classmethod
    def burn(cls, detail: str) -> "AddressError":
        return cls(detail, BURN_ADDRESS)

    def __repr__(self) -> str:
        return f"AddressError(code={self.code!r}, detail={self.detail!r})"

    def __reduce__(self):  # keep code and detail across pickling (process pools)
        return (type(self), (self.detail, self.code))


class SeedError(ValueError):
    """The operator's seed material (hex seed or mnemonic) is unusable."""


class MnemonicError(SeedError):
    """A BIP-39 mnemonic is malformed; the message names positions, never words."""


class DerivationError(ValueError):
    """A path, account, index or extended key is out of range or malformed."""


class WatchOnlyError(DerivationError):
    """The key store cannot do this without the seed (private keys, Solana, unknown account)."""


class UnknownFamilyError(KeyError):
    """No address family of that name exists for that network."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else "unknown address family"
