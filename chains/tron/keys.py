"""Which key signs on Tron: the hot wallet and the deposit addresses, all from the operator's seed.

The hot wallet is the platform's own HD account 0, index 0 of the ``tron``
family (m/44'/195'/0'/0/0): merchants derive under accounts 1 and up, so it
is never a deposit address.
"""

from __future__ import annotations

from ..platform_keys import HOT_WALLET_ACCOUNT, HOT_WALLET_INDEX, PlatformKeys

FAMILY = "tron"

_KEYS = PlatformKeys(FAMILY, "Tron")
hot_wallet_address = _KEYS.hot_wallet_address
hot_wallet_key = _KEYS.hot_wallet_key
deposit_key = _KEYS.deposit_key

__all__ = ["FAMILY", "HOT_WALLET_ACCOUNT", "HOT_WALLET_INDEX", "deposit_key", "hot_wallet_address", "hot_wallet_key"]
