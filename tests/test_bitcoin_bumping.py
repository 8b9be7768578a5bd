"""A stuck bitcoin-family payout is bumped by a child paying for it (CPFP), on a real Litecoin Core node.

Litecoin Core refuses replacements by default: the replacement tried first
is refused (``txn-mempool-conflict``) and the child made instead
(``tests/test_bitcoin_replacement.py``: a node that takes replacements). The payout is kept out of blocks with ``generateblock`` (empty
blocks); the fee estimate then rises (through the adapter's ``fee_estimator``:
regtest's ``estimatesmartfee`` has no data). The child lands with its parent once, and the
fee booked is the fee both paid.
"""

from __future__ import annotations

from orbchain.chains.bitcoin import wallet
from orbchain.core.ledger.check import check_ledger
from orbchain.core.watching.scanner import scan_chain

from .litecoind import faucet, litecoind_node  # noqa: F401 - session fixtures
from .ltc_payouts_support import LTC, stuck_payout, work
from .support import api

RISEN_RATE = 30_000  # sat per 1,000 vB: three times the payout's 10 sat/vB


async def test_a_stuck_payout_gets_a_child_that_pays_for_it_and_the_fee_booked_is_the_fee_paid(
        make_client, make_config, litecoind_node, faucet):  # noqa: F811 - the fixtures
    node = litecoind_node
    client, gateway, adapter, merchant, payout = await stuck_payout(make_client, make_config, node, faucet,
                                                                    "bump-shop@example.com", address_index=4)
    parent = node.call("getmempoolentry", payout["tx_hash"])

    for _ in range(2):  # blocks without it: not stuck long enough yet
        node.call("generateblock", faucet.address, [])
        await work(gateway)
    assert node.call("getmempooldescendants", payout["tx_hash"]) == []

    async def risen() -> int:
        return RISEN_RATE

    adapter.fee_estimator = risen  # the adapter's estimator seam (chains/bitcoin/fees.py)
    node.call("generateblock", faucet.address, [])
    await work(gateway)
    children = node.call("getmempooldescendants", payout["tx_hash"])
    assert len(children) == 1  # three blocks stuck and the rate rose: a child pays for it
    bump = await gateway.db.fetch_one("SELECT * FROM bitcoin_payout_bumps WHERE payout_id = :p", {"p": payout["id"]})
    assert bump["tx_hash"] == children[0]
    # A replacement was tried first and refused by this node (no -mempoolreplacement): nothing of it is kept.
    assert adapter.replacement_refused
    assert await gateway.db.fetch_all("SELECT * FROM bitcoin_payout_versions") == []
    counted = await gateway.db.fetch_all("SELECT fee FROM payout_fee_bumps WHERE payout_id = :p", {"p": payout["id"]})
    assert [gateway.db.to_int(r["fee"]) for r in counted] == [gateway.db.to_int(bump["fee"])]  # the child's fee
    child = node.call("getmempoolentry", bump["tx_hash"])
    package_fee = parent["fees"]["base"] + child["fees"]["base"]
    assert package_fee * LTC * 1000 >= RISEN_RATE * (parent["vsize"] + child["vsize"])  # the package pays the rate
    await work(gateway)
    assert node.call("getmempooldescendants", payout["tx_hash"]) == children  # one child, never two

    faucet.mine(1)
    await scan_chain(gateway, adapter)
    await work(gateway)
    final = await gateway.db.fetch_one("SELECT * FROM payouts WHERE id = :id", {"id": payout["id"]})
    assert final["status"] == "Confirmed" and final["tx_hash"] == payout["tx_hash"]
    decoded = node.call("getrawtransaction", bump["tx_hash"], True, node.call("getbestblockhash"))
    fee_paid = LTC - 30_000_000 - int(decoded["vout"][0]["value"] * LTC)
    booked = await gateway.db.fetch_val(
        "SELECT p.amount FROM ledger_postings p JOIN ledger_transactions t ON t.id = p.transaction_id"
        " WHERE t.reference = :r AND p.account = 'platform:network_fees'", {"r": f"payout:{payout['id']}:network_fee"})
    assert -gateway.db.to_int(booked) == fee_paid == int(package_fee * LTC)
    balances = (await api(client, "GET", "/v1/general/account/balance", merchant.general_key))[1]["data"]["balances"]
    assert {b["coin"]: b["amount"] for b in balances} == {"LTC": "0.69"}
    assert (await check_ledger(gateway.db)).ok
    spendable = await wallet.spendable_outputs(gateway, "litecoin", "regtest")
    assert [(o.tx_hash, o.output_index) for o in spendable] == [(bump["tx_hash"], 0)]  # the child's output only
