"""Per-key audit log (plugins/audit, SPEC 4.9 and 5.2), on both databases.

Every request made with a scoped key appends one row before its response
leaves, refused ones included; legacy keys and the dashboard are not logged;
the table refuses updates and deletes in the database itself; the dashboard
reads a key's log newest first in pages, and another account's key is 404.
"""

from __future__ import annotations

import asyncio

import pytest

from orbchain.core.types.views import KeyRequest
from orbchain.plugins.audit import writer_of
from orbchain.web.keys import GATEWAY

from .support import bearer
from .support import signup_data as signup


async def make_key(client, token, scopes=("payment:read",), **fields):
    response = await client.post("/dashboard/api-keys", json={"label": "audited", "scopes": list(scopes), **fields},
                                 headers=bearer(token))
    assert response.status == 200, await response.text()
    return (await response.json())["data"]


async def read_log(client, token, key_id, **query):
    response = await client.get(f"/dashboard/api-keys/{key_id}/audit-log", params=query, headers=bearer(token))
    return response.status, await response.json()


@pytest.fixture
async def owner(client):
    return await signup(client)


async def test_every_scoped_key_request_is_logged_with_route_status_request_id_and_ip(client, owner):
    key = await make_key(client, owner["token"])
    ok = await client.get("/v1/payment/accepted-currencies", headers={"merchant_api_key": key["api_key"],
                                                                       "X-Request-Id": "audit-req-0001"})
    assert ok.status == 200
    denied = await client.get("/v1/general/account/balance", headers={"general_api_key": key["api_key"]})
    assert denied.status == 403  # the key lacks balance:read: still logged
    missing = await client.get("/v1/payment/nosuchtrack", headers={"merchant_api_key": key["api_key"]})
    assert missing.status == 404

    status, body = await read_log(client, owner["token"], key["id"])
    assert status == 200, body
    data = body["data"]
    assert data["total"] == 3 and data["limit"] == 50 and data["offset"] == 0
    newest, middle, oldest = data["entries"]
    assert (oldest["method"], oldest["route"], oldest["status"], oldest["request_id"]) == (
        "GET", "/v1/payment/accepted-currencies", 200, "audit-req-0001")
    assert oldest["source_ip"] == "127.0.0.1" and isinstance(oldest["created_at"], int)
    assert (middle["route"], middle["status"]) == ("/v1/general/account/balance", 403)
    assert newest["route"] == "/v1/payment/{track_id}" and newest["status"] == 404  # the template, not the path
    assert "nosuchtrack" not in str(body)


async def test_legacy_keys_jwt_and_unknown_keys_are_not_logged(client, owner):
    key = await make_key(client, owner["token"])
    legacy = owner["api_keys"]["merchant_api_key"]
    assert (await client.get("/v1/payment/accepted-currencies", headers={"merchant_api_key": legacy})).status == 200
    assert (await client.get("/v1/payment/accepted-currencies",
                             headers={"merchant_api_key": key["api_key"] + "x"})).status == 401
    status, body = await read_log(client, owner["token"], key["id"])
    assert status == 200 and body["data"]["total"] == 0
    legacy_id = next(row["id"] for row in (await (await client.get(
        "/dashboard/api-keys", headers=bearer(owner["token"]))).json())["data"]["keys"])
    status, body = await read_log(client, owner["token"], legacy_id)
    assert status == 200 and body["data"]["entries"] == []


async def test_paging_newest_first_and_bounds(client, owner):
    key = await make_key(client, owner["token"])
    for i in range(5):
        response = await client.get("/v1/payment/accepted-currencies",
                                    headers={"merchant_api_key": key["api_key"], "X-Request-Id": f"page-req-{i:04d}"})
        assert response.status == 200
    status, body = await read_log(client, owner["token"], key["id"], limit=2, offset=1)
    assert status == 200
    assert [e["request_id"] for e in body["data"]["entries"]] == ["page-req-0003", "page-req-0002"]
    assert body["data"]["total"] == 5
    for bad in ({"limit": 0}, {"limit": 201}, {"offset": -1}, {"limit": "x"}):
        status, body = await read_log(client, owner["token"], key["id"], **bad)
        assert status == 400 and body["error"]["type"] == "validation", (bad, body)


async def test_another_accounts_key_is_404_and_the_route_needs_the_dashboard(client, owner):
    key = await make_key(client, owner["token"])
    other = await signup(client, email="other@example.com")
    status, body = await read_log(client, other["token"], key["id"])
    assert status == 404 and body["error"]["type"] == "not_found"
    status, _ = await read_log(client, owner["token"], "key_" + "0" * 20)
    assert status == 404
    response = await client.get(f"/dashboard/api-keys/{key['id']}/audit-log",
                                headers={"merchant_api_key": key["api_key"]})
    assert response.status == 401


async def test_the_table_is_append_only_in_the_database(client, owner):
    key = await make_key(client, owner["token"])
    assert (await client.get("/v1/payment/accepted-currencies",
                             headers={"merchant_api_key": key["api_key"]})).status == 200
    db = client.app[GATEWAY].db
    with pytest.raises(Exception, match="append-only"):
        await db.execute("UPDATE key_audit_log SET status = 200")
    with pytest.raises(Exception, match="append-only"):
        await db.execute("DELETE FROM key_audit_log")
    if db.is_postgres:
        with pytest.raises(Exception, match="append-only"):
            await db.execute("TRUNCATE key_audit_log")
    status, body = await read_log(client, owner["token"], key["id"])
    assert body["data"]["total"] == 1


async def test_concurrent_requests_share_commits_and_every_row_lands(client, owner):
    key = await make_key(client, owner["token"], rate_limit_rpm=10000)
    gateway = client.app[GATEWAY]
    before = writer_of(gateway).batches

    async def one(i):
        response = await client.get("/v1/payment/accepted-currencies",
                                    headers={"merchant_api_key": key["api_key"], "X-Request-Id": f"burst-{i:05d}"})
        return response.status

    statuses = await asyncio.gather(*(one(i) for i in range(40)))
    assert statuses.count(200) == 40
    status, body = await read_log(client, owner["token"], key["id"], limit=200)
    assert body["data"]["total"] == 40
    assert {e["request_id"] for e in body["data"]["entries"]} == {f"burst-{i:05d}" for i in range(40)}
    assert writer_of(gateway).batches - before <= 40


async def test_a_row_is_committed_before_append_returns(gateway):
    writer = writer_of(gateway)
    view = KeyRequest(key_id="key_x", key_kind="scoped", merchant_id="m1", method="POST", route="/v1/payout",
                      status=200, request_id="r" * 16, client_ip="203.0.113.9", at=gateway.now())
    await asyncio.gather(*(writer.append(view) for _ in range(3)))
    count = await gateway.db.fetch_val("SELECT COUNT(*) FROM key_audit_log WHERE key_id = 'key_x'")
    assert int(count) == 3
