"""Solana deposit addresses for a seedless ``serve``: a pool the signer pre-derives, handed out one by one.

Why a pool: Solana's family is SLIP-10 ed25519, hardened at every level, so
no extended public key yields its addresses; a ``serve`` without the seed
cannot derive one. ``orbchain signer`` (which holds the seed) runs the job
``solana.address_pool`` (``signs=True``): for every enabled merchant it keeps
``address_pool_size`` unused addresses in ``solana_address_pool``, each
derived under the merchant's HD account at an index taken from the core's
own counter of that merchant's Solana indexes (``address_counter``), so an
index is never handed out twice whoever derives it.

A seedless ``serve`` answers ``decide_receive_target`` for SOL with the
merchant's lowest unused address, claimed in one statement (``SKIP LOCKED``
on PostgreSQL: concurrent creates take different rows), and asks the core to
watch it at its index (``ReceiveTarget.watch_index``): the core's address
row then says (merchant, index) as for a derived address, and the signer's
sweep finds the key from it. A claim whose payment then fails is a gap,
harmless as an unused derived index is. An empty pool refuses the payment
with 503 ``address_pool_empty`` (a WARNING and
``orbchain_deposit_addresses_unavailable{reason="pool_empty"}``), never a 500.

The same job publishes the hot wallet's address (``solana_hot_wallet``):
the serve's custody check reads it there (``hot_wallet``), as it cannot
derive it either.

A process that holds the seed derives as before and never touches the pool;
the job runs only where a separate signer is configured (``[signer]
key_file``), so a single-process development set-up derives nothing ahead.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...api import ChainUnavailable, ReceiveTarget, ServiceUnavailable, address_accounts, address_counter
from ...api.addresses import keystore, next_counter
from .keys import hot_wallet_address

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

FAMILY = "solana"
NETWORK = "mainnet"  # the solana family derives the same addresses on every cluster (adapter.network)
JOB_NAME = "solana.address_pool"
POOL_EMPTY = "pool_empty"
EMPTY_CODE = "address_pool_empty"  # the 503's code


def derives_here(gateway: "Gateway") -> bool:
    """Whether this process holds the seed (it derives Solana addresses itself, no pool needed)."""
    return bool(gateway.require_secrets().seed_material)


def pool_wanted(gateway: "Gateway") -> bool:
    """A separate signer is configured (``[signer] key_file``, on both sides): its serves need the pool."""
    return bool(gateway.config.signer.key_file)


async def top_up(gateway: "Gateway", size: int) -> int:
    """Derive addresses until every enabled merchant has ``size`` unused ones; how many were added."""
    db = gateway.db
    family = gateway.address_families.require(FAMILY, NETWORK)
    store = keystore(gateway, NETWORK)  # the signer's seed: raises WatchOnlyError anywhere else
    await db.execute("INSERT INTO solana_hot_wallet (id, address, updated_at) VALUES (1, :a, :now)"
                     " ON CONFLICT (id) DO UPDATE SET address = excluded.address, updated_at = excluded.updated_at"
                     " WHERE solana_hot_wallet.address <> excluded.address",
                     {"a": hot_wallet_address(gateway), "now": gateway.now()})
    free = {row["merchant_id"]: int(row["n"]) for row in await db.fetch_all(
        "SELECT merchant_id, COUNT(*) AS n FROM solana_address_pool WHERE claimed_at IS NULL GROUP BY merchant_id")}
    added = 0
    for account in await address_accounts(gateway):
        for _ in range(size - free.get(account.merchant_id, 0)):
            index = await next_counter(gateway, address_counter(account.merchant_id, FAMILY, NETWORK))
            await db.execute(
                "INSERT INTO solana_address_pool (address, merchant_id, key_index, created_at)"
                " VALUES (:a, :m, :i, :now)",
                {"a": family.address_at(store, account.key_account, index), "m": account.merchant_id, "i": index,
                 "now": gateway.now()})
            added += 1
    if added:
        log.info("solana: pre-derived %d deposit address(es) for seedless serves", added)
    return added


async def hot_wallet(gateway: "Gateway") -> str:
    """The hot wallet's address: derived where the seed is, else as the signer published it."""
    if derives_here(gateway):
        return hot_wallet_address(gateway)
    address = await gateway.db.fetch_val("SELECT address FROM solana_hot_wallet WHERE id = 1")
    if not address:
        raise ChainUnavailable(f"solana: the hot wallet address is unknown here until `orbchain signer` runs its"
                               f" {JOB_NAME} job")
    return str(address)


def top_up_job(size: int):
    async def run(gateway: "Gateway") -> None:
        await top_up(gateway, size)

    return run


async def claim(gateway: "Gateway", merchant_id: str, retry_after: int) -> ReceiveTarget:
    """The merchant's lowest unused pre-derived address, taken for good; 503 ``address_pool_empty`` (with
    ``Retry-After``: the signer's next top-up) when none is left."""
    db = gateway.db
    lock = " FOR UPDATE SKIP LOCKED" if db.is_postgres else ""
    address = await db.execute(
        "UPDATE solana_address_pool SET claimed_at = :now WHERE claimed_at IS NULL AND address = ("
        " SELECT address FROM solana_address_pool WHERE merchant_id = :m AND claimed_at IS NULL"
        f" ORDER BY key_index LIMIT 1{lock}) RETURNING address",
        {"m": merchant_id, "now": gateway.now()})
    if not address:
        gateway.metrics.deposit_address_unavailable(FAMILY, POOL_EMPTY)
        log.warning("solana: no pre-derived deposit address left for merchant %s: is `orbchain signer` running"
                    " its %s job? ([plugin.solana] address_pool_size)", merchant_id, JOB_NAME)
        raise ServiceUnavailable("no Solana deposit address is ready for this account yet: the signer pre-derives"
                                 " them (the pool is empty); try again shortly", code=EMPTY_CODE,
                                 headers={"Retry-After": str(max(1, retry_after))})
    index = await db.fetch_val("SELECT key_index FROM solana_address_pool WHERE address = :a", {"a": address})
    return ReceiveTarget(str(address), watch_index=int(index))
