"""The coins of the evm plugin (SPEC 2.7): ETH, BNB, POL and their tokens.

Data only, with the well-known mainnet token contracts pinned; an operator
replaces a pin per chain with ``[plugin.evm.<chain>] contracts`` (test
networks). Tokens price as their asset (``price_id``).
"""

from __future__ import annotations

from typing import Any

from ...api import Coin

FAMILY = "evm"
# Each chain's published EIP-155 id: the EIP-681 URIs of a chain with no ``[plugin.evm.<chain>]`` block (the
# devnet serves these coins at mainnet addresses), so a wallet never guesses the chain. A block's chain_id wins.
CHAIN_IDS = {"ethereum": 1, "bsc": 56, "polygon": 137}


def _evm(symbol: str, name: str, chain: str, decimals: int, conf: int, min_payout: str,
         price_id: str, dev_price: str, contract: str | None = None, **kw: Any) -> Coin:
    return Coin(symbol, name, chain, decimals, conf, min_payout, FAMILY, contract=contract,
                price_id=price_id, dev_price_usd=dev_price, **kw)


COINS: tuple[Coin, ...] = (
    _evm("ETH", "Ethereum", "ethereum", 18, 12, "0.001", "ethereum", "3000", default_accepted=True, rank=4,
         network_name="Ethereum"),
    _evm("USDT_ERC20", "Tether USD (ERC-20)", "ethereum", 6, 12, "5", "tether", "1",
         "0xdAC17F958D2ee523a2206206994597C13D831ec7", default_accepted=True, rank=5,
         asset="USDT", network_name="Ethereum (ERC-20)"),
    _evm("USDC_ERC20", "USD Coin (ERC-20)", "ethereum", 6, 12, "5", "usd-coin", "1",
         "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", rank=6,
         asset="USDC", network_name="Ethereum (ERC-20)"),
    _evm("SHIB", "Shiba Inu", "ethereum", 18, 12, "200000", "shiba-inu", "0.00002",
         "0x95aD61b0a150d79219dCF64E1E6Cc01f0B64C4cE", rank=7,
         asset="SHIB", network_name="Ethereum (ERC-20)"),
    _evm("DAI", "Dai", "ethereum", 18, 12, "5", "dai", "1", "0x6B175474E89094C44Da98b954EedeAC495271d0F", rank=8,
         asset="DAI", network_name="Ethereum (ERC-20)"),
    _evm("BNB", "BNB", "bsc", 18, 15, "0.01", "binancecoin", "600", rank=9,
         network_name="BNB Smart Chain"),
    _evm("USDT_BEP20", "Tether USD (BEP-20)", "bsc", 18, 15, "5", "tether", "1",
         "0x55d398326f99059fF775485246999027B3197955", rank=10,
         asset="USDT", network_name="BNB Smart Chain (BEP-20)"),
    _evm("USDC_BEP20", "USD Coin (BEP-20)", "bsc", 18, 15, "5", "usd-coin", "1",
         "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d", rank=11,
         asset="USDC", network_name="BNB Smart Chain (BEP-20)"),
    _evm("POL", "Polygon", "polygon", 18, 30, "1", "polygon-ecosystem-token", "0.5", rank=12,
         network_name="Polygon"),
    _evm("USDT_POL", "Tether USD (Polygon)", "polygon", 6, 30, "5", "tether", "1",
         "0xc2132D05D31c914a87C6611C10748AEb04B58e8F", rank=13,
         asset="USDT", network_name="Polygon"),
    _evm("USDC_POL", "USD Coin (Polygon)", "polygon", 6, 30, "5", "usd-coin", "1",
         "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", rank=14,
         asset="USDC", network_name="Polygon"),
)
