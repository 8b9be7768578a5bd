"""The signer's spending policy at the signing boundary (core/payouts/signing_gate.py), on devnet, both databases.

A payout the ledger did not reserve, or whose row was changed after the
reserve, is never signed; the operator's caps (counted across gateways on
one database) and allow-lists hold a payout with a reason, a metric and an
activity entry; release signs it once; cancel re-credits what the ledger
reserved, once.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from orbchain.core.infra.config import ConfigError
from orbchain.core.ledger import book as ledger
from orbchain.core.payouts import worker
from orbchain.api import authorize_fee_bump, authorize_hot_wallet_spend
from orbchain.core.payouts.policy_holds import cancel_policy_hold, release_policy_hold
from orbchain.web.keys import GATEWAY

from .approvals_support import set_policy
from .support import Devnet, advance_clock, api, signup
from .test_payouts import BTC_DEST, balance, create, devnet_txs, fund, in_flight, payout_row, work

OTHER_BTC_DEST = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


async def shop(make_client, make_config, operator=None, **signing):
    config = make_config(scheduler={"enabled": False}, signing=signing, **({"operator": operator} if operator else {}))
    client = await make_client(config)
    merchant = await signup(client)
    devnet = Devnet(client)
    await fund(client, merchant, devnet)  # 0.0099 BTC available
    return client, merchant, devnet, config


def held_count(gateway, reason, coin="BTC") -> float:
    return gateway.metrics.payouts_held_by_policy.labels(coin=coin, reason=reason)._value.get()


async def activity(gateway, merchant_id, kind="payout_held_by_policy"):
    rows = await gateway.db.fetch_all("SELECT details FROM security_events WHERE merchant_id = :m AND kind = :k",
                                      {"m": merchant_id, "k": kind})
    return [json.loads(r["details"]) for r in rows]


async def signed_txs(gateway) -> int:
    return int(await gateway.db.fetch_val("SELECT COUNT(*) FROM devnet_txs WHERE address IN (:a, :b)",
                                          {"a": BTC_DEST, "b": OTHER_BTC_DEST}))


async def test_a_payout_row_inserted_by_sql_is_never_signed(make_client, make_config):
    client, merchant, devnet, _ = await shop(make_client, make_config)
    gw = devnet.gateway
    now = gw.now()
    await gw.db.execute(
        "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
        " next_attempt_at, created_at, updated_at) VALUES ('po_forged', 'forged', :m, 'BTC', 'devnet', :d, :a,"
        " 'Confirming', 'queued', :now, :now, :now)",
        {"m": merchant.merchant_id, "d": BTC_DEST, "a": gw.db.amount_param(500_000), "now": now})
    assert await work(gw) == 1
    row = await payout_row(gw, "forged")
    assert (row["status"], row["stage"], row["policy_hold"]) == ("Confirming", "policy_held", "no_reservation")
    assert row["tx_hash"] is None and await signed_txs(gw) == 0
    assert await work(gw) == 0  # never claimed again
    assert held_count(gw, "no_reservation") == 1
    assert [e["reason"] for e in await activity(gw, merchant.merchant_id)] == ["no_reservation"]
    # Released by an operator, it is still held: the reservation proof is never overridden.
    assert await release_policy_hold(gw, "po_forged", "operator") is not None
    await work(gw)
    assert (await payout_row(gw, "forged"))["stage"] == "policy_held" and await signed_txs(gw) == 0
    # Cancelled: nothing was reserved, so nothing is re-credited.
    cancelled = await cancel_policy_hold(gw, "po_forged", "operator")
    assert cancelled is not None and cancelled["status"] == "Failed"
    assert await balance(client, merchant) == {"BTC": "0.0099"}
    assert (await ledger.check_ledger(gw.db)).ok


async def test_an_amount_or_destination_changed_by_sql_after_creation_is_never_signed(make_client, make_config):
    client, merchant, devnet, _ = await shop(make_client, make_config)
    gw = devnet.gateway
    bigger = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    elsewhere = (await create(client, merchant, "0.001"))[1]["data"]["track_id"]
    await gw.db.execute("UPDATE payouts SET amount = :a WHERE track_id = :t",
                        {"a": gw.db.amount_param(900_000), "t": bigger})
    await gw.db.execute("UPDATE payouts SET destination = :d WHERE track_id = :t",
                        {"d": OTHER_BTC_DEST, "t": elsewhere})
    assert await work(gw) == 2
    assert (await payout_row(gw, bigger))["policy_hold"] == "reservation_mismatch"
    assert (await payout_row(gw, elsewhere))["policy_hold"] == "binding_mismatch"
    assert await signed_txs(gw) == 0
    # Cancel re-credits what the LEDGER reserved (0.004), not the edited row (0.009), and only once.
    row = await payout_row(gw, bigger)
    results = await asyncio.gather(*(cancel_policy_hold(gw, row["id"], "operator") for _ in range(3)))
    assert sum(r is not None for r in results) == 1
    assert await balance(client, merchant) == {"BTC": "0.0089"}  # 0.0099 - 0.001 still reserved for `elsewhere`
    assert await in_flight(gw) == 100_000
    assert (await ledger.check_ledger(gw.db)).ok


async def test_a_payout_over_the_per_payout_cap_is_held_then_released_and_signed_once(make_client, make_config):
    client, merchant, devnet, _ = await shop(make_client, make_config, max_per_payout=["BTC=0.003"])
    gw = devnet.gateway
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    small = (await create(client, merchant, "0.002"))[1]["data"]["track_id"]
    await work(gw)
    held = await payout_row(gw, track_id)
    assert (held["stage"], held["policy_hold"]) == ("policy_held", "over_payout_cap")
    assert (await payout_row(gw, small))["stage"] == "broadcast"
    assert held_count(gw, "over_payout_cap") == 1
    assert await activity(gw, merchant.merchant_id) == [
        {"payout": track_id, "coin": "BTC", "amount": "0.004", "reason": "over_payout_cap"}]
    listed = (await api(client, "GET", "/dashboard/activity", merchant.jwt))[1]["data"]
    assert f"Payout {track_id} of 0.004 BTC held by the operator's signing policy (over_payout_cap)" in str(listed)
    # The dashboard says why; the API's payout keeps SPEC's shape.
    listed = (await api(client, "GET", "/dashboard/payouts", merchant.jwt))[1]["data"]["payouts"]
    assert [p.get("heldByPolicy") for p in listed if p["trackId"] == track_id] == ["over_payout_cap"]
    view = (await api(client, "GET", f"/v1/payout/{track_id}", merchant.payout_key))[1]["data"]
    assert view["status"] == "Confirming" and "heldByPolicy" not in view and "policy_hold" not in view

    assert await release_policy_hold(gw, held["id"], "operator:alice") is not None
    assert await release_policy_hold(gw, held["id"], "operator:alice") is None  # released once
    await work(gw)
    released = await payout_row(gw, track_id)
    assert released["stage"] == "broadcast" and len(await devnet_txs(gw, released["tx_hash"])) == 1
    await devnet.mine(1)
    await work(gw)
    await work(gw)
    assert (await payout_row(gw, track_id))["status"] == "Confirmed"
    assert await signed_txs(gw) == 2  # the small one and the released one, each once
    assert (await ledger.check_ledger(gw.db)).ok


async def test_the_hourly_cap_holds_across_two_gateways_on_one_database(make_client, make_config):
    client, merchant, devnet, config = await shop(make_client, make_config, max_per_hour=["BTC=0.005"])
    gw1 = devnet.gateway
    gw2 = (await make_client(config)).app[GATEWAY]  # a second `serve` on the same database
    first = (await create(client, merchant, "0.003"))[1]["data"]["track_id"]
    second = (await create(client, merchant, "0.003"))[1]["data"]["track_id"]
    for gw in (gw1, gw2):
        advance_clock(gw, 5)
    # Each gateway claims one payout and judges it at the same time: only one fits the hour.
    claimed = await asyncio.gather(worker.process_payouts(gw1, limit=1), worker.process_payouts(gw2, limit=1))
    assert claimed == [1, 1]
    rows = [await payout_row(gw1, t) for t in (first, second)]
    assert sorted(r["stage"] for r in rows) == ["broadcast", "policy_held"]
    assert [r["policy_hold"] for r in rows if r["stage"] == "policy_held"] == ["over_hourly_cap"]
    assert held_count(gw1, "over_hourly_cap") + held_count(gw2, "over_hourly_cap") == 1
    # An hour later the window has room again: a new payout of 0.003 is signed by either gateway.
    advance_clock(gw2, 3601)
    third = (await create(client, merchant, "0.003"))[1]["data"]["track_id"]
    await gw2.db.execute("UPDATE payouts SET next_attempt_at = 0 WHERE track_id = :t", {"t": third})
    await worker.process_payouts(gw2)
    assert (await payout_row(gw2, third))["stage"] == "broadcast"


async def test_a_destination_outside_the_allow_list_is_held(make_client, make_config):
    client, merchant, devnet, _ = await shop(make_client, make_config,
                                             allowed_destinations=[f"BTC={OTHER_BTC_DEST}"])
    gw = devnet.gateway
    refused = (await create(client, merchant, "0.001", address=BTC_DEST))[1]["data"]["track_id"]
    allowed = (await create(client, merchant, "0.001", address=OTHER_BTC_DEST))[1]["data"]["track_id"]
    await work(gw)
    assert (await payout_row(gw, refused))["policy_hold"] == "destination_not_allowed"
    assert (await payout_row(gw, allowed))["stage"] == "broadcast"
    assert held_count(gw, "destination_not_allowed") == 1
    assert [e["reason"] for e in await activity(gw, merchant.merchant_id)] == ["destination_not_allowed"]


async def test_a_payout_held_for_approval_and_moved_on_by_sql_is_not_signed(make_client, make_config):
    client, merchant, devnet, _ = await shop(make_client, make_config)
    gw = devnet.gateway
    await set_policy(gw, merchant.merchant_id, threshold_BTC="100")
    track_id = (await create(client, merchant, "0.005"))[1]["data"]["track_id"]  # $300: held for approval
    assert (await payout_row(gw, track_id))["stage"] == "held"
    await gw.db.execute("UPDATE payouts SET stage = 'queued' WHERE track_id = :t", {"t": track_id})
    await work(gw)
    row = await payout_row(gw, track_id)
    assert (row["stage"], row["policy_hold"]) == ("policy_held", "approval_missing") and await signed_txs(gw) == 0
    # An operator's release does not stand in for the account's approval.
    await release_policy_hold(gw, row["id"], "operator")
    await work(gw)
    assert (await payout_row(gw, track_id))["stage"] == "policy_held" and await signed_txs(gw) == 0


def test_a_signing_policy_naming_an_unknown_coin_or_a_bad_address_stops_the_start(make_config):
    from orbchain.core.startup import build_gateway

    with pytest.raises(ConfigError, match="signing.max_per_day"):
        make_config(signing={"max_per_day": ["BTC=lots"]})
    with pytest.raises(ConfigError, match="unknown coin NOPE"):
        build_gateway(make_config(signing={"max_per_payout": ["NOPE=1"]}))
    with pytest.raises(ConfigError, match="allowed_destinations"):
        build_gateway(make_config(signing={"allowed_destinations": ["BTC=not-an-address"]}))


async def test_a_bumps_extra_fee_counts_once_against_the_hourly_cap_and_later_payouts_see_it(
        make_client, make_config):
    client, merchant, devnet, _ = await shop(make_client, make_config, max_per_hour=["BTC=0.005"])
    gw = devnet.gateway
    first = (await create(client, merchant, "0.003"))[1]["data"]["track_id"]
    await work(gw)
    payout = await payout_row(gw, first)
    assert payout["stage"] == "broadcast"
    # The payout's own 0.003 is in the window: 0.002 more fits, not a satoshi beyond.
    assert await authorize_fee_bump(gw, payout["id"], "devnet:bump-1", 200_001) == "over_hourly_cap"
    assert await authorize_fee_bump(gw, payout["id"], "devnet:bump-1", 150_000) is None
    assert await authorize_fee_bump(gw, payout["id"], "devnet:bump-1", 150_000) is None  # the same bump: once
    assert await gw.db.fetch_val("SELECT COUNT(*) FROM payout_fee_bumps") == 1
    # 0.003 + 0.0015 counted: a payout of 0.001 would pass 0.005, so it is held.
    second = (await create(client, merchant, "0.001"))[1]["data"]["track_id"]
    await work(gw)
    assert (await payout_row(gw, second))["policy_hold"] == "over_hourly_cap"


async def test_a_gas_top_up_is_counted_and_capped_like_a_payout_of_its_coin(make_client, make_config):
    """A top-up of a deposit address (any chain's sweeper calls the same gate): the per-payout cap, the windows,
    counted once, seen by later payouts, refused with a metric, an ERROR and one operator event a day."""
    client, merchant, devnet, _ = await shop(
        make_client, make_config, operator={"webhook_url": "http://127.0.0.1:9/operator", "webhook_secret": "s" * 20},
        max_per_payout=["BTC=0.004"], max_per_hour=["BTC=0.005"])
    gw = devnet.gateway

    async def top_up(reference: str, amount: int, per_spend: bool = True) -> str | None:
        return await authorize_hot_wallet_spend(gw, chain="devnet", coin="BTC", kind="topup", reference=reference,
                                                amount=amount, subject="deposit-1", per_spend=per_spend)

    def refused(reason: str) -> float:
        return gw.metrics.hot_wallet_spends_held_by_policy.labels(coin="BTC", kind="topup", reason=reason)._value.get()

    assert await top_up("devnet:topup:swp_1", 400_001) == "over_payout_cap"
    assert await top_up("devnet:topup:swp_1", 300_000) is None
    assert await top_up("devnet:topup:swp_1", 300_000) is None  # the same top-up: counted once
    assert await gw.db.fetch_val("SELECT COUNT(*) FROM hot_wallet_spends") == 1
    # 0.003 counted: 0.002 more fits the hour, not a satoshi beyond (a re-signing's extra fee: the windows only).
    assert await top_up("devnet:topup:swp_2", 200_001, per_spend=False) == "over_hourly_cap"
    assert await top_up("devnet:topup:swp_3", 200_001, per_spend=False) == "over_hourly_cap"
    assert (refused("over_payout_cap"), refused("over_hourly_cap")) == (1, 2)
    events = await gw.db.fetch_all("SELECT body FROM operator_events WHERE event_type = 'hot_wallet.spend_held'")
    assert sorted(json.loads(e["body"])["reason"] for e in events) == ["over_hourly_cap", "over_payout_cap"]
    # A payout of the coin sees the top-up in its window: 0.003 + 0.0021 is over 0.005.
    track_id = (await create(client, merchant, "0.0021"))[1]["data"]["track_id"]
    await work(gw)
    assert (await payout_row(gw, track_id))["policy_hold"] == "over_hourly_cap"
    # An hour later the top-up has left the hour's window.
    advance_clock(gw, 3601)
    assert await top_up("devnet:topup:swp_4", 400_000) is None
    assert await gw.db.fetch_val("SELECT COUNT(*) FROM hot_wallet_spends") == 2
