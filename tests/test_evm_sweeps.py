"""Sweeping deposit addresses into the hot wallet, against a real anvil node."""

from __future__ import annotations

import pytest

from orbchain.chains.evm.keys import hot_wallet_address
from orbchain.chains.evm.sweeper import deposit_addresses_account, hot_wallet_account
from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import NETWORK_FEES, merchant_available, world

from .anvil import EvmShop, anvil, credited_deposit, open_shop  # noqa: F401 - anvil is a fixture


@pytest.fixture
async def shop(anvil, make_client, make_config) -> EvmShop:  # noqa: F811 - anvil is the fixture
    return await open_shop(anvil, make_client, make_config)


async def _txs(shop: EvmShop) -> list[dict]:
    return await shop.gateway.db.fetch_all("SELECT * FROM evm_txs ORDER BY created_at, nonce")


async def test_native_sweep_moves_the_balance_minus_gas(shop):
    address = await credited_deposit(shop, "ETH", "0.5", 5 * 10**17)
    hot = hot_wallet_address(shop.gateway)
    merchant_before = await ledger.balance(shop.gateway.db, merchant_available(shop.merchant.merchant_id), "ETH")
    report = await shop.sweep()  # signs, stores, broadcasts (anvil mines at once)
    assert report.started == 1
    report = await shop.sweep()
    assert report.finished == 1
    (tx,) = await _txs(shop)
    assert tx["kind"] == "sweep" and tx["status"] == "mined" and tx["sender"] == address and tx["recipient"] == hot
    swept = int(tx["amount"])
    assert shop.node.balance(hot) == swept
    fee = int(tx["fee_paid"])
    assert 0 < fee <= int(tx["gas_limit"]) * int(tx["max_fee_per_gas"])
    assert shop.node.balance(address) == 5 * 10**17 - swept - fee  # the unused part of the gas bound
    db = shop.gateway.db
    assert await ledger.balance(db, hot_wallet_account("ethereum"), "ETH") == swept
    assert await ledger.balance(db, deposit_addresses_account("ethereum"), "ETH") == -swept
    assert await ledger.balance(db, NETWORK_FEES, "ETH") == -fee
    assert await ledger.balance(db, merchant_available(shop.merchant.merchant_id), "ETH") == merchant_before
    assert (await ledger.check_ledger(db)).ok
    # Nothing new arrived: the next run starts nothing.
    assert (await shop.sweep()).started == 0


async def test_token_sweep_tops_up_gas_first(shop):
    address = await credited_deposit(shop, "USDT_ERC20", "40", 40 * 10**6)
    hot = hot_wallet_address(shop.gateway)
    shop.node.set_balance(hot, 10**18)
    assert shop.node.balance(address) == 0
    report = await shop.sweep()
    assert report.started == 1
    by_kind = {tx["kind"]: tx for tx in await _txs(shop)}
    topup, transfer = by_kind["topup"], by_kind["sweep"]
    assert topup["kind"] == "topup" and topup["sender"] == hot and topup["recipient"] == address
    assert transfer["kind"] == "sweep" and transfer["sender"] == address and transfer["status"] == "stored"
    # The top-up covers exactly the token transfer's gas bound.
    assert int(topup["amount"]) == int(transfer["gas_limit"]) * int(transfer["max_fee_per_gas"])
    await shop.sweep()  # top-up mined -> token transfer sent
    report = await shop.sweep()
    assert report.finished == 1
    assert shop.token_balance(hot) == 40 * 10**6 and shop.token_balance(address) == 0
    db = shop.gateway.db
    assert await ledger.balance(db, hot_wallet_account("ethereum"), "USDT_ERC20") == 40 * 10**6
    fees = await ledger.balance(db, NETWORK_FEES, "ETH")
    assert fees < 0 and await ledger.balance(db, world("ethereum"), "ETH") == -fees
    assert (await ledger.check_ledger(db)).ok
    sweeps = await db.fetch_all("SELECT status FROM evm_sweeps")
    assert [s["status"] for s in sweeps] == ["done"]


async def test_a_crash_after_signing_resends_the_same_bytes(shop, monkeypatch):
    await credited_deposit(shop, "ETH", "0.25", 25 * 10**16)
    sent = []

    async def lost_broadcast(tx_hash, raw):  # the process "dies" before the node hears of it
        sent.append(raw)
        raise RuntimeError("crash")

    monkeypatch.setattr(shop.adapter.txs, "broadcast", lost_broadcast)
    with pytest.raises(RuntimeError):
        await shop.sweep()
    monkeypatch.undo()
    (stored,) = await _txs(shop)
    assert stored["status"] == "stored" and sent == [stored["raw"]]
    await shop.sweep()  # restart: the stored bytes go out
    await shop.sweep()
    (tx,) = await _txs(shop)
    assert tx["raw"] == stored["raw"] and tx["nonce"] == stored["nonce"] and tx["status"] == "mined"


async def test_a_native_sweep_waits_while_its_gas_is_above_the_set_share_of_the_amount(
        anvil, make_client, make_config):  # noqa: F811 - anvil is the fixture
    shop = await open_shop(anvil, make_client, make_config, sweep_max_fee_percent=1)
    address = await credited_deposit(shop, "ETH", "0.1", 10**17)
    shop.node.rpc("anvil_setNextBlockBaseFeePerGas", hex(200 * 10**9))  # gas bound ~0.0074 ETH: 7 % of it
    shop.node.mine(1)
    for _ in range(2):  # each run looks again; nothing is signed or marked meanwhile
        report = await shop.sweep()
        assert (report.started, report.failed) == (0, 0)
    assert await _txs(shop) == []
    assert await shop.gateway.db.fetch_val("SELECT COUNT(*) FROM evm_sweep_marks") == 0
    assert shop.node.balance(address) == 10**17

    shop.node.rpc("anvil_setNextBlockBaseFeePerGas", hex(10**9))  # fees fall: 1 gwei
    shop.node.mine(1)
    assert (await shop.sweep()).started == 1
    assert (await shop.sweep()).finished == 1
    (tx,) = await _txs(shop)
    assert tx["kind"] == "sweep" and tx["status"] == "mined" and tx["sender"] == address
    assert shop.node.balance(hot_wallet_address(shop.gateway)) == int(tx["amount"])
    assert (await ledger.check_ledger(shop.gateway.db)).ok


def _held(shop: EvmShop, kind: str, reason: str) -> float:
    return shop.gateway.metrics.hot_wallet_spends_held_by_policy.labels(coin="ETH", kind=kind,
                                                                        reason=reason)._value.get()


async def test_gas_top_ups_are_counted_against_the_signers_eth_caps_and_wait_over_them(shop):
    """A top-up spends the hot wallet's ETH like a payout: counted in ETH's windows, and over a cap not signed."""
    from orbchain.core.payouts.signing_gate import POLICY_SERVICE
    from orbchain.core.payouts.signing_policy import CoinLimits, SigningPolicy

    db = shop.gateway.db
    shop.node.set_balance(hot_wallet_address(shop.gateway), 10**18)
    await credited_deposit(shop, "USDT_ERC20", "40", 40 * 10**6)
    assert (await shop.sweep()).started == 1
    (spend,) = await db.fetch_all("SELECT * FROM hot_wallet_spends")
    topup = await db.fetch_one("SELECT * FROM evm_txs WHERE kind = 'topup'")
    # Counted in ETH: the gas sent and the top-up's own gas bound, all it may take from the hot wallet.
    assert (spend["chain"], spend["coin"], spend["kind"]) == ("ethereum", "ETH", "topup")
    counted = db.to_int(spend["amount"])
    assert counted == db.to_int(topup["amount"]) + int(topup["gas_limit"]) * db.to_int(topup["max_fee_per_gas"])
    await shop.sweep()
    assert (await shop.sweep()).finished == 1

    # The operator's ETH hourly cap has no room left: the next token sweep's top-up waits, nothing signed.
    shop.gateway.services[POLICY_SERVICE] = SigningPolicy({"ETH": CoinLimits(per_hour=counted + 1)})
    second = await credited_deposit(shop, "USDT_ERC20", "30", 30 * 10**6)
    await shop.sweep()  # (the first address's left-over gas may be swept: native, no top-up)
    assert _held(shop, "topup", "over_hourly_cap") == 1
    assert await db.fetch_all("SELECT * FROM evm_sweeps WHERE address = :a", {"a": second}) == []
    assert len(await db.fetch_all("SELECT * FROM evm_txs WHERE kind = 'topup'")) == 1
    assert len(await db.fetch_all("SELECT * FROM hot_wallet_spends")) == 1
    assert shop.node.balance(second) == 0
    # An hour later the first top-up has left the window: the sweep goes and is counted.
    later = shop.gateway.now() + 3601
    shop.gateway.clock = lambda: later
    await shop.sweep()
    await shop.sweep()
    await shop.sweep()
    (swept,) = await db.fetch_all("SELECT * FROM evm_sweeps WHERE address = :a", {"a": second})
    assert swept["status"] == "done" and shop.token_balance(second) == 0
    assert len(await db.fetch_all("SELECT * FROM hot_wallet_spends")) == 2
    assert _held(shop, "topup", "over_hourly_cap") == 1
