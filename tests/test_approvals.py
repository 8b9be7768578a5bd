"""The payout approval policy (plugins/approvals, issue 36 second half), on SQLite and PostgreSQL.

Past a coin's threshold (USD) or a daily limit, a payout is held with its money reserved; it is sent
only when someone other than its requester approves it with the account's TOTP code, once however
many approve; rejected or expired it fails (``payout.failed``) and the reserve comes back. No
policy: nothing changes.
"""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal

import pyotp

from orbchain.api import approve_held_payout, reject_held_payout, request_payout
from orbchain.core.ledger.check import check_ledger
from orbchain.plugins.approvals import holds
from orbchain.web.keys import GATEWAY

from .approvals_support import add_member, approve, enable_totp, member_totp, next_code, reject, set_policy
from .support import advance_clock, api, signup
from .test_payouts import BTC_DEST, balance, create, devnet_txs, fund, in_flight, payout_env, payout_row, work

HELD = "held"


async def env(make_client, make_config, **policy):
    client, merchant, devnet = await payout_env(make_client, make_config)
    await fund(client, merchant, devnet, amount="0.02")
    gateway = client.app[GATEWAY]
    if policy:
        await set_policy(gateway, merchant.merchant_id, **policy)
    return client, merchant, devnet, gateway


async def ledger_clean(gateway):
    report = await check_ledger(gateway.db)
    assert report.ok, report.problems


async def test_without_a_policy_payouts_answer_as_before(make_client, make_config):
    client, merchant, _, gateway = await env(make_client, make_config)
    status, body = await create(client, merchant, amount="0.01")
    assert status == 200 and "awaiting_approval" not in body["data"]
    await work(gateway)
    assert (await payout_row(gateway, body["data"]["track_id"]))["stage"] != HELD
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM approval_spend") == 0


async def test_threshold_holds_and_another_person_approves_once(make_client, make_config):
    client, merchant, _, gateway = await env(make_client, make_config, threshold_BTC="100")
    before = await balance(client, merchant)
    status, body = await create(client, merchant, amount="0.005")  # $300 at the dev price
    assert status == 200 and body["data"]["awaiting_approval"] is True and body["data"]["status"] == "Confirming"
    track = body["data"]["track_id"]
    assert await in_flight(gateway) == 500_000  # reserved: it cannot be spent twice
    assert (await balance(client, merchant))["BTC"] != before["BTC"]
    await work(gateway)
    row = await payout_row(gateway, track)
    # Made with the holder's payout key: requested by the holder (issue 42), the key named beside.
    assert row["stage"] == HELD and row["tx_hash"] is None and row["requested_by"] == "holder"
    assert row["key_id"] == f"legacy_payout_{merchant.merchant_id}"
    status, got = await api(client, "GET", f"/v1/payout/{track}", merchant.payout_key)
    assert got["data"]["awaiting_approval"] is True
    admin = await add_member(client, gateway, merchant.merchant_id, "admin@example.com")
    status, listed = await api(client, "GET", "/dashboard/approvals", admin)
    assert status == 200 and [p["id"] for p in listed["data"]["held"]] == [track]
    assert listed["data"]["held"][0]["usd"] == "300.00" and listed["data"]["held"][0]["reason"] == "threshold"
    secret = await member_totp(gateway, merchant.merchant_id, "admin@example.com")
    status, answer = await approve(client, admin, track, next_code(gateway, secret))
    assert status == 200 and answer["data"]["state"] == "approved", answer
    status, again = await approve(client, admin, track, next_code(gateway, secret))  # twice = once
    assert status == 200 and again["data"]["state"] == "approved"
    await work(gateway)
    await work(gateway)
    row = await payout_row(gateway, track)
    assert row["stage"] != HELD and row["tx_hash"] and len(await devnet_txs(gateway, row["tx_hash"])) == 1
    status, got = await api(client, "GET", f"/v1/payout/{track}", merchant.payout_key)
    assert "awaiting_approval" not in got["data"]
    events = await gateway.db.fetch_all("SELECT kind, actor, details FROM security_events WHERE kind = :k",
                                        {"k": "payout_approved"})
    assert len(events) == 1 and events[0]["actor"] == "member admin@example.com"
    assert "key " in json.loads(events[0]["details"])["requested_by"]
    await ledger_clean(gateway)


async def test_the_requester_cannot_approve_and_totp_is_required(make_client, make_config):
    client, merchant, _, gateway = await env(make_client, make_config, threshold_BTC="100")
    status, body = await api(client, "POST", "/dashboard/create-payout", merchant.jwt,
                             json={"currency": "BTC", "address": BTC_DEST, "amount": "0.005"})
    assert status == 200 and body["data"]["awaiting_approval"] is True
    track = body["data"]["track_id"]
    admin = await add_member(client, gateway, merchant.merchant_id, "admin@example.com")
    status, refused = await approve(client, admin, track, "123456")  # no 2FA on the account
    assert status == 403 and refused["error"]["code"] == "totp_required"
    assert "two-factor" in refused["message"]
    secret = await enable_totp(client, gateway, merchant.jwt)
    status, refused = await approve(client, merchant.jwt, track, next_code(gateway, secret))
    assert status == 403 and refused["error"]["code"] == "self_approval"
    admin_secret = await member_totp(gateway, merchant.merchant_id, "admin@example.com")
    for code in ("000000", None, "x" * 50):
        status, refused = await approve(client, admin, track, code)
        assert status == 401 and refused["error"]["code"] == "totp_invalid"
    finance = await add_member(client, gateway, merchant.merchant_id, "fin@example.com", role="finance")
    status, refused = await approve(client, finance, track, next_code(gateway, secret))
    assert status == 403 and refused["error"]["detail"] == {"scope": "payout:approve"}
    assert (await payout_row(gateway, track))["stage"] == HELD
    status, _ = await approve(client, admin, track, next_code(gateway, admin_secret))
    assert status == 200 and (await payout_row(gateway, track))["stage"] == "queued"


async def test_reject_releases_the_reserve_and_fires_payout_failed(make_client, make_config):
    client, merchant, _, gateway = await env(make_client, make_config, threshold_BTC="100")
    before = await balance(client, merchant)
    _, body = await create(client, merchant, amount="0.005")
    track = body["data"]["track_id"]
    admin = await add_member(client, gateway, merchant.merchant_id, "admin@example.com")
    status, answer = await reject(client, admin, track)
    assert status == 200 and answer["data"]["state"] == "rejected"
    assert (await reject(client, admin, track))[0] == 200  # twice = once
    row = await payout_row(gateway, track)
    assert row["status"] == "Failed" and row["failure_reason"] == "rejected"
    assert await balance(client, merchant) == before and await in_flight(gateway) == 0
    hooks = await gateway.db.fetch_all("SELECT body FROM webhook_events WHERE event_type = 'payout.failed'")
    assert [json.loads(h["body"])["failure_reason"] for h in hooks] == ["rejected"]
    secret = await enable_totp(client, gateway, merchant.jwt)
    status, refused = await approve(client, admin, track, next_code(gateway, secret))
    assert status == 409 and refused["error"]["code"] == "approval_rejected"
    await ledger_clean(gateway)


async def test_a_held_payout_expires(make_client, make_config):
    client, merchant, _, gateway = await env(make_client, make_config, threshold_BTC="100", expiry_hours="2")
    before = await balance(client, merchant)
    _, body = await create(client, merchant, amount="0.005")
    advance_clock(gateway, 3600)
    assert await holds.expire_due(gateway) == 0
    advance_clock(gateway, 3601)
    assert await holds.expire_due(gateway) == 1 and await holds.expire_due(gateway) == 0
    row = await payout_row(gateway, body["data"]["track_id"])
    assert row["status"] == "Failed" and row["failure_reason"] == "expired"
    assert await balance(client, merchant) == before
    await ledger_clean(gateway)


async def test_daily_limit_per_key_holds_what_goes_past_it(make_client, make_config):
    client, merchant, _, gateway = await env(make_client, make_config, key_daily_usd="400")
    first = (await create(client, merchant, amount="0.005"))[1]["data"]  # $300
    second = (await create(client, merchant, amount="0.005"))[1]["data"]  # $600 today: past the limit
    assert "awaiting_approval" not in first and second["awaiting_approval"] is True
    status, listed = await api(client, "GET", "/dashboard/approvals", merchant.jwt)
    assert listed["data"]["held"][0]["reason"] == "daily_limit"
    # The holder's own dashboard payouts have the per-person limit (none set): not held.
    status, body = await api(client, "POST", "/dashboard/create-payout", merchant.jwt,
                             json={"currency": "BTC", "address": BTC_DEST, "amount": "0.001"})
    assert status == 200 and "awaiting_approval" not in body["data"]
    # The next day starts again from zero.
    advance_clock(gateway, 86400)
    third = (await create(client, merchant, amount="0.001"))[1]["data"]
    assert "awaiting_approval" not in third


async def test_a_scheduled_payout_and_a_refund_are_held_too(make_client, make_config):
    client, merchant, devnet, gateway = await env(make_client, make_config, threshold_BTC="100")
    record = await request_payout(gateway, merchant.merchant_id, coin="BTC", destination=BTC_DEST,
                                  amount=500_000, idempotency_key="sched:test-1")
    row = await payout_row(gateway, record.track_id)
    assert row["stage"] == HELD and row["requested_by"] is None
    paid = await fund(client, merchant, devnet, amount="0.01")
    status, body = await api(client, "POST", f"/v1/payment/{paid}/refund", merchant.payout_key,
                             json={"destination": BTC_DEST, "amount": "0.005"})
    assert status == 200, body
    refund = await gateway.db.fetch_one("SELECT stage FROM payouts WHERE refund_of_payment_id = :p", {"p": paid})
    assert refund["stage"] == HELD


async def test_two_approvals_at_once_send_once(make_client, make_config):
    client, merchant, _, gateway = await env(make_client, make_config, threshold_BTC="100")
    tracks = [(await create(client, merchant, amount="0.005"))[1]["data"]["track_id"] for _ in range(2)]
    ids = [(await payout_row(gateway, t))["id"] for t in tracks]
    # The core's moves: two approvals and a rejection racing on one payout move it once.
    moved = await asyncio.gather(approve_held_payout(gateway, ids[0]), approve_held_payout(gateway, ids[0]),
                                 reject_held_payout(gateway, ids[0], "rejected"))
    assert sum(1 for m in moved if m is not None) == 1
    # Through the API: two members with the same fresh code at once.
    first = await add_member(client, gateway, merchant.merchant_id, "a@example.com")
    second = await add_member(client, gateway, merchant.merchant_id, "b@example.com")
    secrets_ = [await member_totp(gateway, merchant.merchant_id, e) for e in ("a@example.com", "b@example.com")]
    codes = [next_code(gateway, secrets_[0]), pyotp.TOTP(secrets_[1]).at(gateway.now())]
    answers = await asyncio.gather(approve(client, first, tracks[1], codes[0]),
                                   approve(client, second, tracks[1], codes[1]))
    assert any(status == 200 for status, _ in answers), answers
    for _ in range(3):
        await work(gateway)
    row = await payout_row(gateway, tracks[1])
    assert row["tx_hash"] and len(await devnet_txs(gateway, row["tx_hash"])) == 1
    assert await gateway.db.fetch_val(
        "SELECT COUNT(*) FROM security_events WHERE kind = 'payout_approved'") == 1
    await ledger_clean(gateway)


async def test_a_transfer_is_held_then_approved_or_rejected(make_client, make_config):
    client, merchant, _, gateway = await env(make_client, make_config, threshold_BTC="100")
    bob = await signup(client, "bob@example.com")
    bob_account = (await api(client, "GET", "/dashboard/account", bob.jwt))[1]["data"]["account"]["account_id"]
    before = await balance(client, merchant)

    async def send(amount):
        return await api(client, "POST", "/v1/transfer", merchant.merchant_key,
                         json={"to_account_id": bob_account, "coin": "BTC", "amount": amount})

    status, body = await send("0.005")  # $300: held
    assert status == 200 and body["data"]["awaiting_approval"] is True, body
    held_id = body["data"]["transfer_id"]
    assert (await balance(client, bob)).get("BTC", "0") in ("0", "0.00000000")  # the recipient has nothing yet
    assert (await balance(client, merchant))["BTC"] != before["BTC"]  # the sender's money is held: spent once
    assert (await api(client, "GET", "/dashboard/transfers", bob.jwt))[1]["data"]["transfers"] == []
    small = (await send("0.001"))[1]["data"]  # $60: under the threshold, moves at once
    assert "awaiting_approval" not in small
    status, body = await send("0.005")
    rejected_id = body["data"]["transfer_id"]
    admin = await add_member(client, gateway, merchant.merchant_id, "admin@example.com")
    status, listed = await api(client, "GET", "/dashboard/approvals", admin)
    assert [(h["kind"], h["id"]) for h in listed["data"]["held"]] == [("transfer", held_id), ("transfer", rejected_id)]
    secret = await member_totp(gateway, merchant.merchant_id, "admin@example.com")
    status, answer = await approve(client, admin, held_id, next_code(gateway, secret))
    assert status == 200 and answer["data"] == {**answer["data"], "kind": "transfer", "state": "approved"}
    assert (await balance(client, bob))["BTC"] == "0.006"
    received = await gateway.db.fetch_all("SELECT logical_key FROM webhook_events WHERE event_type LIKE 'transfer.%'")
    assert sum(1 for r in received if held_id in r["logical_key"]) == 2  # sent and received, once each
    status, _ = await reject(client, admin, rejected_id)
    assert status == 200
    status, history = await api(client, "GET", "/dashboard/transfers", merchant.jwt)
    shown = {t["transfer_id"]: t for t in history["data"]["transfers"]}
    assert shown[rejected_id]["failure_reason"] == "rejected" and "awaiting_approval" not in shown[held_id]
    assert len((await api(client, "GET", "/dashboard/transfers", bob.jwt))[1]["data"]["transfers"]) == 2
    await ledger_clean(gateway)


async def test_approval_and_its_record_commit_together(make_client, make_config):
    """The hold's record moves in the transaction that queues the payout: a failure in between undoes both,
    so a crash can never leave an approved record beside a held payout, nor a queued payout without it."""
    client, merchant, _, gateway = await env(make_client, make_config, threshold_BTC="100")
    track = (await create(client, merchant, amount="0.005"))[1]["data"]["track_id"]
    payout_id = (await payout_row(gateway, track))["id"]

    async def crash(_row):
        raise RuntimeError("the process died here")

    for move in (approve_held_payout(gateway, payout_id, crash), reject_held_payout(gateway, payout_id, "x", crash)):
        try:
            await move
        except RuntimeError:
            pass
        else:
            raise AssertionError("the failure inside the transaction must surface")
    row = await payout_row(gateway, track)
    assert row["stage"] == HELD and row["status"] == "Confirming" and await in_flight(gateway) == 500_000
    assert await gateway.db.fetch_val("SELECT state FROM approval_holds WHERE ref = :r", {"r": track}) == "awaiting"
    await ledger_clean(gateway)


class PriceSpy:
    """The price service, noting whether each read ran inside a database transaction; after the first read the
    market 'moves' to 1 USD, so a decision that read the price again would no longer hold $300."""

    def __init__(self, gateway):
        self.inner, self.gateway, self.inside, self.reads = gateway.services["prices"], gateway, [], 0

    async def price(self, symbol):
        self.inside.append(self.gateway.db.in_transaction)
        self.reads += 1
        return await self.inner.price(symbol) if self.reads == 1 else Decimal(1)

    def __getattr__(self, name):
        return getattr(self.inner, name)


async def test_the_price_is_read_before_the_reserving_transaction(make_client, make_config):
    """The policy's price is read before the transaction that locks the merchant (payout, refund, transfer),
    and the decision uses that read: a price feed that changes (or hangs) afterwards cannot sway or stall it."""
    client, merchant, devnet, gateway = await env(make_client, make_config, threshold_BTC="100")
    bob = await signup(client, "bob@example.com")
    bob_account = (await api(client, "GET", "/dashboard/account", bob.jwt))[1]["data"]["account"]["account_id"]
    paid = await fund(client, merchant, devnet, amount="0.01")
    calls = [lambda: create(client, merchant, amount="0.005"),
             lambda: api(client, "POST", f"/v1/payment/{paid}/refund", merchant.payout_key,
                         json={"destination": BTC_DEST, "amount": "0.005"}),
             lambda: api(client, "POST", "/v1/transfer", merchant.merchant_key,
                         json={"to_account_id": bob_account, "coin": "BTC", "amount": "0.005"})]
    for call in calls:
        spy = gateway.services["prices"] = PriceSpy(gateway)
        status, body = await call()
        assert status == 200 and body["data"]["awaiting_approval"] is True, body  # $300 at the first read
        assert spy.inside and not any(spy.inside), spy.inside
        gateway.services["prices"] = spy.inner
    usd = await gateway.db.fetch_all("SELECT usd FROM approval_holds ORDER BY created_at")
    assert [gateway.db.to_int(r["usd"]) for r in usd] == [300 * 10 ** 8] * 3
    await ledger_clean(gateway)


async def test_a_policy_turned_on_after_the_price_was_read_fails_closed(make_client, make_config):
    """``quote`` found no policy, so no price was read; the policy appeared before the transaction: the
    payout is held (a threshold compared with an unknown value holds), never sent unchecked."""
    client, merchant, _, gateway = await env(make_client, make_config)
    real_quote = holds.quote

    async def racing_quote(gw, merchant_id, coin):
        answer = await real_quote(gw, merchant_id, coin)
        await set_policy(gw, merchant_id, threshold_BTC="100000")  # so high only "unknown" can hold
        return answer

    holds.quote = racing_quote
    try:
        status, body = await create(client, merchant, amount="0.001")
    finally:
        holds.quote = real_quote
    assert status == 200 and body["data"]["awaiting_approval"] is True, body
    status, body = await create(client, merchant, amount="0.001")  # quote this time: $60, not held
    assert status == 200 and "awaiting_approval" not in body["data"], body
