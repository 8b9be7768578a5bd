"""Webhook delivery (core/events/webhooks.py) against a real local receiver, on both databases."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import secrets
import socket
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from orbchain.core.accounts import merchants as accounts, api_keys
from orbchain.core.accounts.key_powers import ACCOUNT_HOLDER
from orbchain.core.events.outbox import enqueue_event, event_id_for, outbox_row
from orbchain.core.startup import build_gateway
from orbchain.core.infra.migrate import migrate
from orbchain.core.events import webhooks
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.events.webhooks import (
    claim_due,
    deliver_due,
    deliver_now,
    describe_schedule,
    retry_delay,
    verify_signature,
)

SECRET = "whsec_" + "k" * 40
T0 = 1_700_000_000
_KEY_ACCOUNT = iter(range(1, 10**6))


# -- helpers -------------------------------------------------------------------------


class Clock:
    """A movable gateway clock."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: int) -> None:
        self.now += seconds


class Receiver:
    """A merchant's endpoint on 127.0.0.1 that records raw requests and answers from a script."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.answers: list[int] = []  # status codes to answer with, in order; then 200
        self.delay = 0.0
        self.echo = ""
        self.arrived = asyncio.Event()  # set by the first request
        self.server: TestServer | None = None

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.requests.append({"headers": request.headers.copy(), "raw": raw, "path": request.path})
        self.arrived.set()
        if self.delay:
            await asyncio.sleep(self.delay)
        status = self.answers.pop(0) if self.answers else 200
        if status in (301, 302):
            raise web.HTTPFound("http://127.0.0.1:9/elsewhere")
        return web.Response(status=status, text=self.echo or f"answer {status}")

    async def start(self, port: int | None = None) -> None:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self.server = TestServer(app, host="127.0.0.1", port=port)
        await self.server.start_server()

    @property
    def url(self) -> str:
        return str(self.server.make_url("/hook"))

    def event_ids(self) -> list[str]:
        return [r["headers"]["X-Event-Id"] for r in self.requests]


@pytest.fixture
async def receiver():
    rx = Receiver()
    await rx.start()
    yield rx
    await rx.server.close()


@asynccontextmanager
async def open_gateway(cfg, *, run_migrations=True):
    """Another gateway (own connection pool, like another process) on the test's database."""
    gw = build_gateway(cfg, get_plugin_manager(blocked=cfg.plugins.blocked))
    await gw.db.connect()
    if run_migrations:
        await migrate(gw.db, gw.migrations)
    try:
        yield gw
    finally:
        await gw.db.disconnect()


async def add_merchant(gateway, *, webhook_url=None, webhook_secret=SECRET):
    merchant_id = "m_" + secrets.token_hex(6)
    await gateway.db.execute(
        "INSERT INTO merchants (id, account_id, email, password_hash, key_account, accepted_coins,"
        " webhook_url, webhook_secret, created_at, updated_at)"
        " VALUES (:id, :acct, :email, 'x', :ka, '[]', :url, :secret, :now, :now)",
        {"id": merchant_id, "acct": "OC-" + merchant_id, "email": f"{merchant_id}@example.com",
         "ka": next(_KEY_ACCOUNT), "url": webhook_url, "secret": webhook_secret, "now": gateway.now()},
    )
    return merchant_id


async def paid(gateway, merchant_id, track_id="TRK1", **kwargs):
    body = {"type": "payment", "track_id": track_id, "status": "Paid", "amount": "0.00150000",
            "currency": "BTC", "transactions": [{"tx_hash": "ab" * 32, "amount": "0.00150000"}]}
    return await enqueue_event(gateway, merchant_id=merchant_id, event_type="payment.paid", body=body,
                               logical_key=f"payment.paid:{track_id}", **kwargs)


async def logs(gateway, event_id):
    return await gateway.db.fetch_all(
        "SELECT * FROM webhook_deliveries WHERE event_id = :id ORDER BY id", {"id": event_id})


@pytest.fixture
def clock(gateway):
    gateway.clock = Clock()
    return gateway.clock


# -- signing and the wire format ------------------------------------------------------------


async def test_a_delivery_carries_the_spec_headers_and_a_verifiable_signature(gateway, clock, receiver):
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    event_id = await paid(gateway, merchant, request_id="req_0123456789")
    assert await deliver_due(gateway) == 1

    [request] = receiver.requests
    headers, raw = request["headers"], request["raw"]
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Event-Id"] == event_id == event_id_for("payment.paid:TRK1")
    assert headers["X-Event-Type"] == "payment.paid"
    assert headers["X-Event-Timestamp"] == str(T0)
    assert headers["X-Request-Id"] == "req_0123456789"
    expected = hmac.new(SECRET.encode(), raw, hashlib.sha512).hexdigest()
    assert hmac.compare_digest(headers["HMAC"], expected)
    assert headers["HMAC"] == headers["HMAC"].lower() and len(headers["HMAC"]) == 128
    assert verify_signature(raw, SECRET, headers["HMAC"])
    assert not verify_signature(raw, "another-secret", headers["HMAC"])
    assert not verify_signature(raw + b" ", SECRET, headers["HMAC"])

    body = json.loads(raw)
    assert body["event_id"] == event_id and body["event_type"] == "payment.paid"
    assert body["event_timestamp"] == T0 and body["request_id"] == "req_0123456789"
    assert body["amount"] == "0.00150000" and body["transactions"][0]["amount"] == "0.00150000"

    row = await outbox_row(gateway, event_id)
    assert row["status"] == "delivered" and row["attempts"] == 1 and row["delivered_at"] == T0
    [log] = await logs(gateway, event_id)
    assert log["success"] and log["attempt"] == 1 and log["status_code"] == 200 and log["error"] is None
    assert log["url"] == receiver.url and log["response_preview"] == "answer 200"
    assert log["payload_preview"] == raw.decode()[:500]


async def test_no_request_id_header_when_no_request_caused_the_event(gateway, clock, receiver):
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    await paid(gateway, merchant)
    await deliver_due(gateway)
    [request] = receiver.requests
    assert "X-Request-Id" not in request["headers"] and "request_id" not in json.loads(request["raw"])


def _hmac_sha512(key: str, raw: bytes) -> str:
    """The signature recomputed here with hmac and hashlib, not with the product's sign/verify."""
    return hmac.new(key.encode("utf-8"), raw, hashlib.sha512).hexdigest()


async def test_the_api_keys_are_never_the_signing_key(gateway, clock, receiver):
    """A brand's own secret signs its webhooks; with none, the merchant's webhook_secret; never an API key.

    The HMAC header must equal HMAC-SHA512 of the raw body under that secret,
    computed here with ``hmac``, and must differ from the HMAC under each of
    the merchant's keys (the three legacy ones and a scoped one). The old test
    verified with the product's own verify_signature and never tried a key.
    Break tried: delivery signing with another merchant column than
    webhook_secret fails here.
    """
    signed_up = await accounts.sign_up(gateway, "hooks@example.com", "s3cret-pass")
    merchant = signed_up.merchant_id
    secret = (await accounts.set_webhook(gateway, merchant, receiver.url))["webhook_secret"]
    scoped = await api_keys.create_scoped_key(gateway, merchant,
                                              api_keys.ScopedKeyRequest(label="k", scopes=["payment:read"]),
                                              issuer=ACCOUNT_HOLDER)
    keys = [*signed_up.api_keys.values(), scoped["api_key"]]
    assert len(keys) == 4 and secret not in keys
    await paid(gateway, merchant, "TRK-BRAND", secret="brand-secret-0123456789")
    await paid(gateway, merchant, "TRK-PLAIN")
    await deliver_due(gateway)
    by_track = {json.loads(r["raw"])["track_id"]: r for r in receiver.requests}
    assert set(by_track) == {"TRK-BRAND", "TRK-PLAIN"}
    for track, signer in (("TRK-BRAND", "brand-secret-0123456789"), ("TRK-PLAIN", secret)):
        raw, header = by_track[track]["raw"], by_track[track]["headers"]["HMAC"]
        assert header == _hmac_sha512(signer, raw)
        for key in keys:
            assert header != _hmac_sha512(key, raw), f"{track} is signed with an API key"


async def test_a_per_payment_callback_url_wins_over_the_merchant_url(gateway, clock, receiver):
    merchant = await add_merchant(gateway, webhook_url="http://127.0.0.1:9/never")
    await paid(gateway, merchant, url=receiver.url)
    await deliver_due(gateway)
    assert len(receiver.requests) == 1


async def test_pending_retries_follow_a_changed_merchant_url(gateway, clock, receiver):
    merchant = await add_merchant(gateway, webhook_url="http://127.0.0.1:9/typo")
    event_id = await paid(gateway, merchant)
    await deliver_due(gateway)
    await gateway.db.execute("UPDATE merchants SET webhook_url = :u WHERE id = :id", {"u": receiver.url, "id": merchant})
    clock.advance(retry_delay(1))
    await deliver_due(gateway)
    assert receiver.event_ids() == [event_id]


# -- retries and backoff ----------------------------------------------------------------------


def test_the_retry_schedule():
    assert [retry_delay(n) for n in range(1, 5)] == [10, 60, 600, 3600]
    assert describe_schedule(5) == {1: 0, 2: 10, 3: 70, 4: 670, 5: 4270}
    assert retry_delay(5) == 7200 and retry_delay(30) == 86_400


async def test_a_receiver_that_fails_then_recovers_gets_identical_bytes_and_signature(gateway, clock, receiver):
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    receiver.answers = [500, 503]
    event_id = await paid(gateway, merchant, request_id="req_abcdefgh")

    assert await deliver_due(gateway) == 1  # attempt 1 at T0: 500
    assert await deliver_due(gateway) == 0  # not due again yet
    clock.advance(9)
    assert await deliver_due(gateway) == 0
    clock.advance(1)
    assert await deliver_due(gateway) == 1  # attempt 2 at T0+10: 503
    clock.advance(59)
    assert await deliver_due(gateway) == 0
    clock.advance(1)
    assert await deliver_due(gateway) == 1  # attempt 3 at T0+70: 200

    assert receiver.event_ids() == [event_id] * 3
    assert len({r["raw"] for r in receiver.requests}) == 1
    assert len({r["headers"]["HMAC"] for r in receiver.requests}) == 1
    assert len({r["headers"]["X-Event-Timestamp"] for r in receiver.requests}) == 1
    history = await logs(gateway, event_id)
    assert [(h["attempt"], h["status_code"], bool(h["success"])) for h in history] == [
        (1, 500, False), (2, 503, False), (3, 200, True)]
    assert history[0]["error"] == "receiver answered HTTP 500" and history[0]["response_preview"] == "answer 500"
    assert [h["created_at"] for h in history] == [T0, T0 + 10, T0 + 70]
    assert (await outbox_row(gateway, event_id))["status"] == "delivered"


async def test_an_unreachable_receiver_gets_the_event_when_it_comes_back(gateway, clock):
    with socket.socket() as sock:  # a port nobody listens on (yet)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    merchant = await add_merchant(gateway, webhook_url=f"http://127.0.0.1:{port}/hook")
    event_id = await paid(gateway, merchant)
    assert await deliver_due(gateway) == 1
    clock.advance(10)
    assert await deliver_due(gateway) == 1
    history = await logs(gateway, event_id)
    assert all(h["status_code"] is None and h["error"].startswith("connection failed") for h in history)

    receiver = Receiver()
    await receiver.start(port=port)
    try:
        clock.advance(60)
        assert await deliver_due(gateway) == 1
    finally:
        await receiver.server.close()
    [request] = receiver.requests
    assert request["headers"]["X-Event-Id"] == event_id
    assert request["raw"] == (await outbox_row(gateway, event_id))["body"].encode()
    assert verify_signature(request["raw"], SECRET, request["headers"]["HMAC"])
    assert (await outbox_row(gateway, event_id))["attempts"] == 3


async def test_five_failed_attempts_end_in_failed(gateway, clock, receiver):
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    receiver.answers = [500] * 10
    event_id = await paid(gateway, merchant)
    schedule = describe_schedule(5)
    for attempt in range(1, 6):
        clock.now = T0 + schedule[attempt]
        assert await deliver_due(gateway) == 1, attempt
    row = await outbox_row(gateway, event_id)
    assert row["status"] == "failed" and row["attempts"] == 5 and row["next_attempt_at"] is None
    clock.advance(10 * 86_400)
    assert await deliver_due(gateway) == 0
    assert len(receiver.requests) == 5
    assert [h["attempt"] for h in await logs(gateway, event_id)] == [1, 2, 3, 4, 5]


async def test_max_attempts_comes_from_config(make_config, receiver):
    async with open_gateway(make_config(webhooks={"max_attempts": 2})) as gw:
        gw.clock = Clock()
        merchant = await add_merchant(gw, webhook_url=receiver.url)
        receiver.answers = [500] * 5
        event_id = await paid(gw, merchant)
        await deliver_due(gw)
        gw.clock.advance(10)
        await deliver_due(gw)
        assert (await outbox_row(gw, event_id))["status"] == "failed"
        assert len(receiver.requests) == 2


@pytest.mark.parametrize("status", [199, 302, 400, 404, 410])
async def test_only_2xx_counts_as_delivered(gateway, clock, receiver, status):
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    receiver.answers = [status if status != 199 else 500]
    event_id = await paid(gateway, merchant)
    await deliver_due(gateway)
    row = await outbox_row(gateway, event_id)
    assert row["status"] == "pending" and row["next_attempt_at"] == T0 + 10
    assert len(receiver.requests) == 1  # a redirect is not followed


@pytest.mark.parametrize("status", [200, 201, 202, 204, 299])
async def test_any_2xx_is_success(gateway, clock, receiver, status):
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    receiver.answers = [status]
    event_id = await paid(gateway, merchant)
    await deliver_due(gateway)
    assert (await outbox_row(gateway, event_id))["status"] == "delivered"


async def test_a_slow_receiver_times_out_and_is_retried(make_config, receiver):
    async with open_gateway(make_config(webhooks={"timeout_seconds": 1})) as gw:
        gw.clock = Clock()
        merchant = await add_merchant(gw, webhook_url=receiver.url)
        receiver.delay = 3
        event_id = await paid(gw, merchant)
        await deliver_due(gw)
        [log] = await logs(gw, event_id)
        assert log["error"] == "timeout after 1s" and not log["success"]
        assert (await outbox_row(gw, event_id))["status"] == "pending"


async def test_a_secret_echoed_by_the_receiver_is_redacted_from_the_log(gateway, clock, receiver):
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    receiver.echo = f"got it, your secret is {SECRET}"
    event_id = await paid(gateway, merchant)
    await deliver_due(gateway)
    [log] = await logs(gateway, event_id)
    assert SECRET not in log["response_preview"] and "[redacted]" in log["response_preview"]


async def test_a_secret_removed_after_enqueue_stops_delivery(gateway, clock, receiver):
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    event_id = await paid(gateway, merchant)
    await gateway.db.execute("UPDATE merchants SET webhook_secret = NULL WHERE id = :id", {"id": merchant})
    assert await deliver_due(gateway) == 1
    assert receiver.requests == []
    assert (await outbox_row(gateway, event_id))["status"] == "skipped_no_secret"


async def test_an_account_without_a_webhook_url_logs_nothing_per_event(gateway, clock, caplog):
    """Issue 49 item 10: a merchant with neither URL nor secret logged a WARNING for every event."""
    merchant = await add_merchant(gateway, webhook_url=None, webhook_secret=None)
    with caplog.at_level(logging.WARNING, logger="orbchain"):
        events = [await paid(gateway, merchant, track_id=f"TRK{n}") for n in range(3)]
        await deliver_due(gateway)
    assert [r.getMessage() for r in caplog.records if merchant in r.getMessage()] == []
    for event_id in events:
        assert (await outbox_row(gateway, event_id))["status"] == "no_url"
        assert [log["error"] for log in await logs(gateway, event_id)] == ["not sent: no webhook URL is configured"]


async def test_a_url_without_a_secret_is_said_once_and_logged_per_event(gateway, clock, receiver, caplog):
    merchant = await add_merchant(gateway, webhook_url=receiver.url, webhook_secret=None)
    with caplog.at_level(logging.WARNING, logger="orbchain"):
        events = [await paid(gateway, merchant, track_id=f"TRK{n}") for n in range(3)]
        await deliver_due(gateway)
    said = [r.getMessage() for r in caplog.records if merchant in r.getMessage()]
    assert len(said) == 1 and "has a webhook URL but webhook_secret is not set" in said[0], said
    assert receiver.requests == []
    for event_id in events:
        assert [log["error"] for log in await logs(gateway, event_id)] == ["not sent: webhook_secret is not set"]


# -- SSRF -------------------------------------------------------------------------------------------


async def test_a_private_url_is_refused_unless_the_operator_allows_it(make_config, receiver):
    async with open_gateway(make_config(webhooks={"allow_private_urls": False})) as gw:
        gw.clock = Clock()
        merchant = await add_merchant(gw, webhook_url=receiver.url)
        event_id = await paid(gw, merchant)
        assert await deliver_due(gw) == 1
        assert receiver.requests == []
        [log] = await logs(gw, event_id)
        assert not log["success"] and log["status_code"] is None
        assert log["error"] == "refused: URL points to a private or internal address"
        assert (await outbox_row(gw, event_id))["status"] == "pending"


# -- immediate delivery and the job -------------------------------------------------------------------


async def test_deliver_now_sends_at_once_and_the_tick_does_not_resend(gateway, clock, receiver):
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    event_id = await paid(gateway, merchant)
    assert await deliver_now(gateway, event_id) is True
    assert await deliver_now(gateway, event_id) is False
    assert await deliver_due(gateway) == 0
    assert receiver.event_ids() == [event_id]


async def test_deliver_now_on_a_failing_receiver_leaves_it_to_the_tick(gateway, clock, receiver):
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    receiver.answers = [500]
    event_id = await paid(gateway, merchant)
    assert await deliver_now(gateway, event_id) is False
    clock.advance(10)
    assert await deliver_due(gateway) == 1
    assert (await outbox_row(gateway, event_id))["status"] == "delivered"


async def test_the_delivery_job_is_registered_with_the_configured_tick(make_config):
    gw = build_gateway(make_config(webhooks={"tick_seconds": 7}), get_plugin_manager(blocked=()))
    job = gw.jobs["webhooks.deliver"]
    assert job.func is deliver_due and job.seconds == 7


async def test_an_interrupted_last_attempt_ends_in_failed(gateway, clock):
    merchant = await add_merchant(gateway, webhook_url="http://127.0.0.1:9/hook")
    event_id = await paid(gateway, merchant)
    await gateway.db.execute("UPDATE webhook_events SET attempts = 4 WHERE event_id = :id", {"id": event_id})
    [claim] = await claim_due(gateway)  # the worker holding attempt 5 dies here
    assert claim.attempt == 5 and SECRET not in repr(claim)
    assert await deliver_due(gateway) == 0
    clock.advance(3600)  # the lease ran out
    assert await deliver_due(gateway) == 0
    row = await outbox_row(gateway, event_id)
    assert row["status"] == "failed" and row["last_error"] == "the last attempt was interrupted"


async def test_an_attempt_cut_short_by_a_stop_is_given_back_and_then_delivered_once(gateway, clock, receiver):
    """Issue 34: a stop cancels a delivery still waiting for its receiver. The claim is given back with the
    attempt uncounted, even the last one (which a crash, above, ends in failed): the event is due at once
    and the next tick delivers it, once. Before, it stayed claimed until its lease and then failed."""
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    event_id = await paid(gateway, merchant)
    await gateway.db.execute("UPDATE webhook_events SET attempts = 4 WHERE event_id = :id", {"id": event_id})
    receiver.delay = 3600  # a receiver that never answers
    tick = asyncio.create_task(deliver_due(gateway))
    await asyncio.wait_for(receiver.arrived.wait(), 30)
    tick.cancel()
    with pytest.raises(asyncio.CancelledError):
        await tick
    row = await gateway.db.fetch_one("SELECT * FROM webhook_events WHERE event_id = :id", {"id": event_id})
    assert (row["status"], row["attempts"], row["claim_token"]) == ("pending", 4, None)
    assert row["next_attempt_at"] <= gateway.now() and await logs(gateway, event_id) == []
    receiver.delay = 0
    assert await deliver_due(gateway) == 1 and await deliver_due(gateway) == 0
    row = await outbox_row(gateway, event_id)
    assert (row["status"], row["attempts"]) == ("delivered", 5)
    assert receiver.event_ids() == [event_id, event_id]  # the cut-off attempt and the delivery: same event id


async def test_a_stopping_gateway_starts_no_new_batch(gateway, clock, receiver):
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    event_id = await paid(gateway, merchant)
    gateway.stop.begin("SIGTERM")
    assert await deliver_due(gateway) == 0  # left for the next tick, after the restart
    assert (await outbox_row(gateway, event_id))["status"] == "pending" and receiver.requests == []


async def test_a_late_worker_cannot_overwrite_a_newer_claim(gateway, clock, receiver):
    from orbchain.core.events.webhooks import Outcome, record_attempt

    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    event_id = await paid(gateway, merchant)
    [stale] = await claim_due(gateway)
    clock.advance(3600)  # lease expired: another worker claims and delivers
    assert await deliver_due(gateway) == 1
    assert await record_attempt(gateway, stale, Outcome(False, error="late")) is None
    assert (await outbox_row(gateway, event_id))["status"] == "delivered"


# -- concurrency --------------------------------------------------------------------------------------


async def test_concurrent_ticks_never_send_one_event_twice(gateway, config, receiver, monkeypatch):
    monkeypatch.setattr(webhooks, "BATCH_SIZE", 3)  # small batches, so the workers interleave
    receiver.delay = 0.02
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    ids = [await paid(gateway, merchant, f"TRK-{i}") for i in range(40)]
    async with open_gateway(config, run_migrations=False) as other, open_gateway(config, run_migrations=False) as third:
        counts = await asyncio.gather(deliver_due(gateway), deliver_due(gateway), deliver_due(other),
                                      deliver_due(third))
    assert sum(counts) == 40 and sum(1 for n in counts if n) >= 2
    assert sorted(receiver.event_ids()) == sorted(ids)
    statuses = await gateway.db.fetch_all("SELECT status, attempts FROM webhook_events")
    assert {(row["status"], row["attempts"]) for row in statuses} == {("delivered", 1)}
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM webhook_deliveries") == 40


async def test_deliver_now_racing_the_tick_sends_once(gateway, config, receiver):
    receiver.delay = 0.02
    merchant = await add_merchant(gateway, webhook_url=receiver.url)
    ids = [await paid(gateway, merchant, f"RACE-{i}") for i in range(10)]
    async with open_gateway(config, run_migrations=False) as other:
        await asyncio.gather(deliver_due(other), *(deliver_now(gateway, event_id) for event_id in ids))
    assert sorted(receiver.event_ids()) == sorted(ids)


# -- GET /dashboard/webhook-logs ---------------------------------------------------------------------

LOG_FIELDS = {"id", "event_id", "event_type", "url", "status_code", "success", "attempt", "error",
              "payload_preview", "response_preview", "created_at"}


async def signed_up(client, email):
    response = await client.post("/dashboard/auth/signup", json={"email": email, "password": "correct horse 1"})
    assert response.status == 200, await response.text()
    data = (await response.json())["data"]
    return data["merchant_id"], {"Authorization": f"Bearer {data['token']}"}


@pytest.fixture
async def dashboard(make_config, make_client):
    # No scheduler: the tests drive delivery themselves.
    return await make_client(make_config(scheduler={"enabled": False}))


async def test_webhook_logs_list_the_callers_attempts_newest_first(dashboard, receiver):
    from orbchain.web.keys import GATEWAY

    gw = dashboard.app[GATEWAY]
    gw.clock = Clock()
    merchant, auth = await signed_up(dashboard, "logs-a@example.com")
    await gw.db.execute("UPDATE merchants SET webhook_url = :u, webhook_secret = :s WHERE id = :id",
                        {"u": receiver.url, "s": SECRET, "id": merchant})
    receiver.answers = [500]
    first = await paid(gw, merchant, "TRK-A")
    await deliver_due(gw)  # attempt 1 of TRK-A fails
    second = await paid(gw, merchant, "TRK-B")
    gw.clock.advance(10)
    await deliver_due(gw)  # TRK-A attempt 2 and TRK-B attempt 1 succeed

    response = await dashboard.get("/dashboard/webhook-logs", headers=auth)
    assert response.status == 200
    body = await response.json()
    assert body["status"] == 200 and body["error"] is None and body["version"] == "2.0.0"
    data = body["data"]
    assert data["total"] == 3 and data["limit"] == 50 and data["offset"] == 0
    logs = data["logs"]
    assert all(set(row) == LOG_FIELDS for row in logs)
    assert [int(row["id"]) for row in logs] == sorted((int(row["id"]) for row in logs), reverse=True)
    oldest = logs[-1]
    assert oldest["event_id"] == first and oldest["event_type"] == "payment.paid"
    assert oldest["success"] is False and oldest["status_code"] == 500 and oldest["attempt"] == 1
    assert oldest["error"] == "receiver answered HTTP 500" and oldest["url"] == receiver.url
    assert oldest["created_at"] == T0 and isinstance(oldest["id"], str)
    assert json.loads(oldest["payload_preview"])["track_id"] == "TRK-A"
    assert {row["event_id"] for row in logs[:2]} == {first, second} and all(row["success"] for row in logs[:2])
    assert SECRET not in await response.text()

    page = (await (await dashboard.get("/dashboard/webhook-logs?limit=1&offset=2", headers=auth)).json())["data"]
    assert page["total"] == 3 and page["limit"] == 1 and page["offset"] == 2
    assert [row["id"] for row in page["logs"]] == [oldest["id"]]


async def test_webhook_logs_of_another_merchant_are_not_visible(dashboard, receiver):
    from orbchain.web.keys import GATEWAY

    gw = dashboard.app[GATEWAY]
    owner, _ = await signed_up(dashboard, "owner@example.com")
    await gw.db.execute("UPDATE merchants SET webhook_url = :u, webhook_secret = :s WHERE id = :id",
                        {"u": receiver.url, "s": SECRET, "id": owner})
    await paid(gw, owner)
    await deliver_due(gw)
    _, stranger = await signed_up(dashboard, "stranger@example.com")
    data = (await (await dashboard.get("/dashboard/webhook-logs", headers=stranger)).json())["data"]
    assert data == {"logs": [], "total": 0, "limit": 50, "offset": 0}


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer not-a-jwt"}, {"merchant_api_key": "ok_m_x"}])
async def test_webhook_logs_need_a_dashboard_token(dashboard, headers):
    response = await dashboard.get("/dashboard/webhook-logs", headers=headers)
    assert response.status == 401
    body = await response.json()
    assert body["data"] is None and body["status"] == 401


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "limit=abc", "offset=-1", "limit=1.5"])
async def test_webhook_logs_reject_bad_paging(dashboard, query):
    _, auth = await signed_up(dashboard, "paging@example.com")
    response = await dashboard.get(f"/dashboard/webhook-logs?{query}", headers=auth)
    assert response.status == 400
    body = await response.json()
    assert body["error"]["type"] == "validation" and body["data"] is None


async def test_webhook_logs_accept_the_maximum_limit(dashboard):
    _, auth = await signed_up(dashboard, "max@example.com")
    data = (await (await dashboard.get("/dashboard/webhook-logs?limit=200", headers=auth)).json())["data"]
    assert data["limit"] == 200 and data["logs"] == []
