"""Deposit outputs consolidated into the hot wallet under a fee bound, on a real Litecoin Core node (issue 45 item 3).

Twenty deposits of 0.05 LTC and one of 0.0001 LTC, consolidation at 20
outputs and 1 % of what moves. At 1,000 sat/vB spending an input (68 vB)
costs 1.36 % of a deposit: nothing moves. At 200 sat/vB the twenty go in one
transaction stored before its broadcast (a failed broadcast sends the same
bytes again), the 0.0001 LTC deposit (worth less than its 13,600 sat input)
is left and reported as dust; once confirmed the move and the fee paid are
recorded by the signing job and booked once by serve (``ledger.book_sweeps``:
the signer writes no ledger), the custody check showing zero difference in
between; the ledger check is clean and the custody check shows zero
difference, the consolidated output in the hot wallet, spent by the next
payout. Regtest has no fee estimates: the rate comes through the adapter's
estimator seam.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from orbchain.chains.bitcoin import wallet
from orbchain.chains.bitcoin.consolidation import consolidate
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.custody.report import OK
from orbchain.core.custody.run import run_custody_check
from orbchain.core.ledger.accounts import NETWORK_FEES
from orbchain.core.ledger.check import check_ledger
from orbchain.core.ledger.sweep_bookings import book_sweeps
from orbchain.core.types.chains import ChainUnavailable, CustodyPlace
from orbchain.web.keys import GATEWAY

from .litecoind import external_address, faucet, litecoind_node  # noqa: F401 - session fixtures
from .support import signup
from .test_bitcoin_litecoind import Shop, create_payout, custody_difference, payout_row, work

LTC = 100_000_000
SMALL, DEPOSITS = 5_000_000, 20
DUST = 10_000  # 0.0001 LTC, the coin's floor: below a p2wpkh input's 68 vB x 200 sat/vB


def rate(sat_per_vbyte: int):
    async def estimator() -> int:
        return sat_per_vbyte * 1000
    return estimator


async def test_twenty_small_deposits_are_consolidated_in_one_transaction_dust_left_books_clean(
        make_client, make_config, litecoind_node, faucet, monkeypatch):  # noqa: F811 - the fixtures
    node = litecoind_node
    block = node.plugin_block(consolidate_min_outputs=DEPOSITS, consolidate_max_fee_percent=1,
                              fee_ceiling_sat_per_vbyte=2_000)
    client = await make_client(make_config(scheduler={"enabled": False}, plugin={"bitcoin": {"LTC": block}}),
                               get_plugin_manager(blocked=["devnet"]))
    shop = Shop(client, await signup(client, "consolidating-shop@example.com"), None, faucet)
    gateway, adapter = client.app[GATEWAY], shop.adapter
    assert "bitcoin.litecoin.consolidate" in gateway.jobs  # signs: run where the keys are
    await shop.scan()
    payments = []
    for n, amount in enumerate([SMALL] * DEPOSITS + [DUST]):
        payment = await shop.payment(str(Decimal(amount) / LTC))
        faucet.pay(payment["address"], amount)
        payments.append(payment)
        if n % 10 == 9:
            faucet.mine(1)  # the faucet chains its change: stay far below the mempool's ancestor limit
    await shop.mine(6)
    assert {(await shop.status(p["track_id"]))["status"] for p in payments} == {"Paid"}
    assert await custody_difference(shop) == 0

    adapter.fee_estimator = rate(1_000)  # an input costs 68,000 sat: 1.36 % of 0.05 LTC
    tick = await consolidate(adapter)
    assert (tick.consolidation, tick.dust_outputs, tick.dust_units) == (None, 1, DUST)
    assert "0 deposit output(s) worth consolidating at 1000 sat/vB, fewer than 20" == tick.waiting
    assert await gateway.db.fetch_all("SELECT * FROM bitcoin_consolidations") == []

    adapter.fee_estimator = rate(200)  # 13,600 sat per input: 0.27 %; the 10,000 sat deposit is dust

    async def node_away(signed) -> None:
        raise ChainUnavailable("node away")

    monkeypatch.setattr(adapter, "broadcast", node_away)
    with pytest.raises(ChainUnavailable):
        await consolidate(adapter)  # signed and stored, never sent
    stored = await gateway.db.fetch_one("SELECT * FROM bitcoin_consolidations")
    assert stored["status"] == "sent" and stored["tx_hash"] not in node.call("getrawmempool")
    monkeypatch.undo()
    assert (await consolidate(adapter)).consolidation == stored["id"]  # the same bytes, not a second signature
    assert stored["tx_hash"] in node.call("getrawmempool")

    tx = node.call("getrawtransaction", stored["tx_hash"], True)
    spent = [int(node.call("gettxout", i["txid"], i["vout"], False)["value"] * LTC) for i in tx["vin"]]  # no txindex
    paid_fee = sum(spent) - int(tx["vout"][0]["value"] * LTC)
    assert (len(tx["vin"]), len(tx["vout"]), spent) == (DEPOSITS, 1, [SMALL] * DEPOSITS)
    assert (int(stored["inputs"]), int(stored["fee"]), int(stored["amount"])) == (DEPOSITS, paid_fee, LTC - paid_fee)
    assert paid_fee * 100 <= LTC * 1  # within the operator's share of what moved
    assert tx["vsize"] * 200 <= paid_fee < (tx["vsize"] + 5) * 200  # the estimate bounds the size from above
    assert await custody_difference(shop) == 0  # in flight: its inputs at their booked value
    print(f"consolidation: {DEPOSITS} inputs, {tx['vsize']} vB, fee {paid_fee} sat at 200 sat/vB"
          f" ({paid_fee * 10_000 // LTC / 100} % of {LTC} sat)")

    faucet.mine(1)
    assert (await consolidate(adapter)).consolidation == stored["id"]
    row = await gateway.db.fetch_one("SELECT * FROM bitcoin_consolidations")
    assert row["status"] == "done"
    reference = f"consolidation:{row['id']}"
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM ledger_transactions WHERE reference = :r",
                                      {"r": reference}) == 0  # recorded, not booked: the signer writes no ledger
    recorded = await gateway.db.fetch_one("SELECT chain, kind, booked_at FROM sweep_bookings WHERE reference = :r",
                                          {"r": reference})
    assert (recorded["chain"], recorded["kind"], recorded["booked_at"]) == ("litecoin", "consolidation", None)
    assert await custody_difference(shop) == 0  # ... and counted by the custody check meanwhile
    assert await book_sweeps(gateway) == 1 and await book_sweeps(gateway) == 0  # serve books it, once
    postings = await gateway.db.fetch_all(
        "SELECT p.account, p.amount FROM ledger_postings p JOIN ledger_transactions t ON t.id = p.transaction_id"
        " WHERE t.reference = :r", {"r": reference})
    assert sorted((p["account"], int(p["amount"])) for p in postings) == sorted([
        ("world:litecoin:deposit_addresses", -(LTC - paid_fee)), ("world:litecoin:hot_wallet", LTC - paid_fee),
        (NETWORK_FEES, -paid_fee), ("world:litecoin", paid_fee)])  # the booked fee is the fee paid

    assert (await check_ledger(gateway.db)).ok
    report = await run_custody_check(gateway, "test")
    ltc = report.by_coin()["LTC"]
    assert ltc.status == OK and ltc.difference == 0 and ltc.books_difference == 0 and report.ok
    places = {h.place: (h.amount, h.count) for h in ltc.holdings}
    assert places[CustodyPlace.HOT_WALLET] == (LTC - paid_fee, 1)
    assert places[CustodyPlace.DUST] == (DUST, 1)  # left where it is, and reported
    assert places[CustodyPlace.DEPOSIT_ADDRESSES] == (0, 0)
    again = await consolidate(adapter)
    assert (again.consolidation, again.dust_outputs) == (None, 1)  # nothing left worth moving

    payout = await create_payout(shop, "0.5", external_address(2))  # the hot wallet's one output pays it
    await work(shop)
    sent = await payout_row(shop, payout["track_id"])
    assert sent["stage"] == "broadcast"
    payout_tx = node.call("getrawtransaction", sent["tx_hash"], True)
    assert [(i["txid"], i["vout"]) for i in payout_tx["vin"]] == [(stored["tx_hash"], 0)]
    print(f"the next 0.5 LTC payout: 1 input, {payout_tx['vsize']} vB (ten 0.05 LTC deposits would be 10 inputs)")
    faucet.mine(1)
    await work(shop, 10)
    assert (await payout_row(shop, payout["track_id"]))["status"] == "Confirmed"
    assert await custody_difference(shop) == 0
    assert sum(o.amount for o in await wallet.spendable_outputs(gateway, "litecoin", "regtest")) > 0
