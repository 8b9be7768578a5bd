"""Which key signs on Tron: the hot wallet and the deposit addresses, all from the operator's seed.

The hot wallet is the platform's own HD account 0, index 0 of the ``tron``
family (m/44'/195'/0'/0/0): merchants derive under accounts 1 and up, so it
is never a deposit address.
"""

from __future__ import annotations

from ..platform_keys import PlatformKeys

KEYS = PlatformKeys("tron", "Tron")
hot_wallet_address, hot_wallet_key, deposit_key = KEYS.hot_wallet_address, KEYS.hot_wallet_key, KEYS.deposit_key
