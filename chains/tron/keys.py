"""Which key signs on Tron: the hot wallet and the deposit addresses, all from the operator's seed.

The hot wallet is the platform's own HD account 0, index 0 of the ``tron``
family (m/44'/195'/0'/0/0): merchants derive under accounts 1 and up, so it
is never a deposit address.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.addresses import keystore
from ...core.services import address_key

if TYPE_CHECKING:  # pragma: no cover
    from ...core.gateway import Gateway
    from ...core.keys import AddressFamily

FAMILY = "tron"
HOT_WALLET_ACCOUNT = 0
HOT_WALLET_INDEX = 0


def _family(gateway: "Gateway", network: str) -> "AddressFamily":
    return gateway.address_families.require(FAMILY, network)


def hot_wallet_address(gateway: "Gateway", network: str = "mainnet") -> str:
    return _family(gateway, network).derive(keystore(gateway, network), HOT_WALLET_ACCOUNT, HOT_WALLET_INDEX).address


def hot_wallet_key(gateway: "Gateway", network: str = "mainnet") -> bytes:
    """The hot wallet's signing key; raises ``WatchOnlyError`` in a watch-only process."""
    return keystore(gateway, network).private_key_for(_family(gateway, network), HOT_WALLET_ACCOUNT,
                                                      HOT_WALLET_INDEX)


async def deposit_key(gateway: "Gateway", address: str, network: str = "mainnet") -> bytes:
    """The signing key of one of our deposit addresses (for sweeping it)."""
    key = await address_key(gateway, address, FAMILY)
    if key is None:
        raise LookupError(f"{address} is not one of our Tron deposit addresses")
    return keystore(gateway, network).private_key_for(_family(gateway, network), key.key_account, key.key_index)
