"""Cached credentials die at once everywhere (SPEC 4.9, issue 11).

Two app instances on one PostgreSQL database stand for two ``orbchain
serve`` processes (tests/cross_process.py: separate pools, side connections
and caches): a key is used (and cached) in B, then revoked, rotated or its
account changed through A or by plain SQL, and B's very next request sees
it. PostgreSQL only: SQLite is one process, where these paths do not exist.

Breaks caught: A answering before B acknowledged (its notification arrives
0.3 s late here), a trigger that stops NOTIFYing, B not listening, the
fan-out not waiting for a live process or waiting for ever.
"""

from __future__ import annotations

import asyncio
import time

from orbchain.core.accounts.auth import ROTATION_GRACE_SECONDS, hash_api_key
from orbchain.core.accounts.auth_fanout import WAIT_SECONDS
from orbchain.core.infra.pg_side import STALE_AFTER_SECONDS
from orbchain.web.keys import GATEWAY

from .cross_process import CROSS_PROCESS, HANG_SECONDS, settings_change_reaches, two_processes
from .support import bearer, signup

pytestmark = CROSS_PROCESS

READ = "/v1/payment/accepted-currencies"
LATE = 0.3  # B hears notifications this late, as a process on a busy machine may


async def _pair(make_client, config):
    pair = await two_processes(make_client, config, b_hears_late=LATE)
    return pair.a, pair.b


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


async def test_password_change_ends_tokens_at_once_in_the_other_process(make_client, config):
    a, b = await _pair(make_client, config)
    owner = await signup(a)
    assert (await b.get("/dashboard/api-keys", headers=bearer(owner.token))).status == 200
    changed = await a.post("/dashboard/settings/change-password", headers=bearer(owner.token),
                           json={"current_password": "s3cret-pass", "new_password": "an0ther-long-pass"})
    assert changed.status == 200
    assert (await b.get("/dashboard/api-keys", headers=bearer(owner.token))).status == 401
    fresh = (await changed.json())["data"]["token"]
    assert (await b.get("/dashboard/api-keys", headers=bearer(fresh))).status == 200


async def test_disabling_by_plain_sql_reaches_the_other_process_through_notify(make_client, config):
    """Nobody waits for plain SQL: the trigger's NOTIFY alone must empty B's cache.

    The barrier (a probe sent after the write, in its transaction) returns once B
    heard everything up to it, so no sleep decides; with the trigger dropped B
    keeps serving the cached key and token (tried: fails).
    """
    pair = await two_processes(make_client, config)
    a, b = pair.a, pair.b
    owner = await signup(a)
    key = owner.keys["merchant_api_key"]
    assert await _status(b, key) == 200
    assert (await b.get("/dashboard/api-keys", headers=bearer(owner.token))).status == 200
    await pair.barrier()  # every notification of the requests so far has reached B
    assert await _status(b, key) == 200 and _cached(b, key)  # B answers from its cache now

    async def disable(db):
        await db.execute("UPDATE merchants SET enabled = :f WHERE id = :id", {"f": False, "id": owner.merchant_id})

    await pair.barrier(disable)
    assert not _cached(b, key)
    assert await _status(b, key) == 403
    assert (await b.get("/dashboard/api-keys", headers=bearer(owner.token))).status == 403


async def test_cache_is_not_trusted_without_its_listening_connection(make_client, config):
    a, b = await _pair(make_client, config)
    owner = await signup(a)
    key = owner.keys["merchant_api_key"]
    assert await _status(b, key) == 200 and _cached(b, key)
    cache = b.app[GATEWAY].services["auth_cache"]
    cache._trusted = lambda: False  # as when the side connection is down or its heartbeat is late
    assert not _cached(b, key)
    key_id = f"legacy_merchant_{owner.merchant_id}"
    # A write nobody is told about (as if the notification were lost): B must still see it.
    await a.app[GATEWAY].db.execute("ALTER TABLE api_keys DISABLE TRIGGER api_keys_auth_changed")
    await a.app[GATEWAY].db.execute("UPDATE api_keys SET revoked_at = 1 WHERE id = :id", {"id": key_id})
    assert await _status(b, key) == 401


async def test_a_silent_process_delays_the_change_only_until_its_cache_is_untrusted(make_client, config):
    """A live process that never acknowledges holds the revoke back until WAIT_SECONDS, then no longer.

    The fan-out's clock is the test's: the revoke must still be waiting after the
    fan-out polled several times with the clock standing still (a fan-out that
    skips live processes answers at once: fails), and must answer once the clock
    passes WAIT_SECONDS (one that waits for ever hangs the bound: fails). The
    wait outlasts a silent process's trust in its cache (STALE_AFTER_SECONDS).
    """
    assert STALE_AFTER_SECONDS < WAIT_SECONDS
    a = await make_client(config)
    gateway = a.app[GATEWAY]
    owner = await signup(a)
    key = await _scoped_key(a, owner.token)
    # A process that heartbeats but never acknowledges (wedged, or its notifications lost).
    await gateway.db.execute("INSERT INTO gateway_nodes (node, seen) VALUES ('ghost', :t)", {"t": int(time.time())})
    fanout = gateway.services["auth_fanout"]
    now, reads, polled = 1_000.0, [0], asyncio.Event()

    def clock() -> float:
        reads[0] += 1
        if reads[0] >= 6:
            polled.set()
        return now

    fanout._clock = clock
    revoke = asyncio.ensure_future(a.post(f"/dashboard/api-keys/{key['id']}/revoke", headers=bearer(owner.token)))
    await asyncio.wait_for(polled.wait(), HANG_SECONDS)
    assert not revoke.done(), "the revoke answered while a live process had not acknowledged it"
    now += WAIT_SECONDS + 0.01
    response = await asyncio.wait_for(revoke, HANG_SECONDS)
    assert response.status == 200
    assert await _status(a, key["api_key"]) == 401


async def test_a_settings_change_reaches_the_other_process_before_the_answer(make_client, config):
    """Payment creation reads the merchant row from a per-process cache: a settings change answers
    only once no process holds the old row, so the next create anywhere sees it."""
    a, b = await _pair(make_client, config)
    await settings_change_reaches(a, b, await signup(a))
