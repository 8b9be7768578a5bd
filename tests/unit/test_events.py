"""Event ids and the transactional outbox (core/events/outbox.py), on both databases."""

from __future__ import annotations

import hashlib
import json
import secrets
from decimal import Decimal

import pytest

from orbchain.core.events.outbox import (
    CROCKFORD_ALPHABET,
    OutboxEvent,
    enqueue_event,
    enqueue_events,
    event_id_for,
    outbox_row,
    seal_body,
)
from orbchain.core.events.webhooks import deliver_due

_KEY_ACCOUNT = iter(range(1, 10**6))


async def add_merchant(gateway, *, webhook_url="https://merchant.example/hook", webhook_secret="whsec_" + "s" * 32):
    """A merchant row straight in the table: these tests are about the outbox, not signup."""
    merchant_id = "m_" + secrets.token_hex(6)
    now = gateway.now()
    await gateway.db.execute(
        "INSERT INTO merchants (id, account_id, email, password_hash, key_account, accepted_coins,"
        " webhook_url, webhook_secret, created_at, updated_at)"
        " VALUES (:id, :acct, :email, 'x', :ka, '[]', :url, :secret, :now, :now)",
        {"id": merchant_id, "acct": "OC-" + merchant_id, "email": f"{merchant_id}@example.com",
         "ka": next(_KEY_ACCOUNT), "url": webhook_url, "secret": webhook_secret, "now": now},
    )
    return merchant_id


async def count_events(gateway) -> int:
    return await gateway.db.fetch_val("SELECT COUNT(*) FROM webhook_events")


# -- event ids ---------------------------------------------------------------------


def _reference_id(key: str) -> str:
    # The same rule written differently: the first 130 bits of the digest, five at a time.
    bits = "".join(f"{byte:08b}" for byte in hashlib.sha256(("orbchain-event:" + key).encode()).digest())[:130]
    return "".join(CROCKFORD_ALPHABET[int(bits[i:i + 5], 2)] for i in range(0, 130, 5))


def test_event_ids_are_26_crockford_chars_and_deterministic():
    first = event_id_for("payment.paid:TRK123")
    assert first == event_id_for("payment.paid:TRK123")
    assert len(first) == 26 and set(first) <= set(CROCKFORD_ALPHABET)
    assert not set(first) & set("ILOU")
    assert first == _reference_id("payment.paid:TRK123")


def test_every_logical_event_gets_its_own_id():
    keys = [f"payment.paid:TRK{i}" for i in range(2000)] + ["transfer.sent:T1", "transfer.received:T1"]
    ids = {event_id_for(key) for key in keys}
    assert len(ids) == len(keys)
    assert event_id_for("transfer.sent:T1") != event_id_for("transfer.received:T1")


@pytest.mark.parametrize("key", ["", None, 5])
def test_an_empty_or_non_text_key_is_a_programming_error(key):
    with pytest.raises(ValueError):
        event_id_for(key)


# -- sealing -------------------------------------------------------------------------


def test_sealed_body_is_compact_json_with_the_envelope_fields_first():
    text = seal_body(
        {"type": "payment", "track_id": "T1", "amount": Decimal("0.00010000"), "event_id": "spoofed"},
        event_id="E" * 26, event_type="payment.paid", event_timestamp=1700000000, request_id="req-12345678",
    )
    assert text.startswith('{"event_id":"EEEEEEEEEEEEEEEEEEEEEEEEEE","event_type":"payment.paid","event_timestamp":1700000000,')
    assert " " not in text and text.isascii()
    body = json.loads(text)
    assert body["amount"] == "0.00010000" and body["request_id"] == "req-12345678"
    assert body["event_id"] == "E" * 26


def test_request_id_is_absent_when_no_request_caused_the_event():
    text = seal_body({"type": "payout"}, event_id="E" * 26, event_type="payout.failed", event_timestamp=1,
                     request_id=None)
    assert "request_id" not in json.loads(text)


@pytest.mark.parametrize("body", [{"amount": 0.1}, {"transactions": [{"amount": 1.5}]}, {"nested": {"x": 2.0}}])
def test_floats_never_reach_the_wire(body):
    with pytest.raises(TypeError, match="float"):
        seal_body(body, event_id="E" * 26, event_type="payment.paid", event_timestamp=1, request_id=None)


# -- the outbox --------------------------------------------------------------------------


async def test_enqueue_stores_the_sealed_body_due_now(gateway):
    merchant = await add_merchant(gateway)
    gateway.clock = lambda: 1_700_000_000
    event_id = await enqueue_event(
        gateway, merchant_id=merchant, event_type="payment.paid", logical_key="payment.paid:TRK1",
        body={"type": "payment", "track_id": "TRK1", "status": "Paid", "amount": "0.5"}, request_id="abcdef1234567890",
    )
    assert event_id == event_id_for("payment.paid:TRK1")
    row = await outbox_row(gateway, event_id)
    assert row["status"] == "pending" and row["attempts"] == 0 and row["next_attempt_at"] == 1_700_000_000
    body = json.loads(row["body"])
    assert body == {"event_id": event_id, "event_type": "payment.paid", "event_timestamp": 1_700_000_000,
                    "type": "payment", "track_id": "TRK1", "status": "Paid", "amount": "0.5",
                    "request_id": "abcdef1234567890"}


async def test_enqueueing_the_same_logical_event_twice_keeps_one_row(gateway):
    merchant = await add_merchant(gateway)
    gateway.clock = lambda: 1_700_000_000
    first = await enqueue_event(gateway, merchant_id=merchant, event_type="payout.confirmed",
                                logical_key="payout.confirmed:P1", body={"type": "payout", "track_id": "P1"})
    sealed = (await outbox_row(gateway, first))["body"]
    gateway.clock = lambda: 1_700_000_999  # a re-emission later must not reseal
    async with gateway.db.transaction():
        again = await enqueue_event(gateway, merchant_id=merchant, event_type="payout.confirmed",
                                    logical_key="payout.confirmed:P1", body={"type": "payout", "changed": True})
    assert again == first
    assert await count_events(gateway) == 1
    assert (await outbox_row(gateway, first))["body"] == sealed


async def test_the_outbox_row_commits_and_rolls_back_with_the_state_change(gateway):
    merchant = await add_merchant(gateway)

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        async with gateway.db.transaction():
            await gateway.db.execute("UPDATE merchants SET fee_percent = '2' WHERE id = :id", {"id": merchant})
            await enqueue_event(gateway, merchant_id=merchant, event_type="payment.paid",
                                logical_key="payment.paid:ROLLBACK", body={"type": "payment"})
            raise Boom()
    assert await count_events(gateway) == 0
    assert await gateway.db.fetch_val("SELECT fee_percent FROM merchants WHERE id = :id", {"id": merchant}) is None

    async with gateway.db.transaction():
        await gateway.db.execute("UPDATE merchants SET fee_percent = '2' WHERE id = :id", {"id": merchant})
        await enqueue_event(gateway, merchant_id=merchant, event_type="payment.paid",
                            logical_key="payment.paid:COMMIT", body={"type": "payment"})
    assert await count_events(gateway) == 1


async def test_a_key_reused_for_a_different_event_fails_loudly(gateway):
    one, two = await add_merchant(gateway), await add_merchant(gateway)
    await enqueue_event(gateway, merchant_id=one, event_type="payment.paid", logical_key="k:1", body={})
    with pytest.raises(ValueError, match="already used"):
        await enqueue_event(gateway, merchant_id=two, event_type="payment.paid", logical_key="k:1", body={})
    with pytest.raises(ValueError, match="already used"):
        await enqueue_event(gateway, merchant_id=one, event_type="payout.failed", logical_key="k:1", body={})


@pytest.mark.parametrize("event_type", ["", "paid", "Payment.Paid", "payment.", "payment paid"])
async def test_malformed_event_types_are_refused(gateway, event_type):
    merchant = await add_merchant(gateway)
    with pytest.raises(ValueError, match="event type"):
        await enqueue_event(gateway, merchant_id=merchant, event_type=event_type, logical_key="x:1", body={})


async def test_without_a_webhook_secret_the_event_is_stored_but_never_sent(gateway, caplog):
    merchant = await add_merchant(gateway, webhook_secret=None)
    event_id = await enqueue_event(gateway, merchant_id=merchant, event_type="payment.paid",
                                   logical_key="payment.paid:NOSECRET", body={"type": "payment"})
    row = await outbox_row(gateway, event_id)
    assert row["status"] == "skipped_no_secret" and row["next_attempt_at"] is None
    assert "webhook_secret is not set" in caplog.text
    log = await gateway.db.fetch_one("SELECT * FROM webhook_deliveries WHERE event_id = :id", {"id": event_id})
    assert log["attempt"] == 0 and not log["success"] and "webhook_secret" in log["error"]
    assert await deliver_due(gateway) == 0  # nothing was ever attempted


async def test_without_any_url_the_event_is_stored_as_no_url(gateway):
    merchant = await add_merchant(gateway, webhook_url=None)
    event_id = await enqueue_event(gateway, merchant_id=merchant, event_type="payment.paid",
                                   logical_key="payment.paid:NOURL", body={})
    assert (await outbox_row(gateway, event_id))["status"] == "no_url"
    assert await deliver_due(gateway) == 0


async def test_a_per_payment_url_and_a_brand_secret_override_the_merchant(gateway):
    merchant = await add_merchant(gateway, webhook_url=None, webhook_secret=None)
    event_id = await enqueue_event(gateway, merchant_id=merchant, event_type="payment.paid",
                                   logical_key="payment.paid:OVR", body={}, url="https://shop.example/cb",
                                   secret="brand-secret-0123456789")
    row = await outbox_row(gateway, event_id)
    assert row["status"] == "pending" and row["url_override"] == "https://shop.example/cb"
    assert "signing_secret" not in row  # the secret is not part of what outbox_row exposes


async def test_an_unknown_merchant_is_a_programming_error(gateway):
    with pytest.raises(LookupError):
        await enqueue_event(gateway, merchant_id="m_missing", event_type="payment.paid", logical_key="x:2", body={})


# -- batches (a transfer announces itself to both merchants) ----------------------------------------


async def test_a_batch_writes_each_event_with_its_own_destination(gateway, caplog):
    sender, recipient = await add_merchant(gateway), await add_merchant(gateway, webhook_secret=None)
    ids = await enqueue_events(gateway, [
        OutboxEvent(sender, "transfer.sent", {"type": "transfer"}, "transfer.sent:T1", request_id="r" * 16),
        OutboxEvent(recipient, "transfer.received", {"type": "transfer"}, "transfer.received:T1"),
    ])
    assert ids == [event_id_for("transfer.sent:T1"), event_id_for("transfer.received:T1")]
    sent, received = [await outbox_row(gateway, i) for i in ids]
    assert (sent["merchant_id"], sent["status"], json.loads(sent["body"])["request_id"]) == (sender, "pending", "r" * 16)
    assert (received["merchant_id"], received["status"]) == (recipient, "skipped_no_secret")
    logged = await gateway.db.fetch_all("SELECT event_id FROM webhook_deliveries")
    assert [row["event_id"] for row in logged] == [ids[1]]  # only the never-sent one, once
    assert caplog.text.count("webhook_secret is not set") == 1


async def test_a_batch_replayed_or_repeating_a_key_keeps_one_row_each(gateway):
    merchant = await add_merchant(gateway)
    event = OutboxEvent(merchant, "transfer.sent", {"type": "transfer"}, "transfer.sent:T2")
    first = await enqueue_events(gateway, [event, event])
    async with gateway.db.transaction():
        again = await enqueue_events(gateway, [event, OutboxEvent(merchant, "transfer.received", {}, "k:new")])
    assert first == [event_id_for("transfer.sent:T2")] * 2 and again[0] == first[0]
    assert await count_events(gateway) == 2


@pytest.mark.parametrize("bad", ["reused key", "unknown merchant", "undeclared type"])
async def test_a_batch_refused_writes_nothing(gateway, bad):
    merchant, other = await add_merchant(gateway), await add_merchant(gateway)
    await enqueue_event(gateway, merchant_id=merchant, event_type="payment.paid", logical_key="k:taken", body={})
    good = OutboxEvent(merchant, "transfer.sent", {}, "k:good")
    wrong = {
        "reused key": OutboxEvent(other, "payment.paid", {}, "k:taken"),
        "unknown merchant": OutboxEvent("m_missing", "transfer.received", {}, "k:unknown"),
        "undeclared type": OutboxEvent(merchant, "nobody.declared", {}, "k:undeclared"),
    }[bad]
    with pytest.raises((ValueError, LookupError)):
        await enqueue_events(gateway, [good, wrong])
    assert await count_events(gateway) == 1
