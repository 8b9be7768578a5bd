"""EVM signed by a separate ``orbchain signer`` (issue 45): a seedless serve pays ETH and an ERC-20 through it on
anvil, the signer's own policy holds a forged row and a payout over its cap, and the deposit sweep (a job that
signs) runs in the signer, never in the seedless serve, which books what the signer recorded of it, once, also
when it restarted in between (the signer's role writes no ledger)."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from eth_account import Account

from orbchain.chains.evm.keys import hot_wallet_address
from orbchain.core.addresses.store import export_account_xpubs
from orbchain.core.keys import SeedKeyStore
from orbchain.core.ledger.book import balance
from orbchain.core.ledger.check import check_ledger
from orbchain.core.ledger.sweep_bookings import book_sweeps
from orbchain.scheduler.runner import JobScheduler
from tests.families import get_family

from .anvil import CHAIN_ID, EvmShop, anvil, credited_deposit, open_shop  # noqa: F401 - anvil is a fixture
from .support import api
from .test_signer_process import JWT, SEED, channel, start_signer, stop_signer
from .test_sweep_bookings import serve_again

SIGNER_POLICY = '[signing]\nmax_per_payout = ["ETH=0.5"]'


async def payout(shop: EvmShop, coin: str, address: str, amount: str) -> str:
    status, body = await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                             json={"currency": coin, "address": address, "amount": amount})
    assert status == 200, body
    return body["data"]["track_id"]


async def row(shop: EvmShop, track_id: str) -> dict:
    found = await shop.gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": track_id})
    assert found is not None
    return dict(found)


@pytest.fixture
async def remote(anvil, tmp_path, db_url, make_client, make_config):  # noqa: F811 - anvil is the fixture
    """A seedless EVM shop (deposit addresses from xpubs) and its signer subprocess on the same database and node."""
    short, socket, key_file = channel(tmp_path)
    xpubs = tmp_path / "xpubs.json"
    store = SeedKeyStore.from_secret(SEED, "")
    xpubs.write_text(json.dumps(export_account_xpubs(store, "mainnet", range(0, 4), [get_family("evm")])))
    shop = await open_shop(anvil, make_client, make_config, sweep_seconds=1, overrides={
        "plugins": {"blocked": ["lightning"]}, "secrets": {"account_xpubs_file": str(xpubs), "jwt_secret": JWT},
        "signer": {"url": f"unix://{socket}", "key_file": str(key_file)}})
    block = {"rpc_url": anvil.url, "chain_id": CHAIN_ID, "start_height": 0, "sweep_seconds": 1,
             "contracts": {"USDT_ERC20": shop.token}}
    signer = await start_signer(tmp_path, db_url, socket, key_file, {"evm.ethereum": block},
                                blocked=("lightning", "devnet"), extra=SIGNER_POLICY)  # it sweeps: serve books
    try:
        yield shop, signer
    finally:
        await stop_signer(signer)
        shutil.rmtree(short, ignore_errors=True)


async def test_a_seedless_serve_pays_eth_and_a_token_through_the_signer_under_its_policy(remote):
    shop, _ = remote
    gw = shop.gateway
    assert gw.secrets.seed_material == ""  # this "serve" holds no key; the hot wallet is derived from the xpub
    hot = hot_wallet_address(gw)
    assert hot == Account.from_key(SeedKeyStore.from_secret(SEED, "").private_key_for(
        get_family("evm"), 0, 0)).address
    await credited_deposit(shop, "ETH", "1", 10**18)
    await credited_deposit(shop, "USDT_ERC20", "50", 50 * 10**6)
    shop.node.set_balance(hot, 5 * 10**18)
    shop.mint(hot, 50 * 10**6)

    eth_to, token_to = Account.create().address, Account.create().address
    eth = await payout(shop, "ETH", eth_to, "0.3")
    token = await payout(shop, "USDT_ERC20", token_to, "12.5")
    for _ in range(10):  # sent, then mined and confirmed; a loaded machine may need another pass (a bound)
        await shop.work_payouts()
        if {(await row(shop, t))["status"] for t in (eth, token)} == {"Confirmed"}:
            break
    assert (await row(shop, eth))["status"] == "Confirmed", await row(shop, eth)
    assert (await row(shop, token))["status"] == "Confirmed", await row(shop, token)
    assert shop.node.balance(eth_to) == 3 * 10**17 and shop.token_balance(token_to) == 12_500_000
    nonces = await gw.db.fetch_all("SELECT nonce FROM evm_txs WHERE kind = 'payout' ORDER BY nonce")
    assert len(nonces) == 2 and len({r["nonce"] for r in nonces}) == 2  # allocated in the shared database

    # The signer's own policy: over its cap (its config, not the serve's), and a row with no reservation.
    over = await payout(shop, "ETH", eth_to, "0.6")
    await gw.db.execute(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
        " next_attempt_at, created_at, updated_at) VALUES ('po_forged', 'forged', :m, 'ETH', 'ethereum', :d, :a,"
        " 'Confirming', 'queued', :now, :now, :now)",
        {"m": shop.merchant.merchant_id, "d": eth_to, "a": gw.db.amount_param(10**17), "now": gw.now()})
    await shop.work_payouts()
    held = {t: await row(shop, t) for t in (over, "forged")}
    assert (held[over]["stage"], held[over]["policy_hold"], held[over]["tx_hash"]) == (
        "policy_held", "over_payout_cap", None), held[over]
    assert (held["forged"]["stage"], held["forged"]["policy_hold"], held["forged"]["tx_hash"]) == (
        "policy_held", "no_reservation", None), held["forged"]
    assert shop.node.balance(eth_to) == 3 * 10**17


async def test_the_deposit_sweep_signs_in_the_signer_not_in_the_seedless_serve(remote):
    shop, _ = remote
    gw = shop.gateway
    served = [job.name for job in JobScheduler(gw).jobs()]
    assert "evm.ethereum.sweep" in gw.jobs.names() and "evm.ethereum.sweep" not in served
    assert "payouts.process" in served
    address = await credited_deposit(shop, "ETH", "1", 10**18)
    hot = hot_wallet_address(gw)
    before = shop.node.balance(hot)
    for _ in range(600):  # the signer's sweep job (every second) moves it; a bound, not a timing assertion
        shop.node.settle()
        done = await gw.db.fetch_one("SELECT status FROM evm_sweeps WHERE address = :a AND status = 'done'",
                                     {"a": address})
        if done is not None:
            break
        await asyncio.sleep(0.1)
    assert shop.node.balance(address) < 10**15 and shop.node.balance(hot) > before + 99 * 10**16
    # The signer recorded the sweep and its gas; the ledger moves when serve books them: a restarted serve, once.
    hot_account = "world:ethereum:hot_wallet"
    swept = int(await gw.db.fetch_val("SELECT amount FROM evm_sweeps WHERE address = :a", {"a": address}))
    assert await balance(gw.db, hot_account, "ETH") == 0
    restarted = await serve_again(gw.config)
    try:
        assert await book_sweeps(restarted) == 2  # the move and its gas
    finally:
        await restarted.db.disconnect()
    assert await book_sweeps(gw) == 0
    assert await balance(gw.db, hot_account, "ETH") == swept
    assert (await check_ledger(gw.db)).ok

    # A token sweep: its gas top-up is counted against the caps by the signer, under its own role on PostgreSQL.
    token_address = await credited_deposit(shop, "USDT_ERC20", "20", 20 * 10**6)
    for _ in range(600):  # a bound, not a timing assertion
        shop.node.settle()
        if await gw.db.fetch_one("SELECT status FROM evm_sweeps WHERE address = :a AND status = 'done'",
                                 {"a": token_address}) is not None:
            break
        await asyncio.sleep(0.1)
    assert shop.token_balance(token_address) == 0
    spends = await gw.db.fetch_all("SELECT coin, kind FROM hot_wallet_spends")
    assert [(r["coin"], r["kind"]) for r in spends] == [("ETH", "topup")]
    assert await book_sweeps(gw) > 0  # the token's move, the top-up and their gas, booked by serve
    assert (await check_ledger(gw.db)).ok


async def test_a_stuck_payout_is_re_signed_at_its_nonce_by_the_signer_from_its_stored_transaction(remote):
    from orbchain.core.payouts.worker import process_payouts

    shop, _ = remote
    gw = shop.gateway
    await credited_deposit(shop, "ETH", "1", 10**18)
    shop.node.set_balance(hot_wallet_address(gw), 5 * 10**18)
    destination = Account.create().address
    track_id = await payout(shop, "ETH", destination, "0.3")
    shop.node.set_automine(False)  # as anvil --no-mining: blocks only when the test mines them
    try:
        async def work() -> None:
            later = gw.now() + 5
            gw.clock = lambda: later
            await process_payouts(gw)

        await work()
        first = await row(shop, track_id)
        assert first["stage"] == "broadcast", first["last_error"]
        max_fee = int(shop.node.rpc("eth_getTransactionByHash", first["tx_hash"])["maxFeePerGas"], 16)
        shop.node.rpc("anvil_setNextBlockBaseFeePerGas", hex(4 * max_fee))  # priced out for the next blocks
        for _ in range(3):  # the default bump_after_blocks of the signer's config
            shop.node.rpc("evm_mine")
        await work()  # the serve asks the signer to bump; the signer re-signs what the database holds
        hashes = [r["tx_hash"] for r in await gw.db.fetch_all(
            "SELECT v.tx_hash FROM evm_tx_versions v JOIN evm_txs t ON t.id = v.tx_id WHERE t.ref = :r",
            {"r": first["id"]})]
        assert len(hashes) == 1, hashes
        shop.node.rpc("evm_mine")
        await work()
        final = await row(shop, track_id)
        assert (final["status"], final["tx_hash"]) == ("Confirmed", hashes[0]), final
        assert shop.node.balance(destination) == 3 * 10**17  # one transfer
        assert shop.node.rpc("eth_getTransactionReceipt", first["tx_hash"]) is None
    finally:
        shop.node.set_automine(True)
        shop.node.rpc("evm_mine")  # what the signer's sweep job sent meanwhile, so the next test finds an empty pool
        shop.node.rpc("anvil_dropAllTransactions")
