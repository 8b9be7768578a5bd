"""Dashboard JWTs revoked before they expire: one token (sign-out) or all of a merchant's (core/accounts/jwt_revocation.py).

The cross-process tests (PostgreSQL only, tests/cross_process.py) use two
app instances on one database as two ``orbchain serve`` processes: the
token is used (and its merchant's revocations cached) in B, revoked through
A or by plain SQL, and B's next request refuses it.
"""

from __future__ import annotations

import jwt

from orbchain.core.accounts import auth
from orbchain import api as services
from orbchain.core.accounts.jwt_revocation import CACHE_TABLE, PRUNE_JOB, prune
from orbchain.web.keys import GATEWAY

from .cross_process import CROSS_PROCESS, two_processes
from .dashboard_support import PASSWORD, Visitor
from .support import bearer, signup

ACCOUNT = "/dashboard/account"


async def _status(client, token: str) -> int:
    return (await client.get(ACCOUNT, headers=bearer(token))).status


async def _log_in(client, email: str = "merchant@example.com", password: str = "s3cret-pass") -> str:
    response = await client.post("/dashboard/auth/login", json={"email": email, "password": password})
    assert response.status == 200, await response.text()
    return (await response.json())["data"]["token"]


async def _rows(gateway) -> list:
    return await gateway.db.fetch_all("SELECT jti, merchant_id, expires_at FROM revoked_tokens ORDER BY jti")


def _cookie_token(client) -> str:
    return next(c for c in client.session.cookie_jar if c.key == "orb_session").value.split("~")[0]


async def test_dashboard_logout_revokes_the_jwt_on_the_json_api(client):
    visitor = Visitor(client)
    await visitor.sign_up("out@example.com")
    await visitor.get("/app")
    token = _cookie_token(client)
    other = await _log_in(client, "out@example.com", PASSWORD)  # the same merchant, another device
    assert await _status(client, token) == 200
    await visitor.submit("/app/logout")
    response = await client.get(ACCOUNT, headers=bearer(token))
    body = await response.json()
    assert response.status == 401
    assert body["status"] == 401 and body["data"] is None and body["error"]["code"] == "unauthorized", body
    assert body["version"] == "2.0.0" and body["message"]
    assert await _status(client, other) == 200  # only the signed-out token ended
    # Signing in again gets a fresh token that works.
    await visitor.sign_in("out@example.com")
    await visitor.get("/app")
    assert await _status(client, _cookie_token(client)) == 200


async def test_one_revocation_leaves_the_merchants_other_tokens(client):
    owner = await signup(client)
    second = await _log_in(client)
    gateway = client.app[GATEWAY]
    assert await services.revoke_dashboard_token(gateway, owner.token) is True
    assert await _status(client, owner.token) == 401
    assert await _status(client, second) == 200
    # Again: nothing new, still refused; one row.
    assert await services.revoke_dashboard_token(gateway, owner.token) is True
    assert [r["merchant_id"] for r in await _rows(gateway)] == [owner.merchant_id]
    assert await _status(client, owner.token) == 401


async def test_password_change_and_revoke_all_end_every_older_token(client):
    owner = await signup(client)
    second = await _log_in(client)
    changed = await client.post("/dashboard/settings/change-password", headers=bearer(owner.token),
                                    json={"current_password": "s3cret-pass", "new_password": "an0ther-long-pass"})
    assert changed.status == 200
    fresh = (await changed.json())["data"]["token"]
    assert await _status(client, owner.token) == 401 and await _status(client, second) == 401
    assert await _status(client, fresh) == 200
    await services.revoke_dashboard_tokens(client.app[GATEWAY], owner.merchant_id)
    assert await _status(client, fresh) == 401


async def test_reenabling_a_merchant_does_not_revive_its_old_tokens(client):
    owner = await signup(client)
    gateway = client.app[GATEWAY]

    async def enabled(value: bool) -> None:
        await gateway.db.execute("UPDATE merchants SET enabled = :e WHERE id = :id",
                                 {"e": value, "id": owner.merchant_id})
        gateway.services["auth_cache"].invalidate()  # plain SQL; on PostgreSQL the trigger NOTIFYs as well

    await enabled(False)
    assert await _status(client, owner.token) == 403  # SPEC 7: merchant_disabled while disabled
    await enabled(True)
    assert await _status(client, owner.token) == 401
    assert await _status(client, await _log_in(client)) == 200
    await enabled(True)  # no change of ``enabled``, no new version
    assert await _status(client, await _log_in(client)) == 200


async def test_bad_or_forged_tokens_revoke_nothing(client):
    owner = await signup(client)
    gateway = client.app[GATEWAY]
    claims = jwt.decode(owner.token, options={"verify_signature": False})
    header, _, signature = owner.token.split(".")
    tampered = jwt.encode({**claims, "jti": "x"}, "not the gateway secret, but long enough: 32+", algorithm="HS256")
    spliced = ".".join((header, tampered.split(".")[1], signature))  # our signature over other claims
    expired = jwt.encode({**claims, "exp": gateway.now() - 1}, gateway.require_secrets().jwt_secret, algorithm="HS256")
    for bad in ("", "not.a.jwt", tampered, spliced, expired, owner.token + "x"):
        assert await services.revoke_dashboard_token(gateway, bad) is False, bad
    assert await _rows(gateway) == []
    assert await _status(client, owner.token) == 200
    secret = gateway.require_secrets().jwt_secret
    for jti in (7, "", "j" * (auth.JTI_MAX_LENGTH + 1), ["a"], None):
        signed = jwt.encode({**claims, "jti": jti}, secret, algorithm="HS256")
        assert await _status(client, signed) == 401, jti  # a jti we never issue is no token
        assert await services.revoke_dashboard_token(gateway, signed) is False
    assert await _rows(gateway) == [] and await _status(client, owner.token) == 200


async def test_a_token_without_jti_is_ended_with_all_of_its_merchants(client):
    """Issued before tokens had ids: it works until it expires or is revoked, which ends all of them."""
    owner = await signup(client)
    gateway = client.app[GATEWAY]
    claims = jwt.decode(owner.token, options={"verify_signature": False})
    del claims["jti"]
    old = jwt.encode(claims, gateway.require_secrets().jwt_secret, algorithm="HS256")
    assert await _status(client, old) == 200
    assert await services.revoke_dashboard_token(gateway, old) is True
    assert await _status(client, old) == 401 and await _status(client, owner.token) == 401
    assert await _rows(gateway) == []


async def test_expired_revocations_are_pruned(client):
    owner = await signup(client)
    gateway = client.app[GATEWAY]
    assert PRUNE_JOB in gateway.jobs.names()
    await services.revoke_dashboard_token(gateway, owner.token)
    await prune(gateway)
    assert len(await _rows(gateway)) == 1  # still guarding a live token
    start = gateway.now()
    gateway.clock = lambda: start + auth.JWT_LIFETIME_SECONDS + 1
    await prune(gateway)
    assert await _rows(gateway) == []
    # And on write: a revocation clears out the expired ones first.
    gateway.clock = lambda: start
    await services.revoke_dashboard_token(gateway, await _log_in(client))
    gateway.clock = lambda: start + auth.JWT_LIFETIME_SECONDS + 1
    fresh = await _log_in(client)
    await services.revoke_dashboard_token(gateway, fresh)
    assert [r["jti"] for r in await _rows(gateway)] == [jwt.decode(fresh, options={"verify_signature": False})["jti"]]


@CROSS_PROCESS
async def test_revocation_takes_effect_at_once_in_the_other_process(make_client, config):
    """A answers only once B dropped its cached revocations (B hears 0.3 s late): an early answer fails."""
    pair = await two_processes(make_client, config, b_hears_late=0.3)
    a, b = pair.a, pair.b
    owner = await signup(a)
    second = await _log_in(a)
    assert await _status(b, owner.token) == 200 and await _status(b, second) == 200
    cache = b.app[GATEWAY].services["auth_cache"]
    assert cache.get(CACHE_TABLE, owner.merchant_id) == (frozenset(),)  # B answers from its cache now
    assert await services.revoke_dashboard_token(a.app[GATEWAY], owner.token)
    assert await _status(b, owner.token) == 401
    assert await _status(b, second) == 200


@CROSS_PROCESS
async def test_a_revocation_written_by_plain_sql_reaches_the_other_process(make_client, config):
    """Nobody calls invalidate(): the revoked_tokens trigger's NOTIFY alone reaches B.

    B has the merchant's (empty) revocations cached; the insert and a probe go in
    one transaction on A, and once B heard the probe it must refuse the token.
    With the trigger dropped B keeps serving it from its cache (tried: fails).
    """
    pair = await two_processes(make_client, config)
    a, b = pair.a, pair.b
    owner = await signup(a)
    assert await _status(b, owner.token) == 200
    await pair.barrier()  # everything so far reached B
    assert await _status(b, owner.token) == 200
    cache = b.app[GATEWAY].services["auth_cache"]
    assert cache.get(CACHE_TABLE, owner.merchant_id) == (frozenset(),)  # B answers from its cache now
    claims = jwt.decode(owner.token, options={"verify_signature": False})
    now = a.app[GATEWAY].now()

    async def revoke(db):
        await db.execute("INSERT INTO revoked_tokens (jti, merchant_id, expires_at, revoked_at)"
                         " VALUES (:j, :m, :e, :now)",
                         {"j": claims["jti"], "m": owner.merchant_id, "e": claims["exp"], "now": now})

    await pair.barrier(revoke)
    assert cache.get(CACHE_TABLE, owner.merchant_id) is None
    assert await _status(b, owner.token) == 401
