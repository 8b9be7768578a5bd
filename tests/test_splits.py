"""Revenue splits on white-label payments (plugins/splits, SPEC 2.10, 7, 8), on both databases.

Journeys on devnet BTC with the merchant fee of 1 %: a 0.01 BTC deposit
leaves a net of 990000 sat to split.
"""

from __future__ import annotations

import asyncio

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.payouts import worker
from orbchain.plugins.splits import release_pending
from orbchain.plugins.splits.credit import payouts_account

from .approvals_support import add_member, approve, member_totp, next_code, reject, set_policy
from .support import Devnet, api, fill_backlog, signup

DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
NET = 990_000  # 0.01 BTC minus the 1 % platform fee
PATH = "/v1/payment/white-label"


@pytest.fixture
async def env(make_client, make_config):
    """A client (scheduler off), the owner merchant, a second merchant and the devnet driver."""
    client = await make_client(make_config(scheduler={"enabled": False}))
    owner = await signup(client, "owner@example.com")
    partner = await signup(client, "partner@example.com")
    return client, owner, partner, Devnet(client)


async def create(client, merchant, splits, **extra):
    return await api(client, "POST", PATH, merchant.merchant_key,
                     json={"currency": "BTC", "amount": "0.01", "splits": splits, **extra})


async def units(client, merchant) -> dict[str, int]:
    body = (await api(client, "GET", "/v1/general/account/balance", merchant.general_key))[1]
    return {b["coin"]: int(round(float(b["amount"]) * 10**8)) for b in body["data"]["balances"]}


async def payment_count(client, merchant) -> int:
    body = (await api(client, "GET", "/v1/payment", merchant.merchant_key))[1]
    return len(body["data"]["payments"]) if "payments" in body["data"] else len(body["data"]["items"])


async def splits_of(client, merchant, track_id):
    status, body = await api(client, "GET", f"/v1/payment/{track_id}/splits", merchant.merchant_key)
    assert status == 200, body
    return body["data"]


async def pay(devnet, address, amount="0.01"):
    tx = await devnet.pay("BTC", address, amount)
    await devnet.mine(2)
    return tx


async def fees(gateway) -> int:
    return await ledger.balance(gateway.db, ledger.PLATFORM_FEES, "BTC")



@pytest.mark.parametrize("splits, field", [
    ("nope", "splits"),
    ([], "splits"),
    ([{"bps": 1000, "recipient_address": DEST}] * 11, "splits"),
    (["x"], "splits[0]"),
    ([{"bps": 10000}], "splits[0]"),
    ([{"bps": 10000, "recipient_address": DEST, "recipient_merchant_id": "m_x"}], "splits[0]"),
    ([{"bps": 0, "recipient_address": DEST}, {"bps": 10000, "recipient_address": DEST}], "splits[0].bps"),
    ([{"bps": "10000", "recipient_address": DEST}], "splits[0].bps"),
    ([{"bps": True, "recipient_address": DEST}], "splits[0].bps"),
    ([{"bps": 10000.0, "recipient_address": DEST}], "splits[0].bps"),
    ([{"bps": 10000, "recipient_address": ""}], "splits[0].recipient_address"),
    ([{"bps": 10000, "recipient_address": "x" * 129}], "splits[0].recipient_address"),
    ([{"bps": 10000, "recipient_merchant_id": 5}], "splits[0].recipient_merchant_id"),
])
async def test_bad_splits_are_a_400_validation_and_create_nothing(env, splits, field):
    client, owner, _, _ = env
    status, body = await create(client, owner, splits)
    assert status == 400 and body["data"] is None and body["error"]["type"] == "validation", body
    assert field in body["error"]["detail"], body
    assert await payment_count(client, owner) == 0


@pytest.mark.parametrize("bps", [[5000, 4999], [5000, 5001], [9999], [10000, 1]])
async def test_bps_not_summing_to_10000_is_named(env, bps):
    client, owner, _, _ = env
    status, body = await create(client, owner, [{"bps": b, "recipient_address": DEST} for b in bps])
    assert status == 400 and body["error"]["code"] == "splits_bps_sum_not_10000", body
    assert await payment_count(client, owner) == 0


async def test_splits_with_settlement_coin_are_exclusive(env):
    client, owner, _, _ = env
    status, body = await create(client, owner, [{"bps": 10000, "recipient_address": DEST}], settlement_coin="ETH")
    assert status == 400 and body["error"]["code"] == "splits_settlement_coin_exclusive", body
    assert await payment_count(client, owner) == 0
    # Without splits, settlement_coin alone is the swaps plugin's (auto-settle): accepted.
    status, body = await api(client, "POST", PATH, owner.merchant_key,
                             json={"currency": "BTC", "amount": "0.01", "settlement_coin": "ETH"})
    assert status == 200, body
    assert await payment_count(client, owner) == 1


async def test_recipients_are_checked_at_creation(env):
    client, owner, _, _ = env
    status, body = await create(client, owner, [{"bps": 10000, "recipient_merchant_id": "m_nobody"}])
    assert status == 400 and body["error"]["code"] == "recipient_not_found", body
    status, body = await create(client, owner, [{"bps": 10000, "recipient_address": "bc1qnotanaddress"}])
    assert status == 400 and body["error"]["code"] == "invalid_address", body
    # An ETH address is no BTC payout destination.
    status, body = await create(client, owner, [{"bps": 10000, "recipient_address":
                                                 "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"}])
    assert status == 400 and body["error"]["code"] == "invalid_address", body
    assert await payment_count(client, owner) == 0


@pytest.mark.parametrize("path, extra", [
    ("/v1/payment/static-address", {"currency": "BTC"}),
    ("/v1/payment/invoice", {"amount": "10", "currency": "USD"}),
])
async def test_splits_only_on_white_label(env, path, extra):
    client, owner, _, _ = env
    status, body = await api(client, "POST", path, owner.merchant_key,
                             json={**extra, "splits": [{"bps": 10000, "recipient_address": DEST}]})
    assert status == 400 and "splits" in body["error"]["detail"], body


async def test_credit_splits_to_a_merchant_an_address_and_the_owner(env):
    client, owner, partner, devnet = env
    gateway = devnet.gateway
    splits = [{"bps": 3333, "recipient_merchant_id": partner.merchant_id},
              {"bps": 3333, "recipient_address": DEST},
              {"bps": 3334, "recipient_merchant_id": owner.merchant_id}]
    status, body = await create(client, owner, splits)
    assert status == 200, body
    track_id = body["data"]["track_id"]
    await pay(devnet, body["data"]["address"])
    assert (await api(client, "GET", f"/v1/payment/{track_id}", owner.merchant_key))[1]["data"]["status"] == "Paid"
    first = NET * 3333 // 10000
    # The fee is taken once, on the whole deposit; the last entry absorbs the remainder.
    assert await fees(gateway) == 10_000
    assert await units(client, partner) == {"BTC": first}
    assert await units(client, owner) == {"BTC": NET - 2 * first}  # its own share; the address share left
    view = await splits_of(client, owner, track_id)
    assert [s["bps"] for s in view["splits"]] == [3333, 3333, 3334]
    [payout] = view["payouts"]
    assert payout["status"] == "requested" and payout["amount"] == "0.00329967" and payout["address"] == DEST
    status, out = await api(client, "GET", f"/v1/payout/{payout['payout_track_id']}", owner.payout_key)
    assert status == 200 and out["data"]["destination"] == DEST and out["data"]["amount"] == "0.00329967", out
    assert await ledger.balance(gateway.db, payouts_account(owner.merchant_id), "BTC") == 0
    # Broadcast and confirmed by the standard payout worker.
    gateway.clock = (lambda later: lambda: later)(gateway.now() + 60)
    await worker.process_payouts(gateway)
    await devnet.mine(3)
    gateway.clock = (lambda later: lambda: later)(gateway.now() + 120)
    await worker.process_payouts(gateway)
    status, out = await api(client, "GET", f"/v1/payout/{payout['payout_track_id']}", owner.payout_key)
    assert out["data"]["status"] == "Confirmed", out
    # Replays move nothing more.
    assert await release_pending(gateway) == 0
    assert (await ledger.check_ledger(gateway.db)).ok
    # Another merchant cannot read the splits.
    status, _ = await api(client, "GET", f"/v1/payment/{track_id}/splits", partner.merchant_key)
    assert status == 404


async def test_a_payment_without_splits_is_credited_as_before(env):
    client, owner, _, devnet = env
    status, body = await api(client, "POST", PATH, owner.merchant_key, json={"currency": "BTC", "amount": "0.01"})
    await pay(devnet, body["data"]["address"])
    assert await units(client, owner) == {"BTC": NET}
    assert (await splits_of(client, owner, body["data"]["track_id"])) == {
        "track_id": body["data"]["track_id"], "splits": [], "payouts": []}


async def test_share_below_the_minimum_payout_stays_with_the_merchant(env):
    client, owner, partner, devnet = env
    # 1 bps of 990000 sat is 99 sat, below BTC's 0.0001 minimum payout.
    status, body = await create(client, owner, [{"bps": 1, "recipient_address": DEST},
                                                 {"bps": 9999, "recipient_merchant_id": partner.merchant_id}])
    assert status == 200, body
    await pay(devnet, body["data"]["address"])
    [payout] = (await splits_of(client, owner, body["data"]["track_id"]))["payouts"]
    assert payout["status"] == "failed" and payout["payout_track_id"] is None and payout["failure_reason"]
    assert await units(client, owner) == {"BTC": 99}
    assert await units(client, partner) == {"BTC": NET - 99}
    assert (await ledger.check_ledger(devnet.gateway.db)).ok


async def test_backlog_keeps_the_share_pending_and_a_reorg_before_release_cancels_it(env):
    client, owner, _, devnet = env
    gateway = devnet.gateway
    await fill_backlog(gateway, owner.merchant_id, 500)
    status, body = await create(client, owner, [{"bps": 10000, "recipient_address": DEST}])
    track_id = body["data"]["track_id"]
    tx = await pay(devnet, body["data"]["address"])
    [row] = (await splits_of(client, owner, track_id))["payouts"]
    assert row["status"] == "pending"
    assert await ledger.balance(gateway.db, payouts_account(owner.merchant_id), "BTC") == NET
    assert await units(client, owner) == {}  # held for the recipient, never the merchant's to spend
    await devnet.chain.reorg(2, drop=[tx])
    await devnet.scan()
    [row] = (await splits_of(client, owner, track_id))["payouts"]
    assert row["status"] == "reversed"
    assert await ledger.balance(gateway.db, payouts_account(owner.merchant_id), "BTC") == 0
    assert (await ledger.check_ledger(gateway.db)).ok
    # Paid again (a new transaction): owed again; once the backlog clears the job pays it, once.
    await devnet.chain.pay(gateway.coins.require("BTC"), body["data"]["address"], 1_000_000)
    await devnet.mine(2)
    rows = (await splits_of(client, owner, track_id))["payouts"]
    assert sorted(p["status"] for p in rows) == ["pending", "reversed"]
    await gateway.db.execute("DELETE FROM payouts WHERE id LIKE 'po_fake%'")
    assert await release_pending(gateway) == 1
    assert await release_pending(gateway) == 0
    rows = {p["status"]: p for p in (await splits_of(client, owner, track_id))["payouts"]}
    assert rows["reversed"]["payout_track_id"] is None and rows["requested"]["amount"] == "0.0099"
    assert (await ledger.check_ledger(gateway.db)).ok


async def test_a_share_reversed_before_release_is_owed_again_when_the_deposit_confirms_again(env):
    client, owner, _, devnet = env
    gateway = devnet.gateway
    await fill_backlog(gateway, owner.merchant_id, 500)
    status, body = await create(client, owner, [{"bps": 10000, "recipient_address": DEST}])
    track_id = body["data"]["track_id"]
    await pay(devnet, body["data"]["address"])
    await devnet.chain.reorg(2)  # the same transaction returns to the mempool
    await devnet.scan()
    assert [p["status"] for p in (await splits_of(client, owner, track_id))["payouts"]] == ["reversed"]
    await devnet.mine(2)
    assert [p["status"] for p in (await splits_of(client, owner, track_id))["payouts"]] == ["pending"]
    await gateway.db.execute("DELETE FROM payouts WHERE id LIKE 'po_fake%'")
    assert await release_pending(gateway) == 1
    [row] = (await splits_of(client, owner, track_id))["payouts"]
    assert row["status"] == "requested" and row["amount"] == "0.0099"
    assert await ledger.balance(gateway.db, payouts_account(owner.merchant_id), "BTC") == 0
    assert (await ledger.check_ledger(gateway.db)).ok


async def test_reorg_after_the_payout_pays_nothing_twice(env):
    client, owner, partner, devnet = env
    gateway = devnet.gateway
    status, body = await create(client, owner, [{"bps": 5000, "recipient_address": DEST},
                                                 {"bps": 5000, "recipient_merchant_id": partner.merchant_id}])
    track_id = body["data"]["track_id"]
    await pay(devnet, body["data"]["address"])
    [row] = (await splits_of(client, owner, track_id))["payouts"]
    assert row["status"] == "requested"
    await devnet.chain.reorg(2)  # the deposit returns to the mempool, then is mined again
    await devnet.scan()
    assert await units(client, partner) == {}
    await devnet.mine(2)
    assert await units(client, partner) == {"BTC": NET // 2}
    view = await splits_of(client, owner, track_id)
    assert [p["payout_track_id"] for p in view["payouts"]] == [row["payout_track_id"]]
    assert await ledger.balance(gateway.db, payouts_account(owner.merchant_id), "BTC") == 0
    assert (await ledger.check_ledger(gateway.db)).ok


async def test_splits_cannot_be_changed(env):
    client, owner, _, _ = env
    status, body = await create(client, owner, [{"bps": 10000, "recipient_address": DEST}])
    track_id = body["data"]["track_id"]
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        response = await client.request(method, f"/v1/payment/{track_id}/splits", headers=owner.merchant_key,
                                        json=[])
        assert response.status in (404, 405)
    assert (await splits_of(client, owner, track_id))["splits"] == [{"bps": 10000, "recipient_address": DEST}]


async def test_concurrent_releases_request_one_payout(env):
    client, owner, _, devnet = env
    gateway = devnet.gateway
    await fill_backlog(gateway, owner.merchant_id, 500)
    status, body = await create(client, owner, [{"bps": 10000, "recipient_address": DEST}])
    await pay(devnet, body["data"]["address"])
    await gateway.db.execute("DELETE FROM payouts WHERE id LIKE 'po_fake%'")
    done = await asyncio.gather(*(release_pending(gateway) for _ in range(4)))
    assert sum(done) == 1
    status, listed = await api(client, "GET", "/dashboard/payouts", owner.jwt)
    assert [p["amount"] for p in listed["data"]["payouts"]] == ["0.0099"], listed
    assert await ledger.balance(gateway.db, payouts_account(owner.merchant_id), "BTC") == 0
    assert (await ledger.check_ledger(gateway.db)).ok


async def test_an_address_share_held_by_the_approval_policy_waits_visibly_then_goes_or_comes_back(env):
    """A split's address share is a real payout to a third party: past a threshold it is held like any payout.
    The split does not stall: its share is ``requested`` with the payout's track id at once, the payout waits in
    the approvals list (requested by a job), and an approval sends it while a rejection gives the share back to
    the merchant, once, the ledger clean."""
    client, owner, _, devnet = env
    gateway = devnet.gateway
    await set_policy(gateway, owner.merchant_id, threshold_BTC="100")  # a share of ~$198 at the dev price
    admin = await add_member(client, gateway, owner.merchant_id, "admin@example.com")
    shares = []
    for _ in range(2):
        status, body = await create(client, owner, [{"bps": 5000, "recipient_address": DEST},
                                                     {"bps": 5000, "recipient_merchant_id": owner.merchant_id}])
        assert status == 200, body
        await pay(devnet, body["data"]["address"])
        [share] = (await splits_of(client, owner, body["data"]["track_id"]))["payouts"]
        assert share["status"] == "requested" and share["payout_track_id"], share
        shares.append(share["payout_track_id"])
    status, out = await api(client, "GET", f"/v1/payout/{shares[0]}", owner.payout_key)
    assert out["data"]["awaiting_approval"] is True and out["data"]["status"] == "Confirming"
    listed = (await api(client, "GET", "/dashboard/approvals", admin))[1]["data"]["held"]
    assert sorted(h["id"] for h in listed) == sorted(shares) and {h["requested_by_id"] for h in listed} == {None}
    assert await release_pending(gateway) == 0  # nothing left pending: the split is done with these shares
    before = await units(client, owner)
    secret = await member_totp(gateway, owner.merchant_id, "admin@example.com")
    assert (await approve(client, admin, shares[0], next_code(gateway, secret)))[0] == 200
    assert (await reject(client, admin, shares[1]))[0] == 200
    gateway.clock = (lambda later: lambda: later)(gateway.now() + 60)
    await worker.process_payouts(gateway)
    row = await gateway.db.fetch_one("SELECT stage, tx_hash FROM payouts WHERE track_id = :t", {"t": shares[0]})
    assert row["stage"] == "broadcast" and row["tx_hash"]
    status, failed = await api(client, "GET", f"/v1/payout/{shares[1]}", owner.payout_key)
    assert failed["data"]["status"] == "Failed" and failed["data"]["failure_reason"] == "rejected"
    assert (await units(client, owner))["BTC"] == before["BTC"] + NET // 2  # the rejected share, back once
    assert await release_pending(gateway) == 0
    assert (await ledger.check_ledger(gateway.db)).ok
