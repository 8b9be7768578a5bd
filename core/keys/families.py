"""The address-family registry: one immutable description per (family, network).

Why: the coin registry (core/coins.py) maps every coin symbol to a family name
("USDT_TRC20" -> "tron", "USDT_ERC20" -> "evm"); everything a chain adapter or
the payout route needs about addresses (derive a deposit address, validate a
destination) is then one ``get_family(name, network)`` away.

Families: btc, ltc, doge, evm, tron, solana (derivable and validatable);
xmr (source-only: validate only) and lightning (invoices come from the node:
validate only). Networks: mainnet, testnet, regtest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable

from .doge import doge_p2pkh_address, validate_doge
from .errors import DerivationError, UnknownFamilyError
from .evm import evm_address, validate_evm
from .lightning import validate_lightning
from .monero import validate_xmr
from .paths import ED25519, SECP256K1, DerivationScheme
from .segwit import HRPS, p2wpkh_address, validate_btc, validate_ltc
from .solana import solana_address, validate_solana
from .tron import tron_address, validate_tron

if TYPE_CHECKING:  # pragma: no cover
    from .keystore import KeyStore

__all__ = [
    "FAMILY_NAMES",
    "NETWORKS",
    "AddressFamily",
    "DerivedAddress",
    "families",
    "get_family",
]

NETWORKS = ("mainnet", "testnet", "regtest")
FAMILY_NAMES = ("btc", "ltc", "doge", "evm", "tron", "solana", "xmr", "lightning")


@dataclass(frozen=True)
class DerivedAddress:
    """A deposit address with where it came from (public data only)."""

    address: str
    path: str
    public_key: bytes  # 33-byte compressed secp256k1, or 32-byte ed25519


@dataclass(frozen=True)
class AddressFamily:
    """How one family of coins names its addresses on one network."""

    name: str
    network: str
    title: str
    validator: Callable[[object, str], str] = field(repr=False, compare=False)
    scheme: DerivationScheme | None = None
    encoder: Callable[[bytes], str] | None = field(default=None, repr=False, compare=False)
    xpub_version: str | None = None  # version name for exported account xpubs

    @property
    def derivable(self) -> bool:
        """True when the gateway derives deposit addresses for this family."""
        return self.scheme is not None

    @property
    def watch_only_capable(self) -> bool:
        """True when an account xpub can derive addresses without the seed."""
        return self.scheme is not None and self.scheme.curve == SECP256K1

    def validate(self, address: object) -> str:
        """Check a payout destination; return its normalized form or raise AddressError."""
        return self.validator(address, self.network)

    def path(self, account: int, index: int, change: bool = False) -> str:
        return self._scheme().path_str(account, index, change)

    def address_from_public_key(self, public_key: bytes) -> str:
        if self.encoder is None:
            raise DerivationError(f"{self.name} addresses are not derived by the gateway")
        return self.encoder(public_key)

    def derive(
        self, keystore: "KeyStore", account: int, index: int, change: bool = False
    ) -> DerivedAddress:
        """Deposit (or, with change=True, UTXO change) address for (account, index)."""
        scheme = self._scheme()
        public_key = keystore.public_key(self, account, index, change)
        return DerivedAddress(
            address=self.encoder(public_key),  # type: ignore[misc]
            path=scheme.path_str(account, index, change),
            public_key=public_key,
        )

    def _scheme(self) -> DerivationScheme:
        if self.scheme is None:
            reason = {
                "xmr": "XMR is source-only and has no standing receive address",
                "lightning": "Lightning invoices are issued by the node, not derived",
            }.get(self.name, "no derivation scheme")
            raise DerivationError(f"{self.name}: {reason}")
        return self.scheme


def _coin_type(mainnet_type: int, network: str, keep: bool = False) -> int:
    # Test networks use coin type 1' (SLIP-44 "Testnet (all coins)"); Solana keeps 501'.
    return mainnet_type if network == "mainnet" or keep else 1


def _build(network: str) -> dict[str, AddressFamily]:
    test = network != "mainnet"
    return {
        "btc": AddressFamily(
            "btc", network, "Bitcoin native segwit (P2WPKH)", validate_btc,
            DerivationScheme(SECP256K1, 84, _coin_type(0, network), utxo=True),
            partial(p2wpkh_address, hrp=HRPS["btc"][network]),
            "vpub" if test else "zpub",
        ),
        "ltc": AddressFamily(
            "ltc", network, "Litecoin native segwit (P2WPKH)", validate_ltc,
            DerivationScheme(SECP256K1, 84, _coin_type(2, network), utxo=True),
            partial(p2wpkh_address, hrp=HRPS["ltc"][network]),
            "vpub" if test else "zpub",
        ),
        "doge": AddressFamily(
            "doge", network, "Dogecoin legacy P2PKH", validate_doge,
            DerivationScheme(SECP256K1, 44, _coin_type(3, network), utxo=True),
            partial(doge_p2pkh_address, network=network),
            "tpub" if test else "xpub",
        ),
        "evm": AddressFamily(
            "evm", network, "EVM account (ETH, BNB, POL and tokens), EIP-55", validate_evm,
            DerivationScheme(SECP256K1, 44, _coin_type(60, network)),
            evm_address,
            "tpub" if test else "xpub",
        ),
        "tron": AddressFamily(
            "tron", network, "Tron account (TRX and TRC-20 tokens)", validate_tron,
            DerivationScheme(SECP256K1, 44, _coin_type(195, network)),
            tron_address,
            "tpub" if test else "xpub",
        ),
        "solana": AddressFamily(
            "solana", network, "Solana account (ed25519)", validate_solana,
            DerivationScheme(ED25519, 44, _coin_type(501, network, keep=True), hardened_index=True),
            solana_address,
        ),
        "xmr": AddressFamily("xmr", network, "Monero (source-only, validate only)", validate_xmr),
        "lightning": AddressFamily(
            "lightning", network, "Lightning: BOLT 11 invoice or Lightning Address",
            validate_lightning,
        ),
    }


_REGISTRY = MappingProxyType({
    (family.name, network): family
    for network in NETWORKS
    for family in _build(network).values()
})


def get_family(name: str, network: str = "mainnet") -> AddressFamily:
    """The family called ``name`` on ``network``; raises UnknownFamilyError."""
    family = _REGISTRY.get((name, network))
    if family is None:
        raise UnknownFamilyError(
            f"unknown address family {name!r} on network {network!r}; families: "
            f"{', '.join(FAMILY_NAMES)}; networks: {', '.join(NETWORKS)}"
        )
    return family


def families(network: str = "mainnet") -> tuple[AddressFamily, ...]:
    """Every family on ``network``, in FAMILY_NAMES order."""
    if network not in NETWORKS:
        raise UnknownFamilyError(f"unknown network {network!r}")
    return tuple(_REGISTRY[(name, network)] for name in FAMILY_NAMES)
