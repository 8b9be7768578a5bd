"""The operator's hot-wallet limits per coin (``[custody.hot_wallet.<COIN>]``), in base units, judged at start.

Why at start: a floor in a coin this gateway does not serve, a ceiling below
the floor, or a ceiling with no cold address to sweep the excess to must stop
the process naming the key, not surface at the first sweep. The cold address
is validated by the coin's payout address family and comes from the config
only: the sweep never reads a destination from the database (the signing
gate's rule for money leaving the hot wallet).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Mapping

from ..infra.config import ConfigError
from ..payouts.service import payout_route
from ..types.errors import ApiError

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

LIMITS_SERVICE = "hot_wallet_limits"  # gateway.services key of the loaded limits


@dataclass(frozen=True)
class HotWalletLimits:
    """One coin's limits in base units; None where the operator set none."""

    coin: str
    floor: int | None = None
    ceiling: int | None = None
    cold: str | None = None


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
    if cold is not None:
        try:
            cold = payout_route(gateway, coin).family.validate(cold)
        except ApiError:
            raise ConfigError(f"config key 'custody.hot_wallet.{coin}.cold': {coin} payouts are not configured here"
                              " (the sweep is signed by the coin's payout sender)") from None
        except ValueError as exc:
            raise ConfigError(f"config key 'custody.hot_wallet.{coin}.cold' is not a {coin} address: {exc}") from None
    return HotWalletLimits(coin, floor, ceiling, cold)


def load_limits(gateway: "Gateway") -> dict[str, HotWalletLimits]:
    """Every configured coin's limits, checked against this gateway's coins; ``ConfigError`` naming the key."""
    limits = {coin: _limits(gateway, coin, table) for coin, table in gateway.config.custody.hot_wallet.items()}
    gateway.services[LIMITS_SERVICE] = limits
    return limits


def hot_wallet_limits(gateway: "Gateway") -> dict[str, HotWalletLimits]:
    limits = gateway.services.get(LIMITS_SERVICE)
    return limits if isinstance(limits, dict) else load_limits(gateway)
