"""The platform's own keys on a chain: the hot wallet and the deposit addresses, all from the operator's seed.

Why shared: every account-based chain plugin signs with the same two kinds
of key, derived the same way. The hot wallet is HD account 0, index 0 of
the plugin's address family (merchants derive under accounts 1 and up, so
it can never be a deposit address); a deposit address's key is found by
the (account, index) the core stored when it handed the address out. Each
plugin's ``keys.py`` names its family and says where its path lands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..api import address_key
from ..api.addresses import keystore

if TYPE_CHECKING:  # pragma: no cover
    from ..api import Gateway
    from ..api import AddressFamily

HOT_WALLET_ACCOUNT = 0
HOT_WALLET_INDEX = 0


class PlatformKeys:
    """Keys of one address family; ``label`` names the chain in errors."""

    def __init__(self, family: str, label: str):
        self.family, self.label = family, label

    def _family(self, gateway: "Gateway", network: str) -> "AddressFamily":
        return gateway.address_families.require(self.family, network)

    def hot_wallet_address(self, gateway: "Gateway", network: str = "mainnet") -> str:
        return self._family(gateway, network).derive(keystore(gateway, network), HOT_WALLET_ACCOUNT,
                                                     HOT_WALLET_INDEX).address

    def hot_wallet_key(self, gateway: "Gateway", network: str = "mainnet") -> bytes:
        """The hot wallet's signing key; raises ``WatchOnlyError`` in a watch-only process."""
        return keystore(gateway, network).private_key_for(self._family(gateway, network), HOT_WALLET_ACCOUNT,
                                                          HOT_WALLET_INDEX)

    async def deposit_key(self, gateway: "Gateway", address: str, network: str = "mainnet") -> bytes:
        """The signing key of one of our deposit addresses (for sweeping it)."""
        key = await address_key(gateway, address, self.family)
        if key is None:
            raise LookupError(f"{address} is not one of our {self.label} deposit addresses")
        return keystore(gateway, network).private_key_for(self._family(gateway, network), key.key_account,
                                                          key.key_index)
