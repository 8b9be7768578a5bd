"""Which key signs: the hot wallet and the deposit addresses, all from the operator's seed.

The hot wallet is the platform's own HD account 0, index 0 of the
``solana`` family (m/44'/501'/0'/0'): merchants derive under accounts 1 and
up, so it can never be a deposit address. Keys are ed25519 seeds (SLIP-10).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.addresses import keystore
from ...core.services import address_key

if TYPE_CHECKING:  # pragma: no cover
    from ...core.gateway import Gateway

FAMILY = "solana"
HOT_WALLET_ACCOUNT = 0
HOT_WALLET_INDEX = 0


def hot_wallet_address(gateway: "Gateway") -> str:
    family = gateway.address_families.require(FAMILY)
    return family.derive(keystore(gateway), HOT_WALLET_ACCOUNT, HOT_WALLET_INDEX).address


def hot_wallet_key(gateway: "Gateway") -> bytes:
    """The hot wallet's ed25519 seed; raises ``WatchOnlyError`` in a watch-only process."""
    family = gateway.address_families.require(FAMILY)
    return keystore(gateway).private_key_for(family, HOT_WALLET_ACCOUNT, HOT_WALLET_INDEX)


async def deposit_key(gateway: "Gateway", address: str) -> bytes:
    """The ed25519 seed of one of our deposit addresses (for sweeping it)."""
    key = await address_key(gateway, address, FAMILY)
    if key is None:
        raise LookupError(f"{address} is not one of our Solana deposit addresses")
    return keystore(gateway).private_key_for(gateway.address_families.require(FAMILY), key.key_account, key.key_index)
