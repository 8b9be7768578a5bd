"""Key stores: where deposit-address public keys and signing keys come from.

Why two kinds:

- ``SeedKeyStore`` holds the operator's seed (as master nodes; the seed bytes
  themselves are not kept) and can do everything: derive deposit addresses,
  export account xpubs, and hand a payout signer the private key of one address.
- ``WatchOnlyKeyStore`` holds only account-level extended PUBLIC keys, one per
  (family, merchant account). A web process built on it can derive every
  deposit address but can never sign: private keys and Solana (SLIP-10 ed25519
  is hardened-only, so there is no ed25519 xpub) raise WatchOnlyError.

Both cache the per-(account, branch) node, so deriving many indexes under one
merchant costs one HMAC and one point addition per address.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Mapping

from ..infra.bounded import LruMap
from .bip32 import MAINNET_VERSIONS, TESTNET_VERSIONS, ExtendedKey
from .bip39 import mnemonic_to_seed, seed_from_hex, seed_from_secret
from .errors import DerivationError, SeedError, WatchOnlyError
from .paths import ED25519, HARDENED, check_account, check_index
from .slip10 import Ed25519Node

if TYPE_CHECKING:  # pragma: no cover
    from .families import AddressFamily, AddressFamilyRegistry
    from .paths import DerivationScheme

__all__ = ["KeyStore", "SeedKeyStore", "WatchOnlyKeyStore"]

_CACHE_SIZE = 4096


class _NodeCache:
    """A small thread-safe LRU of derived nodes keyed by position."""

    def __init__(self, size: int = _CACHE_SIZE) -> None:
        self._items: LruMap = LruMap(size)
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            return self._items.get(key)

    def put(self, key, node) -> None:
        with self._lock:
            self._items.put(key, node)


def _scheme_of(family: "AddressFamily") -> "DerivationScheme":
    scheme = family.scheme
    if scheme is None:
        family.path(0, 0)  # raises DerivationError with the family's reason
    assert scheme is not None, "path() raised for a family without a scheme"
    return scheme


class KeyStore(ABC):
    """Source of public keys (and, for the seed store, private keys) per family."""

    watch_only: bool = False

    @abstractmethod
    def public_key(
        self, family: "AddressFamily", account: int, index: int, change: bool = False
    ) -> bytes:
        """Public key at the family's path for (account, index, change)."""

    def private_key_for(
        self, family: "AddressFamily", account: int, index: int, change: bool = False
    ) -> bytes:
        """32-byte signing key (secp256k1 scalar, or ed25519 seed) of one address."""
        raise WatchOnlyError("this key store is watch-only: it holds no private keys")

    def derive(self, family: "AddressFamily", account: int, index: int, change: bool = False):
        """Shortcut for ``family.derive(self, account, index, change)``."""
        return family.derive(self, account, index, change)


class SeedKeyStore(KeyStore):
    """Everything derived from the operator's seed. Never logged, never pickled."""

    watch_only = False

    def __init__(self, seed: bytes) -> None:
        if not isinstance(seed, (bytes, bytearray)) or not 16 <= len(seed) <= 64:
            raise SeedError("a seed is 16 to 64 bytes")
        self._secp_master = ExtendedKey.from_seed(bytes(seed))
        self._ed_master = Ed25519Node.from_seed(bytes(seed))
        self._cache = _NodeCache()

    @classmethod
    def from_mnemonic(cls, mnemonic: str, passphrase: str = "") -> "SeedKeyStore":
        return cls(mnemonic_to_seed(mnemonic, passphrase))

    @classmethod
    def from_hex(cls, seed_hex: str) -> "SeedKeyStore":
        return cls(seed_from_hex(seed_hex))

    @classmethod
    def from_secret(cls, secret: str, passphrase: str = "") -> "SeedKeyStore":
        """From the text of a seed file or env var: a mnemonic or a hex seed."""
        return cls(seed_from_secret(secret, passphrase))

    @property
    def master_fingerprint(self) -> str:
        """BIP-32 master key fingerprint (hex): safe to log, identifies the seed."""
        return self._secp_master.fingerprint.hex()

    # -- nodes --------------------------------------------------------------

    def _account_node(self, scheme: "DerivationScheme", account: int):
        key = ("account", scheme, account)
        node = self._cache.get(key)
        if node is None:
            path = scheme.account_path(account)
            master = self._ed_master if scheme.curve == ED25519 else self._secp_master
            node = master.derive(path)
            self._cache.put(key, node)
        return node

    def _branch_node(self, scheme: "DerivationScheme", account: int, change: bool):
        branch = scheme.branch(change)
        if branch is None:
            return self._account_node(scheme, account)
        key = ("branch", scheme, account, branch)
        node = self._cache.get(key)
        if node is None:
            node = self._account_node(scheme, account).child(branch)
            node.public_key  # noqa: B018 - compute the point once, here
            self._cache.put(key, node)
        return node

    # -- public API ---------------------------------------------------------

    def public_key(self, family, account, index, change=False) -> bytes:
        scheme = _scheme_of(family)
        check_account(account)  # before the cache: 1.0 and True compare equal to 1
        check_index(index)
        node = self._branch_node(scheme, account, change)
        if scheme.curve == ED25519:
            return node.child(scheme.leaf(index)).public_key
        return node.public_child_key(index)

    def private_key_for(self, family, account, index, change=False) -> bytes:
        scheme = _scheme_of(family)
        check_account(account)  # before the cache: 1.0 and True compare equal to 1
        check_index(index)
        node = self._branch_node(scheme, account, change)
        return node.child(scheme.leaf(index)).private_key

    def account_xpub(self, family: "AddressFamily", account: int) -> str:
        """The account-level extended public key a WatchOnlyKeyStore needs for
        (family, account), e.g. a zpub for a bitcoin segwit account. Public data, but it reveals
        every address of that merchant: treat it as confidential."""
        scheme = _scheme_of(family)
        check_account(account)
        if scheme.curve == ED25519:
            raise WatchOnlyError(
                f"{family.name} (ed25519, hardened-only) has no extended public key; "
                "watch-only ed25519 derivation is impossible"
            )
        node = self._account_node(scheme, account)
        return node.to_xpub(family.xpub_version)

    def __repr__(self) -> str:
        return "<SeedKeyStore (secret hidden)>"

    def __reduce__(self):
        raise TypeError("SeedKeyStore cannot be pickled (it holds the seed's keys)")


class WatchOnlyKeyStore(KeyStore):
    """Deposit addresses from account xpubs only; no private keys, no Solana.

    ``account_xpubs`` maps (family name, account) to the account-level xpub
    exported by ``SeedKeyStore.account_xpub`` (or by a wallet at
    m/purpose'/coin'/account'). All keys are for one ``network``.
    """

    watch_only = True

    def __init__(
        self,
        account_xpubs: Mapping[tuple[str, int], str] | None = None,
        network: str = "mainnet",
        families: "AddressFamilyRegistry | None" = None,
    ) -> None:
        from .families import NETWORKS

        if network not in NETWORKS:
            raise DerivationError(f"unknown network {network!r}")
        self.network = network
        self.families = families
        self._accounts: dict[tuple[str, int], ExtendedKey] = {}
        self._cache = _NodeCache()
        for (family_name, account), xpub in (account_xpubs or {}).items():
            self.add_account_xpub(family_name, account, xpub)

    def add_account_xpub(self, family: "AddressFamily | str", account: int, xpub: str) -> None:
        """Register the xpub of one merchant account (e.g. after a new signup).

        ``family`` is an AddressFamily or a name looked up in ``families``
        (the gateway's registry: the store knows no family by itself).
        """
        if isinstance(family, str):
            if self.families is None:
                raise DerivationError("a family name needs the store's address-family registry")
            family = self.families.require(family, self.network)
        family_name = family.name
        check_account(account)
        if not family.watch_only_capable:
            raise WatchOnlyError(
                f"{family_name} cannot be derived watch-only"
                + (" (ed25519 is hardened-only)" if family.scheme is not None else "")
            )
        node = ExtendedKey.parse(xpub)
        if node.is_private:
            raise WatchOnlyError(
                "an extended PRIVATE key was given to the watch-only store; give the xpub"
            )
        if node.depth != 3 or node.child_number != account + HARDENED:
            raise WatchOnlyError(
                f"the xpub for {family_name} account {account} must be the account-level "
                f"key (depth 3, child {account}')"
            )
        if self.network == "mainnet" and node.version in TESTNET_VERSIONS:
            raise WatchOnlyError("a testnet extended key was given for mainnet")
        if (
            self.network != "mainnet"
            and family.scheme is not None
            and family.scheme.utxo  # UTXO wallets export test-network keys with test versions
            and node.version in MAINNET_VERSIONS
        ):
            raise WatchOnlyError("a mainnet extended key was given for a test network")
        self._accounts[(family_name, account)] = node

    def accounts(self) -> list[tuple[str, int]]:
        return sorted(self._accounts)

    def public_key(self, family, account, index, change=False) -> bytes:
        scheme = _scheme_of(family)
        if scheme.curve == ED25519:
            raise WatchOnlyError(
                f"{family.name} addresses cannot be derived watch-only: SLIP-10 ed25519 is "
                "hardened-only, so they need the seed"
            )
        if family.network != self.network:
            raise WatchOnlyError(
                f"this watch-only store is for {self.network}, not {family.network}"
            )
        check_account(account)
        check_index(index)
        branch = scheme.branch(change)
        if branch is None:  # no branch level: the index itself is hardened
            raise WatchOnlyError(f"{family.name} addresses cannot be derived watch-only: their index is hardened")
        key = (family.name, account, branch)
        node = self._cache.get(key)
        if node is None:
            account_node = self._accounts.get((family.name, account))
            if account_node is None:
                raise WatchOnlyError(
                    f"no account xpub for {family.name} account {account}; export it "
                    "from the signer with SeedKeyStore.account_xpub"
                )
            node = account_node.child(branch)
            self._cache.put(key, node)
        return node.public_child_key(index)

    def __repr__(self) -> str:
        return f"<WatchOnlyKeyStore {self.network} accounts={len(self._accounts)}>"
