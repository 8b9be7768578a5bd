"""Derivation paths: parsing "m/84'/0'/5'/0/7" and the gateway's per-family scheme.

Why: every merchant owns one HARDENED account level, so a leaked child key or a
shared account xpub exposes one merchant's address space and never another's
or the master's. The scheme below is the single place that maps
(family, network, account, change, index) to a path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .errors import DerivationError

__all__ = [
    "HARDENED",
    "DerivationScheme",
    "check_account",
    "check_index",
    "format_path",
    "parse_path",
]

HARDENED = 0x80000000
SECP256K1 = "secp256k1"
ED25519 = "ed25519"

_COMPONENT_RE = re.compile(r"(0|[1-9][0-9]{0,9})(['hH]?)")


def _check_level(value: object, what: str) -> int:
    # bool is an int subclass; True as an account number is a bug, not 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise DerivationError(f"{what} must be an integer")
    if not 0 <= value < HARDENED:
        raise DerivationError(f"{what} must be between 0 and 2**31 - 1")
    return value


def check_account(account: object) -> int:
    """A merchant account number: 0 <= account < 2**31 (used hardened)."""
    return _check_level(account, "account")


def check_index(index: object) -> int:
    """An address index: 0 <= index < 2**31."""
    return _check_level(index, "index")


def parse_path(path: str) -> tuple[int, ...]:
    """Parse "m/44'/60'/0'/0/7" (also ``h``/``H`` for hardened) into child numbers.

    A leading "m" marks an absolute path; "m" alone is the master (empty tuple).
    """
    if not isinstance(path, str):
        raise DerivationError("a derivation path must be text")
    text = path.strip()
    parts = text.split("/")
    if parts and parts[0] == "m":
        parts = parts[1:]
    if text in ("", "m"):
        return ()
    out = []
    for part in parts:
        match = _COMPONENT_RE.fullmatch(part)
        if not match:
            raise DerivationError("malformed derivation path")
        number = int(match.group(1))
        if number >= HARDENED:
            raise DerivationError("path component out of range (must be below 2**31)")
        out.append(number + HARDENED if match.group(2) else number)
    return tuple(out)


def format_path(indexes: tuple[int, ...] | list[int]) -> str:
    """Inverse of parse_path, using the apostrophe for hardened levels."""
    parts = ["m"]
    for i in indexes:
        parts.append(f"{i - HARDENED}'" if i >= HARDENED else str(i))
    return "/".join(parts)


@dataclass(frozen=True)
class DerivationScheme:
    """How one address family derives keys.

    ``purpose'/coin_type'/account'`` is the account node (always hardened). UTXO
    families continue with ``/change/index`` (change 0 = receive, 1 = internal);
    EVM and Tron with ``/0/index``; Solana (SLIP-10 ed25519, hardened only) with
    ``/index'``.
    """

    curve: str
    purpose: int
    coin_type: int
    utxo: bool = False
    hardened_index: bool = False

    def account_path(self, account: int) -> tuple[int, ...]:
        check_account(account)
        return (self.purpose + HARDENED, self.coin_type + HARDENED, account + HARDENED)

    def branch(self, change: bool) -> int | None:
        """The level between account and index, or None when there is none (Solana)."""
        if change and not self.utxo:
            raise DerivationError("only UTXO families have a change branch")
        if self.hardened_index:
            return None
        return 1 if change else 0

    def leaf(self, index: int) -> int:
        check_index(index)
        return index + HARDENED if self.hardened_index else index

    def path(self, account: int, index: int, change: bool = False) -> tuple[int, ...]:
        branch = self.branch(change)
        middle = () if branch is None else (branch,)
        return self.account_path(account) + middle + (self.leaf(index),)

    def path_str(self, account: int, index: int, change: bool = False) -> str:
        # Validate before the cache: 1.0 and True compare equal to 1 as cache keys.
        check_account(account)
        check_index(index)
        leaf = f"{index}'" if self.hardened_index else str(index)
        return _branch_prefix(self, account, bool(change)) + leaf


@lru_cache(maxsize=4096)
def _branch_prefix(scheme: DerivationScheme, account: int, change: bool) -> str:
    """"m/84'/0'/5'/0/" for a scheme, account and branch (cached: one per merchant)."""
    branch = scheme.branch(change)
    middle = () if branch is None else (branch,)
    return format_path(scheme.account_path(account) + middle) + "/"
