"""Cached credentials die at once everywhere (SPEC 4.9, issue 11).

On PostgreSQL two app instances on one database stand for two ``orbchain
serve`` processes: a key is used (and cached) in B, then revoked, rotated or
its account changed through A or by plain SQL, and B's very next request sees
it. On SQLite (one process) the same app plays both parts.
"""

from __future__ import annotations

import asyncio
import time

from orbchain.core.auth import ROTATION_GRACE_SECONDS, hash_api_key
from orbchain.web.keys import GATEWAY

from .support import bearer, signup

READ = "/v1/payment/accepted-currencies"


async def _pair(make_client, config):
    """A and B; on PostgreSQL B hears notifications 0.3 s late, as a process on a busy machine may."""
    a = await make_client(config)
    if not a.app[GATEWAY].db.is_postgres:
        return a, a
    b = await make_client(config)
    side = b.app[GATEWAY].services["auth_fanout"]._side
    heard = side._on_notify
    side._on_notify = lambda payload: asyncio.get_running_loop().call_later(0.3, heard, payload)
    return a, b


async def _status(client, key: str, header: str = "merchant_api_key") -> int:
    return (await client.get(READ, headers={header: key})).status


async def _scoped_key(client, token: str) -> dict:
    response = await client.post("/dashboard/api-keys", json={"label": "k", "scopes": ["payment:read"]},
                                 headers=bearer(token))
    assert response.status == 200
    return (await response.json())["data"]


def _cached(client, key: str) -> bool:
    return client.app[GATEWAY].services["auth_cache"].key(hash_api_key(key)) is not None


async def test_revoke_takes_effect_at_once_in_the_other_process(make_client, config):
    a, b = await _pair(make_client, config)
    owner = await signup(a)
    key = (await _scoped_key(a, owner.token))
    assert await _status(b, key["api_key"]) == 200 and await _status(b, key["api_key"]) == 200
    assert _cached(b, key["api_key"])  # B answers from its cache now
    assert (await a.post(f"/dashboard/api-keys/{key['id']}/revoke", headers=bearer(owner.token))).status == 200
    assert await _status(b, key["api_key"]) == 401


async def test_rotated_out_secret_ends_on_time_in_the_other_process(make_client, config):
    a, b = await _pair(make_client, config)
    owner = await signup(a)
    key = await _scoped_key(a, owner.token)
    assert await _status(b, key["api_key"]) == 200 and _cached(b, key["api_key"])
    rotated = await a.post(f"/dashboard/api-keys/{key['id']}/rotate", headers=bearer(owner.token))
    new = (await rotated.json())["data"]["api_key"]
    assert await _status(b, new) == 200
    assert await _status(b, key["api_key"]) == 200  # in its grace
    later = b.app[GATEWAY].now() + ROTATION_GRACE_SECONDS + 1
    b.app[GATEWAY].clock = lambda: later  # B's cache held the old secret as current: it must not outlive its grace
    assert await _status(b, key["api_key"]) == 401
    assert await _status(b, new) == 200


async def test_legacy_rotation_ends_the_old_key_at_once_in_the_other_process(make_client, config):
    a, b = await _pair(make_client, config)
    owner = await signup(a)
    old = owner.keys["merchant_api_key"]
    assert await _status(b, old) == 200 and _cached(b, old)
    response = await a.post("/dashboard/settings/rotate-key", json={"key_type": "merchantApiKey"},
                            headers=bearer(owner.token))
    assert response.status == 200
    assert await _status(b, old) == 401


async def test_password_change_and_disabling_end_tokens_at_once_in_the_other_process(make_client, config):
    a, b = await _pair(make_client, config)
    owner = await signup(a)
    assert (await b.get("/dashboard/api-keys", headers=bearer(owner.token))).status == 200
    changed = await a.post("/dashboard/settings/change-password", headers=bearer(owner.token),
                           json={"current_password": "s3cret-pass", "new_password": "an0ther-long-pass"})
    assert changed.status == 200
    assert (await b.get("/dashboard/api-keys", headers=bearer(owner.token))).status == 401
    fresh = (await changed.json())["data"]["token"]
    assert (await b.get("/dashboard/api-keys", headers=bearer(fresh))).status == 200
    key = owner.keys["merchant_api_key"]
    assert await _status(b, key) == 200
    gateway = a.app[GATEWAY]
    await gateway.db.execute("UPDATE merchants SET enabled = :f WHERE id = :id", {"f": False, "id": owner.merchant_id})
    if not gateway.db.is_postgres:
        # SQLite is one process with no NOTIFY: whatever changes accounts outside the core says so.
        gateway.services["auth_cache"].invalidate()
    # On PostgreSQL the trigger's NOTIFY reaches B whoever wrote the row (here plain SQL).
    await _until_refused(b, key, fresh)


async def _until_refused(b, key: str, token: str) -> None:
    """B refuses both once the notification of a change nobody waits for (plain SQL) arrives."""
    for _ in range(100):
        if await _status(b, key) == 403 and (await b.get("/dashboard/api-keys", headers=bearer(token))).status == 403:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the disabled account was still served from B's cache")


async def test_cache_is_not_trusted_without_its_listening_connection(make_client, config):
    a, b = await _pair(make_client, config)
    owner = await signup(a)
    key = owner.keys["merchant_api_key"]
    assert await _status(b, key) == 200 and _cached(b, key)
    if not a.app[GATEWAY].db.is_postgres:
        return  # no side connection on SQLite
    cache = b.app[GATEWAY].services["auth_cache"]
    cache._trusted = lambda: False  # as when the side connection is down or its heartbeat is late
    assert not _cached(b, key)
    key_id = f"legacy_merchant_{owner.merchant_id}"
    # A write nobody is told about (as if the notification were lost): B must still see it.
    await a.app[GATEWAY].db.execute("ALTER TABLE api_keys DISABLE TRIGGER api_keys_auth_changed")
    await a.app[GATEWAY].db.execute("UPDATE api_keys SET revoked_at = 1 WHERE id = :id", {"id": key_id})
    assert await _status(b, key) == 401


async def test_a_silent_process_delays_the_change_only_until_its_cache_is_untrusted(make_client, config):
    a = await make_client(config)
    gateway = a.app[GATEWAY]
    owner = await signup(a)
    key = await _scoped_key(a, owner.token)
    if gateway.db.is_postgres:
        # A process that heartbeats but never acknowledges (wedged, or its notifications lost).
        await gateway.db.execute("INSERT INTO gateway_nodes (node, seen) VALUES ('ghost', :t)",
                                 {"t": int(time.time())})
    started = time.monotonic()
    assert (await a.post(f"/dashboard/api-keys/{key['id']}/revoke", headers=bearer(owner.token))).status == 200
    waited = time.monotonic() - started
    if gateway.db.is_postgres:
        from orbchain.core.auth_fanout import WAIT_SECONDS
        from orbchain.core.pg_side import STALE_AFTER_SECONDS

        assert STALE_AFTER_SECONDS < WAIT_SECONDS <= waited < WAIT_SECONDS + 2
    else:
        assert waited < 1
    assert await _status(a, key["api_key"]) == 401


async def test_a_settings_change_reaches_the_other_process_before_the_answer(make_client, config):
    """Payment creation reads the merchant row from a per-process cache: a settings change answers
    only once no process holds the old row, so the next create anywhere sees it."""
    a, b = await _pair(make_client, config)
    owner = await signup(a)
    key = owner.keys["merchant_api_key"]
    body = {"currency": "BTC", "amount": "0.01"}
    assert (await b.post("/v1/payment/white-label", json=body, headers={"merchant_api_key": key})).status == 200
    response = await a.put("/dashboard/settings/coins", json={"accepted_coins": ["ETH"]}, headers=bearer(owner.token))
    assert response.status == 200
    refused = await b.post("/v1/payment/white-label", json=body, headers={"merchant_api_key": key})
    assert refused.status == 400 and (await refused.json())["error"]["code"] == "currency_not_accepted"
