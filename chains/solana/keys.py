"""Which key signs: the hot wallet and the deposit addresses, all from the operator's seed.

The hot wallet is the platform's own HD account 0, index 0 of the
``solana`` family (m/44'/501'/0'/0'): merchants derive under accounts 1 and
up, so it can never be a deposit address. Keys are ed25519 seeds (SLIP-10).
"""

from __future__ import annotations

from ..platform_keys import HOT_WALLET_ACCOUNT, HOT_WALLET_INDEX, PlatformKeys

FAMILY = "solana"

_KEYS = PlatformKeys(FAMILY, "Solana")
hot_wallet_address = _KEYS.hot_wallet_address
hot_wallet_key = _KEYS.hot_wallet_key
deposit_key = _KEYS.deposit_key

__all__ = ["FAMILY", "HOT_WALLET_ACCOUNT", "HOT_WALLET_INDEX", "deposit_key", "hot_wallet_address", "hot_wallet_key"]
