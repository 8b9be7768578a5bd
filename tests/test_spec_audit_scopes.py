"""SPEC 5.2 conformance: the scope table on the real routes, each scope against every listed route.

test_auth.py proves the mechanism on probe routes; this walks SPEC's
table: a key holding exactly one scope passes authorization on that
scope's routes (whatever the handler then answers) and gets 403 on every
other scope's routes. Both databases.
"""

from __future__ import annotations

from orbchain.testing.fixtures import open_shop

from .support import api

ROUTES = {
    "payment:create": [("POST", "/v1/payment/static-address", {"currency": "BTC"}),
                       ("POST", "/v1/payment/white-label", {"currency": "BTC", "amount": "0.001"}),
                       ("POST", "/v1/payment/invoice", {"currency": "BTC", "amount": "0.001"})],
    "payment:read": [("GET", "/v1/payment/accepted-currencies", None), ("GET", "/v1/payment/{track_id}", None),
                     ("GET", "/v1/payment/{track_id}/receipt", None), ("GET", "/v1/payment", None)],
    "payout:create": [("POST", "/v1/payout", {"currency": "BTC", "address": "nope", "amount": "1"})],
    "payout:read": [("GET", "/v1/payout/{track_id}", None)],
    "balance:read": [("GET", "/v1/general/account/balance", None)],
    "transfer:create": [("POST", "/v1/transfer", {"to_account_id": "nobody", "coin": "BTC", "amount": "1"})],
}


async def test_each_scope_reaches_its_routes_and_no_other(make_config, make_client):
    shop = await open_shop(make_config, make_client)
    status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.001"})
    assert status == 200, body
    track_id = body["data"]["track_id"]
    keys = {}
    for scope in ROUTES:
        status, body = await api(shop.client, "POST", "/dashboard/api-keys", shop.merchant.jwt,
                                 json={"label": scope, "scopes": [scope]})
        assert status == 200, body
        keys[scope] = {"merchant_api_key": body["data"]["api_key"]}
    for owner, routes in ROUTES.items():
        for method, path, payload in routes:
            path = path.format(track_id=track_id)
            for scope, headers in keys.items():
                status, body = await api(shop.client, method, path, headers, json=payload)
                if scope == owner:
                    assert status not in (401, 403), (scope, path, body)
                else:
                    assert status == 403 and body["error"]["type"] == "forbidden", (scope, path, body)
