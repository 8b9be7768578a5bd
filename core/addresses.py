"""Deposit addresses: derived from the operator's seed, one table to look them up.

Each merchant derives under its own hardened HD account (``key_account``),
so two merchants can never get the same address. Indexes come from a
per-(merchant, family, network) counter; standing addresses (static payments,
the dashboard's receive addresses) are unique per user key, so asking again
returns the same address, also under concurrent requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import json
from pathlib import Path

from .config import ConfigError
from .errors import NotConfigured
from .keys import AddressFamily, SeedKeyStore, WatchOnlyError, WatchOnlyKeyStore

if TYPE_CHECKING:  # pragma: no cover
    from .coins import Coin
    from .gateway import Gateway

MERCHANT_KEY = ""  # user_key of a merchant's own standing address


def keystore(gateway: "Gateway", network: str = "mainnet") -> Any:
    """The process's key store: from the seed, or watch-only from account xpubs.

    A seed store serves every network; a watch-only store holds the xpubs of
    one network, so there is one per network.
    """
    stores = gateway.services.setdefault("keystores", {})
    if network not in stores:
        secrets = gateway.require_secrets()
        if secrets.seed_material:
            store = stores.get("seed") or SeedKeyStore.from_secret(
                secrets.seed_material, gateway.config.secrets.seed_passphrase)
            stores["seed"] = store
        else:
            store = WatchOnlyKeyStore(load_account_xpubs(gateway.config.secrets.account_xpubs_file, network), network,
                                      gateway.address_families)
        stores[network] = store
    return stores[network]


def load_account_xpubs(path: str, network: str) -> dict[tuple[str, int], str]:
    """``{network: {family: {account: xpub}}}`` as written by ``orbchain keys export-xpubs``."""
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
        return {(family, int(account)): xpub
                for family, accounts in table.get(network, {}).items() for account, xpub in accounts.items()}
    except (OSError, ValueError, AttributeError) as exc:
        raise ConfigError(f"config key 'secrets.account_xpubs_file': cannot read {path}: {exc}") from None


def export_account_xpubs(
    store: SeedKeyStore, network: str, accounts: range, families: list[AddressFamily]
) -> dict:
    """The watch-only table for ``accounts`` (run where the seed lives)."""
    table: dict[str, dict[str, str]] = {}
    for family in families:
        table[family.name] = {str(account): store.account_xpub(family, account) for account in accounts}
    return {network: table}


def family_of(gateway: "Gateway", coin: "Coin", network: str) -> AddressFamily:
    """The registered address family of ``coin`` on ``network`` (checked at startup)."""
    return gateway.address_families.require(coin.address_family, network)


async def next_counter(gateway: "Gateway", name: str) -> int:
    """Atomically take the next value (starting at 0) of a named counter."""
    value = await gateway.db.fetch_val(
        "INSERT INTO counters (name, value) VALUES (:n, 0)"
        " ON CONFLICT (name) DO UPDATE SET value = counters.value + 1 RETURNING value",
        {"n": name},
    )
    return int(value)


async def _derive_and_store(
    gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin", network: str, user_key: str | None
) -> str:
    family = family_of(gateway, coin, network)
    index = await next_counter(gateway, f"addr:{merchant['id']}:{family.name}:{network}")
    try:
        derived = family.derive(keystore(gateway, network), int(merchant["key_account"]), index)
    except WatchOnlyError as exc:
        # A watch-only process lacks this merchant's xpub: an operator task, not a client error.
        raise NotConfigured(f"{exc}; export it with `orbchain keys export-xpubs` where the seed is") from None
    await gateway.db.execute(
        "INSERT INTO deposit_addresses (address, family, network, merchant_id, key_index, user_key, created_at)"
        " VALUES (:a, :f, :n, :m, :i, :u, :t)",
        {"a": derived.address, "f": family.name, "n": network, "m": merchant["id"], "i": index,
         "u": user_key, "t": gateway.now()},
    )
    return derived.address


async def fresh_address(gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin", network: str) -> str:
    """A never-used address of ``coin``'s family for one payment."""
    async with gateway.db.transaction():
        return await _derive_and_store(gateway, merchant, coin, network, None)


async def standing_address(
    gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin", network: str, user_key: str = MERCHANT_KEY
) -> str:
    """The one address of (merchant, coin family, user); created on first use.

    Coins of one family share one address per user (a chain's native coin
    and its tokens): the key is the family, not the coin.
    """
    family = family_of(gateway, coin, network).name
    query = (
        "SELECT address FROM deposit_addresses WHERE merchant_id = :m AND family = :f"
        " AND network = :n AND user_key = :u"
    )
    values = {"m": merchant["id"], "f": family, "n": network, "u": user_key}
    found = await gateway.db.fetch_val(query, values)
    if found:
        return found
    async with gateway.db.transaction():
        found = await gateway.db.fetch_val(query + gateway.db.for_update, values)
        if found:
            return found
        try:
            async with gateway.db.transaction():  # savepoint: a concurrent insert may win
                return await _derive_and_store(gateway, merchant, coin, network, user_key)
        except Exception as exc:  # only a unique violation is expected here
            if "unique" not in str(exc).lower() and "duplicate" not in str(exc).lower():
                raise
    return await gateway.db.fetch_val(query, values)


async def lookup(gateway: "Gateway", addresses: list[str]) -> dict[str, Mapping[str, Any]]:
    """Address-table rows for the given addresses (the scanner's only look-up)."""
    found: dict[str, Mapping[str, Any]] = {}
    unique = sorted(set(addresses))
    for start in range(0, len(unique), 500):
        chunk = unique[start:start + 500]
        names = {f"a{i}": a for i, a in enumerate(chunk)}
        rows = await gateway.db.fetch_all(
            "SELECT address, family, network, merchant_id, key_index, user_key FROM deposit_addresses"
            f" WHERE address IN ({', '.join(':' + k for k in names)})",
            names,
        )
        found.update({row["address"]: row for row in rows})
    return found
