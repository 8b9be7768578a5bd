"""A payout confirms only on a transaction signed for it (core/payouts/confirm_gate.py), on both databases.

A row written into the database by hand at stage ``broadcast`` that names the
txid of a real, mined payout (or of a payer's deposit) must never become
Confirmed: confirming would book its amount out of payouts in flight, the
money of the other payouts on their way, and send its webhook. It is held
(``tx_not_signed_for_payout``) with its money untouched, counted, logged and
announced; the operator cannot release it to be signed again, only cancel it.
The real payouts confirm as before. The devnet's signing record is the payout
its mempool accepted the transaction for (``devnet_txs.payout_id``).
"""

from __future__ import annotations

import json
import logging

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.payouts.confirm_gate import NOT_SIGNED_FOR
from orbchain.core.payouts.policy_holds import cancel_policy_hold, release_policy_hold

from .test_payout_release import activity, forge
from .test_payouts import balance, create, fund, in_flight, outbox, payout_env, payout_row, work


OPERATOR = {"webhook_url": "https://ops.example/hook", "webhook_secret": "operator-secret-0123456789"}


@pytest.fixture
async def shop(make_client, make_config):
    """A funded merchant (0.0099 BTC) with one payout confirmed (0.004) and one on its way (0.003)."""
    client, merchant, devnet = await payout_env(make_client, make_config, operator=OPERATOR)
    await fund(client, merchant, devnet)
    confirmed = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    gw = devnet.gateway
    await work(gw)
    await devnet.mine(1)
    await work(gw)
    assert (await payout_row(gw, confirmed))["status"] == "Confirmed"
    on_its_way = (await create(client, merchant, "0.003"))[1]["data"]["track_id"]
    await work(gw)
    assert (await payout_row(gw, on_its_way))["stage"] == "broadcast" and await in_flight(gw) == 300_000
    return client, merchant, devnet, await payout_row(gw, confirmed), on_its_way


def held_count(gw) -> float:
    return gw.metrics.payouts_held_by_policy.labels(coin="BTC", reason=NOT_SIGNED_FOR)._value.get()


async def operator_held(gw) -> list[dict]:
    rows = await gw.db.fetch_all("SELECT body FROM operator_events WHERE event_type = 'payout.held_by_policy'")
    return [json.loads(r["body"]) for r in rows]


async def test_a_forged_row_naming_a_real_payouts_mined_txid_is_held_never_confirmed(shop, caplog):
    client, merchant, devnet, real, on_its_way = shop
    gw = devnet.gateway
    await forge(gw, merchant.merchant_id, "po_forged", 300_000, "broadcast", tx_hash=real["tx_hash"],
                raw_tx=real["raw_tx"])
    with caplog.at_level(logging.ERROR, logger="orbchain.core.payouts.confirm_gate"):
        await work(gw)
    row = await payout_row(gw, "po_forged")
    assert (row["status"], row["stage"], row["policy_hold"]) == ("Confirming", "policy_held", NOT_SIGNED_FOR)
    assert row["claim_token"] is None and row["finished_at"] is None
    assert await in_flight(gw) == 300_000  # the payout on its way keeps its money
    confirms = "SELECT COUNT(*) FROM ledger_transactions WHERE reference = 'payout:po_forged:confirm'"
    assert await gw.db.fetch_val(confirms) == 0
    assert [h["track_id"] for h in await outbox(gw, "payout.confirmed")] == [real["track_id"]]
    assert held_count(gw) == 1
    assert [e["reason"] for e in await activity(gw, merchant.merchant_id, "payout_held_by_policy")] == [NOT_SIGNED_FOR]
    assert [(e["payout_id"], e["reason"]) for e in await operator_held(gw)] == [("po_forged", NOT_SIGNED_FOR)]
    assert f"payout po_forged (BTC, merchant {merchant.merchant_id}) NOT confirmed" in caplog.text
    assert (await ledger.check_ledger(gw.db)).ok

    await work(gw)  # never claimed again
    assert (await payout_row(gw, "po_forged"))["stage"] == "policy_held" and held_count(gw) == 1
    # Releasing would queue it to be signed and paid again: refused; cancelling gives back what was reserved: nothing.
    assert await release_policy_hold(gw, "po_forged", "operator") is None
    cancelled = await cancel_policy_hold(gw, "po_forged", "operator")
    assert cancelled is not None and cancelled["status"] == "Failed"
    assert await balance(client, merchant) == {"BTC": "0.0029"} and await in_flight(gw) == 300_000

    await devnet.mine(1)
    await work(gw)  # the real payout on its way confirms as ever
    assert (await payout_row(gw, on_its_way))["status"] == "Confirmed" and await in_flight(gw) == 0
    assert (await ledger.check_ledger(gw.db)).ok


async def test_a_forged_row_naming_a_payers_deposit_is_held(shop):
    client, merchant, devnet, _, _ = shop
    gw = devnet.gateway
    deposit = await gw.db.fetch_one("SELECT tx_hash, output_index FROM deposits ORDER BY created_at LIMIT 1")
    await forge(gw, merchant.merchant_id, "po_deposit", 300_000, "broadcast", tx_hash=deposit["tx_hash"],
                raw_tx="never-signed")
    await work(gw)
    row = await payout_row(gw, "po_deposit")
    assert (row["status"], row["stage"], row["policy_hold"]) == ("Confirming", "policy_held", NOT_SIGNED_FOR)
    assert await in_flight(gw) == 300_000 and held_count(gw) == 1
    assert (await ledger.check_ledger(gw.db)).ok
