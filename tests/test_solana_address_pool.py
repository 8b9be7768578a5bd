"""The pool of Solana deposit addresses a signer pre-derives for a seedless serve (``chains/solana/pool.py``):
derived at indexes of the core's own counter, topped up to its size, claimed once each under concurrent creates,
and a clear 503 when empty. The pool is filled here by a gateway holding the seed, as ``orbchain signer`` does."""

from __future__ import annotations

import asyncio

import pytest

from orbchain.chains.solana import pool
from orbchain.chains.solana.keys import hot_wallet_address
from orbchain.core.addresses.store import keystore, reserve_fresh
from orbchain.core.types.errors import ServiceUnavailable
from orbchain.testing import open_shop

NOWHERE = "http://127.0.0.1:9/"  # no node is asked: deriving and claiming are database and key work


async def shop_with(make_config, make_client, **sections):
    return await open_shop(make_config, make_client, blocked=("devnet", "lightning"), email="pool@example.com",
                           plugin={"solana": {"rpc_url": NOWHERE}}, **sections)


async def test_the_pool_is_derived_from_the_shared_counter_topped_up_and_claimed_once_each(
        make_config, make_client, tmp_path):
    key_file = tmp_path / "signer_key"
    key_file.write_text("00" * 32 + "\n")
    shop = await shop_with(make_config, make_client, signer={"key_file": str(key_file), "in_process": True})
    gw, merchant_id = shop.gateway, shop.merchant.merchant_id
    assert pool.JOB_NAME in gw.jobs.names()  # a separate signer is configured: the pool job exists
    merchant = await gw.db.fetch_one("SELECT * FROM merchants WHERE id = :m", {"m": merchant_id})
    sol = gw.coins.require("SOL")
    first = await reserve_fresh(gw, merchant, sol, "mainnet")  # the core's own derivation takes index 0

    assert await pool.top_up(gw, 4) == 4
    assert await pool.top_up(gw, 4) == 0  # full: nothing more
    assert await gw.db.fetch_val("SELECT address FROM solana_hot_wallet") == hot_wallet_address(gw)  # published
    rows = await gw.db.fetch_all("SELECT address, key_index FROM solana_address_pool WHERE merchant_id = :m",
                                 {"m": merchant_id})
    family = gw.address_families.require("solana", "mainnet")
    store = keystore(gw, "mainnet")
    assert all(r["address"] == family.address_at(store, int(merchant["key_account"]), int(r["key_index"]))
               for r in rows)
    assert first.index not in {int(r["key_index"]) for r in rows}  # one counter: never the same index twice

    claimed = await asyncio.gather(*(pool.claim(gw, merchant_id, 30) for _ in range(4)))
    assert sorted(t.address for t in claimed) == sorted(r["address"] for r in rows)  # each once
    assert {t.watch_index for t in claimed} == {int(r["key_index"]) for r in rows}
    with pytest.raises(ServiceUnavailable) as empty:
        await pool.claim(gw, merchant_id, 30)
    assert empty.value.code == "address_pool_empty" and empty.value.headers == {"Retry-After": "30"}
    assert gw.metrics.deposit_addresses_unavailable.labels("solana", "pool_empty")._value.get() == 1
    assert await pool.top_up(gw, 2) == 2  # claimed ones do not count: two fresh, unused


async def test_a_process_with_the_seed_and_no_separate_signer_neither_pools_nor_claims(make_config, make_client):
    shop = await shop_with(make_config, make_client)
    gw = shop.gateway
    assert pool.JOB_NAME not in gw.jobs.names() and pool.derives_here(gw)
    response = await shop.client.post("/v1/payment/white-label", headers=shop.merchant.merchant_key,
                                      json={"currency": "SOL", "amount": "1"})
    assert response.status == 200, await response.text()  # derived from the seed, as before: no pool asked
    assert await gw.db.fetch_val("SELECT COUNT(*) FROM solana_address_pool") == 0
