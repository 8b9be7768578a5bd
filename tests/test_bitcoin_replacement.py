"""A stuck bitcoin-family payout bumped by replacement (BIP 125) on a node that takes replacements.

The module runs on the run's second Litecoin Core node, started once with
``-mempoolreplacement=1`` (``tests/litecoind.py`` ``replacing_node``; the session node
refuses replacements, so ``tests/test_bitcoin_bumping.py`` shows the child made instead). The payout is kept out of blocks with
``generateblock`` (empty blocks) and the fee estimate raised through the
adapter's ``fee_estimator`` seam (regtest has no estimates).
"""

from __future__ import annotations

import pytest

from orbchain.chains.bitcoin import wallet
from orbchain.core.ledger.check import check_ledger
from orbchain.core.watching.scanner import scan_chain

from .litecoind import Faucet, external_address, replacing_faucet
from .ltc_payouts_support import LTC, stuck_payout, work
from .support import api

PAYOUT = 30_000_000
RISEN, RISEN_AGAIN = 30_000, 60_000  # sat per 1,000 vB; the payout is signed at the 10 sat/vB fallback


@pytest.fixture(scope="module")
def funds(replacing_node, replacing_coinbases) -> Faucet:
    return replacing_faucet(replacing_node, replacing_coinbases, 5)


def rate(value: int):
    async def estimate() -> int:
        return value
    return estimate


async def empty_blocks(gateway, node, faucet, count: int) -> None:
    for _ in range(count):
        node.call("generateblock", faucet.address, [])
        await work(gateway)


async def stored_versions(gateway, payout):
    return await gateway.db.fetch_all(
        "SELECT * FROM bitcoin_payout_versions WHERE original_tx_hash = :h ORDER BY version", {"h": payout["tx_hash"]})


async def bump_fees(gateway, payout) -> list[int]:
    rows = await gateway.db.fetch_all("SELECT fee FROM payout_fee_bumps WHERE payout_id = :p ORDER BY authorized_at",
                                      {"p": payout["id"]})
    return [gateway.db.to_int(r["fee"]) for r in rows]


async def test_a_stuck_payout_is_replaced_twice_lands_once_and_the_fee_booked_is_the_fee_paid(
        make_client, make_config, funds):
    node = funds.node  # the replacing node
    client, gateway, adapter, merchant, payout = await stuck_payout(make_client, make_config, node, funds,
                                                                    "rbf-shop@example.com")
    original = node.call("getmempoolentry", payout["tx_hash"])
    signed_at = node.height()
    await empty_blocks(gateway, node, funds, 2)  # not stuck long enough yet
    adapter.fee_estimator = rate(RISEN)
    await empty_blocks(gateway, node, funds, 1)
    first = await stored_versions(gateway, payout)
    assert [r["version"] for r in first] == [0, 1] and first[1]["accepted"] == 1
    pool = node.call("getrawmempool")
    assert first[1]["tx_hash"] in pool and payout["tx_hash"] not in pool  # replaced, not doubled
    replaced = node.call("getmempoolentry", first[1]["tx_hash"])
    assert replaced["fees"]["base"] * LTC * 1000 >= RISEN * replaced["vsize"]
    assert node.call("getmempooldescendants", first[1]["tx_hash"]) == []  # no child: a replacement
    assert await bump_fees(gateway, payout) == [int((replaced["fees"]["base"] - original["fees"]["base"]) * LTC)]

    await empty_blocks(gateway, node, funds, 2)  # fees did not rise again: no second bump
    assert len(await stored_versions(gateway, payout)) == 2
    adapter.fee_estimator = rate(RISEN_AGAIN)
    await empty_blocks(gateway, node, funds, 1)  # three blocks after the first replacement, fees rose again
    second = await stored_versions(gateway, payout)
    assert [r["version"] for r in second] == [0, 1, 2]
    assert node.call("getrawmempool") == [second[2]["tx_hash"]]
    mined_entry = node.call("getmempoolentry", second[2]["tx_hash"])
    assert mined_entry["fees"]["base"] * LTC * 1000 >= RISEN_AGAIN * mined_entry["vsize"]
    during = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout["id"]})
    assert during["status"] == "Confirming" and during["tx_hash"] == payout["tx_hash"]

    funds.mine(1)
    await scan_chain(gateway, adapter)
    await work(gateway)
    final = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout["id"]})
    assert final["status"] == "Confirmed"
    assert (final["tx_hash"], final["raw_tx"]) == (second[2]["tx_hash"], second[2]["raw_tx"])  # what was mined
    mined = node.call("getrawtransaction", final["tx_hash"], True, node.call("getbestblockhash"))
    assert [int(o["value"] * LTC) for o in mined["vout"]][0] == PAYOUT  # the recipient's output unchanged
    fee_paid = LTC - sum(int(o["value"] * LTC) for o in mined["vout"])
    booked = await gateway.db.fetch_val(
        "SELECT p.amount FROM ledger_postings p JOIN ledger_transactions t ON t.id = p.transaction_id"
        " WHERE t.reference = :r AND p.account = 'platform:network_fees'", {"r": f"payout:{payout['id']}:network_fee"})
    assert -gateway.db.to_int(booked) == fee_paid == gateway.db.to_int(second[2]["fee"])
    assert sum(await bump_fees(gateway, payout)) == fee_paid - int(original["fees"]["base"] * LTC)  # extras only
    balances = (await api(client, "GET", "/v1/general/account/balance", merchant.general_key))[1]["data"]["balances"]
    assert {b["coin"]: b["amount"] for b in balances} == {"LTC": "0.69"}
    assert (await check_ledger(gateway.db)).ok
    change = [(o.tx_hash, o.amount) for o in await wallet.spendable_outputs(gateway, "litecoin", "regtest")
              if o.change]
    assert change == [(final["tx_hash"], int(mined["vout"][1]["value"] * LTC))]  # the mined version's change
    print(f"\nRBF on litecoind: signed at 10 sat/vB ({int(original['fees']['base'] * LTC)} sat), replaced 3 and 6"
          f" blocks after signing, mined in block {node.height() - signed_at}; fee paid {fee_paid} sat"
          f" ({mined_entry['vsize']} vB)")


async def test_a_bump_over_the_signers_hourly_cap_is_not_signed_and_the_payout_says_why(
        make_client, make_config, funds):
    node = funds.node  # the replacing node
    # Room for the payout (0.3) and 1,000 sat more: the bump adds about 2,800 (141 vB, 10 -> 30 sat/vB).
    _, gateway, adapter, _, payout = await stuck_payout(make_client, make_config, node, funds,
                                                        "rbf-capped@example.com", max_per_hour=["LTC=0.30001"])
    adapter.fee_estimator = rate(RISEN)
    await empty_blocks(gateway, node, funds, 3)
    assert await stored_versions(gateway, payout) == []
    assert payout["tx_hash"] in node.call("getrawmempool")  # as it was
    assert await bump_fees(gateway, payout) == []
    row = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout["id"]})
    assert row["status"] == "Confirming" and "over_hourly_cap" in (row["last_error"] or "")
    funds.mine(1)
    await work(gateway)
    final = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout["id"]})
    assert final["status"] == "Confirmed" and final["tx_hash"] == payout["tx_hash"]


async def test_a_stuck_payout_without_change_waits_with_the_reason(make_client, make_config, funds):
    node = funds.node  # the replacing node
    client, gateway, adapter, merchant, first = await stuck_payout(make_client, make_config, node, funds,
                                                                   "rbf-nochange@example.com")
    funds.mine(1)
    await work(gateway)  # the first payout confirmed: the wallet holds its change (0.7 LTC less its fee)
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "LTC", "amount": "1"})
    funds.pay(body["data"]["address"], LTC)
    funds.mine(6)
    await scan_chain(gateway, adapter)
    # 1 LTC less the fee of a one-in, one-out transaction (110 vB at 10 sat/vB) and 100 sat: no change output.
    status, body = await api(client, "POST", "/v1/payout", merchant.payout_key,
                             json={"currency": "LTC", "address": external_address(6), "amount": "0.999988"})
    assert status == 200, body
    await work(gateway)
    payout = await gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": body["data"]["track_id"]})
    assert payout["stage"] == "broadcast", payout["last_error"]
    assert len(node.call("getrawtransaction", payout["tx_hash"], True)["vout"]) == 1
    adapter.fee_estimator = rate(RISEN)
    await empty_blocks(gateway, node, funds, 3)
    row = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout["id"]})
    assert row["status"] == "Confirming" and "no change output" in row["last_error"]
    assert node.call("getrawmempool") == [payout["tx_hash"]] and await stored_versions(gateway, payout) == []
    funds.mine(1)
    await work(gateway)
    final = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout["id"]})
    assert final["status"] == "Confirmed" and final["last_error"] is None
