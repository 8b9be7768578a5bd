"""A failed payout gives back only what the ledger reserved for it (core/payouts/reserve_release.py), both databases.

A payout row written into the database by hand (no reserve) that then
fails must not mint balance; a reserved payout that fails is re-credited
exactly once however often its failure path runs; a row edited after its
reserve is re-credited the reserve, never the row's figures.
"""

from __future__ import annotations

import json

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.payouts.holds import reject_held_payout
from orbchain.core.types.chains import BroadcastError

from .test_payouts import BTC_DEST, balance, create, fund, in_flight, outbox, payout_env, payout_row, work


@pytest.fixture
async def shop(make_client, make_config, monkeypatch):
    """A funded merchant (0.0099 BTC) whose node refuses every broadcast of raw bytes named in ``refused``."""
    client, merchant, devnet = await payout_env(make_client, make_config)
    await fund(client, merchant, devnet)
    refused: set[str] = set()
    broadcast = devnet.adapter.broadcast

    async def refusing(signed):
        if signed.raw in refused or "*" in refused:
            raise BroadcastError("bad-txns-inputs-missingorspent", permanent=True)
        return await broadcast(signed)

    monkeypatch.setattr(devnet.adapter, "broadcast", refusing)
    return client, merchant, devnet.gateway, refused


async def forge(gw, merchant_id: str, payout_id: str, amount: int, stage: str, **columns) -> None:
    """A payout row no request made: inserted by SQL, nothing reserved in the ledger."""
    now = gw.now()
    extra = "".join(f", {name}" for name in columns)
    marks = "".join(f", :{name}" for name in columns)
    await gw.db.execute(
        f"INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
        f" next_attempt_at, created_at, updated_at{extra}) VALUES (:id, :id, :m, 'BTC', 'devnet', :d, :a,"
        f" 'Confirming', :stage, :now, :now, :now{marks})",
        {"id": payout_id, "m": merchant_id, "d": BTC_DEST, "a": gw.db.amount_param(amount), "stage": stage,
         "now": now, **columns})


def anomalies(gw, reason: str) -> float:
    return gw.metrics.payout_release_anomalies.labels(coin="BTC", reason=reason)._value.get()


async def releases(gw, payout_id: str) -> int:
    return int(await gw.db.fetch_val("SELECT COUNT(*) FROM ledger_transactions WHERE reference = :r",
                                     {"r": f"payout:{payout_id}:release"}))


async def activity(gw, merchant_id: str, kind: str) -> list[dict]:
    rows = await gw.db.fetch_all("SELECT details FROM security_events WHERE merchant_id = :m AND kind = :k",
                                 {"m": merchant_id, "k": kind})
    return [json.loads(r["details"]) for r in rows]


async def test_a_forged_signed_row_that_fails_credits_nothing(shop):
    client, merchant, gw, refused = shop
    legit = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    await work(gw)  # a real payout in flight: 0.004 a forged release could take from
    assert (await payout_row(gw, legit))["stage"] == "broadcast" and await in_flight(gw) == 400_000
    refused.add("forged-bytes")
    await forge(gw, merchant.merchant_id, "po_forged", 300_000, "signed", tx_hash="ab" * 32, raw_tx="forged-bytes")
    await work(gw)
    row = await payout_row(gw, "po_forged")
    assert (row["status"], row["failure_reason"]) == ("Failed", "broadcast_rejected: bad-txns-inputs-missingorspent")
    assert row["last_error"] == "nothing re-credited: no_reservation"
    assert await balance(client, merchant) == {"BTC": "0.0059"}  # nothing minted
    assert await in_flight(gw) == 400_000 and await releases(gw, "po_forged") == 0
    assert (await ledger.check_ledger(gw.db)).ok
    assert anomalies(gw, "no_reservation") == 1
    assert [e["reason"] for e in await activity(gw, merchant.merchant_id, "payout_release_refused")] == [
        "no_reservation"]
    assert [h["track_id"] for h in await outbox(gw, "payout.failed")] == []  # nobody's payout: no webhook


async def test_a_forged_row_dropped_from_the_chain_credits_nothing(shop):
    client, merchant, gw, _ = shop
    await forge(gw, merchant.merchant_id, "po_dropped", 500_000, "broadcast", tx_hash="cd" * 32, raw_tx="never-sent")
    await work(gw)
    await work(gw, gw.chains["devnet"].drop_after_seconds)
    row = await payout_row(gw, "po_dropped")
    assert (row["status"], row["failure_reason"]) == ("Failed", "dropped")
    assert row["last_error"] == "nothing re-credited: no_reservation"
    assert await balance(client, merchant) == {"BTC": "0.0099"} and await in_flight(gw) == 0
    assert (await ledger.check_ledger(gw.db)).ok


async def test_a_forged_approval_hold_rejected_credits_nothing(shop):
    client, merchant, gw, _ = shop
    await forge(gw, merchant.merchant_id, "po_held", 500_000, "held")
    row = await reject_held_payout(gw, "po_held", "rejected")
    assert row is not None and (row["status"], row["failure_reason"]) == ("Failed", "rejected")
    assert await balance(client, merchant) == {"BTC": "0.0099"} and await releases(gw, "po_held") == 0
    assert anomalies(gw, "no_reservation") == 1
    assert (await ledger.check_ledger(gw.db)).ok


async def test_a_reserved_payout_that_fails_twice_is_credited_once(shop):
    client, merchant, gw, refused = shop
    refused.add("*")
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    assert await balance(client, merchant) == {"BTC": "0.0059"}
    await work(gw)
    row = await payout_row(gw, track_id)
    assert (row["status"], row["failure_reason"]) == ("Failed", "broadcast_rejected: bad-txns-inputs-missingorspent")
    assert await balance(client, merchant) == {"BTC": "0.0099"} and anomalies(gw, "no_reservation") == 0
    # Set back in flight by SQL (with signed bytes, past the signer) and failed again: given back once only.
    await gw.db.execute("UPDATE payouts SET status = 'Confirming', stage = 'signed', raw_tx = 'again',"
                        " tx_hash = :h, failure_reason = NULL WHERE id = :id", {"h": "ef" * 32, "id": row["id"]})
    await work(gw)
    again = await payout_row(gw, track_id)
    assert (again["status"], again["last_error"]) == ("Failed", "nothing re-credited: reservation_released")
    assert await balance(client, merchant) == {"BTC": "0.0099"} and await releases(gw, row["id"]) == 1
    assert await in_flight(gw) == 0 and anomalies(gw, "reservation_released") == 1
    assert len(await outbox(gw, "payout.failed")) == 1
    assert (await ledger.check_ledger(gw.db)).ok


async def test_a_row_edited_after_its_reserve_gets_back_the_reserve_not_the_row(shop):
    client, merchant, gw, refused = shop
    bigger = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    await create(client, merchant, "0.005")  # another payout in flight: a larger give-back would take from it
    refused.add("signed-for-0.004")
    row = await payout_row(gw, bigger)
    # After the signer let it on (the bytes are signed for 0.004), the row's amount is raised by SQL.
    await gw.db.execute("UPDATE payouts SET stage = 'signed', raw_tx = 'signed-for-0.004', tx_hash = :h,"
                        " amount = :a WHERE id = :id",
                        {"h": "12" * 32, "a": gw.db.amount_param(900_000), "id": row["id"]})
    await work(gw)
    failed = await payout_row(gw, bigger)
    assert failed["status"] == "Failed" and failed["failure_reason"].startswith("broadcast_rejected")
    assert await balance(client, merchant) == {"BTC": "0.0049"}  # 0.0099 - 0.005: 0.004 came back, not 0.009
    assert await releases(gw, row["id"]) == 1 and anomalies(gw, "reservation_mismatch") == 1
    assert await in_flight(gw) == 500_000
    assert (await ledger.check_ledger(gw.db)).ok
