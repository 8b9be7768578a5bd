"""The operator's hot-wallet limits per coin (``[custody.hot_wallet.<COIN>]``), in base units, judged at start.

Why at start: a floor in a coin this gateway does not serve, a ceiling below
the floor, or a ceiling with no cold address to sweep the excess to must stop
the process naming the key, not surface at the first sweep. The cold
destination is an address (validated by the coin's payout address family) or,
where the family derives watch-only (bitcoin family), the cold wallet's
account-level xpub: each sweep then pays a fresh address of its external
branch, derived here at the sweep's index. It comes from the config only: a
sweep never reads where to pay from the database (the signing gate's rule for
money leaving the hot wallet), and a destination recorded in the database is
counted as cold only when the xpub derives it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Mapping

from ..infra.config import ConfigError
from ..keys import AddressFamily, DerivationError, ExtendedKey, WatchOnlyError, WatchOnlyKeyStore
from ..keys.paths import HARDENED
from ..payouts.service import payout_route
from ..types.errors import ApiError
from ..types.services import ServiceKey

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

LIMITS_SERVICE = ServiceKey[dict[str, "HotWalletLimits"]]("hot_wallet_limits")  # the loaded limits


@dataclass(frozen=True)
class ColdXpub:
    """The cold wallet's account-level xpub and the store that derives its addresses (watch-only)."""

    xpub: str
    family: AddressFamily
    account: int
    store: WatchOnlyKeyStore

    def address(self, index: int) -> str:
        return self.family.derive(self.store, self.account, index).address


@dataclass(frozen=True)
class HotWalletLimits:
    """One coin's limits in base units; None where the operator set none.

    ``cold`` is the fixed cold address, or None when ``cold_xpub`` gives a fresh one per sweep.
    """

    coin: str
    floor: int | None = None
    ceiling: int | None = None
    cold: str | None = None
    cold_xpub: ColdXpub | None = None

    def cold_destination(self, index: int) -> str | None:
        """Where sweep number ``index`` pays: the fixed address, or the xpub's ``index``-th external address."""
        return self.cold_xpub.address(index) if self.cold_xpub is not None else self.cold


def _units(gateway: "Gateway", coin: str, key: str, text: str | None) -> int | None:
    if text is None:
        return None
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise ConfigError(f"config key 'custody.hot_wallet.{coin}.{key}' must be a decimal amount, got {text!r}") \
            from None
    known = gateway.coins.get(coin)
    if known is None:
        raise ConfigError(f"config key 'custody.hot_wallet.{coin}' names a coin this gateway does not serve")
    if not amount.is_finite() or amount < 0:
        raise ConfigError(f"config key 'custody.hot_wallet.{coin}.{key}' must be at least 0")
    try:
        return known.to_units(amount)
    except ValueError as exc:
        raise ConfigError(f"config key 'custody.hot_wallet.{coin}.{key}': {exc}") from None


def _limits(gateway: "Gateway", coin: str, table: Mapping[str, str]) -> HotWalletLimits:
    floor = _units(gateway, coin, "floor", table.get("floor"))
    ceiling = _units(gateway, coin, "ceiling", table.get("ceiling"))
    cold = table.get("cold")
    if floor is not None and ceiling is not None and ceiling < floor:
        raise ConfigError(f"config key 'custody.hot_wallet.{coin}.ceiling' is below its floor")
    if (ceiling is None) != (cold is None):
        raise ConfigError(f"config keys 'custody.hot_wallet.{coin}.ceiling' and '.cold' go together:"
                          " the excess above the ceiling is swept to the cold address")
    if cold is None:
        return HotWalletLimits(coin, floor, ceiling)
    try:
        family = payout_route(gateway, coin).family
    except ApiError:
        raise ConfigError(f"config key 'custody.hot_wallet.{coin}.cold': {coin} payouts are not configured here"
                          " (the sweep is signed by the coin's payout sender)") from None
    xpub = _cold_xpub(coin, family, cold)
    if xpub is not None:
        return HotWalletLimits(coin, floor, ceiling, None, xpub)
    try:
        return HotWalletLimits(coin, floor, ceiling, family.validate(cold))
    except ValueError as exc:
        raise ConfigError(f"config key 'custody.hot_wallet.{coin}.cold' is not a {coin} address: {exc}") from None


def _cold_xpub(coin: str, family: AddressFamily, text: str) -> ColdXpub | None:
    """The cold wallet's xpub, or None when ``text`` is not an extended key (then it must be an address)."""
    try:
        node = ExtendedKey.parse(text)
    except DerivationError:
        return None
    account = node.child_number - HARDENED
    store = WatchOnlyKeyStore(network=family.network)
    try:
        store.add_account_xpub(family, account, text)  # account-level, public, of this network, watch-only family
        xpub = ColdXpub(text, family, account, store)
        xpub.address(0)
    except (WatchOnlyError, DerivationError, ValueError) as exc:
        raise ConfigError(f"config key 'custody.hot_wallet.{coin}.cold': {exc}") from None
    return xpub


def load_limits(gateway: "Gateway") -> dict[str, HotWalletLimits]:
    """Every configured coin's limits, checked against this gateway's coins; ``ConfigError`` naming the key."""
    limits = {coin: _limits(gateway, coin, table) for coin, table in gateway.config.custody.hot_wallet.items()}
    gateway.services[LIMITS_SERVICE] = limits
    return limits


def hot_wallet_limits(gateway: "Gateway") -> dict[str, HotWalletLimits]:
    limits = gateway.services.get(LIMITS_SERVICE)
    return limits if isinstance(limits, dict) else load_limits(gateway)
