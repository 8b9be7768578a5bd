"""Internal transfers (SPEC 4.4, 4.12, 6.3-6.4) through the API, on both databases."""

from __future__ import annotations

import pyotp
import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.events.outbox import event_id_for
from orbchain.core.events.webhooks import deliver_due

from .support import Devnet, WebhookReceiver, api, signup

TRANSFER_KEYS = {"transfer_id", "to_account_id", "coin", "amount", "created_at"}
UNKNOWN_ACCOUNT = "ORB-" + "1" * 20


@pytest.fixture
async def env(make_client, make_config):
    client = await make_client(make_config(rate_limits={"write_per_minute": 100000}, scheduler={"enabled": False}))
    return client, Devnet(client)


async def account_id(client, merchant) -> str:
    return (await api(client, "GET", "/dashboard/account", merchant.jwt))[1]["data"]["account"]["account_id"]


async def fund(client, devnet, merchant, amount="0.01", coin="BTC") -> None:
    """Pay a white-label payment on devnet and confirm it (1 % platform fee)."""
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": coin, "amount": amount})
    assert status == 200, body
    await devnet.pay(coin, body["data"]["address"], amount)
    await devnet.mine(devnet.gateway.coins.require(coin).default_threshold)


async def balances(client, merchant) -> dict[str, str]:
    body = (await api(client, "GET", "/v1/general/account/balance", merchant.general_key))[1]
    return {b["coin"]: b["amount"] for b in body["data"]["balances"]}


async def send(client, merchant, to, amount, coin="BTC", **extra):
    return await api(client, "POST", "/v1/transfer", merchant.merchant_key,
                     json={"to_account_id": to, "coin": coin, "amount": amount, **extra})


async def funded_pair(env):
    client, devnet = env
    alice = await signup(client, "alice@example.com")
    bob = await signup(client, "bob@example.com")
    await fund(client, devnet, alice)
    return alice, bob, await account_id(client, bob)


# -- happy paths ---------------------------------------------------------------------------------


async def test_v1_transfer_moves_money_at_once_and_recipient_can_spend_it(env):
    client, devnet = env
    alice, bob, bob_account = await funded_pair(env)
    carol = await signup(client, "carol@example.com")
    status, body = await send(client, alice, bob_account, "0.004")
    assert status == 200, body
    assert set(body) == {"data"}  # data only (SPEC 2.1)
    data = body["data"]
    assert set(data) == TRANSFER_KEYS and data["transfer_id"].startswith("trf_")
    assert (data["to_account_id"], data["coin"], data["amount"]) == (bob_account, "BTC", "0.004")
    assert await balances(client, alice) == {"BTC": "0.0059"}
    assert await balances(client, bob) == {"BTC": "0.004"}
    # Zero confirmations, zero fee: Bob passes all of it on immediately.
    status, body = await send(client, bob, await account_id(client, carol), "0.004")
    assert status == 200, body
    assert await balances(client, bob) == {}
    assert await balances(client, carol) == {"BTC": "0.004"}
    txn = await ledger.find_transaction(devnet.gateway.db, f"transfer:{data['transfer_id']}")
    assert txn.kind == "transfer" and sorted(p.amount for p in txn.postings) == [-400000, 400000]
    assert (await ledger.check_ledger(devnet.gateway.db)).ok


async def test_dashboard_transfer_and_history_from_both_sides(env):
    client, devnet = env
    alice, bob, bob_account = await funded_pair(env)
    alice_account = await account_id(client, alice)
    status, first = await api(client, "POST", "/dashboard/transfer", alice.jwt,
                              json={"to_account_id": bob_account, "coin": "btc", "amount": "0.001"})
    assert status == 200 and set(first) == {"data"} and set(first["data"]) == TRANSFER_KEYS, first
    status, second = await send(client, alice, bob_account, "0.002")
    assert status == 200
    status, back = await api(client, "POST", "/dashboard/transfer", bob.jwt,
                             json={"to_account_id": alice_account, "coin": "BTC", "amount": "0.0005"})
    assert status == 200
    assert await balances(client, bob) == {"BTC": "0.0025"}

    status, body = await api(client, "GET", "/dashboard/transfers", alice.jwt)
    assert status == 200 and body["status"] == 200
    page = body["data"]
    assert (page["total"], page["limit"], page["offset"]) == (3, 100, 0)
    rows = page["transfers"]
    assert [r["transfer_id"] for r in rows] == [back["data"]["transfer_id"], second["data"]["transfer_id"],
                                                first["data"]["transfer_id"]]  # newest first
    assert [r["direction"] for r in rows] == ["received", "sent", "sent"]
    assert rows[0] == {"transfer_id": back["data"]["transfer_id"], "direction": "received",
                       "from_account_id": bob_account, "to_account_id": alice_account, "coin": "BTC",
                       "amount": "0.0005", "created_at": back["data"]["created_at"]}
    bob_rows = (await api(client, "GET", "/dashboard/transfers", bob.jwt))[1]["data"]["transfers"]
    assert [r["direction"] for r in bob_rows] == ["sent", "received", "received"]

    status, body = await api(client, "GET", "/dashboard/transfers", alice.jwt, params={"limit": 1, "offset": 1})
    assert status == 200 and body["data"]["total"] == 3
    assert [r["transfer_id"] for r in body["data"]["transfers"]] == [second["data"]["transfer_id"]]
    assert (await api(client, "GET", "/dashboard/transfers", alice.jwt, params={"limit": 500}))[0] == 200
    for bad in ({"limit": 501}, {"limit": 0}, {"offset": -1}, {"limit": "x"}):
        status, body = await api(client, "GET", "/dashboard/transfers", alice.jwt, params=bad)
        assert status == 400 and body["error"]["type"] == "validation", bad
    carol = await signup(client, "carol@example.com")
    empty = (await api(client, "GET", "/dashboard/transfers", carol.jwt))[1]["data"]
    assert empty == {"transfers": [], "total": 0, "limit": 100, "offset": 0}


# -- named errors --------------------------------------------------------------------------------


async def test_every_named_error_code(env):
    client, devnet = env
    alice, bob, bob_account = await funded_pair(env)
    alice_account = await account_id(client, alice)

    status, body = await send(client, alice, alice_account, "0.001")
    assert (status, body["error"]["code"]) == (400, "self_transfer_forbidden")
    status, body = await send(client, alice, UNKNOWN_ACCOUNT, "0.001")
    assert (status, body["error"]["code"]) == (400, "recipient_not_found")
    status, body = await send(client, alice, bob_account, "0.0099001")
    assert (status, body["error"]["code"], body["message"]) == (400, "insufficient_balance", "insufficient balance")
    status, body = await send(client, alice, bob_account, "1", coin="ETH")  # a coin never held
    assert (status, body["error"]["code"]) == (400, "insufficient_balance")
    await devnet.gateway.db.execute("UPDATE merchants SET enabled = :f WHERE id = :id",
                                    {"f": False, "id": bob.merchant_id})
    status, body = await send(client, alice, bob_account, "0.001")
    assert (status, body["error"]["code"]) == (400, "recipient_disabled")
    # Errors carry the full envelope; nothing moved.
    assert body["data"] is None and body["version"] == "2.0.0"
    assert await balances(client, alice) == {"BTC": "0.0099"}
    assert (await api(client, "GET", "/dashboard/transfers", alice.jwt))[1]["data"]["total"] == 0


async def test_scoped_keys_coin_allowlist_and_scope(env):
    client, devnet = env
    alice, bob, bob_account = await funded_pair(env)

    async def scoped(scopes, coins):
        status, body = await api(client, "POST", "/dashboard/api-keys", alice.jwt,
                                 json={"label": "k", "scopes": scopes, "coin_allowlist": coins})
        assert status == 200, body
        return {"merchant_api_key": body["data"]["api_key"]}

    ltc_only = await scoped(["transfer:create"], ["LTC"])
    body = {"to_account_id": bob_account, "coin": "BTC", "amount": "0.001"}
    status, answer = await api(client, "POST", "/v1/transfer", ltc_only, json=body)
    assert (status, answer["error"]["code"]) == (403, "coin_not_allowed")
    status, answer = await api(client, "POST", "/v1/transfer", await scoped(["payment:create"], []), json=body)
    assert status == 403
    status, answer = await api(client, "POST", "/v1/transfer", await scoped(["transfer:create"], ["BTC"]), json=body)
    assert status == 200, answer
    assert await balances(client, bob) == {"BTC": "0.001"}


# -- two-factor ----------------------------------------------------------------------------------


async def test_totp_required_on_every_transfer_when_enabled(env):
    client, devnet = env
    alice, bob, bob_account = await funded_pair(env)
    gateway = devnet.gateway
    now = [gateway.now()]
    gateway.clock = lambda: now[0]
    secret = (await api(client, "POST", "/dashboard/mfa/setup", alice.jwt))[1]["data"]["secret"]
    totp = pyotp.TOTP(secret)
    status, body = await api(client, "POST", "/dashboard/mfa/verify", alice.jwt, json={"code": totp.at(now[0])})
    assert status == 200, body

    now[0] += 30
    for extra in ({}, {"totp_code": "000000" if totp.at(now[0]) != "000000" else "111111"}, {"totp_code": "abc"}):
        status, body = await send(client, alice, bob_account, "0.001", **extra)
        assert (status, body["message"]) == (401, "invalid TOTP code"), extra
        status, body = await api(client, "POST", "/dashboard/transfer", alice.jwt,
                                 json={"to_account_id": bob_account, "coin": "BTC", "amount": "0.001", **extra})
        assert (status, body["message"]) == (401, "invalid TOTP code"), extra
    assert await balances(client, bob) == {}

    code = totp.at(now[0])
    status, body = await send(client, alice, bob_account, "0.001", totp_code=code, idempotency_key="tfa-key-0001")
    assert status == 200, body
    # The replay guard: the same code cannot authorise a second transfer ...
    status, body = await send(client, alice, bob_account, "0.001", totp_code=code)
    assert status == 401
    # ... but a retry of the same request returns the original without a new code.
    status, replay = await send(client, alice, bob_account, "0.001", totp_code=code, idempotency_key="tfa-key-0001")
    assert status == 200 and replay["data"]["idempotent"] is True
    now[0] += 30
    status, body = await api(client, "POST", "/dashboard/transfer", alice.jwt,
                             json={"to_account_id": bob_account, "coin": "BTC", "amount": "0.001",
                                   "totp_code": int(totp.at(now[0]))})  # a JSON number works too
    assert status == 200, body
    assert await balances(client, bob) == {"BTC": "0.002"}
    # The recipient's 2FA does not matter, nor does a code sent without 2FA.
    status, body = await send(client, bob, await account_id(client, alice), "0.001", totp_code="123456")
    assert status == 200, body


# -- idempotency ----------------------------------------------------------------------------------


async def test_idempotency_key_replays_and_conflicts(env):
    client, devnet = env
    alice, bob, bob_account = await funded_pair(env)
    status, first = await send(client, alice, bob_account, "0.001", idempotency_key="order-1234")
    assert status == 200 and "idempotent" not in first["data"]
    status, again = await send(client, alice, bob_account, "0.0010", idempotency_key="order-1234")
    assert status == 200 and again["data"] == {**first["data"], "idempotent": True}
    # The header works the same, and shares the namespace with the body field and the dashboard.
    with_header = {**alice.merchant_key, "X-Idempotency-Key": "order-1234"}
    status, header = await api(client, "POST", "/v1/transfer", with_header,
                               json={"to_account_id": bob_account, "coin": "BTC", "amount": "0.001"})
    assert status == 200 and header["data"]["transfer_id"] == first["data"]["transfer_id"]
    status, dash = await api(client, "POST", "/dashboard/transfer", {**alice.jwt, "X-Idempotency-Key": "order-1234"},
                             json={"to_account_id": bob_account, "coin": "BTC", "amount": "0.001"})
    assert status == 200 and dash["data"]["idempotent"] is True
    assert await balances(client, bob) == {"BTC": "0.001"}

    for changed in ({"amount": "0.002"}, {"coin": "LTC"}, {"to_account_id": await account_id(client, alice)}):
        body = {"to_account_id": bob_account, "coin": "BTC", "amount": "0.001", "idempotency_key": "order-1234",
                **changed}
        status, answer = await api(client, "POST", "/v1/transfer", alice.merchant_key, json=body)
        assert (status, answer["error"]["code"]) == (409, "idempotency_key_reused"), changed
    # Keys are per sender: Bob may use the same one.
    status, body = await send(client, bob, await account_id(client, alice), "0.0005", idempotency_key="order-1234")
    assert status == 200 and "idempotent" not in body["data"]

    # A dashboard double submit with one header moves the money once.
    headers = {**alice.jwt, "X-Idempotency-Key": "form-submit-77"}
    form = {"to_account_id": bob_account, "coin": "BTC", "amount": "0.0001"}
    ids = {(await api(client, "POST", "/dashboard/transfer", headers, json=form))[1]["data"]["transfer_id"]
           for _ in range(2)}
    assert len(ids) == 1
    assert await balances(client, bob) == {"BTC": "0.0006"}

    for bad_body, bad_headers in (({"idempotency_key": "short"}, {}), ({}, {"X-Idempotency-Key": "x" * 129}),
                                  ({"idempotency_key": "key-aaaaaaaa"}, {"X-Idempotency-Key": "key-bbbbbbbb"})):
        status, answer = await api(client, "POST", "/v1/transfer", {**alice.merchant_key, **bad_headers},
                                   json={"to_account_id": bob_account, "coin": "BTC", "amount": "0.001", **bad_body})
        assert (status, answer["error"]["type"]) == (400, "validation"), (bad_body, bad_headers)


# -- webhooks ----------------------------------------------------------------------------------------


async def test_transfer_webhooks_to_both_sides_with_distinct_event_ids(env):
    client, devnet = env
    alice, bob, bob_account = await funded_pair(env)
    alice_account = await account_id(client, alice)
    receivers, secrets = {}, {}
    try:
        for name, merchant in (("alice", alice), ("bob", bob)):
            receivers[name] = WebhookReceiver()
            url = await receivers[name].start()
            secrets[name] = (await api(client, "PUT", "/dashboard/settings/webhook", merchant.jwt,
                                       json={"webhook_url": url}))[1]["data"]["webhook_secret"]
        await deliver_due(devnet.gateway)  # the funding payment's own events
        for receiver in receivers.values():
            receiver.requests.clear()
        receivers["bob"].fail_next = 1  # a failing webhook never undoes the transfer
        with_request_id = {**alice.merchant_key, "X-Request-Id": "req-transfer-1"}
        status, body = await api(client, "POST", "/v1/transfer", with_request_id,
                                 json={"to_account_id": bob_account, "coin": "BTC", "amount": "0.003"})
        assert status == 200, body
        transfer_id = body["data"]["transfer_id"]
        await deliver_due(devnet.gateway)
        assert await balances(client, bob) == {"BTC": "0.003"}
        later = devnet.gateway.now() + 3600  # past the retry backoff
        devnet.gateway.clock = lambda: later
        await deliver_due(devnet.gateway)

        sent = receivers["alice"].verified(secrets["alice"])
        received = receivers["bob"].verified(secrets["bob"])
        assert [b["event_type"] for b in sent] == ["transfer.sent"]
        assert [b["event_type"] for b in received] == ["transfer.received"]
        expected = {"type": "transfer", "transfer_id": transfer_id, "from_account_id": alice_account,
                    "to_account_id": bob_account, "coin": "BTC", "amount": "0.003",
                    "created_at": body["data"]["created_at"], "request_id": "req-transfer-1"}
        for hook, event_type in ((sent[0], "transfer.sent"), (received[0], "transfer.received")):
            assert hook["event_id"] == event_id_for(f"{event_type}:{transfer_id}")
            assert isinstance(hook["event_timestamp"], int)
            assert {k: v for k, v in hook.items() if k not in ("event_id", "event_type", "event_timestamp")} == expected
        assert sent[0]["event_id"] != received[0]["event_id"]
        headers = {k.lower(): v for k, v in receivers["bob"].requests[0]["headers"].items()}
        assert headers["x-event-id"] == received[0]["event_id"] and headers["x-request-id"] == "req-transfer-1"
        assert (await ledger.check_ledger(devnet.gateway.db)).ok
    finally:
        for receiver in receivers.values():
            await receiver.close()


async def test_a_scoped_keys_own_webhook_gets_the_senders_event(env):
    client, devnet = env
    alice, bob, bob_account = await funded_pair(env)
    receiver = WebhookReceiver()
    try:
        url = await receiver.start()
        status, key = await api(client, "POST", "/dashboard/api-keys", alice.jwt,
                                json={"label": "ops", "scopes": ["transfer:create"], "webhook_url": url})
        assert status == 200, key
        status, body = await api(client, "POST", "/v1/transfer", {"merchant_api_key": key["data"]["api_key"]},
                                 json={"to_account_id": bob_account, "coin": "BTC", "amount": "0.001"})
        assert status == 200, body
        await deliver_due(devnet.gateway)
        [hook] = receiver.verified(key["data"]["webhook_secret"])
        assert (hook["event_type"], hook["transfer_id"]) == ("transfer.sent", body["data"]["transfer_id"])
    finally:
        await receiver.close()


# -- auth and input --------------------------------------------------------------------------------


async def test_auth_failures(env):
    client, devnet = env
    alice, bob, bob_account = await funded_pair(env)
    body = {"to_account_id": bob_account, "coin": "BTC", "amount": "0.001"}
    for headers in ({}, alice.payout_key, alice.general_key, alice.jwt,
                    {"merchant_api_key": alice.keys["payout_api_key"]}, {"merchant_api_key": "nonsense"}):
        status, answer = await api(client, "POST", "/v1/transfer", headers, json=body)
        assert status == 401 and answer["data"] is None, headers
    for headers in ({}, alice.merchant_key, {"Authorization": "Bearer not-a-jwt"}):
        for method, path in (("POST", "/dashboard/transfer"), ("GET", "/dashboard/transfers")):
            status, _ = await api(client, method, path, headers, json=body)
            assert status == 401, (headers, path)
    assert await balances(client, bob) == {}


@pytest.mark.parametrize("body, field", [
    ({"amount": "0"}, "amount"),
    ({"amount": "-0.001"}, "amount"),
    ({"amount": "0.000000001"}, "amount"),  # 9 decimals; BTC has 8
    ({"amount": "abc"}, "amount"),
    ({"amount": True}, "amount"),
    ({"coin": "NOPE"}, "coin"),
    ({"to_account_id": "ORB-0OIl0OIl0OIl0OIl0OIl"}, "to_account_id"),  # not base58
    ({"to_account_id": "XYZ-" + "1" * 20}, "to_account_id"),
    ({"to_account_id": 12}, "to_account_id"),
    ({"to_account_id": None, "coin": None, "amount": None}, "to_account_id"),
])
async def test_bad_input_is_a_validation_error(env, body, field):
    client, devnet = env
    alice, bob, bob_account = await funded_pair(env)
    request = {"to_account_id": bob_account, "coin": "BTC", "amount": "0.001", **body}
    request = {k: v for k, v in request.items() if v is not None}
    for path, headers in (("/v1/transfer", alice.merchant_key), ("/dashboard/transfer", alice.jwt)):
        status, answer = await api(client, "POST", path, headers, json=request)
        assert status == 400 and answer["error"]["type"] == "validation", answer
        assert field in answer["error"]["detail"]
    assert await balances(client, bob) == {}


async def test_missing_fields_are_all_named_and_bodies_must_be_json(env):
    client, devnet = env
    alice = await signup(client, "alice@example.com")
    status, body = await api(client, "POST", "/v1/transfer", alice.merchant_key, json={})
    assert status == 400 and set(body["error"]["detail"]) == {"to_account_id", "coin", "amount"}
    for raw in (b"", b"not json", b"[1]"):
        status, body = await api(client, "POST", "/v1/transfer", alice.merchant_key, data=raw)
        assert status == 400 and body["error"]["type"] == "validation"


async def test_amount_as_json_number_is_read_exactly(env):
    client, devnet = env
    alice, bob, bob_account = await funded_pair(env)
    raw = f'{{"to_account_id": "{bob_account}", "coin": "BTC", "amount": 0.00000001}}'
    status, body = await api(client, "POST", "/v1/transfer", {**alice.merchant_key, "Content-Type": "application/json"},
                             data=raw)
    assert status == 200 and body["data"]["amount"] == "0.00000001"
    assert await balances(client, bob) == {"BTC": "0.00000001"}
