"""Which key signs: the hot wallet and the deposit addresses, all from the operator's seed.

The hot wallet of every EVM chain is the platform's own HD account 0,
index 0 of the ``evm`` family (m/44'/60'/0'/0/0): merchants derive under
accounts 1 and up, so it can never be a deposit address. One address serves
ethereum, bsc and polygon (the same key on every EVM chain).
"""

from __future__ import annotations

from ..platform_keys import HOT_WALLET_ACCOUNT, HOT_WALLET_INDEX, PlatformKeys

FAMILY = "evm"

_KEYS = PlatformKeys(FAMILY, "EVM")
hot_wallet_address = _KEYS.hot_wallet_address
hot_wallet_key = _KEYS.hot_wallet_key
deposit_key = _KEYS.deposit_key

__all__ = ["FAMILY", "HOT_WALLET_ACCOUNT", "HOT_WALLET_INDEX", "deposit_key", "hot_wallet_address", "hot_wallet_key"]
