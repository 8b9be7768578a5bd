"""Which key signs: the hot wallet and the deposit addresses, all from the operator's seed.

The hot wallet is the platform's own HD account 0, index 0 of the
``solana`` family (m/44'/501'/0'/0'): merchants derive under accounts 1 and
up, so it can never be a deposit address. Keys are ed25519 seeds (SLIP-10).
"""

from __future__ import annotations

from ..platform_keys import PlatformKeys

KEYS = PlatformKeys("solana", "Solana")
hot_wallet_address, hot_wallet_key, deposit_key = KEYS.hot_wallet_address, KEYS.hot_wallet_key, KEYS.deposit_key
