"""The coin table: one place for every coin's decimals, floors and contracts.

The rows of SPEC 2.7 are data here; a built-in plugin
(``orbchain.plugins.coin_table``) registers them through the same
``register_coins`` hook a third-party chain package uses for its own coins.
Every amount check, address check and ``/v1/common/currencies`` reads the
:class:`CoinRegistry` built at startup, never this module's constants.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

from .money import format_units, to_base_units
from .registries import Registry, StartupError


@dataclass(frozen=True)
class Coin:
    """A coin the gateway can account for.

    ``confirmations`` is the platform floor (merchants may only raise it);
    ``default_confirmations`` is what a merchant gets without a setting.
    ``address_family`` names the key layer's family that derives and
    validates its addresses ("btc", "evm", "tron", ...). ``contract`` is the
    pinned token contract for tokens, None for native coins.
    """

    symbol: str
    name: str
    chain: str
    decimals: int
    confirmations: int
    min_payout: str
    address_family: str
    contract: str | None = None
    default_confirmations: int | None = None
    payable: bool = True
    receivable: bool = True

    @property
    def default_threshold(self) -> int:
        return self.default_confirmations or self.confirmations

    @property
    def min_payout_units(self) -> int:
        return to_base_units(self.min_payout, self.decimals, allow_zero=True)

    def to_units(self, value: Any) -> int:
        """Coin-unit amount (string or exact number) to base units; see money.to_base_units."""
        return to_base_units(value, self.decimals)

    def format(self, units: int) -> str:
        return format_units(units, self.decimals)

    def currency_entry(self) -> dict[str, Any]:
        """The row of ``GET /v1/common/currencies`` (SPEC 2.6)."""
        return {
            "symbol": self.symbol,
            "name": self.name,
            "network": self.chain,
            "decimals": self.decimals,
            "confirmations": self.confirmations,
            "min_payout": self.min_payout,
        }


class CoinRegistry(Registry[Coin]):
    kind = "coin"

    def _key(self, item: Coin) -> str:
        return item.symbol

    def add(self, item: Coin) -> Coin:
        if not isinstance(item.decimals, int) or not 0 <= item.decimals <= 30:
            raise StartupError(f"coin {item.symbol!r} from plugin {self.current_plugin!r} has bad decimals")
        return super().add(item)

    def require(self, symbol: str) -> Coin:
        coin = self.get(symbol)
        if coin is None:
            raise KeyError(symbol)
        return coin

    def pin_contract(self, symbol: str, contract: str) -> None:
        """Replace a token's pinned contract (operator config, test networks)."""
        self._items[symbol] = replace(self.require(symbol), contract=contract)


def _coin(symbol: str, name: str, chain: str, decimals: int, conf: int, min_payout: str, family: str, **kw: Any) -> Coin:
    return Coin(symbol, name, chain, decimals, conf, min_payout, family, **kw)


# SPEC 2.7, with the well-known mainnet token contracts pinned.
SPEC_COINS: tuple[Coin, ...] = (
    _coin("BTC", "Bitcoin", "bitcoin", 8, 2, "0.0001", "btc"),
    _coin("LTC", "Litecoin", "litecoin", 8, 6, "0.001", "ltc"),
    _coin("DOGE", "Dogecoin", "dogecoin", 8, 6, "10", "doge"),
    _coin("ETH", "Ethereum", "ethereum", 18, 12, "0.001", "evm"),
    _coin("USDT_ERC20", "Tether USD (ERC-20)", "ethereum", 6, 12, "5", "evm",
          contract="0xdAC17F958D2ee523a2206206994597C13D831ec7"),
    _coin("USDC_ERC20", "USD Coin (ERC-20)", "ethereum", 6, 12, "5", "evm",
          contract="0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"),
    _coin("SHIB", "Shiba Inu", "ethereum", 18, 12, "200000", "evm",
          contract="0x95aD61b0a150d79219dCF64E1E6Cc01f0B64C4cE"),
    _coin("DAI", "Dai", "ethereum", 18, 12, "5", "evm",
          contract="0x6B175474E89094C44Da98b954EedeAC495271d0F"),
    _coin("BNB", "BNB", "bsc", 18, 15, "0.01", "evm"),
    _coin("USDT_BEP20", "Tether USD (BEP-20)", "bsc", 18, 15, "5", "evm",
          contract="0x55d398326f99059fF775485246999027B3197955"),
    _coin("USDC_BEP20", "USD Coin (BEP-20)", "bsc", 18, 15, "5", "evm",
          contract="0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d"),
    _coin("POL", "Polygon", "polygon", 18, 30, "1", "evm"),
    _coin("USDT_POL", "Tether USD (Polygon)", "polygon", 6, 30, "5", "evm",
          contract="0xc2132D05D31c914a87C6611C10748AEb04B58e8F"),
    _coin("USDC_POL", "USD Coin (Polygon)", "polygon", 6, 30, "5", "evm",
          contract="0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359"),
    _coin("TRX", "TRON", "tron", 6, 3, "5", "tron", default_confirmations=19),
    _coin("USDT_TRC20", "Tether USD (TRC-20)", "tron", 6, 3, "1", "tron",
          contract="TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", default_confirmations=19),
    _coin("USDC_TRC20", "USD Coin (TRC-20)", "tron", 6, 3, "1", "tron",
          contract="TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8", default_confirmations=19),
    _coin("SOL", "Solana", "solana", 9, 32, "0.01", "solana"),
    # Source-only: swapped into the merchant's settlement coin, never held.
    _coin("XMR", "Monero", "monero", 12, 10, "0", "xmr", payable=False),
    # Lightning: amounts in BTC with satoshi precision; credited on settlement.
    _coin("BTC_LN", "Bitcoin Lightning", "lightning", 8, 0, "0.00000001", "lightning"),
)


def register_all(registry: CoinRegistry, coins: Iterable[Coin]) -> None:
    for coin in coins:
        registry.add(coin)
