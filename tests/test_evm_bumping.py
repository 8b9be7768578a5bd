"""A stuck EVM payout or gas top-up is re-signed at its own nonce with higher fees (issue 46 item 2), on anvil.

Anvil mines only when told (automine off, as ``--no-mining``). The next
base fee is raised above the payout's maxFee (``anvil_setNextBlockBaseFeePerGas``)
so it sits in the pool while blocks go by; the worker then replaces it with
a version at the same nonce. Exactly one transfer goes out, the payout shows
and books the mined version, and the hot wallet's next nonce is mined after
it. Above the operator's fee ceiling the bump waits, with the reason on the
payout.
"""

from __future__ import annotations

import pytest
from eth_account import Account

from orbchain.chains.evm.keys import hot_wallet_address
from orbchain.core.ledger import book as ledger

from .anvil import EvmShop, anvil, credited_deposit, open_shop  # noqa: F401 - anvil is a fixture
from .support import api

GWEI = 10**9
BUMP_AFTER = 2


async def work(shop: EvmShop) -> None:
    """One worker tick, the clock past every payout's next poll."""
    from orbchain.core.payouts.worker import process_payouts

    later = shop.gateway.now() + 5
    shop.gateway.clock = lambda: later
    await process_payouts(shop.gateway)


async def payout(shop: EvmShop, coin: str, destination: str, amount: str) -> str:
    status, body = await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                             json={"currency": coin, "address": destination, "amount": amount})
    assert status == 200, body
    return body["data"]["track_id"]


async def row_of(shop: EvmShop, track_id: str):
    return await shop.gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": track_id})


async def versions(shop: EvmShop, payout_id: str) -> list[str]:
    first = await shop.gateway.db.fetch_one("SELECT * FROM evm_txs WHERE kind = 'payout' AND ref = :r",
                                            {"r": payout_id})
    more = await shop.gateway.db.fetch_all("SELECT tx_hash FROM evm_tx_versions WHERE tx_id = :id ORDER BY version",
                                           {"id": first["id"]})
    return [first["tx_hash"], *(r["tx_hash"] for r in more)]


def signed(shop: EvmShop, tx_hash: str) -> dict:
    return shop.node.rpc("eth_getTransactionByHash", tx_hash)


def received(shop: EvmShop, coin: str, destination: str) -> int:
    return shop.node.balance(destination) if coin == "ETH" else shop.token_balance(destination)


def fee_paid(shop: EvmShop, tx_hash: str) -> int:
    receipt = shop.node.receipt(tx_hash)
    return int(receipt["gasUsed"], 16) * int(receipt["effectiveGasPrice"], 16)


async def booked_fee(shop: EvmShop, payout_id: str) -> int:
    booked = await shop.gateway.db.fetch_val(
        "SELECT p.amount FROM ledger_postings p JOIN ledger_transactions t ON t.id = p.transaction_id"
        " WHERE t.reference = :r AND p.account = 'platform:network_fees'", {"r": f"payout:{payout_id}:network_fee"})
    return -shop.gateway.db.to_int(booked)


async def bumps_counted(shop: EvmShop, payout_id: str) -> list[tuple[str, int]]:
    rows = await shop.gateway.db.fetch_all("SELECT coin, fee FROM payout_fee_bumps WHERE payout_id = :p",
                                           {"p": payout_id})
    return [(r["coin"], shop.gateway.db.to_int(r["fee"])) for r in rows]


async def funded_shop(anvil, make_client, make_config, coin: str, **settings) -> EvmShop:  # noqa: F811
    shop = await open_shop(anvil, make_client, make_config, bump_after_blocks=BUMP_AFTER,
                           priority_fee_wei=GWEI, **settings)
    hot = hot_wallet_address(shop.gateway)
    if coin == "ETH":
        await credited_deposit(shop, "ETH", "1", 10**18)
    else:
        await credited_deposit(shop, "USDT_ERC20", "50", 50 * 10**6)
        shop.mint(hot, 50 * 10**6)
    shop.node.set_balance(hot, 2 * 10**18)
    shop.node.set_automine(False)
    return shop


@pytest.fixture
def no_mining(anvil):  # noqa: F811 - anvil is the fixture
    yield anvil
    anvil.set_automine(True)
    anvil.rpc("anvil_dropAllTransactions")  # nothing left in the pool for the next test


@pytest.mark.parametrize(("coin", "amount", "units"), [("ETH", "0.3", 3 * 10**17), ("USDT_ERC20", "12.5", 12_500_000)])
async def test_a_payout_priced_out_by_the_base_fee_is_replaced_at_its_nonce_and_lands_once(
        no_mining, make_client, make_config, coin, amount, units):
    shop = await funded_shop(no_mining, make_client, make_config, coin)
    destination = Account.create().address
    track_id = await payout(shop, coin, destination, amount)
    await work(shop)
    row = await row_of(shop, track_id)
    assert row["stage"] == "broadcast", row["last_error"]
    first = signed(shop, row["tx_hash"])
    max_fee, tip = int(first["maxFeePerGas"], 16), int(first["maxPriorityFeePerGas"], 16)

    # A fee spike: the next blocks ask four times the payout's maxFee, so they are mined without it.
    shop.node.rpc("anvil_setNextBlockBaseFeePerGas", hex(4 * max_fee))
    shop.node.rpc("evm_mine")
    await work(shop)
    assert await versions(shop, row["id"]) == [row["tx_hash"]]  # not stuck long enough yet: nothing re-signed
    shop.node.rpc("evm_mine")
    await work(shop)  # BUMP_AFTER blocks, still priced out: re-signed at the same nonce
    hashes = await versions(shop, row["id"])
    assert len(hashes) == 2, hashes
    second = signed(shop, hashes[1])
    assert second["nonce"] == first["nonce"] and second["to"] == first["to"] and second["input"] == first["input"]
    assert second["value"] == first["value"] and second["gas"] == first["gas"]
    assert int(second["maxPriorityFeePerGas"], 16) >= tip + tip // 10 + 1  # geth's replacement minimum, both fees
    assert int(second["maxFeePerGas"], 16) >= max_fee + max_fee // 10 + 1
    next_base = int(shop.node.rpc("eth_feeHistory", "0x1", "latest", [])["baseFeePerGas"][-1], 16)
    assert int(second["maxFeePerGas"], 16) >= next_base + int(second["maxPriorityFeePerGas"], 16)
    assert (await row_of(shop, track_id))["last_error"] is None
    # Counted against the signer's caps in the coin gas is paid in, by what it may cost more: gas x the maxFee rise.
    assert await bumps_counted(shop, row["id"]) == [("ETH", int(first["gas"], 16) * (
        int(second["maxFeePerGas"], 16) - max_fee))]

    hot = hot_wallet_address(shop.gateway)
    before = shop.node.balance(hot)
    shop.node.rpc("evm_mine")
    await work(shop)
    final = await row_of(shop, track_id)
    assert (final["status"], final["tx_hash"]) == ("Confirmed", hashes[1]), final
    assert shop.node.receipt(hashes[0]) is None
    assert received(shop, coin, destination) == units  # exactly one transfer went out
    fee = fee_paid(shop, hashes[1])
    assert await booked_fee(shop, row["id"]) == fee  # the mined version's gas used x effective price
    assert before - shop.node.balance(hot) == fee + (units if coin == "ETH" else 0)
    status, view = await api(shop.client, "GET", f"/v1/payout/{track_id}", shop.merchant.payout_key)
    assert status == 200 and view["data"]["tx_hash"] == hashes[1], view

    # The nonce it held is behind us: the next payout is mined at the next one.
    later = await payout(shop, coin, destination, amount)
    await work(shop)
    shop.node.rpc("evm_mine")
    await work(shop)
    done = await row_of(shop, later)
    assert done["status"] == "Confirmed", done
    assert int(signed(shop, done["tx_hash"])["nonce"], 16) == int(first["nonce"], 16) + 1
    assert received(shop, coin, destination) == 2 * units
    assert (await ledger.check_ledger(shop.gateway.db)).ok


async def test_the_fee_ceiling_stops_the_bump_until_the_least_replacement_is_under_it(
        no_mining, make_client, make_config):
    shop = await funded_shop(no_mining, make_client, make_config, "ETH", fee_ceiling_gwei=30)
    shop.node.rpc("anvil_setNextBlockBaseFeePerGas", hex(10 * GWEI))
    shop.node.rpc("evm_mine")  # next base fee 8.75 gwei: the payout signs 2 x 8.75 + 1 = 18.5 gwei
    destination = Account.create().address
    track_id = await payout(shop, "ETH", destination, "0.3")
    await work(shop)
    row = await row_of(shop, track_id)
    assert row["stage"] == "broadcast", row["last_error"]
    assert int(signed(shop, row["tx_hash"])["maxFeePerGas"], 16) == 18_500_000_000

    shop.node.rpc("anvil_setNextBlockBaseFeePerGas", hex(100 * GWEI))  # far above the ceiling of 30
    for _ in range(BUMP_AFTER):
        shop.node.rpc("evm_mine")
    await work(shop)
    waiting = await row_of(shop, track_id)
    assert waiting["status"] == "Confirming" and waiting["stage"] == "broadcast"
    assert waiting["last_error"].startswith("waiting: fee ") and waiting["last_error"].endswith(
        " gwei above the ceiling 30"), waiting["last_error"]
    assert await versions(shop, row["id"]) == [row["tx_hash"]]  # nothing re-signed above the ceiling
    assert shop.node.balance(destination) == 0

    shop.node.rpc("anvil_setNextBlockBaseFeePerGas", hex(25 * GWEI))  # still above its 18.5, the bump fits under 30
    shop.node.rpc("evm_mine")  # next base fee 21.875 gwei
    await work(shop)
    hashes = await versions(shop, row["id"])
    assert len(hashes) == 2, hashes
    assert int(signed(shop, hashes[1])["maxFeePerGas"], 16) == 30 * GWEI  # capped at the ceiling, never above
    assert (await row_of(shop, track_id))["last_error"] is None
    shop.node.rpc("evm_mine")
    await work(shop)
    final = await row_of(shop, track_id)
    assert (final["status"], final["tx_hash"]) == ("Confirmed", hashes[1]), final
    assert shop.node.balance(destination) == 3 * 10**17
    assert await booked_fee(shop, row["id"]) == fee_paid(shop, hashes[1])
    assert (await ledger.check_ledger(shop.gateway.db)).ok


async def test_a_token_payouts_bump_over_the_signers_ether_cap_is_not_signed_and_waits_with_the_cap(
        no_mining, make_client, make_config):
    """The gas of a USDT payout is ETH: its bump counts against ETH's caps (none for USDT here), and over them
    nothing is signed; the payout stays in the mempool as it is, the cap named on it."""
    shop = await funded_shop(no_mining, make_client, make_config, "USDT_ERC20",
                             overrides={"signing": {"max_per_hour": ["ETH=0.00001"]}})
    destination = Account.create().address
    track_id = await payout(shop, "USDT_ERC20", destination, "12.5")
    await work(shop)
    row = await row_of(shop, track_id)
    assert row["stage"] == "broadcast", row["last_error"]
    max_fee = int(signed(shop, row["tx_hash"])["maxFeePerGas"], 16)

    shop.node.rpc("anvil_setNextBlockBaseFeePerGas", hex(4 * max_fee))
    for _ in range(BUMP_AFTER):
        shop.node.rpc("evm_mine")
    await work(shop)
    waiting = await row_of(shop, track_id)
    assert (waiting["status"], waiting["stage"]) == ("Confirming", "broadcast"), dict(waiting)
    assert waiting["last_error"].startswith("stuck in the mempool; a replacement costing up to ")
    assert waiting["last_error"].endswith(" wei more is over the signer's over_hourly_cap"), waiting["last_error"]
    extra = int(waiting["last_error"].split("up to ")[1].split(" wei")[0])
    assert extra > 10**13  # over the 0.00001 ETH an hour
    assert await versions(shop, row["id"]) == [row["tx_hash"]]  # nothing signed
    assert await bumps_counted(shop, row["id"]) == []
    assert shop.token_balance(destination) == 0


async def test_a_gas_top_up_priced_out_is_re_signed_at_its_nonce_and_sent_once(no_mining, make_client, make_config):
    from orbchain.chains.evm.sweeper import sweep_chain
    from orbchain.core.ledger.sweep_bookings import book_sweeps

    shop = await open_shop(no_mining, make_client, make_config, bump_after_blocks=BUMP_AFTER, priority_fee_wei=GWEI)
    address = await credited_deposit(shop, "USDT_ERC20", "50", 50 * 10**6)
    shop.node.set_balance(hot_wallet_address(shop.gateway), 2 * 10**18)
    shop.node.set_automine(False)
    await sweep_chain(shop.gateway, shop.adapter)  # the top-up (hot wallet -> deposit address) signed and sent
    topup = await shop.gateway.db.fetch_one("SELECT * FROM evm_txs WHERE kind = 'topup'")
    assert topup is not None and topup["status"] == "broadcast", topup
    max_fee = shop.gateway.db.to_int(topup["max_fee_per_gas"])

    shop.node.rpc("anvil_setNextBlockBaseFeePerGas", hex(4 * max_fee))
    for _ in range(BUMP_AFTER):
        shop.node.rpc("evm_mine")
    await sweep_chain(shop.gateway, shop.adapter)  # stuck: re-signed at its nonce
    more = await shop.gateway.db.fetch_all("SELECT tx_hash FROM evm_tx_versions WHERE tx_id = :id", {"id": topup["id"]})
    assert len(more) == 1, more
    replacement = more[0]["tx_hash"]
    assert signed(shop, replacement)["nonce"] == hex(int(topup["nonce"]))
    shop.node.rpc("evm_mine")
    await sweep_chain(shop.gateway, shop.adapter)  # mined: recorded with the fee the mined version paid
    await book_sweeps(shop.gateway)  # serve's booking of what the sweep job recorded
    done = await shop.gateway.db.fetch_one("SELECT * FROM evm_txs WHERE id = :id", {"id": topup["id"]})
    assert (done["status"], done["mined_hash"]) == ("mined", replacement)
    assert shop.node.receipt(topup["tx_hash"]) is None
    assert shop.node.balance(address) == shop.gateway.db.to_int(topup["amount"])  # the gas went out once
    booked = await shop.gateway.db.fetch_val(
        "SELECT p.amount FROM ledger_postings p JOIN ledger_transactions t ON t.id = p.transaction_id"
        " WHERE t.reference = :r AND p.account = 'platform:network_fees'", {"r": f"evm:ethereum:gas:{topup['tx_hash']}"})
    assert -shop.gateway.db.to_int(booked) == fee_paid(shop, replacement)
