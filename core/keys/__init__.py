"""Keys and addresses: the generic primitives every chain plugin builds on.

Everything here is pure and synchronous: no network, no database, no clock.
Secrets (mnemonic, seed, private keys) never appear in a repr, an exception
message or a log line; key-holding objects refuse to be pickled. The
encodings and validators of specific chains live in their chain plugins
(``orbchain.chains.<chain>``), which register them as address families.

Public API
==========

Seeds (BIP-39)::

    mnemonic_to_seed(mnemonic: str, passphrase: str = "") -> bytes
    seed_from_hex(text: str) -> bytes                      # raw seed file, 16..64 bytes
    seed_from_secret(secret: str, passphrase: str = "") -> bytes   # mnemonic or hex
    normalize_mnemonic(mnemonic: str) -> str               # validates words + checksum
    entropy_to_mnemonic(entropy: bytes) -> str

Key stores::

    SeedKeyStore(seed: bytes)                              # .from_mnemonic / .from_hex / .from_secret
        .public_key(family, account, index, change=False) -> bytes
        .private_key_for(family, account, index, change=False) -> bytes   # 32 bytes
        .account_xpub(family, account) -> str              # for a WatchOnlyKeyStore
        .master_fingerprint -> str                         # safe to log
    WatchOnlyKeyStore(account_xpubs: {(family_name, account): xpub}, network="mainnet", families=registry)
        .add_account_xpub(family or family_name, account, xpub)
        .public_key(...) -> bytes; .private_key_for(...) raises WatchOnlyError

Address families (chain plugins register them; the coin registry maps coin
symbols to their names)::

    AddressFamily(name, network, title, validator, scheme=None, encoder=None, xpub_version=None,
                  no_derivation_reason=..., burn_addresses=frozenset())
    AddressFamily.derive(keystore, account, index, change=False) -> DerivedAddress
    AddressFamily.validate(address) -> str                 # normalized, or AddressError
    AddressFamilyRegistry.require(name, network="mainnet") -> AddressFamily
    AddressFamilyRegistry.families(network="mainnet") -> tuple[AddressFamily, ...]
    AddressFamilyRegistry.validate(name, address, network="mainnet") -> str
    DerivedAddress(address: str, path: str, public_key: bytes)
    DerivationScheme(curve, purpose, coin_type, utxo=False, hardened_index=False)
    coin_type_for(mainnet_type, network, keep_on_test_networks=False) -> int
    networks: mainnet testnet regtest

Validators raise AddressError, a ValueError with .code "invalid_address" or
"burn_address" and a .detail; ``burn.check_burn_literal`` and
``burn.check_zero_payload`` are the shared burn checks.

Low level: ExtendedKey (BIP-32), Ed25519Node (SLIP-10), parse_path, format_path, HARDENED,
base58check, hashing (hash160, keccak256, double_sha256).
"""

from .bip32 import ExtendedKey
from .bip39 import (
    entropy_to_mnemonic,
    mnemonic_to_seed,
    normalize_mnemonic,
    seed_from_hex,
    seed_from_secret,
)
from .errors import (
    AddressError,
    DerivationError,
    MnemonicError,
    SeedError,
    UnknownFamilyError,
    WatchOnlyError,
)
from .families import (
    NETWORKS,
    AddressFamily,
    AddressFamilyRegistry,
    DerivedAddress,
    coin_type_for,
)
from .keystore import KeyStore, SeedKeyStore, WatchOnlyKeyStore
from .paths import ED25519, HARDENED, SECP256K1, DerivationScheme, format_path, parse_path
from .slip10 import Ed25519Node

__all__ = [
    "AddressError",
    "AddressFamily",
    "AddressFamilyRegistry",
    "DerivationError",
    "DerivationScheme",
    "DerivedAddress",
    "ED25519",
    "Ed25519Node",
    "ExtendedKey",
    "HARDENED",
    "KeyStore",
    "MnemonicError",
    "NETWORKS",
    "SECP256K1",
    "SeedError",
    "SeedKeyStore",
    "UnknownFamilyError",
    "WatchOnlyError",
    "WatchOnlyKeyStore",
    "coin_type_for",
    "entropy_to_mnemonic",
    "format_path",
    "mnemonic_to_seed",
    "normalize_mnemonic",
    "parse_path",
    "seed_from_hex",
    "seed_from_secret",
]
