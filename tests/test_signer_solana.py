"""Solana signed by a separate ``orbchain signer`` (issue 45): SLIP-10 ed25519 is hardened-only, so a seedless serve
cannot derive deposit addresses; the signer pre-derives a pool of them, the serve hands them out (503 while the pool
is empty), the signer sweeps a deposit to the hot wallet (serve books it, once: the signer's role writes no ledger)
and signs a SOL payout under its own policy, which holds a
payout over its cap and a forged row. The node is the LiteSVM stand-in (``tests/solana_node.py``)."""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import AsyncIterator

import pytest
import pytest_asyncio
from solders.keypair import Keypair

from orbchain.core.accounts.merchants import set_accepted_coins
from orbchain.core.addresses.store import export_account_xpubs
from orbchain.core.payouts.fee_waits import FEE_RECHECK_SECONDS
from orbchain.core.keys import SeedKeyStore
from orbchain.core.ledger.book import balance
from orbchain.core.ledger.sweep_bookings import book_sweeps
from orbchain.scheduler.runner import JobScheduler
from orbchain.testing import ChainShop, open_shop
from tests.families import get_family

from .solana_node import SolanaDriver, SolanaNode, running_node
from .support import api
from .test_signer_process import JWT, SEED, channel, start_signer, stop_signer

POOL = 3
SIGNER_POLICY = '[signing]\nmax_per_payout = ["SOL=0.5"]'
CEILING = 40_000  # micro-lamports per compute unit: the priority fee's ceiling


@pytest_asyncio.fixture
async def solana_node() -> AsyncIterator[SolanaNode]:
    async with running_node() as node:
        yield node


def seed_address(account: int, index: int) -> str:
    return get_family("solana").derive(SeedKeyStore.from_secret(SEED, ""), account, index).address


async def until(check, node: SolanaNode, what: str, rounds: int = 600):
    """Poll ``check`` (a coroutine function) while the signer's jobs run; a bound, not a timing assertion."""
    for _ in range(rounds):
        found = await check()
        if found:
            return found
        node.produce(1)
        await asyncio.sleep(0.1)
    pytest.fail(f"never happened: {what}")


@pytest.fixture
async def seedless(solana_node, tmp_path, db_url, make_client, make_config):
    """A seedless serve watching the node (``[signer] url``, no Solana xpub can exist) and how to start its signer."""
    short, socket, key_file = channel(tmp_path)
    xpubs = tmp_path / "xpubs.json"  # the other families' xpubs; Solana's hardened accounts have none
    xpubs.write_text(json.dumps(export_account_xpubs(SeedKeyStore.from_secret(SEED, ""), "mainnet", range(0, 4),
                                                     [get_family("tron")])))
    driver = SolanaDriver(solana_node, payout_confirmations=1)
    settings = {**driver.config_sections()["plugin"]["solana"], "sweep_seconds": 1, "address_pool_size": POOL,
                "address_pool_seconds": 1, "fee_ceiling_micro_lamports_per_cu": CEILING}
    shop = await open_shop(make_config, make_client, blocked=("devnet", "lightning"), email="sol@example.com",
                           plugin={"solana": settings},
                           secrets={"account_xpubs_file": str(xpubs), "jwt_secret": JWT},
                           signer={"url": f"unix://{socket}", "key_file": str(key_file)})
    await set_accepted_coins(shop.gateway, shop.merchant.merchant_id, ["SOL"])
    chain_shop = ChainShop(driver, shop.client, shop.merchant, shop.gateway, shop.gateway.chains.get("solana"))
    await chain_shop.scan()
    started = []

    async def start():
        started.append(await start_signer(tmp_path, db_url, socket, key_file, {"solana": settings},
                                          blocked=("lightning", "devnet"), extra=SIGNER_POLICY))

    try:
        yield chain_shop, start
    finally:
        for signer in started:
            await stop_signer(signer)
        shutil.rmtree(short, ignore_errors=True)


async def payout(shop: ChainShop, address: str, amount: str) -> str:
    status, body = await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                             json={"currency": "SOL", "address": address, "amount": amount})
    assert status == 200, body
    return body["data"]["track_id"]


async def test_a_seedless_serve_takes_addresses_from_the_signers_pool_and_the_signer_sweeps_and_pays(seedless):
    shop, start_the_signer = seedless
    gw, node = shop.gateway, shop.driver.node
    assert gw.secrets.seed_material == ""
    served = [job.name for job in JobScheduler(gw).jobs()]
    assert "solana.sweep" in gw.jobs.names() and "solana.address_pool" in gw.jobs.names()
    assert "solana.sweep" not in served and "solana.address_pool" not in served  # they sign: the signer's

    # Before the signer derived any: a clear 503, counted, never a 500.
    status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                             json={"currency": "SOL", "amount": "1"})
    assert status == 503 and body["error"]["code"] == "address_pool_empty", body
    assert gw.metrics.deposit_addresses_unavailable.labels("solana", "pool_empty")._value.get() == 1

    await start_the_signer()
    merchant = await gw.db.fetch_one("SELECT key_account FROM merchants WHERE id = :m",
                                     {"m": shop.merchant.merchant_id})

    async def pool_full():
        free = await gw.db.fetch_val("SELECT COUNT(*) FROM solana_address_pool WHERE claimed_at IS NULL")
        return int(free) == POOL

    await until(pool_full, node, "the signer fills the pool")
    payment, net = await shop.paid_deposit()
    key = await gw.db.fetch_one("SELECT key_index FROM deposit_addresses WHERE address = :a",
                                {"a": payment["address"]})
    assert payment["address"] == seed_address(int(merchant["key_account"]), int(key["key_index"]))
    await until(pool_full, node, "the signer tops the pool up again")

    # The signer's sweep job moves the deposit to the hot wallet (account 0, index 0 of the seed).
    hot = seed_address(0, 0)

    async def swept():
        return await gw.db.fetch_val("SELECT COUNT(*) FROM solana_txs WHERE kind = 'sweep' AND status = 'landed'"
                                     " AND sender = :a", {"a": payment["address"]})

    await until(swept, node, "the deposit swept")
    assert node.balance(payment["address"]) == 0 and node.balance(hot) > 0
    # The seedless serve's custody check sees the hot wallet the signer published (it cannot derive it).
    held = {h.place: h.amount for h in await shop.adapter.custody_holdings([])}
    assert held["hot_wallet"] == node.balance(hot), held
    assert await balance(gw.db, "world:solana:hot_wallet", "SOL") == 0  # recorded by the signer, not booked
    assert await book_sweeps(gw) == 2 and await book_sweeps(gw) == 0  # the move and its fee, once
    assert await balance(gw.db, "world:solana:hot_wallet", "SOL") == node.balance(hot)

    # Recent fees above the ceiling: the signer signs nothing and the payout waits queued (never backs off).
    node.airdrop(hot, 10**9)
    destination = str(Keypair().pubkey())
    paid = await payout(shop, destination, "0.3")
    node.market(hot, 50_000)
    await shop.work_payouts()
    waiting = await shop.payout_row(paid)
    assert (waiting["stage"], waiting["attempts"], waiting["tx_hash"]) == ("queued", 0, None), dict(waiting)
    assert waiting["last_error"] == f"waiting: fee 50000 micro-lamports/CU above the ceiling {CEILING}"
    node.market(hot, 0)
    await shop.work_payouts(FEE_RECHECK_SECONDS)

    # A payout signed by the signer; its cap and its reservation check hold the others.
    over = await payout(shop, destination, "0.6")
    await gw.db.execute(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
        " next_attempt_at, created_at, updated_at) VALUES ('po_forged', 'forged', :m, 'SOL', 'solana', :d, :a,"
        " 'Confirming', 'queued', :now, :now, :now)",
        {"m": shop.merchant.merchant_id, "d": destination, "a": gw.db.amount_param(10**8), "now": gw.now()})
    await shop.work_payouts()
    final = await shop.confirm_payout(paid)
    assert final["status"] == "Confirmed", dict(final)
    assert node.balance(destination) == 3 * 10**8
    held = {t: dict(await shop.payout_row(t)) for t in (over, "forged")}
    assert (held[over]["stage"], held[over]["policy_hold"], held[over]["tx_hash"]) == (
        "policy_held", "over_payout_cap", None), held[over]
    assert (held["forged"]["stage"], held["forged"]["policy_hold"], held["forged"]["tx_hash"]) == (
        "policy_held", "no_reservation", None), held["forged"]
