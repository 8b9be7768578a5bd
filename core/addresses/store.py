"""Deposit addresses: derived from the operator's seed, one table to look them up.

Each merchant derives under its own hardened HD account (``key_account``),
so two merchants can never get the same address. Indexes come from a
per-(merchant, family, network) counter; standing addresses (static payments,
the dashboard's receive addresses) are unique per user key, so asking again
returns the same address, also under concurrent requests.

A payment's fresh address takes its index before the payment's transaction:
each process reserves a small block of indexes from the counter in one short
statement of its own and hands them out from memory, so creates of one
merchant never queue on the counter row. An index whose payment then fails,
or a block left when the process stops, is a gap; gaps are harmless (the
address table, not a gap limit, is what the scanner watches).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..infra.config import ConfigError
from ..types.errors import NotConfigured
from ..keys import AddressFamily, SeedKeyStore, WatchOnlyError, WatchOnlyKeyStore

from ..contract.gateway import PluginGateway as Gateway
from ..types.services import ServiceKey

if TYPE_CHECKING:  # pragma: no cover
    from ..money.coins import Coin

MERCHANT_KEY = ""  # user_key of a merchant's own standing address


KEYSTORES = ServiceKey[dict[str, Any]]("keystores")  # the process's key stores: "seed", or one per network


def keystore(gateway: "Gateway", network: str = "mainnet") -> Any:
    """The process's key store: from the seed, or watch-only from account xpubs.

    A seed store serves every network; a watch-only store holds the xpubs of
    one network, so there is one per network.
    """
    stores = gateway.services.setdefault(KEYSTORES, {})
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
    """Atomically take the next value (starting at 0) of a named counter.

    Outside a transaction this is one short statement that commits at once;
    inside one, the counter row stays locked until that transaction ends.
    """
    value = await gateway.db.execute(
        "INSERT INTO counters (name, value) VALUES (:n, 0)"
        " ON CONFLICT (name) DO UPDATE SET value = counters.value + 1 RETURNING value",
        {"n": name},
    )
    return int(value)


# Indexes one process reserves per trip to a counter. 20 halves the counter statements of 10 and
# stays within BIP-44's gap limit of 20: a block's first index is always handed out, so a wallet
# restored from the seed never meets more than 19 unused addresses in a row (failed payments aside).
INDEX_BLOCK = 20


class IndexBlocks:
    """Per-process blocks of address indexes, taken from the counters table.

    A block is reserved by one autocommitted ``value + INDEX_BLOCK``, so
    blocks of different processes never overlap, and one of this process's
    indexes is handed out once. Never refilled inside a transaction: a block
    whose reservation rolled back could be handed out again elsewhere.
    """

    def __init__(self, size: int = INDEX_BLOCK) -> None:
        self.size = size
        self._free: dict[str, deque[int]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def take(self, gateway: "Gateway", name: str) -> int:
        if gateway.db.in_transaction:
            raise RuntimeError("address indexes are reserved outside a transaction")
        free = self._free.get(name)
        if free:
            return free.popleft()
        async with self._locks.setdefault(name, asyncio.Lock()):
            free = self._free.get(name)
            if not free:
                last = int(await gateway.db.execute(
                    "INSERT INTO counters (name, value) VALUES (:n, :first)"
                    " ON CONFLICT (name) DO UPDATE SET value = counters.value + :size RETURNING value",
                    {"n": name, "first": self.size - 1, "size": self.size},
                ))
                free = self._free[name] = deque(range(last - self.size + 1, last + 1))
            return free.popleft()


INDEX_BLOCKS = ServiceKey("address_index_blocks", IndexBlocks)


def _index_blocks(gateway: "Gateway") -> IndexBlocks:
    return gateway.services.setdefault(INDEX_BLOCKS, IndexBlocks())


ADDRESS_COUNTER_PREFIX = "addr:"


def counter_name(merchant_id: str, family: str, network: str) -> str:
    """The counter of one merchant's address indexes in one family on one network."""
    return f"{ADDRESS_COUNTER_PREFIX}{merchant_id}:{family}:{network}"


def _counter_name(merchant: Mapping[str, Any], family: AddressFamily, network: str) -> str:
    return counter_name(merchant["id"], family.name, network)


@dataclass(frozen=True)
class FreshAddress:
    """A derived address with its index, not yet stored (``store_fresh`` does, in the payment's transaction)."""

    address: str
    family: str
    network: str
    index: int


def derive_address(gateway: "Gateway", merchant: Mapping[str, Any], family: AddressFamily, network: str,
                   index: int) -> str:
    try:
        return family.address_at(keystore(gateway, network), int(merchant["key_account"]), index)
    except WatchOnlyError as exc:
        # A watch-only process lacks this merchant's xpub: an operator task, not a client error.
        raise NotConfigured(f"{exc}; export it with `orbchain keys export-xpubs` where the seed is") from None


def _insert(
    gateway: "Gateway", merchant: Mapping[str, Any], address: str, family: str, network: str, index: int,
    user_key: str | None, recovery: str | None = None,
) -> tuple[str, dict[str, Any]]:
    return (
        "INSERT INTO deposit_addresses (address, family, network, merchant_id, key_index, user_key, created_at,"
        " recovery) VALUES (:a, :f, :n, :m, :i, :u, :t, :r)",
        {"a": address, "f": family, "n": network, "m": merchant["id"], "i": index, "u": user_key, "t": gateway.now(),
         "r": recovery},
    )


def recovered_insert(gateway: "Gateway", merchant: Mapping[str, Any], family: str, network: str, index: int,
                     recovery: str) -> tuple[str, dict[str, Any]]:
    """The statement watching an address ``orbchain restore recover`` re-derived (no payment: its row was lost)."""
    address = derive_address(gateway, merchant, gateway.address_families.require(family, network), network,
                             index)
    query, values = _insert(gateway, merchant, address, family, network, index, None, recovery)
    return query + " ON CONFLICT (address) DO NOTHING", values


async def recovery_of(gateway: "Gateway", address: str) -> str | None:
    """The backup whose recovery re-derived ``address`` (a deposit to it had its invoice lost), or None."""
    return await gateway.db.fetch_val("SELECT recovery FROM deposit_addresses WHERE address = :a",
                                      {"a": address}) or None


async def _store(
    gateway: "Gateway", merchant: Mapping[str, Any], address: str, family: str, network: str, index: int,
    user_key: str | None,
) -> str:
    await gateway.db.execute(*_insert(gateway, merchant, address, family, network, index, user_key))
    return address


async def reserve_fresh(gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin", network: str) -> FreshAddress:
    """Take an index and derive a never-used address, outside any transaction (no lock is held after)."""
    family = family_of(gateway, coin, network)
    index = await _index_blocks(gateway).take(gateway, _counter_name(merchant, family, network))
    return FreshAddress(derive_address(gateway, merchant, family, network, index), family.name, network, index)


def fresh_insert(gateway: "Gateway", merchant: Mapping[str, Any], fresh: FreshAddress) -> tuple[str, dict[str, Any]]:
    """The statement recording a reserved address, for the caller's atomic write (``Database.execute_atomic``)."""
    return _insert(gateway, merchant, fresh.address, fresh.family, fresh.network, fresh.index, None)


def watched_insert(gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin", network: str, address: str,
                   index: int) -> tuple[str, dict[str, Any]]:
    """The statement recording an address a plugin's own wallet made (``ReceiveTarget.watch_index``),
    so the scanner matches transfers to it like a derived address."""
    return _insert(gateway, merchant, address, family_of(gateway, coin, network).name, network, index, None)


async def store_fresh(gateway: "Gateway", merchant: Mapping[str, Any], fresh: FreshAddress) -> str:
    """Record a reserved address, inside the transaction that uses it."""
    await gateway.db.execute(*fresh_insert(gateway, merchant, fresh))
    return fresh.address


async def fresh_address(gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin", network: str) -> str:
    """A never-used address of ``coin``'s family, stored at once (callers outside a transaction)."""
    fresh = await reserve_fresh(gateway, merchant, coin, network)
    return await store_fresh(gateway, merchant, fresh)


async def _derive_and_store(
    gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin", network: str, user_key: str
) -> str:
    family = family_of(gateway, coin, network)
    index = await next_counter(gateway, _counter_name(merchant, family, network))
    address = derive_address(gateway, merchant, family, network, index)
    return await _store(gateway, merchant, address, family.name, network, index, user_key)


@dataclass(frozen=True)
class StandingPlan:
    """What ``prepare_standing`` found or reserved for a standing address, before the transaction."""

    family: str
    network: str
    user_key: str
    existing: str | None = None
    fresh: FreshAddress | None = None


_STANDING_QUERY = (
    "SELECT address FROM deposit_addresses WHERE merchant_id = :m AND family = :f"
    " AND network = :n AND user_key = :u"
)


async def find_standing(
    gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin", network: str, user_key: str = MERCHANT_KEY
) -> str | None:
    """The standing address derived before, or None: a read only (deriving one is a write)."""
    family = family_of(gateway, coin, network).name
    return await gateway.db.fetch_val(_STANDING_QUERY, {"m": merchant["id"], "f": family, "n": network,
                                                        "u": user_key}) or None


async def prepare_standing(
    gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin", network: str, user_key: str = MERCHANT_KEY
) -> StandingPlan:
    """Look the standing address up; when there is none yet, reserve an index for it (outside a transaction)."""
    family = family_of(gateway, coin, network).name
    found = await find_standing(gateway, merchant, coin, network, user_key)
    if found:
        return StandingPlan(family, network, user_key, existing=found)
    fresh = None if gateway.db.in_transaction else await reserve_fresh(gateway, merchant, coin, network)
    return StandingPlan(family, network, user_key, fresh=fresh)


async def settle_standing(gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin", plan: StandingPlan) -> str:
    """The standing address of ``plan``, stored if still missing; a concurrent creator's wins."""
    if plan.existing:
        return plan.existing
    values = {"m": merchant["id"], "f": plan.family, "n": plan.network, "u": plan.user_key}
    async with gateway.db.transaction():
        found = await gateway.db.fetch_val(_STANDING_QUERY + gateway.db.for_update, values)
        if found:
            return found
        try:
            async with gateway.db.transaction():  # savepoint: a concurrent insert may win
                if plan.fresh is not None:
                    fresh = plan.fresh
                    return await _store(gateway, merchant, fresh.address, fresh.family, fresh.network, fresh.index,
                                        plan.user_key)
                return await _derive_and_store(gateway, merchant, coin, plan.network, plan.user_key)
        except Exception as exc:  # only a unique violation is expected here
            if "unique" not in str(exc).lower() and "duplicate" not in str(exc).lower():
                raise
    return await gateway.db.fetch_val(_STANDING_QUERY, values)


async def standing_address(
    gateway: "Gateway", merchant: Mapping[str, Any], coin: "Coin", network: str, user_key: str = MERCHANT_KEY
) -> str:
    """The one address of (merchant, coin family, user); created on first use.

    Coins of one family share one address per user (a chain's native coin
    and its tokens): the key is the family, not the coin.
    """
    plan = await prepare_standing(gateway, merchant, coin, network, user_key)
    return await settle_standing(gateway, merchant, coin, plan)


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
