"""Tron signed by a separate ``orbchain signer`` (issue 45): a seedless serve (deposit addresses and the hot wallet
from xpubs) pays TRX and a TRC-20 through it on the stand-in node; the signer's own policy holds a payout over its
cap and a forged row; the deposit sweep is left to the signer's scheduler, never run by the seedless serve."""

from __future__ import annotations

import json
import shutil

import pytest

from orbchain.chains.tron.keys import hot_wallet_address
from orbchain.core.accounts.merchants import set_accepted_coins
from orbchain.core.addresses.store import export_account_xpubs
from orbchain.core.keys import SeedKeyStore
from orbchain.scheduler.runner import JobScheduler
from orbchain.testing import open_shop
from tests.families import get_family

from .support import api
from .test_signer_process import JWT, SEED, channel, start_signer, stop_signer
from .tron_support import TronShop, fresh_address, tron_node, tron_settings  # noqa: F401 - fixtures

SIGNER_POLICY = '[signing]\nmax_per_payout = ["TRX=20"]'


async def payout(shop: TronShop, coin: str, address: str, amount: str) -> str:
    status, body = await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                             json={"currency": coin, "address": address, "amount": amount})
    assert status == 200, body
    return body["data"]["track_id"]


async def row(shop: TronShop, track_id: str) -> dict:
    found = await shop.gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": track_id})
    assert found is not None
    return dict(found)


async def work(shop: TronShop) -> None:
    from orbchain.core.payouts.worker import process_payouts

    later = shop.gateway.now() + 30  # retry and poll times come due
    shop.gateway.clock = lambda: later
    await process_payouts(shop.gateway)


@pytest.fixture
async def remote(tron_node, tmp_path, db_url, make_client, make_config):  # noqa: F811 - tron_node is the fixture
    """A seedless Tron shop (addresses from xpubs, ``[signer] url``) and its signer subprocess on the same node."""
    short, socket, key_file = channel(tmp_path)
    xpubs = tmp_path / "xpubs.json"
    xpubs.write_text(json.dumps(export_account_xpubs(SeedKeyStore.from_secret(SEED, ""), "mainnet", range(0, 4),
                                                     [get_family("tron")])))
    settings = tron_settings(tron_node, payout_confirmations=1)
    shop = await open_shop(make_config, make_client, blocked=("devnet", "lightning"), email="tron@example.com",
                           plugin={"tron": settings},
                           secrets={"account_xpubs_file": str(xpubs), "jwt_secret": JWT},
                           signer={"url": f"unix://{socket}", "key_file": str(key_file)})
    await set_accepted_coins(shop.gateway, shop.merchant.merchant_id, ["TRX", "USDT_TRC20"])
    tron = TronShop(tron_node, shop.client, shop.merchant, shop.gateway, shop.gateway.chains.get("tron"))
    await tron.scan()
    signer = await start_signer(tmp_path, db_url, socket, key_file, {"tron": settings},
                                blocked=("lightning", "devnet"), extra=SIGNER_POLICY)
    try:
        yield tron
    finally:
        await stop_signer(signer)
        shutil.rmtree(short, ignore_errors=True)


async def test_a_seedless_serve_pays_trx_and_a_token_through_the_signer_under_its_policy(remote):
    shop = remote
    gw = shop.gateway
    assert gw.secrets.seed_material == ""  # this "serve" holds no key
    hot = hot_wallet_address(gw)  # from the account-0 xpub
    assert hot == get_family("tron").derive(SeedKeyStore.from_secret(SEED, ""), 0, 0).address
    served = [job.name for job in JobScheduler(gw).jobs()]
    assert "tron.sweep" in gw.jobs.names() and "tron.sweep" not in served  # it signs: the signer runs it

    # The merchant is credited through addresses the seedless serve derived from its xpub.
    for coin, send in (("TRX", shop.node.pay_trx), ("USDT_TRC20", None)):
        payment = await shop.payment(coin, "50")
        if send is not None:
            send(payment["address"], 50_000_000)
        else:
            shop.node.pay_token(shop.online.usdt, payment["address"], 50_000_000)
        await shop.mine(19)
        assert (await shop.view(payment["track_id"]))["status"] == "Paid"
    shop.node.pay_trx(hot, 200 * 10**6)
    shop.node.pay_token(shop.online.usdt, hot, 50_000_000)
    shop.node.mine(1)

    trx_to, token_to = fresh_address(), fresh_address()
    trx = await payout(shop, "TRX", trx_to, "10")
    token = await payout(shop, "USDT_TRC20", token_to, "12.5")
    for _ in range(10):  # signed remotely and broadcast, then mined and confirmed (a bound, not a timing)
        await work(shop)
        shop.node.mine(1)
        if {(await row(shop, t))["status"] for t in (trx, token)} == {"Confirmed"}:
            break
    assert (await row(shop, trx))["status"] == "Confirmed", await row(shop, trx)
    assert (await row(shop, token))["status"] == "Confirmed", await row(shop, token)
    assert shop.node.balance(trx_to) == 10_000_000
    assert shop.node.token_balance(shop.online.usdt, token_to) == 12_500_000
    signed = await gw.db.fetch_all("SELECT sender FROM tron_txs WHERE kind = 'payout'")
    assert [r["sender"] for r in signed] == [hot, hot]

    # The signer's own policy: over its cap (its config, not the serve's), and a row with no reservation.
    over = await payout(shop, "TRX", trx_to, "25")
    await gw.db.execute(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
        " next_attempt_at, created_at, updated_at) VALUES ('po_forged', 'forged', :m, 'TRX', 'tron', :d, :a,"
        " 'Confirming', 'queued', :now, :now, :now)",
        {"m": shop.merchant.merchant_id, "d": trx_to, "a": gw.db.amount_param(5_000_000), "now": gw.now()})
    await work(shop)
    held = {t: await row(shop, t) for t in (over, "forged")}
    assert (held[over]["stage"], held[over]["policy_hold"], held[over]["tx_hash"]) == (
        "policy_held", "over_payout_cap", None), held[over]
    assert (held["forged"]["stage"], held["forged"]["policy_hold"], held["forged"]["tx_hash"]) == (
        "policy_held", "no_reservation", None), held["forged"]
    shop.node.mine(1)
    assert shop.node.balance(trx_to) == 10_000_000
