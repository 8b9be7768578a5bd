"""Which key signs: the hot wallet and the deposit addresses, all from the operator's seed.

The hot wallet of every EVM chain is the platform's own HD account 0,
index 0 of the ``evm`` family (m/44'/60'/0'/0/0): merchants derive under
accounts 1 and up, so it can never be a deposit address. One address serves
ethereum, bsc and polygon (the same key on every EVM chain).
"""

from __future__ import annotations

from ..platform_keys import PlatformKeys

KEYS = PlatformKeys("evm", "EVM")
hot_wallet_address, hot_wallet_key, deposit_key = KEYS.hot_wallet_address, KEYS.hot_wallet_key, KEYS.deposit_key
