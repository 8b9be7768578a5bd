"""Keys and addresses: HD derivation, encodings and per-coin validation.

Everything here is pure and synchronous: no network, no database, no clock.
Secrets (mnemonic, seed, private keys) never appear in a repr, an exception
message or a log line; key-holding objects refuse to be pickled.

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
    WatchOnlyKeyStore(account_xpubs: {(family_name, account): xpub}, network="mainnet")
        .add_account_xpub(family_name, account, xpub)
        .public_key(...) -> bytes; .private_key_for(...) raises WatchOnlyError

Address families (the coin registry maps coin symbols to these names)::

    get_family(name: str, network: str = "mainnet") -> AddressFamily
    families(network: str = "mainnet") -> tuple[AddressFamily, ...]
    AddressFamily.derive(keystore, account, index, change=False) -> DerivedAddress
    AddressFamily.validate(address) -> str                 # normalized, or AddressError
    DerivedAddress(address: str, path: str, public_key: bytes)
    validate_address(family_name, address, network="mainnet") -> str

    names: btc ltc doge evm tron solana xmr lightning; networks: mainnet testnet regtest
    paths: btc m/84'/0'/A'/C/I, ltc m/84'/2'/A'/C/I, doge m/44'/3'/A'/C/I,
           evm m/44'/60'/A'/0/I, tron m/44'/195'/A'/0/I, solana m/44'/501'/A'/I'
           (A = merchant account, hardened; C = 0 receive / 1 change, UTXO only;
            test networks use coin type 1', Solana keeps 501')

Per-family validators (all raise AddressError, a ValueError with .code
"invalid_address" or "burn_address" and a .detail)::

    validate_btc / validate_ltc / validate_doge (address, network="mainnet") -> str
    validate_evm / validate_tron / validate_solana (address, network="mainnet") -> str
    validate_xmr(address, network="mainnet") -> str;  decode_xmr(address) -> MoneroAddress
    validate_lightning(destination, network="mainnet") -> str   # invoice or user@domain
    validate_lightning_address(address) -> str
    decode_bolt11(invoice) -> Bolt11Invoice
    BURN_ADDRESSES: the documented list of refused burn/null addresses

Low level: ExtendedKey (BIP-32), Ed25519Node (SLIP-10), parse_path, format_path, HARDENED.
"""

from .bip32 import ExtendedKey
from .bip39 import (
    entropy_to_mnemonic,
    mnemonic_to_seed,
    normalize_mnemonic,
    seed_from_hex,
    seed_from_secret,
)
from .bolt11 import Bolt11Invoice, decode_bolt11
from .burn import BURN_ADDRESSES
from .doge import validate_doge
from .errors import (
    AddressError,
    DerivationError,
    MnemonicError,
    SeedError,
    UnknownFamilyError,
    WatchOnlyError,
)
from .evm import validate_evm
from .families import (
    FAMILY_NAMES,
    NETWORKS,
    AddressFamily,
    DerivedAddress,
    families,
    get_family,
)
from .keystore import KeyStore, SeedKeyStore, WatchOnlyKeyStore
from .lightning import validate_lightning, validate_lightning_address
from .monero import MoneroAddress, decode_xmr, validate_xmr
from .paths import HARDENED, format_path, parse_path
from .segwit import validate_btc, validate_ltc
from .slip10 import Ed25519Node
from .solana import validate_solana
from .tron import validate_tron


def validate_address(family_name: str, address: object, network: str = "mainnet") -> str:
    """Validate a payout destination for a family name (e.g. from the coin registry)."""
    return get_family(family_name, network).validate(address)


__all__ = [
    "AddressError",
    "AddressFamily",
    "BURN_ADDRESSES",
    "Bolt11Invoice",
    "DerivationError",
    "DerivedAddress",
    "Ed25519Node",
    "ExtendedKey",
    "FAMILY_NAMES",
    "HARDENED",
    "KeyStore",
    "MnemonicError",
    "MoneroAddress",
    "NETWORKS",
    "SeedError",
    "SeedKeyStore",
    "UnknownFamilyError",
    "WatchOnlyError",
    "WatchOnlyKeyStore",
    "decode_bolt11",
    "decode_xmr",
    "entropy_to_mnemonic",
    "families",
    "format_path",
    "get_family",
    "mnemonic_to_seed",
    "normalize_mnemonic",
    "parse_path",
    "seed_from_hex",
    "seed_from_secret",
    "validate_address",
    "validate_btc",
    "validate_doge",
    "validate_evm",
    "validate_lightning",
    "validate_lightning_address",
    "validate_ltc",
    "validate_solana",
    "validate_tron",
    "validate_xmr",
]
