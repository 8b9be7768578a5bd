"""Sweeping Tron deposit addresses into the hot wallet, with exact TRX funding of token sweeps."""

from __future__ import annotations

import pytest

from orbchain.chains.tron.keys import hot_wallet_address
from orbchain.chains.tron.sweeper import deposit_addresses_account, hot_wallet_account
from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import NETWORK_FEES, merchant_available

from .tron_node import ENERGY_NEW_HOLDER, PARAMETERS
from .tron_support import TronShop, open_tron_shop, tron_node  # noqa: F401 - fixtures

THRESHOLD = 19


@pytest.fixture
async def shop(tron_node, make_config, make_client) -> TronShop:  # noqa: F811 - the fixture
    return await open_tron_shop(tron_node, make_config, make_client, payout_confirmations=1)


async def _credited(shop: TronShop, coin: str, units: int) -> str:
    payment = await shop.payment(coin, str(units / 10**6))
    if coin == "TRX":
        shop.node.pay_trx(payment["address"], units)
    else:
        shop.node.pay_token(shop.online.usdt, payment["address"], units)
    await shop.mine(THRESHOLD)
    assert (await shop.view(payment["track_id"]))["status"] == "Paid"
    return payment["address"]


async def _txs(shop: TronShop) -> dict[str, dict]:
    return {r["kind"]: dict(r) for r in await shop.gateway.db.fetch_all("SELECT * FROM tron_txs")}


async def test_token_sweep_from_a_fresh_address_gets_exactly_its_fees(shop):
    node = shop.node
    address = await _credited(shop, "USDT_TRC20", 40_000_000)
    assert not node.exists(address)  # tokens never create an account
    hot = hot_wallet_address(shop.gateway)
    node.pay_trx(hot, 100 * 10**6)
    node.mine(1)
    merchant_before = await ledger.balance(shop.gateway.db, merchant_available(shop.merchant.merchant_id),
                                           "USDT_TRC20")

    report = await shop.sweep()  # signs top-up and transfer, sends the top-up
    assert report.started == 1
    txs = await _txs(shop)
    energy_fee = ENERGY_NEW_HOLDER * PARAMETERS["getEnergyFee"]  # the hot wallet holds no USDT yet
    assert int(txs["topup"]["amount"]) == energy_fee  # bandwidth: the new account's free 600 bytes
    assert txs["sweep"]["status"] == "stored"
    node.mine(1)
    await shop.sweep()  # top-up final: the transfer goes out
    node.mine(1)
    assert (await shop.sweep()).finished == 1

    assert node.balance(address) == 0  # every sun sent was burned, none left behind
    assert node.token_balance(shop.online.usdt, address) == 0
    assert node.token_balance(shop.online.usdt, hot) == 40_000_000
    activation = PARAMETERS["getCreateNewAccountFeeInSystemContract"] + PARAMETERS["getCreateAccountFee"]
    assert node.balance(hot) == 100 * 10**6 - energy_fee - activation
    db = shop.gateway.db
    assert await ledger.balance(db, NETWORK_FEES, "TRX") == -(energy_fee + activation)
    booked = await ledger.find_transaction(db, f"tron:tron:activation:{txs['topup']['tx_id']}")
    assert booked is not None and any(p.amount == -activation for p in booked.postings)
    assert await ledger.balance(db, hot_wallet_account("tron"), "USDT_TRC20") == 40_000_000
    assert await ledger.balance(db, deposit_addresses_account("tron"), "USDT_TRC20") == -40_000_000
    assert await ledger.balance(db, merchant_available(shop.merchant.merchant_id), "USDT_TRC20") == merchant_before
    assert (await ledger.check_ledger(db)).ok
    assert (await shop.sweep()).started == 0


async def _sweep_through(shop: TronShop) -> dict[str, dict]:
    """Start a sweep, mine its top-up (if any) and its transfer; that sweep's transactions by kind."""
    db = shop.gateway.db
    before = {r["tx_id"] for r in await db.fetch_all("SELECT tx_id FROM tron_txs")}
    assert (await shop.sweep()).started == 1
    for _ in range(3):
        shop.node.mine(1)
        if (await shop.sweep()).finished:
            return {r["kind"]: dict(r) for r in await db.fetch_all("SELECT * FROM tron_txs")
                    if r["tx_id"] not in before}
    raise AssertionError("the sweep did not finish")


def _receipt(shop: TronShop, tx_id: str) -> dict:
    mined = shop.node.find_mined(tx_id)
    assert mined is not None
    return mined.info["receipt"]


async def test_a_token_sweep_buys_bandwidth_used_up_today_and_not_after_a_day(shop):
    """Free bandwidth regenerates over 24 h: the top-up covers the burn exactly in both cases."""
    node, usdt = shop.node, shop.online.usdt
    node.pay_trx(hot_wallet_address(shop.gateway), 100 * 10**6)
    address = await _credited(shop, "USDT_TRC20", 40_000_000)
    first = (await _sweep_through(shop))["sweep"]
    assert "net_fee" not in _receipt(shop, first["tx_id"])  # the new account's free bandwidth
    energy_fee = _receipt(shop, first["tx_id"])["energy_fee"]

    async def again(units: int) -> tuple[dict, dict]:
        node.pay_token(usdt, address, units)
        await shop.mine(THRESHOLD)
        txs = await _sweep_through(shop)
        assert node.balance(address) == 0 and node.token_balance(usdt, address) == 0  # exact: none left
        return txs, _receipt(shop, txs["sweep"]["tx_id"])

    txs, receipt = await again(5_000_000)  # the same day: 600 - ~345 bytes left, too few
    holder_energy = receipt["energy_fee"]
    assert holder_energy < energy_fee  # the hot wallet holds USDT now: a cheaper transfer
    assert receipt["net_fee"] > 0 and int(txs["topup"]["amount"]) == receipt["net_fee"] + holder_energy

    node.idle(86_400)
    txs, receipt = await again(7_000_000)  # a day later the 600 bytes are back
    assert "net_fee" not in receipt and int(txs["topup"]["amount"]) == receipt["energy_fee"] == holder_energy
    assert node.token_balance(usdt, hot_wallet_address(shop.gateway)) == 52_000_000
    assert (await ledger.check_ledger(shop.gateway.db)).ok


async def test_trx_sweep_moves_the_whole_balance_on_free_bandwidth(shop):
    node = shop.node
    hot = hot_wallet_address(shop.gateway)
    node.pay_trx(hot, 10**6)  # the hot wallet exists: no activation on the way in
    address = await _credited(shop, "TRX", 20_000_000)
    assert (await shop.sweep()).started == 1
    node.mine(1)
    assert (await shop.sweep()).finished == 1
    assert node.balance(address) == 0 and node.balance(hot) == 21_000_000
    assert await ledger.balance(shop.gateway.db, NETWORK_FEES, "TRX") == 0  # free bandwidth: nothing burned
    assert (await ledger.check_ledger(shop.gateway.db)).ok


async def test_a_crash_before_broadcast_resends_the_stored_transaction(shop, monkeypatch):
    node = shop.node
    node.pay_trx(hot_wallet_address(shop.gateway), 10**6)
    await _credited(shop, "TRX", 9_000_000)
    sent = []

    async def lost(tx_id, body):  # the process "dies" before the node hears of it
        sent.append(body)
        raise RuntimeError("crash")

    monkeypatch.setattr(shop.adapter.txs, "broadcast", lost)
    with pytest.raises(RuntimeError):
        await shop.sweep()
    monkeypatch.undo()
    stored = (await _txs(shop))["sweep"]
    assert stored["status"] == "stored" and sent == [stored["body"]] and node.broadcasts == []
    await shop.sweep()  # restart: the same bytes go out
    assert [b["txID"] for b in node.broadcasts] == [stored["tx_id"]]
    node.mine(1)
    await shop.sweep()
    tx = (await _txs(shop))["sweep"]
    assert tx["body"] == stored["body"] and tx["status"] == "mined"


async def test_a_trx_sweep_waits_while_its_burn_is_above_the_set_share_of_the_balance(
        tron_node, make_config, make_client):  # noqa: F811 - the fixture
    shop = await open_tron_shop(tron_node, make_config, make_client, payout_confirmations=1, sweep_max_fee_percent=10)
    node = shop.node
    address = await _credited(shop, "TRX", 2_000_000)
    hot = hot_wallet_address(shop.gateway)
    assert not node.exists(hot)  # the sweep would create it: 1.1 TRX of 2 burned
    for _ in range(2):
        report = await shop.sweep()
        assert (report.started, report.failed) == (0, 0)
    assert await _txs(shop) == {} and node.balance(address) == 2_000_000

    node.pay_trx(hot, 10**6)  # the hot wallet exists now: the sweep burns nothing
    node.mine(1)
    assert (await shop.sweep()).started == 1
    node.mine(1)
    assert (await shop.sweep()).finished == 1
    assert node.balance(address) == 0 and node.balance(hot) == 3_000_000
    assert (await ledger.check_ledger(shop.gateway.db)).ok


def _held(shop: TronShop, reason: str) -> float:
    return shop.gateway.metrics.hot_wallet_spends_held_by_policy.labels(coin="TRX", kind="topup",
                                                                        reason=reason)._value.get()


async def test_a_trx_top_up_is_counted_against_the_signers_caps_and_waits_over_them(shop):
    """The top-up spends the hot wallet's TRX: capped like a TRX payout (value, bandwidth and activation)."""
    from orbchain.core.payouts.signing_gate import POLICY_SERVICE
    from orbchain.core.payouts.signing_policy import CoinLimits, SigningPolicy

    node, db = shop.node, shop.gateway.db
    await _credited(shop, "USDT_TRC20", 40_000_000)
    node.pay_trx(hot_wallet_address(shop.gateway), 100 * 10**6)
    node.mine(1)
    # The operator's [signing] max_per_payout = ["TRX=1"]: the top-up (about 28 TRX) is not signed.
    shop.gateway.services[POLICY_SERVICE] = SigningPolicy({"TRX": CoinLimits(per_payout=10**6)})
    assert (await shop.sweep()).started == 0
    assert await db.fetch_all("SELECT * FROM tron_txs") == [] and await db.fetch_all("SELECT * FROM tron_sweeps") == []
    assert await db.fetch_all("SELECT * FROM hot_wallet_spends") == []
    assert _held(shop, "over_payout_cap") == 1
    assert (await shop.sweep()).started == 0  # still a candidate: asked again at each run
    assert _held(shop, "over_payout_cap") == 2
    # Raised to 100 TRX: the sweep goes, its top-up counted once with all it may take from the hot wallet.
    shop.gateway.services[POLICY_SERVICE] = SigningPolicy({"TRX": CoinLimits(per_payout=100 * 10**6)})
    txs = await _sweep_through(shop)
    (spend,) = await db.fetch_all("SELECT * FROM hot_wallet_spends")
    assert (spend["chain"], spend["coin"], spend["kind"]) == ("tron", "TRX", "topup")
    assert db.to_int(spend["amount"]) == db.to_int(txs["topup"]["amount"]) + db.to_int(txs["topup"]["fee_bound"])
    assert db.to_int(txs["topup"]["fee_bound"]) > 0  # the new account's activation
