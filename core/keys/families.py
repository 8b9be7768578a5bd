"""Address families: how one family of coins names its addresses on one network.

Why: a coin (core/money/coins.py) names its family ("btc", "evm", ...); everything a
chain adapter or the payout route needs about addresses (derive a deposit
address, validate a destination) is then one look-up in the gateway's
:class:`AddressFamilyRegistry` away. The core defines no family itself: each
chain plugin registers its own through the ``register_address_families``
hook (derivation scheme, encoder and validator per network), so a
third-party chain with a new address format needs no core edit. A coin whose
family nobody registered stops startup, not its first payment.

Networks: mainnet, testnet, regtest; a family is registered on all three.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ..types.registry import Registry, StartupError
from .errors import DerivationError, UnknownFamilyError
from .paths import SECP256K1, DerivationScheme

if TYPE_CHECKING:  # pragma: no cover
    from .keystore import KeyStore

__all__ = [
    "NETWORKS",
    "AddressFamily",
    "AddressFamilyRegistry",
    "DerivedAddress",
    "coin_type_for",
]

NETWORKS = ("mainnet", "testnet", "regtest")


@dataclass(frozen=True)
class DerivedAddress:
    """A deposit address with where it came from (public data only)."""

    address: str
    path: str
    public_key: bytes  # 33-byte compressed secp256k1, or 32-byte ed25519


@dataclass(frozen=True)
class AddressFamily:
    """How one family of coins names its addresses on one network.

    ``validator(address, network)`` returns the normalized destination or
    raises ``AddressError``. A family without ``scheme`` and ``encoder`` is
    validate-only: the gateway derives no address for it (a plugin may still
    supply receive targets through ``decide_receive_target``), and
    ``no_derivation_reason`` says why. ``burn_addresses`` is the family's
    literal burn list, documented in docs/keys.md.
    """

    name: str
    network: str
    title: str
    validator: Callable[[object, str], str] = field(repr=False, compare=False)
    scheme: DerivationScheme | None = None
    encoder: Callable[[bytes], str] | None = field(default=None, repr=False, compare=False)
    xpub_version: str | None = None  # version name for exported account xpubs
    no_derivation_reason: str = "no derivation scheme"
    burn_addresses: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    @property
    def derivable(self) -> bool:
        """True when the gateway derives deposit addresses for this family."""
        return self.scheme is not None and self.encoder is not None

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
            address=self.address_from_public_key(public_key),
            path=scheme.path_str(account, index, change),
            public_key=public_key,
        )

    def address_at(self, keystore: "KeyStore", account: int, index: int) -> str:
        """Just the deposit address of ``derive`` (no path text, no record): a payment's hot path."""
        self._scheme()
        return self.address_from_public_key(keystore.public_key(self, account, index))

    def _scheme(self) -> DerivationScheme:
        if self.scheme is None:
            raise DerivationError(f"{self.name}: {self.no_derivation_reason}")
        return self.scheme


def coin_type_for(mainnet_type: int, network: str, keep_on_test_networks: bool = False) -> int:
    """SLIP-44 coin type on ``network``: test networks use 1' ("Testnet (all coins)").

    ``keep_on_test_networks`` keeps the mainnet type (wallets of some chains do).
    """
    return mainnet_type if network == "mainnet" or keep_on_test_networks else 1


class AddressFamilyRegistry(Registry[AddressFamily]):
    """Every (family, network) the chain plugins registered.

    Filled by the ``register_address_families`` hook; a (name, network) pair
    registered twice fails startup naming both plugins, and a family missing
    a network fails :meth:`check_complete`.
    """

    kind = "address family"

    def _key(self, item: AddressFamily) -> str:
        if item.network not in NETWORKS:
            raise StartupError(
                f"address family {item.name!r} from plugin {self.current_plugin!r} has unknown network "
                f"{item.network!r}; networks: {', '.join(NETWORKS)}"
            )
        return f"{item.name}/{item.network}" if item.name else ""

    def find(self, name: str, network: str = "mainnet") -> AddressFamily | None:
        """The family called ``name`` on ``network``, or None."""
        return self.get(f"{name}/{network}")

    def require(self, name: str, network: str = "mainnet") -> AddressFamily:
        """The family called ``name`` on ``network``; raises UnknownFamilyError."""
        family = self.find(name, network)
        if family is None:
            raise UnknownFamilyError(
                f"unknown address family {name!r} on network {network!r}; families: "
                f"{', '.join(self.family_names()) or 'none'}; networks: {', '.join(NETWORKS)}"
            )
        return family

    def family_names(self) -> tuple[str, ...]:
        """Family names in registration order."""
        return tuple(dict.fromkeys(family.name for family in self))

    def families(self, network: str = "mainnet") -> tuple[AddressFamily, ...]:
        """Every family on ``network``, in registration order."""
        if network not in NETWORKS:
            raise UnknownFamilyError(f"unknown network {network!r}")
        return tuple(family for family in self if family.network == network)

    def validate(self, name: str, address: object, network: str = "mainnet") -> str:
        """Validate a payout destination for a family name (e.g. a coin's)."""
        return self.require(name, network).validate(address)

    def check_complete(self) -> None:
        """Every registered family covers every network (called at startup)."""
        for name in self.family_names():
            missing = [n for n in NETWORKS if f"{name}/{n}" not in self]
            if missing:
                raise StartupError(
                    f"address family {name!r} from plugin {self.owner(f'{name}/{self._any_network(name)}')!r}"
                    f" is not registered for network(s) {', '.join(missing)}"
                )

    def _any_network(self, name: str) -> str:
        return next(f.network for f in self if f.name == name)
