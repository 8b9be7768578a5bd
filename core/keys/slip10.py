"""SLIP-0010 ed25519 derivation (hardened only), for Solana.

Why: Solana keys are ed25519, where BIP-32's public derivation does not exist;
SLIP-10 derives each child from the parent's private key and chain code only.
A consequence the operator must know: there is no ed25519 "xpub", so a process
without the seed cannot derive new Solana addresses (see docs/keys.md).
"""

from __future__ import annotations

import hashlib
import hmac

from nacl.signing import SigningKey

from .errors import DerivationError
from .paths import HARDENED, parse_path

__all__ = ["Ed25519Node"]


class Ed25519Node:
    """A SLIP-10 ed25519 node: 32-byte private key (the signing seed) + chain code."""

    __slots__ = ("_key", "chain_code", "depth", "_public")

    def __init__(self, key: bytes, chain_code: bytes, depth: int = 0) -> None:
        if len(key) != 32 or len(chain_code) != 32:
            raise DerivationError("ed25519 key and chain code are 32 bytes each")
        self._key = key
        self.chain_code = chain_code
        self.depth = depth
        self._public: bytes | None = None

    @classmethod
    def from_seed(cls, seed: bytes) -> "Ed25519Node":
        """Master node: HMAC-SHA512(key="ed25519 seed", seed)."""
        if not isinstance(seed, (bytes, bytearray)) or not 16 <= len(seed) <= 64:
            raise DerivationError("a SLIP-10 seed is 16 to 64 bytes")
        digest = hmac.digest(b"ed25519 seed", bytes(seed), hashlib.sha512)
        return cls(digest[:32], digest[32:])

    def child(self, index: int) -> "Ed25519Node":
        """Hardened child; a non-hardened index is refused (SLIP-10 defines none for ed25519)."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 2**32:
            raise DerivationError("child index must be an integer in [0, 2**32)")
        if index < HARDENED:
            raise DerivationError("ed25519 (SLIP-10) supports hardened derivation only")
        digest = hmac.digest(
            self.chain_code, b"\0" + self._key + index.to_bytes(4, "big"), hashlib.sha512
        )
        return Ed25519Node(digest[:32], digest[32:], self.depth + 1)

    def derive(self, path: str | tuple[int, ...] | list[int]) -> "Ed25519Node":
        indexes = parse_path(path) if isinstance(path, str) else tuple(path)
        node = self
        for index in indexes:
            node = node.child(index)
        return node

    @property
    def private_key(self) -> bytes:
        """The 32-byte ed25519 signing seed (a SECRET)."""
        return self._key

    @property
    def public_key(self) -> bytes:
        """The 32-byte ed25519 public key (Solana's address bytes)."""
        if self._public is None:
            self._public = bytes(SigningKey(self._key).verify_key)
        return self._public

    def __repr__(self) -> str:
        return f"<Ed25519Node depth={self.depth}>"

    def __reduce__(self):
        raise TypeError("ed25519 nodes cannot be pickled")
