"""The OpenAPI document (GET /openapi.json) is valid, complete and true, on both databases.

1. The document is OpenAPI 3.1 (openapi-spec-validator) and every $ref resolves.
2. Routes and document agree both ways: every route the running app registers
   (core and plugins, HEAD/OPTIONS aside) is documented, every documented
   operation exists, and each operation's credentials, scope and rate limiting
   match the handler's ``requires(...)`` and ``rate_class(...)``.
   Plugin routes are documented like core ones; a route a plugin registers only
   in development (the devnet pay form) is marked ``x-orbchain-development-only``
   and the served document lists only routes the running server has.
3. A journey through the whole API (signup to payouts and transfers, errors
   included) goes through ``CheckedClient``, which validates every response
   against the document (strict: no undocumented field) and every accepted
   request against the documented request schema. A documented operation the
   journey never calls successfully fails the coverage check.

Adding a route means adding its ``Op`` in ``web/openapi/paths_*.py`` and a call
in the journey; the checks themselves are generic.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyotp
import pytest
from aiohttp.test_utils import make_mocked_request
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from orbchain import __version__
from orbchain import api as services
from orbchain.core.payouts.worker import process_payouts
from orbchain.api import AccountSession
from orbchain.core.events.webhooks import deliver_due
from orbchain.plugins.approvals import policy as approval_policy
from orbchain.plugins.oidc import payload as oidc_payload
from orbchain.web.auth import AUTH_ATTR
from orbchain.web.keys import GATEWAY
from orbchain.web.middlewares import RATE_ATTR
from orbchain.web.openapi import all_operations, app_routes, build_document

from .dashboard_support import review_token
from .support import Devnet, Merchant, WebhookReceiver, advance_clock, bearer
from .teams_support import join_link_to, mailbox
from .telegram_support import BOT_TOKEN, init_data_for

# -- the generic checker ---------------------------------------------------------------------------
#
# ``CheckedClient`` wraps the aiohttp test client. Every call is matched to its route by the
# app's own router, then: the (method, path template, status) must be documented with the
# response's content type; a JSON body must validate against the documented schema in strict
# mode (an object schema that lists properties refuses any other, so the document names every
# field the gateway returns); an envelope's ``status`` must equal the HTTP status; and for a
# successful call the request body and query must be ones the document accepts. JSON is parsed
# with ``parse_float=Decimal``: no float anywhere.

DOC_URI = "urn:orbchain:openapi"


def strict(document: dict[str, Any]) -> dict[str, Any]:
    """A copy where every object schema listing properties forbids unlisted ones."""
    document = copy.deepcopy(document)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    return document


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def pointer(*tokens: str) -> str:
    return "".join("/" + _escape(str(t)) for t in tokens)


def resolve(document: dict[str, Any], ref: str) -> tuple[Any, str]:
    """The node at a local ``#/...`` reference, and its JSON pointer."""
    assert ref.startswith("#/"), f"only local references are used: {ref}"
    node: Any = document
    for token in ref[2:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        assert isinstance(node, dict) and token in node, f"unresolvable $ref {ref}"
        node = node[token]
    return node, ref[1:]


def all_refs(node: Any) -> list[str]:
    found = []
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            found.append(node["$ref"])
        for value in node.values():
            found.extend(all_refs(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(all_refs(value))
    return found


class DocumentValidator:
    """Validates instances against schemas at JSON pointers of one document."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.registry = Registry().with_resource(DOC_URI, Resource(contents=document, specification=DRAFT202012))

    def errors(self, schema_pointer: str, instance: Any) -> list[str]:
        validator = Draft202012Validator({"$ref": f"{DOC_URI}#{schema_pointer}"}, registry=self.registry,
                                         format_checker=Draft202012Validator.FORMAT_CHECKER)
        return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                for e in validator.iter_errors(instance)]


class CheckedClient:
    """The test client, validating and recording every exchange against the document."""

    def __init__(self, client: Any, document: dict[str, Any]) -> None:
        self.client = client
        self.document = document
        self.responses = DocumentValidator(strict(document))
        self.requests = DocumentValidator(document)
        self.seen: set[tuple[str, str, int]] = set()

    async def template(self, method: str, path: str) -> str:
        request = make_mocked_request(method, path, app=self.client.app)
        match = await self.client.app.router.resolve(request)
        resource = match.route.resource
        assert resource is not None and match.http_exception is None, f"{method} {path} is not a route"
        return resource.canonical

    async def call(self, method: str, path: str, headers: dict[str, str] | None = None, *,
                   expect: int | None = None, **kwargs: Any) -> tuple[int, Any]:
        """Send the request; return (status, body) with JSON bodies parsed (numbers as Decimal)."""
        response = await self.client.request(method, path, headers=headers or {}, allow_redirects=False, **kwargs)
        text = await response.text()
        template = await self.template(method, path.split("?")[0])
        body = self._check(method, template, response.status, response.content_type, text)
        if response.status < 400:
            self._check_request(method, template, kwargs)
        self.seen.add((method, template, response.status))
        if expect is not None:
            assert response.status == expect, f"{method} {path}: {response.status} {text[:600]}"
        return response.status, body

    def operation(self, method: str, template: str) -> dict[str, Any]:
        path_item = self.document["paths"].get(template)
        assert path_item and method.lower() in path_item, f"{method} {template} is not documented"
        return path_item[method.lower()]

    def _check(self, method: str, template: str, status: int, content_type: str, text: str) -> Any:
        where = f"{method} {template} -> {status}"
        responses = self.operation(method, template)["responses"]
        assert str(status) in responses, f"{where}: status not documented (has {sorted(responses)}): {text[:300]}"
        response_pointer = pointer("paths", template, method.lower(), "responses", str(status))
        response = responses[str(status)]
        if "$ref" in response:
            response, response_pointer = resolve(self.document, response["$ref"])
        content = response.get("content", {})
        if not content:
            return text
        assert content_type in content or "*/*" in content, \
            f"{where}: content type {content_type} not documented ({sorted(content)})"
        if content_type != "application/json":
            return text
        body = json.loads(text, parse_float=Decimal)
        problems = self.responses.errors(pointer(*_split(response_pointer), "content", content_type, "schema"), body)
        assert not problems, f"{where}: response does not match the document:\n  " + "\n  ".join(problems) + \
            f"\n  body: {text[:800]}"
        if isinstance(body, dict) and "version" in body and "status" in body:
            assert body["status"] == status, f"{where}: envelope status {body['status']}"
        return body

    def _check_request(self, method: str, template: str, kwargs: dict[str, Any]) -> None:
        """A request the gateway accepted must be one the document accepts."""
        operation = self.operation(method, template)
        base = pointer("paths", template, method.lower())
        payload = kwargs.get("json", kwargs.get("data"))
        if payload is not None:
            assert "requestBody" in operation, f"{method} {template}: sends a body the document does not describe"
            media = next(iter(operation["requestBody"]["content"]))
            problems = self.requests.errors(base + pointer("requestBody", "content", media, "schema"), payload)
            assert not problems, f"{method} {template}: accepted body not in the document: {problems}"
        documented = {p["name"]: i for i, p in enumerate(operation.get("parameters", [])) if p["in"] == "query"}
        for name, value in (kwargs.get("params") or {}).items():
            assert name in documented, f"{method} {template}: query parameter {name} not documented"
            schema = operation["parameters"][documented[name]]["schema"]
            typed = int(value) if schema.get("type") == "integer" else value
            problems = self.requests.errors(base + pointer("parameters", documented[name], "schema"), typed)
            assert not problems, f"{method} {template}: accepted query {name}={value!r} not in the document"


def _split(json_pointer: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in json_pointer.split("/")[1:]]


# -- fixtures --------------------------------------------------------------------------------------

BTC_DEST = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
SNAPSHOT_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "openapi_snapshot.py"
FULL_DOCUMENT = build_document(version=__version__)
# Documented operations the journey does not call successfully, each with its reason.
UNEXERCISED: dict[tuple[str, str], str] = {
    # Browser redirects through an identity provider: their successes need the OIDC stand-in
    # and a configured client; tests/test_oidc.py runs the whole chain against it.
    ("GET", "/dashboard/auth/google"): "tests/test_oidc.py",
    ("GET", "/dashboard/auth/google/callback"): "tests/test_oidc.py",
    ("POST", "/dashboard/auth/google/link"): "tests/test_oidc_members.py",
    ("GET", "/dashboard/auth/google/2fa"): "tests/test_oidc_members.py",
    ("POST", "/dashboard/auth/google/2fa"): "tests/test_oidc_members.py",
    ("POST", "/app/sign-in-methods"): "tests/test_oidc_members.py",  # a member's form, to the provider
    # The dashboard's not-found page only ever answers 404 (or 405): the journey calls it, it never succeeds.
    ("GET", "/app/{missing}"): "tests/test_dashboard_small.py",
    ("POST", "/app/{missing}"): "tests/test_dashboard_small.py",
}
TG_WEBHOOK_SECRET = "journey-webhook-secret-0123"
SHOP_PASSWORD = "n3w-secret-pass"  # the shop's password once journey_settings changed it


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


METRICS_TOKEN = "openapi-journey-metrics-token"


@pytest.fixture
async def checked(make_client, make_config):
    # The telegram plugin in webhook mode, its Bot API unreachable (nothing here talks to Telegram).
    telegram = {"bot_token": BOT_TOKEN, "api_base_url": "http://127.0.0.1:9", "mode": "webhook",
                "webhook_secret": TG_WEBHOOK_SECRET, "mfa_cooling_off_seconds": 0}
    client = await make_client(make_config(scheduler={"enabled": False}, plugin={"telegram": telegram},
                                               metrics={"token": METRICS_TOKEN}))
    response = await client.get("/openapi.json")
    assert response.status == 200 and response.content_type == "application/json"
    return CheckedClient(client, json.loads(await response.text(), parse_float=Decimal))


# -- 1. a valid OpenAPI 3.1 document ---------------------------------------------------------------


def test_document_is_valid_openapi_3_1():
    validate_openapi(copy.deepcopy(FULL_DOCUMENT))
    assert FULL_DOCUMENT["openapi"] == "3.1.0"
    assert {"info", "paths", "components"} <= set(FULL_DOCUMENT)
    for ref in all_refs(FULL_DOCUMENT):
        resolve(FULL_DOCUMENT, ref)
    for schema in FULL_DOCUMENT["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)


AMOUNT_NAMES = re.compile(r"amount|Amount|fee_percent|min_payout|rate_locked$|refunded_total|refundable_remaining")


def _is_string_schema(document: dict[str, Any], schema: dict[str, Any]) -> bool:
    if "$ref" in schema:
        return _is_string_schema(document, resolve(document, schema["$ref"])[0])
    if "anyOf" in schema:
        return all(_is_string_schema(document, s) or s.get("type") == "null" for s in schema["anyOf"])
    return schema.get("type") == "string"


def test_amounts_are_strings_and_numbers_only_informational():
    numbers = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "number" or "number" in (node.get("type") or []):
                numbers.append(path)
            for name, schema in (node.get("properties") or {}).items():
                if AMOUNT_NAMES.search(name):
                    assert _is_string_schema(FULL_DOCUMENT, schema), f"{path}/{name} must be a decimal string"
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}/{index}")

    walk(FULL_DOCUMENT, "#")
    # USD prices are the one informational number of the API (SPEC 4.1).
    assert numbers and all(p.startswith("#/paths//v1/common/prices/") for p in numbers), numbers


# -- 2. routes and document agree ------------------------------------------------------------------


def route_document_mismatch(app) -> tuple[list, list]:
    """(routes without an operation, operations without a route), plugins' included."""
    registered = app_routes(app)
    documented = {op.key for op in all_operations(app[GATEWAY].api_operations)}
    return sorted(registered - documented), sorted(documented - registered)


async def test_every_route_is_documented_and_every_operation_exists(client):
    undocumented, phantom = route_document_mismatch(client.app)
    assert not undocumented, f"routes without documentation (add an Op in web/openapi/paths_*.py): {undocumented}"
    assert not phantom, f"documented operations the app does not have: {phantom}"


def _plugin_with_route(document_it: bool):
    from aiohttp import web

    from orbchain.core.contract.plugins import hookimpl
    from orbchain.web.auth import requires
    from orbchain.web.envelope import envelope as reply
    from orbchain.web.openapi import Op, envelope, obj

    routes = web.RouteTableDef()

    @routes.get("/v1/acme/widgets")
    @requires("merchant_key", scope="widget:read")
    async def widgets(request):
        return reply({"widgets": []})

    class Acme:
        PLUGIN_NAME = "acme_docs"

        @hookimpl
        def register_scopes(self, registry):
            registry.add("widget:read", "Read widgets.")

        @hookimpl
        def register_routes(self, registry):
            registry.add(routes)

        if document_it:
            @hookimpl
            def register_openapi(self, registry):
                registry.add(Op("GET", "/v1/acme/widgets", "Widgets", "Acme", envelope(obj({"widgets": {"type": "array"}})),
                                auth=("merchant_key",), scope="widget:read"))

    return Acme()


async def test_plugin_routes_are_held_to_the_same_check(make_client, make_config):
    from orbchain.core.contract.plugins import get_plugin_manager

    config = make_config(scheduler={"enabled": False})
    documented = await make_client(config, get_plugin_manager([_plugin_with_route(True)]))
    assert route_document_mismatch(documented.app) == ([], [])
    served = await (await documented.get("/openapi.json")).json()
    operation = served["paths"]["/v1/acme/widgets"]["get"]
    assert operation["security"] == [{"merchantApiKey": ["widget:read"]}]
    assert "widget:read" in served["components"]["schemas"]["Scope"]["enum"]
    assert served["paths"]["/pay/{track_id}/devnet-pay"]["post"]["x-orbchain-development-only"] is True
    silent = await make_client(config, get_plugin_manager([_plugin_with_route(False)]))
    assert route_document_mismatch(silent.app) == ([("GET", "/v1/acme/widgets")], [])


async def test_credentials_and_rate_limits_match_the_handlers(client):
    """Every documented operation is compared with its handler (the loop cannot pass by skipping them all)."""
    operations = {op.key: op for op in all_operations(client.app[GATEWAY].api_operations)}
    compared = set()
    for route in client.app.router.routes():
        key = (route.method.upper(), route.resource.canonical)
        if key not in operations:
            continue
        compared.add(key)
        op, spec = operations[key], getattr(route.handler, AUTH_ATTR, None)
        assert sorted(op.auth) == sorted(spec.kinds if spec else ()), f"{key}: security differs from requires()"
        assert op.scope == (spec.scope if spec else None), f"{key}: scope differs from requires()"
        rate_limited = getattr(route.handler, RATE_ATTR, "default") is not None
        assert op.rate_limited == rate_limited, f"{key}: 429 documented {op.rate_limited}, handler {rate_limited}"
    assert len(operations) >= 40 and compared == set(operations), sorted(set(operations) - compared)


async def test_served_document_is_cached_public_and_lists_only_this_servers_routes(client, make_client, make_config):
    first = await client.get("/openapi.json")
    second = await client.get("/openapi.json")
    assert first.status == 200 and await first.read() == await second.read()
    served = await first.json()
    assert served["info"]["version"] == __version__
    dev_only = [f"{m.upper()} {p}" for p, item in served["paths"].items() for m, o in item.items()
                if o.get("x-orbchain-development-only")]
    assert dev_only == ["POST /pay/{track_id}/devnet-pay", "POST /pay/{track_id}/lightning-devnet-pay"]
    # Without the devnet the pay forms (the devnet's, the devnet Lightning node's) are neither registered nor advertised.
    quiet = await make_client(make_config(scheduler={"enabled": False}, plugin={"devnet": {"enabled": False}}))
    doc = await (await quiet.get("/openapi.json")).json()
    for form in ("/pay/{track_id}/devnet-pay", "/pay/{track_id}/lightning-devnet-pay"):
        assert ("POST", form) not in app_routes(quiet.app)
        assert form not in doc["paths"]
    assert "/v1/payment/{track_id}" in doc["paths"]


def _snapshot_tool():
    spec = importlib.util.spec_from_file_location("openapi_snapshot", SNAPSHOT_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _differences(served: Any, snapshot: Any, where: str = "") -> list[str]:
    """Where two JSON trees differ, as JSON-pointer-ish paths (first 20)."""
    if isinstance(served, dict) and isinstance(snapshot, dict):
        found = [f"{where}/{k}: {'only served' if k not in snapshot else 'only in the snapshot'}"
                 for k in sorted(set(served) ^ set(snapshot))]
        for key in sorted(set(served) & set(snapshot)):
            found += _differences(served[key], snapshot[key], f"{where}/{key}")
        return found[:20]
    return [] if served == snapshot else [f"{where}: served {json.dumps(served)[:80]}"]


async def test_served_document_matches_the_checked_in_snapshot(client):
    """The served document against tests/snapshots/openapi.json, not against the function that serves it.

    Break caught: any change of a path, parameter, schema or security in the served
    document that was not regenerated on purpose (tried: a field dropped from a
    response schema fails, naming its path).
    """
    tool = _snapshot_tool()
    served = tool.normalized(await (await client.get("/openapi.json")).json())
    snapshot = json.loads(tool.SNAPSHOT.read_text(encoding="utf-8"))
    differences = _differences(served, snapshot)
    assert not differences, ("the served OpenAPI document differs from tests/snapshots/openapi.json:\n  "
                             + "\n  ".join(differences)
                             + f"\nIf the API change is meant, regenerate and commit the snapshot: {tool.REGENERATE}")


# -- 3. real responses validate --------------------------------------------------------------------


async def journey_public(c: CheckedClient) -> None:
    for path in ("/health", "/v1/common/currencies", "/v1/common/prices", "/v1/common/receipt-public-key",
                 "/openapi.json"):
        await c.call("GET", path, expect=200)
    await c.call("GET", "/ready", expect=503)  # devnet not scanned yet (scheduler off)
    await c.call("GET", "/metrics", expect=401)


async def journey_operations(c: CheckedClient) -> None:
    """After the payments journey scanned the chain: ready, and metrics for the operator's token."""
    await c.call("GET", "/ready", expect=200)
    status, text = await c.call("GET", "/metrics", {"Authorization": f"Bearer {METRICS_TOKEN}"}, expect=200)
    assert "orbchain_http_requests_total" in text


async def journey_accounts(c: CheckedClient) -> tuple[Merchant, Merchant]:
    credentials = {"email": "shop@example.com", "password": "s3cret-pass"}
    _, body = await c.call("POST", "/dashboard/auth/signup", json=credentials, expect=200)
    shop = Merchant(body["data"]["token"], body["data"]["merchant_id"], body["data"]["api_keys"])
    await c.call("POST", "/dashboard/auth/signup", json=credentials, expect=409)
    _, body = await c.call("POST", "/dashboard/auth/signup", json={"email": "nope", "password": "x"}, expect=400)
    assert body["error"]["type"] == "validation" and {"email", "password"} <= set(body["error"]["detail"])
    _, body = await c.call("POST", "/dashboard/auth/signup", json={"email": "friend@example.com",
                                                                   "password": "s3cret-pass"}, expect=200)
    friend = Merchant(body["data"]["token"], body["data"]["merchant_id"], body["data"]["api_keys"])
    await c.call("POST", "/dashboard/auth/login", json=credentials, expect=200)
    await c.call("POST", "/dashboard/auth/login", json={**credentials, "password": "wrong-pass"}, expect=401)
    await c.call("GET", "/dashboard/account", shop.jwt, expect=200)
    await c.call("GET", "/dashboard/account", expect=401)
    await c.call("GET", "/dashboard/account", bearer("not-a-token"), expect=401)
    return shop, friend


async def journey_settings(c: CheckedClient, shop: Merchant, hook_url: str) -> None:
    gateway = Devnet(c.client).gateway
    await c.call("PUT", "/dashboard/settings/webhook", shop.jwt, json={"webhook_url": hook_url}, expect=200)
    await c.call("PUT", "/dashboard/settings/webhook", shop.jwt, json={"webhook_url": "ftp://x"}, expect=400)
    await c.call("POST", "/dashboard/settings/webhook/test", shop.jwt, expect=200)
    await c.call("PUT", "/dashboard/settings/coins", shop.jwt,
                 json={"accepted_coins": ["BTC", "LTC", "ETH", "USDT_ERC20", "USDT_TRC20", "SOL"]}, expect=200)
    await c.call("PUT", "/dashboard/settings/coins", shop.jwt, json={"accepted_coins": []}, expect=400)
    await c.call("PUT", "/dashboard/settings/confirmations", shop.jwt, json={"LTC": 6}, expect=200)
    await c.call("PUT", "/dashboard/settings/confirmations", shop.jwt, json={"BTC": 1}, expect=400)
    await c.call("PUT", "/dashboard/settings/customer-static-mode", shop.jwt, json={"enabled": False}, expect=200)
    _, body = await c.call("POST", "/dashboard/settings/rotate-key", shop.jwt, json={"key_type": "generalApiKey"},
                           expect=200)
    shop.keys["general_api_key"] = body["data"]["new_key"]
    _, body = await c.call("POST", "/dashboard/settings/change-password", shop.jwt,
                           json={"current_password": "s3cret-pass", "new_password": SHOP_PASSWORD}, expect=200)
    shop.token = body["data"]["token"]
    await c.call("POST", "/dashboard/settings/change-password", shop.jwt,
                 json={"current_password": "wrong-pass", "new_password": "n3w-secret-pass"}, expect=401)
    _, body = await c.call("POST", "/dashboard/mfa/setup", shop.jwt, expect=200)
    totp = pyotp.TOTP(body["data"]["secret"])
    await c.call("POST", "/dashboard/mfa/verify", shop.jwt, json={"code": "12"}, expect=400)
    _, verified = await c.call("POST", "/dashboard/mfa/verify", shop.jwt, json={"code": totp.at(gateway.now())},
                               expect=200)
    credentials = {"email": "shop@example.com", "password": SHOP_PASSWORD}
    _, body = await c.call("POST", "/dashboard/auth/login", json=credentials, expect=401)  # 2FA on: the code too
    assert body["error"]["code"] == "totp_required"
    await c.call("POST", "/dashboard/auth/login", json={**credentials, "totp_code": "12"}, expect=401)
    await c.call("POST", "/dashboard/auth/login", json={**credentials, "totp_code": verified["data"]["recovery_codes"][0]},
                 expect=200)
    advance_clock(gateway, 30)
    _, body = await c.call("POST", "/dashboard/mfa/recovery-codes", shop.jwt, json={"code": totp.at(gateway.now())},
                           expect=200)
    await c.call("POST", "/dashboard/auth/login", json={**credentials, "totp_code": body["data"]["recovery_codes"][0]},
                 expect=200)
    await c.call("POST", "/dashboard/mfa/recovery-codes", shop.jwt, json={"code": "12"}, expect=400)
    later = gateway.now() + 30
    gateway.clock = lambda: later
    await c.call("POST", "/dashboard/mfa/disable", shop.jwt, json={"code": totp.at(later)}, expect=200)


async def journey_api_keys(c: CheckedClient, shop: Merchant, hook_url: str) -> None:
    await c.call("GET", "/dashboard/api-keys", shop.jwt, expect=200)
    _, body = await c.call("POST", "/dashboard/api-keys", shop.jwt, expect=200,
                           json={"label": "reader", "scopes": ["payment:read"], "webhook_url": hook_url,
                                 "coin_allowlist": ["BTC"], "rate_limit_rpm": 100})
    reader = body["data"]
    await c.call("POST", "/dashboard/api-keys", shop.jwt, json={"label": "", "scopes": ["root"]}, expect=400)
    # A key without payment:create is refused (403), a bad key is 401.
    await c.call("POST", "/v1/payment/white-label", {"merchant_api_key": reader["api_key"]},
                 json={"currency": "BTC", "amount": "0.01"}, expect=403)
    await c.call("GET", "/v1/payment", {"merchant_api_key": "nope"}, expect=401)
    await c.call("POST", f"/dashboard/api-keys/{reader['id']}/rotate", shop.jwt, expect=200)
    await c.call("POST", f"/dashboard/api-keys/{reader['id']}/revoke", shop.jwt, expect=200)
    await c.call("POST", f"/dashboard/api-keys/{reader['id']}/revoke", shop.jwt, expect=200)
    await c.call("POST", f"/dashboard/api-keys/{reader['id']}/rotate", shop.jwt, expect=400)
    await c.call("POST", "/dashboard/api-keys/key_unknown/revoke", shop.jwt, expect=404)
    await c.call("GET", "/dashboard/api-keys", shop.jwt, expect=200)


async def journey_payments(c: CheckedClient, shop: Merchant, devnet: Devnet) -> dict[str, str]:
    key = shop.merchant_key
    _, body = await c.call("POST", "/v1/payment/static-address", key, json={"currency": "ETH", "user_id": "u-7"},
                           expect=200)
    static = body["data"]
    _, body = await c.call("POST", "/v1/payment/white-label", key, expect=200,
                           json={"currency": "BTC", "amount": "0.01", "order_id": "order-1", "lifetime": 60})
    funding = body["data"]
    _, body = await c.call("POST", "/v1/payment/white-label", key, expect=200,
                           json={"currency": "BTC", "amount_fiat": "30", "fiat_currency": "USD"})
    fiat = body["data"]
    _, body = await c.call("POST", "/v1/payment/invoice", key, expect=200,
                           json={"amount": "60", "currency": "USD", "return_url": "https://shop.example/thanks",
                                 "email": "payer@example.com", "description": "Two mugs"})
    invoice = body["data"]
    _, body = await c.call("POST", "/v1/payment/white-label", key, json={"currency": "LTC", "amount": "1"},
                           expect=200)
    doomed = body["data"]
    _, body = await c.call("POST", "/v1/payment/white-label", key, json={"currency": "LTC"}, expect=400)
    assert "amount" in body["error"]["detail"]
    await c.call("POST", "/v1/payment/invoice", key, json={"amount": "-1"}, expect=400)
    await c.call("GET", "/v1/payment/accepted-currencies", key, expect=200)
    await c.call("GET", f"/v1/payment/{fiat['track_id']}/receipt", key, expect=400)
    await c.call("POST", f"/v1/payment/{doomed['track_id']}/cancel", key, expect=200)
    await c.call("GET", "/v1/payment/no-such-payment", key, expect=404)

    # Pay: the funding payment and the fiat one on devnet, the invoice from its hosted page.
    for payment in (funding, fiat):
        await devnet.pay("BTC", payment["address"], payment["pay_amount"])
    await c.call("GET", f"/v1/payment/{funding['track_id']}", key, expect=200)  # Paying
    await devnet.mine(2)
    await c.call("GET", f"/v1/payment/{fiat['track_id']}", key, expect=200)  # Paid
    await c.call("GET", f"/v1/payment/{fiat['track_id']}/receipt", key, expect=200)
    page = f"/pay/{invoice['track_id']}"
    await c.call("GET", page, expect=200)
    await c.call("GET", page, params={"pay_currency": "LTC"}, expect=303)
    await c.call("POST", f"{page}/devnet-pay", data={"amount": ""}, expect=303)
    await c.call("GET", "/pay/no-such-payment", expect=404)
    await c.call("GET", "/assets/orbchain.css", expect=200)
    await devnet.mine(6)
    _, body = await c.call("GET", f"/v1/payment/{invoice['track_id']}", key, expect=200)
    assert body["data"]["status"] == "Paid", body
    await c.call("GET", f"{page}/events", expect=200)  # Paid: one event, then the stream ends
    await c.call("GET", "/pay/no-such-payment/events", expect=404)
    await c.call("GET", "/assets/pay.js", expect=200)
    await devnet.pay("ETH", static["address"], "0.1")
    await devnet.mine(12)

    await c.call("GET", "/v1/payment", key, params={"status": "PAID", "type": "WHITE_LABEL", "sort_order": "asc",
                                                    "limit": "5", "offset": "0"}, expect=200)
    await c.call("GET", "/v1/payment", key, params={"order_id": "order-1", "currency": "BTC"}, expect=200)
    await c.call("GET", "/v1/payment", key, params={"status": "LOST"}, expect=400)
    await c.call("GET", "/v1/deposits", key, params={"coin": "ETH", "status": "CREDITED", "since": "0",
                                                     "user_id": "u-7", "limit": "10"}, expect=200)
    await c.call("GET", "/v1/deposits", key, expect=200)
    await c.call("GET", "/v1/deposits", key, params={"limit": "0"}, expect=400)
    await c.call("GET", "/v1/general/account/balance", shop.general_key, expect=200)
    await c.call("GET", "/v1/general/account/balance", shop.merchant_key, expect=401)
    return {"paid": fiat["track_id"], "waiting": static["track_id"]}


async def journey_dashboard(c: CheckedClient, shop: Merchant) -> None:
    jwt = shop.jwt
    await c.call("GET", "/dashboard/payments", jwt, params={"type": "INVOICE"}, expect=200)
    _, body = await c.call("POST", "/dashboard/create-payment", jwt, expect=200,
                           json={"type": "white_label", "currency": "BTC", "amount": "0.001"})
    track_id = body["data"]["track_id"]
    await c.call("POST", "/dashboard/create-payment", jwt, json={"currency": "BTC"}, expect=400)
    await c.call("GET", f"/dashboard/payments/{track_id}", jwt, expect=200)
    await c.call("POST", f"/dashboard/payments/{track_id}/cancel", jwt, expect=200)
    await c.call("GET", "/dashboard/payments/no-such-payment", jwt, expect=404)
    await c.call("GET", "/dashboard/balances", jwt, expect=200)
    await c.call("GET", "/dashboard/transactions", jwt, params={"limit": "10"}, expect=200)
    await c.call("GET", "/dashboard/deposit-addresses", jwt, expect=200)
    await c.call("GET", "/dashboard/receive-address", jwt, params={"coin": "BTC"}, expect=200)
    _, body = await c.call("GET", "/dashboard/receive-address", jwt, expect=400)
    assert body["error"]["code"] == "missing_coin"


async def journey_payouts(c: CheckedClient, shop: Merchant, devnet: Devnet, payments: dict[str, str]) -> None:
    key = shop.payout_key
    _, body = await c.call("POST", "/v1/payout", key, expect=200,
                           json={"currency": "BTC", "address": BTC_DEST, "amount": "0.001",
                                 "idempotency_key": "journey-payout-1"})
    track_id = body["data"]["track_id"]
    await c.call("POST", "/v1/payout", key, json={"currency": "BTC", "address": BTC_DEST, "amount": "0.001",
                                                  "idempotency_key": "journey-payout-1"}, expect=200)
    await c.call("POST", "/v1/payout", key, json={"currency": "BTC", "address": "bc1qnope", "amount": "0.001"},
                 expect=400)
    await c.call("POST", "/v1/payout", key, json={"currency": "BTC", "address": BTC_DEST, "amount": "99"},
                 expect=400)
    await c.call("GET", f"/v1/payout/{track_id}", key, expect=200)  # Confirming
    await process_payouts(devnet.gateway)
    await devnet.mine(1)
    await process_payouts(devnet.gateway)
    _, body = await c.call("GET", f"/v1/payout/{track_id}", key, expect=200)
    await c.call("GET", "/v1/payout/no-such-payout", key, expect=404)
    _, body = await c.call("POST", "/v1/payout/batch", key, expect=200, json={"items": [
        {"currency": "BTC", "address": BTC_DEST, "amount": "0.0002", "external_id": "row-1"},
        {"currency": "BTC", "address": "nowhere", "amount": "0.0002", "external_id": "row-2"},
    ]})
    assert body["data"]["summary"] == {"total": 2, "created": 1, "idempotent": 0, "failed": 1}
    await c.call("POST", "/v1/payout/batch", key, json={"items": []}, expect=400)
    await c.call("POST", f"/v1/payment/{payments['paid']}/refund", key, expect=200,
                 json={"destination": BTC_DEST, "amount": "0.0002"})
    await c.call("POST", f"/v1/payment/{payments['waiting']}/refund", key, json={"destination": BTC_DEST},
                 expect=400)
    await c.call("POST", "/dashboard/create-payout", shop.jwt, expect=200,
                 json={"currency": "BTC", "address": BTC_DEST, "amount": "0.0003", "description": "rent"})
    await c.call("GET", "/dashboard/payouts", shop.jwt, params={"limit": "5"}, expect=200)


async def journey_transfers(c: CheckedClient, shop: Merchant, friend: Merchant) -> None:
    _, body = await c.call("GET", "/dashboard/account", friend.jwt, expect=200)
    to = body["data"]["account"]["account_id"]
    _, me = await c.call("GET", "/dashboard/account", shop.jwt, expect=200)
    transfer = {"to_account_id": to, "coin": "BTC", "amount": "0.0001", "idempotency_key": "journey-transfer-1"}
    await c.call("POST", "/v1/transfer", shop.merchant_key, json=transfer, expect=200)
    _, body = await c.call("POST", "/v1/transfer", shop.merchant_key, json=transfer, expect=200)
    assert body["data"]["idempotent"] is True
    _, body = await c.call("POST", "/v1/transfer", shop.merchant_key, expect=400,
                           json={**transfer, "to_account_id": me["data"]["account"]["account_id"],
                                 "idempotency_key": "journey-transfer-2"})
    await c.call("POST", "/v1/transfer", shop.merchant_key, json={"coin": "BTC"}, expect=400)
    await c.call("POST", "/dashboard/transfer", shop.jwt, json={"to_account_id": to, "coin": "BTC",
                                                                 "amount": "0.0001"}, expect=200)
    await c.call("GET", "/dashboard/transfers", shop.jwt, params={"limit": "10", "offset": "0"}, expect=200)
    await c.call("GET", "/dashboard/transfers", friend.jwt, expect=200)


async def journey_approvals(c: CheckedClient, shop: Merchant) -> None:
    """The approvals plugin: a held payout listed, rejected, another approved with the code; policy off after.

    The one approved is a job's: the holder cannot approve what their own payout key asked for (issue 42)."""
    gateway = c.client.app[GATEWAY]
    await approval_policy.save(gateway, shop.merchant_id, approval_policy.parse(gateway, {"threshold_BTC": "0"}))
    payout = {"currency": "BTC", "address": BTC_DEST, "amount": "0.0002"}
    _, body = await c.call("POST", "/v1/payout", shop.payout_key, json=payout, expect=200)
    assert body["data"]["awaiting_approval"] is True
    rejected = body["data"]["track_id"]
    _, body = await c.call("GET", "/dashboard/approvals", shop.jwt, expect=200)
    assert [h["id"] for h in body["data"]["held"]] == [rejected]
    await c.call("POST", f"/dashboard/approvals/{rejected}/reject", shop.jwt, expect=200)
    await c.call("POST", "/dashboard/approvals/po-nope/reject", shop.jwt, expect=404)
    _, body = await c.call("POST", "/v1/payout", shop.payout_key, json=payout, expect=200)
    own = body["data"]["track_id"]
    approved = (await services.request_payout(gateway, shop.merchant_id, coin="BTC", destination=BTC_DEST,
                                              amount=20_000, idempotency_key="sched:journey-1")).track_id
    await c.call("POST", f"/dashboard/approvals/{approved}/approve", shop.jwt, json={"totp_code": "1"}, expect=403)
    _, body = await c.call("POST", "/dashboard/mfa/setup", shop.jwt, expect=200)
    totp = pyotp.TOTP(body["data"]["secret"])
    await c.call("POST", "/dashboard/mfa/verify", shop.jwt, json={"code": totp.at(gateway.now())}, expect=200)
    advance_clock(gateway, 30)  # a code is good once: the next time step's
    await c.call("POST", f"/dashboard/approvals/{approved}/approve", shop.jwt, expect=200,
                 json={"totp_code": totp.at(gateway.now())})
    advance_clock(gateway, 30)
    _, body = await c.call("POST", f"/dashboard/approvals/{own}/approve", shop.jwt, expect=403,
                           json={"totp_code": totp.at(gateway.now())})
    assert body["error"]["code"] == "self_approval"
    await c.call("POST", f"/dashboard/approvals/{own}/reject", shop.jwt, expect=200)
    advance_clock(gateway, 30)
    await c.call("POST", "/dashboard/mfa/disable", shop.jwt, json={"code": totp.at(gateway.now())}, expect=200)
    await approval_policy.remove(gateway, shop.merchant_id)


async def journey_member_2fa(c: CheckedClient) -> None:
    """The teams plugin: the member who just joined turns their own 2FA on and off over JSON."""
    gateway = c.client.app[GATEWAY]
    _, body = await c.call("POST", "/dashboard/auth/login", json={"email": "teammate@example.com",
                                                                  "password": "s3cret-pass"}, expect=200)
    member = bearer(body["data"]["token"])
    await c.call("POST", "/dashboard/team/me/mfa/verify", member, json={"code": "12"}, expect=400)
    _, body = await c.call("POST", "/dashboard/team/me/mfa/setup", member, expect=200)
    totp = pyotp.TOTP(body["data"]["secret"])
    await c.call("POST", "/dashboard/team/me/mfa/verify", member, json={"code": totp.at(gateway.now())}, expect=200)
    await c.call("POST", "/dashboard/team/me/mfa/recovery-codes", member, json={"code": "12"}, expect=400)
    advance_clock(gateway, 30)
    await c.call("POST", "/dashboard/team/me/mfa/recovery-codes", member, json={"code": totp.at(gateway.now())},
                 expect=200)
    advance_clock(gateway, 30)
    await c.call("POST", "/dashboard/team/me/mfa/disable", member, json={"code": totp.at(gateway.now())}, expect=200)


async def journey_team(c: CheckedClient) -> None:
    """The teams plugin's JSON twins of the Team page: the list, and removing the teammate (keys: revoke or keep)."""
    _, body = await c.call("POST", "/dashboard/auth/login", json={"email": "pages@example.com",
                                                                  "password": "s3cret-pass"}, expect=200)
    holder = bearer(body["data"]["token"])
    _, body = await c.call("GET", "/dashboard/team/members", holder, expect=200)
    teammate = next(m["id"] for m in body["data"]["members"] if m["email"] == "teammate@example.com")
    await c.call("POST", f"/dashboard/team/members/{teammate}/remove", holder, json={"api_keys": "no"}, expect=400)
    await c.call("POST", "/dashboard/team/members/holder/remove", holder, json={}, expect=403)
    await c.call("POST", f"/dashboard/team/members/{teammate}/remove", holder, json={"api_keys": "keep"}, expect=200)
    await c.call("POST", f"/dashboard/team/members/{teammate}/remove", holder, json={}, expect=404)


async def journey_webhook_logs(c: CheckedClient, shop: Merchant) -> None:
    await deliver_due(Devnet(c.client).gateway)
    _, body = await c.call("GET", "/dashboard/webhook-logs", shop.jwt, params={"limit": "50"}, expect=200)
    assert body["data"]["logs"], "the journey's webhooks were delivered and logged"
    await c.call("GET", "/dashboard/webhook-logs", shop.jwt, params={"limit": "999"}, expect=400)


async def journey_schedules(c: CheckedClient, shop: Merchant, friend: Merchant) -> None:
    """The schedules plugin's routes (SPEC 4.11)."""
    new = {"coin": "BTC", "destination": BTC_DEST, "min_amount": "0.001", "interval_sec": 86400}
    _, body = await c.call("POST", "/dashboard/payout-schedules", shop.jwt, json=new, expect=200)
    sid = body["data"]["id"]
    await c.call("POST", "/dashboard/payout-schedules", shop.jwt, json={**new, "interval_sec": 60}, expect=400)
    await c.call("GET", "/dashboard/payout-schedules", shop.jwt, expect=200)
    await c.call("PATCH", f"/dashboard/payout-schedules/{sid}", shop.jwt, json={"enabled": False}, expect=200)
    await c.call("PATCH", f"/dashboard/payout-schedules/{sid}", friend.jwt, json={"enabled": True}, expect=404)
    await c.call("DELETE", f"/dashboard/payout-schedules/{sid}", shop.jwt, expect=200)


async def journey_autowithdraw(c: CheckedClient, shop: Merchant) -> None:
    """The auto-withdraw plugin's routes (SPEC 4.8)."""
    rule = {"coin": "BTC", "threshold_native": "0.5", "destination": BTC_DEST}
    await c.call("PUT", "/dashboard/settings/auto-withdraw", shop.jwt, json={"rules": [rule]}, expect=200)
    await c.call("PUT", "/dashboard/settings/auto-withdraw", shop.jwt, json={"rules": [rule, rule]}, expect=400)
    await c.call("GET", "/dashboard/settings/auto-withdraw", shop.jwt, expect=200)


async def journey_splits(c: CheckedClient, shop: Merchant, friend: Merchant, devnet: Devnet) -> None:
    """The splits plugin's field and route (SPEC 2.10): a merchant share and an address share, paid."""
    key = shop.merchant_key
    splits = [{"bps": 4000, "recipient_merchant_id": friend.merchant_id}, {"bps": 6000, "recipient_address": BTC_DEST}]
    _, body = await c.call("POST", "/v1/payment/white-label", key, expect=200,
                           json={"currency": "BTC", "amount": "0.01", "splits": splits})
    await c.call("POST", "/v1/payment/white-label", key, expect=400,
                 json={"currency": "BTC", "amount": "0.01", "splits": splits[:1]})
    await devnet.pay("BTC", body["data"]["address"], "0.01")
    await devnet.mine(2)
    _, view = await c.call("GET", f"/v1/payment/{body['data']['track_id']}/splits", key, expect=200)
    assert view["data"]["payouts"][0]["status"] == "requested", view
    await c.call("GET", f"/v1/payment/{body['data']['track_id']}/splits", friend.merchant_key, expect=404)


async def journey_portfolio(c: CheckedClient, shop: Merchant) -> None:
    """The portfolio plugin's route (SPEC 4.7)."""
    _, body = await c.call("GET", "/dashboard/portfolio", shop.jwt, expect=200)
    assert body["data"]["portfolio"]["per_coin"], "every accepted coin is listed"
    await c.call("GET", "/dashboard/portfolio", None, expect=401)


async def journey_account_insights(c: CheckedClient, shop: Merchant, friend: Merchant) -> None:
    """The analytics, referrals and key audit-log plugins' routes (SPEC 4.7, 5.2)."""
    _, body = await c.call("GET", "/dashboard/analytics", shop.jwt, expect=200)
    assert len(body["data"]["daily"]) == 30
    await c.call("GET", "/dashboard/referrals", shop.jwt, expect=200)
    await c.call("GET", "/dashboard/referrals", None, expect=401)
    _, body = await c.call("POST", "/dashboard/api-keys", shop.jwt, expect=200,
                           json={"label": "audited", "scopes": ["payment:read"]})
    key = body["data"]
    await c.call("GET", "/v1/payment/accepted-currencies", {"merchant_api_key": key["api_key"]}, expect=200)
    _, body = await c.call("GET", f"/dashboard/api-keys/{key['id']}/audit-log", shop.jwt, expect=200)
    assert body["data"]["total"] == 1
    await c.call("GET", f"/dashboard/api-keys/{key['id']}/audit-log", friend.jwt, expect=404)
    await c.call("GET", f"/dashboard/api-keys/{key['id']}/audit-log", shop.jwt, params={"limit": 0}, expect=400)


async def journey_swaps(c: CheckedClient, shop: Merchant, friend: Merchant) -> None:
    """The swaps plugin's routes (SPEC 4.12) and the default settlement coin setting."""
    body = {"from_coin": "BTC", "to_coin": "ETH", "amount": "0.0001"}
    await c.call("POST", "/dashboard/swap/quote", shop.jwt, json=body, expect=200)
    await c.call("POST", "/dashboard/swap/quote", shop.jwt, json={**body, "to_coin": "BTC"}, expect=400)
    _, created = await c.call("POST", "/dashboard/swap", shop.jwt, json=body, expect=200)
    swap_id = created["data"]["swap_id"]
    await c.call("GET", f"/dashboard/swap/{swap_id}", shop.jwt, expect=200)
    await c.call("GET", f"/dashboard/swap/{swap_id}", friend.jwt, expect=404)
    await c.call("GET", "/dashboard/swaps", shop.jwt, expect=200)
    await c.call("GET", "/dashboard/swaps", None, expect=401)
    await c.call("PUT", "/dashboard/settings/settlement-coin", shop.jwt, json={"default_settlement_coin": "NOPE"},
                 expect=400)
    await c.call("PUT", "/dashboard/settings/settlement-coin", shop.jwt, json={"default_settlement_coin": None},
                 expect=200)
    await c.call("GET", "/dashboard/settings/settlement-coin", shop.jwt, expect=200)


async def journey_links(c: CheckedClient, shop: Merchant, friend: Merchant) -> None:
    """The payment-links plugin's routes (SPEC 4.11, 4.14)."""
    path = "/dashboard/payment-links"
    _, body = await c.call("POST", path, shop.jwt, json={"coin": "BTC", "amount": "0.001"}, expect=200)
    fixed = body["data"]
    _, body = await c.call("POST", path, shop.jwt, json={"coin": "BTC", "description": "Tips"}, expect=200)
    open_slug = body["data"]["slug"]
    await c.call("POST", path, shop.jwt, json={"coin": "BTC", "amount": "1", "amount_fiat": "1"}, expect=400)
    await c.call("GET", path, shop.jwt, expect=200)
    await c.call("GET", f"{path}/{fixed['id']}/embed", shop.jwt, params={"label": "Support us"}, expect=200)
    await c.call("GET", f"/l/{fixed['slug']}", expect=302)
    await c.call("GET", f"/l/{open_slug}", expect=200)
    await c.call("GET", f"/l/{open_slug}", params={"amount": "0.01"}, expect=302)
    await c.call("GET", f"/l/{open_slug}", params={"amount": "zero"}, expect=400)
    await c.call("PATCH", f"{path}/{fixed['id']}", friend.jwt, json={"enabled": False}, expect=404)
    await c.call("PATCH", f"{path}/{fixed['id']}", shop.jwt, json={"enabled": False}, expect=200)
    await c.call("GET", f"/l/{fixed['slug']}", expect=410)
    await c.call("GET", "/l/nosuchlink00", expect=404)
    await c.call("GET", "/assets/donate.js", expect=200)


async def journey_tips(c: CheckedClient, shop: Merchant) -> None:
    """The tip page (SPEC 4.14)."""
    _, body = await c.call("GET", "/dashboard/account", shop.jwt, expect=200)
    page = f"/tip/{body['data']['account']['account_id']}"
    await c.call("GET", page, params={"coin": "LTC"}, expect=200)
    await c.call("POST", page, data={"coin": "BTC", "amount": "0.01"}, expect=303)
    await c.call("POST", page, data={"coin": "BTC", "amount": "0"}, expect=400)
    await c.call("GET", "/tip/nobody", expect=404)


async def journey_brands(c: CheckedClient, shop: Merchant, friend: Merchant) -> None:
    """The brands plugin's routes (SPEC 4.11) and a branded page's accent stylesheet."""
    await c.call("GET", "/dashboard/brands", shop.jwt, expect=200)
    _, body = await c.call("POST", "/dashboard/brands", shop.jwt, expect=200, json={
        "name": "Journey", "logoUrl": "https://cdn.example.com/logo.png", "theme_mode": "DARK",
        "brand_color": "#0a84ff", "webhook_secret": "journey-secret-0123456789"})
    bid = body["data"]["id"]
    await c.call("POST", "/dashboard/brands", shop.jwt, json={"name": "Journey", "slug": "journey"}, expect=409)
    await c.call("POST", "/dashboard/brands", shop.jwt, json={"name": ""}, expect=400)
    await c.call("GET", f"/dashboard/brands/{bid}", shop.jwt, expect=200)
    await c.call("GET", f"/dashboard/brands/{bid}", friend.jwt, expect=404)
    await c.call("PUT", f"/dashboard/brands/{bid}", shop.jwt, json={"logo_url": None, "slug": "trip"}, expect=200)
    await c.call("DELETE", f"/dashboard/brands/{bid}", shop.jwt, expect=200)
    await c.call("GET", "/dashboard/brands?archived=1", shop.jwt, expect=200)
    await c.call("GET", "/assets/accent/0a84ff.css", None, expect=200)


async def journey_subscriptions(c: CheckedClient, shop: Merchant, friend: Merchant) -> None:
    """The subscriptions plugin's routes (SPEC 4.5, 4.10, 4.14)."""
    plan = {"label": "Pro", "amount_usd": "12.50", "interval_sec": 2592000, "accepted_coins": ["BTC"]}
    _, body = await c.call("POST", "/dashboard/plans", shop.jwt, json=plan, expect=200)
    plan_id = body["data"]["id"]
    await c.call("POST", "/dashboard/plans", shop.jwt, json={**plan, "interval_sec": 60}, expect=400)
    await c.call("GET", "/dashboard/plans", shop.jwt, expect=200)
    await c.call("PATCH", f"/dashboard/plans/{plan_id}", shop.jwt, json={"label": "Pro+"}, expect=200)
    await c.call("PATCH", f"/dashboard/plans/{plan_id}", friend.jwt, json={"label": "x"}, expect=404)
    _, body = await c.call("POST", "/v1/subscription", shop.merchant_key, json={"plan_id": plan_id,
                                                                                "customer_ref": "c1"}, expect=200)
    sid = body["data"]["subscription_id"]
    await c.call("POST", "/v1/subscription", shop.merchant_key, json={"plan_id": "plan_nope"}, expect=400)
    await c.call("GET", "/v1/subscription?status=ACTIVE", shop.merchant_key, expect=200)
    await c.call("GET", f"/v1/subscription/{sid}", shop.merchant_key, expect=200)
    await c.call("GET", f"/v1/subscription/{sid}", friend.merchant_key, expect=404)
    await c.call("POST", "/dashboard/subscriptions", shop.jwt, json={"plan_id": plan_id}, expect=200)
    await c.call("GET", "/dashboard/subscriptions", shop.jwt, expect=200)
    await c.call("GET", "/dashboard/subscriptions/summary", shop.jwt, expect=200)
    await c.call("GET", f"/subscribe/{plan_id}", None, expect=200)
    await c.call("GET", "/subscribe/plan_nope", None, expect=404)
    status, _ = await c.call("POST", f"/subscribe/{plan_id}", None, data={"email": "c@example.com"}, expect=303)
    manage = body["data"]["manage_url"].split("://", 1)[1].split("/", 1)[1]
    await c.call("GET", f"/{manage}", None, expect=200)
    await c.call("POST", f"/{manage}/pause", None, expect=303)
    await c.call("POST", f"/{manage}/resume", None, expect=303)
    await c.call("POST", f"/{manage}/cancel", None, expect=303)
    await c.call("GET", f"/{manage}", None, expect=404)  # the token rotated
    await c.call("POST", f"/v1/subscription/{sid}/cancel", shop.merchant_key, expect=200)


def payout_body() -> dict[str, str]:
    return {"currency": "BTC", "destination": BTC_DEST, "amount": "0.0001"}


async def journey_telegram(c: CheckedClient, shop: Merchant, friend: Merchant) -> None:
    """The messaging mini-app's routes (SPEC 4.13): link a chat, open a session, use the wallet."""
    from orbchain.plugins.telegram import link_tokens

    gateway, chat = c.client.app[GATEWAY], 4242
    update = {"update_id": 1, "message": {"message_id": 1, "date": 1, "text": "/start", "chat": {
        "id": chat, "type": "private", "first_name": "Journey", "username": "journey_user"}}}
    hook = {"X-Telegram-Bot-Api-Secret-Token": TG_WEBHOOK_SECRET}
    await c.call("POST", "/tg/webhook", hook, json=update, expect=200)  # /start: the bot records who the chat is
    await c.call("POST", "/tg/webhook", {"X-Telegram-Bot-Api-Secret-Token": "wrong"}, json=update, expect=401)
    token = link_tokens.issue(link_tokens.key_of(gateway), chat, gateway.now())  # the bot's answer's
    await c.call("GET", "/tg/link/start", params={"t": token}, expect=302)
    await c.call("GET", "/tg/link/start", params={"t": "1.2.3"}, expect=400)
    await c.call("GET", "/dashboard/tg/link/status", shop.jwt, expect=200)
    await c.call("POST", "/dashboard/tg/link/complete", shop.jwt, json={"token": token}, expect=400)  # no password
    await c.call("POST", "/dashboard/tg/link/complete", shop.jwt, json={"token": token, "password": "wrong-pass"},
                 expect=401)
    await c.call("POST", "/dashboard/tg/link/complete", shop.jwt, json={"token": token, "password": SHOP_PASSWORD},
                 expect=200)
    await c.call("POST", "/dashboard/tg/link/complete", shop.jwt, json={"token": token, "password": SHOP_PASSWORD},
                 expect=400)
    await c.call("GET", "/dashboard/tg/link/status", shop.jwt, expect=200)
    await c.call("GET", "/tgapp", expect=200)
    await c.call("GET", "/static/telegram/tgapp.js", expect=200)
    await c.call("GET", "/static/telegram/nothing.js", expect=404)
    await c.call("POST", "/tgapp/session", json={"init_data": "user=1&hash=00"}, expect=401)
    _, body = await c.call("POST", "/tgapp/session", json={"init_data": init_data_for(chat, gateway.now())},
                           expect=200)
    mini = bearer(body["data"]["token"])
    await c.call("GET", "/tgapp/balances", shop.jwt, expect=401)
    for path in ("/tgapp/balances", "/tgapp/payments", "/tgapp/prices", "/tgapp/mfa/status"):
        await c.call("GET", path, mini, expect=200)
    await c.call("GET", "/tgapp/receive", mini, params={"coin": "BTC"}, expect=200)
    await c.call("GET", "/tgapp/receive", mini, params={"coin": "XMR"}, expect=400)
    await c.call("GET", "/tgapp/qr", params={"data": BTC_DEST}, expect=200)
    await c.call("GET", "/tgapp/qr", params={"data": "x" * 513}, expect=400)
    swap = {"from_coin": "BTC", "to_coin": "ETH", "amount": "0.0001"}
    await c.call("POST", "/tgapp/swap/quote", mini, json=swap, expect=200)
    await c.call("POST", "/tgapp/payout", mini, json={**payout_body(), "totp_code": "000000"}, expect=403)
    _, body = await c.call("POST", "/tgapp/mfa/setup", mini, expect=200)  # the settings step turned 2FA off
    secret = body["data"]["secret"]
    await c.call("POST", "/tgapp/mfa/verify", mini, json={"code": pyotp.TOTP(secret).at(gateway.now())}, expect=200)

    def code() -> str:
        later = gateway.now() + 30  # each code works once: move to the next time step
        gateway.clock = lambda: later
        return pyotp.TOTP(secret).at(later)

    payout = payout_body()
    await c.call("POST", "/tgapp/payout", mini, json={**payout, "totp_code": "000000"}, expect=401)
    await c.call("POST", "/tgapp/payout", mini, json={**payout, "totp_code": code()}, expect=200)
    await c.call("POST", "/tgapp/swap", mini, json={**swap, "totp_code": code()}, expect=200)
    await c.call("POST", "/tgapp/unlink", mini, expect=200)
    await c.call("GET", "/tgapp/balances", mini, expect=401)
    await c.call("POST", "/dashboard/tg/unlink", shop.jwt, expect=200)
    await c.call("POST", "/dashboard/tg/unlink", expect=401)
    _, body = await c.call("GET", "/dashboard/activity", shop.jwt, params={"limit": "5"}, expect=200)
    assert body["data"]["events"][0]["kind"] == "chat_unlinked"
    await c.call("GET", "/dashboard/activity", shop.jwt, params={"limit": "0"}, expect=400)
    await c.call("GET", "/dashboard/activity", expect=401)


async def journey_lightning(c: CheckedClient, shop: Merchant) -> None:
    """BTC_LN on the devnet Lightning node: enabled in settings/coins (SPEC 4.8), paid, paid out."""
    from orbchain.chains.lightning.receive import lightning_chain

    node = lightning_chain(Devnet(c.client).gateway).backend
    await c.call("PUT", "/dashboard/settings/coins", shop.jwt, expect=200,
                 json={"accepted_coins": ["BTC", "LTC", "ETH", "USDT_ERC20", "USDT_TRC20", "SOL", "BTC_LN"]})
    await c.call("POST", "/v1/payment/white-label", shop.merchant_key, expect=200,
                 json={"currency": "BTC_LN", "amount": "0.0005"})
    _, body = await c.call("POST", "/v1/payment/invoice", shop.merchant_key, expect=200,
                           json={"currency": "BTC_LN", "amount": "0.001"})
    page = f"/pay/{body['data']['track_id']}"
    await c.call("GET", page, expect=200)
    await c.call("POST", f"{page}/lightning-devnet-pay", expect=303)
    await c.call("POST", f"{page}/lightning-devnet-pay", expect=409)
    _, body = await c.call("GET", f"/v1/payment/{body['data']['track_id']}", shop.merchant_key, expect=200)
    assert body["data"]["status"] == "Paid" and body["data"]["lightning"]["settle_amount_sat"] == "100000"
    issued = await node.issue_payee_invoice(10_000_000)
    _, body = await c.call("POST", "/v1/payout", shop.payout_key, expect=200,
                           json={"currency": "BTC_LN", "address": issued.bolt11, "amount": "0.0001"})
    assert body["data"]["status"] == "Confirmed" and body["data"]["lightning"]["preimage"]
    await c.call("GET", f"/v1/payout/{body['data']['track_id']}", shop.payout_key, expect=200)


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, "no form on the page"
    return found.group(1)


async def journey_dashboard_pages(c: CheckedClient, friend: Merchant) -> None:
    """The dashboard's HTML pages (/app), a browser without JavaScript: session cookie and CSRF tokens."""
    devnet = Devnet(c.client)
    _, page = await c.call("GET", "/app/signup", expect=200)
    await c.call("POST", "/app/signup", data={"csrf_token": "forged", "email": "pages@example.com",
                                              "password": "s3cret-pass"}, expect=403)
    _, page = await c.call("POST", "/app/signup", data={"csrf_token": _csrf(page), "email": "pages@example.com",
                                                        "password": "s3cret-pass"}, expect=200)
    token = _csrf(page)
    await c.call("GET", "/app/login", expect=303)  # signed in already
    await c.call("GET", "/app", expect=200)
    await c.call("GET", "/app/payments", params={"status": "PAID", "limit": "10"}, expect=200)
    await c.call("GET", "/app/payments", params={"status": "NOPE"}, expect=400)
    await c.call("GET", "/app/payments/new", expect=200)
    form = {"csrf_token": token, "type": "invoice", "amount": "0.01", "currency": "BTC"}
    await c.call("POST", "/app/payments/new", data=form, expect=303)
    await c.call("POST", "/app/payments/new", data={**form, "amount": "-1"}, expect=400)
    await c.call("POST", "/app/payments/new", data=form, expect=303)
    _, page = await c.call("GET", "/app/payments", expect=200)
    paid_id, doomed_id = re.findall(r'href="/app/payments/(\w+)"', page)[:2]
    await c.call("POST", f"/app/payments/{doomed_id}/cancel", data={"csrf_token": token}, expect=303)
    payment = (await c.client.app[GATEWAY].db.fetch_one("SELECT address FROM payments WHERE track_id = :t",
                                                         {"t": paid_id}))
    await devnet.pay("BTC", payment["address"], "0.01")
    await devnet.mine(6)
    await c.call("GET", f"/app/payments/{paid_id}", expect=200)
    await c.call("GET", "/app/payments/not-mine", expect=404)
    await c.call("GET", f"/app/payments/{paid_id}/events", expect=200)  # final: one event, then the end
    await c.call("GET", "/app/payments/not-mine/events", expect=404)
    await c.call("GET", "/app/no/such/page", expect=404)  # the dashboard's not-found page, in HTML
    await c.call("POST", "/app/no-such-form", data={"csrf_token": token}, expect=404)
    await c.call("POST", f"/app/payments/{paid_id}/refund", data={"csrf_token": token, "destination": BTC_DEST,
                                                                 "amount": "0.001"}, expect=303)
    await c.call("GET", "/app/payouts", expect=200)
    _, page = await c.call("POST", "/app/payouts", data={
        "csrf_token": token, "currency": "BTC", "address": BTC_DEST, "amount": "0.001",
        "idempotency_key": "pages-payout-1"}, expect=200)
    await c.call("POST", "/app/payouts/confirm", data={"csrf_token": token, "action": "confirm",
                                                       "review_token": review_token(page)}, expect=303)
    rows = f"currency,address,amount,external_id\nBTC,{BTC_DEST},0.001,pages-1\n"
    _, page = await c.call("POST", "/app/payouts/batch", data={"csrf_token": token, "rows": rows}, expect=200)
    await c.call("POST", "/app/payouts/batch/confirm", data={"csrf_token": token, "action": "confirm",
                                                             "review_token": review_token(page)}, expect=200)
    await c.call("GET", "/app/transfers", expect=200)
    _, body = await c.call("GET", "/dashboard/account", friend.jwt, expect=200)
    await c.call("POST", "/app/transfers", data={"csrf_token": token, "to_account_id": body["data"]["account"][
        "account_id"], "coin": "BTC", "amount": "0.001", "idempotency_key": "pages-transfer-1"}, expect=303)
    await c.call("GET", "/app/settings", expect=200)
    await c.call("POST", "/app/settings/coins", data={"csrf_token": token, "accepted_coins": "BTC"}, expect=303)
    await c.call("GET", "/app/security", expect=200)
    await c.call("POST", "/app/security/setup", data={"csrf_token": token}, expect=200)
    await c.call("GET", "/app/keys", expect=200)
    _, page = await c.call("POST", "/app/keys", data={"csrf_token": token, "label": "pages",
                                                      "scopes": "payment:read"}, expect=200)
    key_id = re.search(r'id="key-(key_\w+)"', page).group(1)
    await c.call("POST", f"/app/keys/{key_id}/rotate", data={"csrf_token": token}, expect=200)
    await c.call("GET", f"/app/keys/audit?key_id={key_id}", expect=200)
    await c.call("GET", "/app/telegram", expect=200)
    await c.call("GET", "/app/telegram?t=not-a-link", expect=400)
    await c.call("POST", "/app/telegram", data={"csrf_token": token, "action": "link", "t": "x"}, expect=400)
    await c.call("POST", "/app/telegram", data={"csrf_token": token, "action": "unlink"}, expect=303)
    account = await services.account_by_email(c.client.app[GATEWAY], "pages@example.com")
    await services.announce_security_event(c.client.app[GATEWAY], account.merchant_id, "widget_paired", alert=True)
    _, page = await c.call("GET", "/app", expect=200)
    event_id = re.search(r'name="event_id" value="(\d+)"', page).group(1)
    await c.call("GET", "/app/activity", expect=200)
    await c.call("POST", "/app/activity", data={"csrf_token": token, "action": "dismiss", "event_id": event_id},
                 expect=303)
    await c.call("GET", "/app/approvals", expect=200)
    await c.call("POST", "/app/approvals", data={"csrf_token": token, "action": "policy", "threshold_BTC": "-1"},
                 expect=400)
    await c.call("POST", "/app/approvals", data={"csrf_token": token, "action": "policy", "threshold_BTC": "100"},
                 expect=303)
    await c.call("POST", "/app/approvals", data={"csrf_token": token, "action": "policy-off"}, expect=303)
    await c.call("GET", "/app/team", expect=200)
    with mailbox() as mails:  # a development server writes the invitation e-mail to its log
        await c.call("POST", "/app/team", data={"csrf_token": token, "action": "invite",
                                                "email": "teammate@example.com", "role": "viewer"}, expect=200)
    invite_token = join_link_to(mails, "teammate@example.com").split("token=")[1]
    _, page = await c.call("GET", "/app/team/accept", params={"token": invite_token}, expect=200)
    await c.call("POST", "/app/team/accept", data={"csrf_token": _csrf(page), "action": "join", "token": invite_token,
                                                   "password": "s3cret-pass", "password_confirm": "s3cret-pass"},
                 expect=303)
    await journey_member_2fa(c)
    await journey_team(c)
    await c.call("GET", "/app/sign-in-methods", expect=200)
    await c.call("POST", "/app/sign-in-methods", data={"csrf_token": token}, expect=400)  # the holder: password
    for path in ("/app/portfolio", "/app/analytics", "/app/referrals", "/app/links", "/app/schedules",
                 "/app/auto-withdraw", "/app/swaps", "/app/subscriptions", "/app/brands", "/app/tolerance",
                 "/app/speed", "/app/tip-page"):
        await c.call("GET", path, expect=200)
    await c.call("POST", "/app/tolerance", data={"csrf_token": token, "percent": "0.5"}, expect=303)
    await c.call("POST", "/app/tolerance", data={"csrf_token": token, "percent": "9"}, expect=400)
    await c.call("POST", "/app/speed", data={"csrf_token": token, "tiers_BTC": "0.01:2, 1:6"}, expect=303)
    await c.call("POST", "/app/speed", data={"csrf_token": token, "tiers_BTC": "0.01:0"}, expect=400)
    await c.call("POST", "/app/subscriptions", data={"csrf_token": token, "action": "create", "label": "Pro",
                                                     "amount_usd": "9.50", "interval_days": "30"}, expect=303)
    await c.call("POST", "/app/brands", data={"csrf_token": token, "action": "create", "name": "Side shop"},
                 expect=303)
    await c.call("POST", "/app/swaps", data={"csrf_token": token, "action": "quote", "from_coin": "BTC",
                                             "to_coin": "LTC", "amount": "0.001"}, expect=200)
    await c.call("POST", "/app/links", data={"csrf_token": token, "action": "create", "coin": "BTC"}, expect=303)
    await c.call("POST", "/app/links", data={"csrf_token": token, "action": "nope"}, expect=400)
    await c.call("POST", "/app/schedules", data={"csrf_token": token, "action": "create", "coin": "BTC",
                                                 "destination": BTC_DEST, "min_amount": "0.001",
                                                 "interval_hours": "24"}, expect=303)
    await c.call("POST", "/app/auto-withdraw", data={"csrf_token": token, "action": "add", "coin": "BTC",
                                                     "threshold_native": "0.5", "destination": BTC_DEST}, expect=303)
    # A payment's own "Send again" (its detail page's timeline), for an event not sent (no webhook URL yet).
    _, page = await c.call("GET", "/app/payments", expect=200)
    send_again = None
    for track in dict.fromkeys(re.findall(r'href="/app/payments/(\w{10,})"', page)):
        _, detail = await c.call("GET", f"/app/payments/{track}", expect=200)
        if send_again := re.search(r'action="(/app/payments/\w+/webhooks/\w+/send-again)"', detail):
            break
    assert send_again, "no payment of this account has a webhook to send again"
    await c.call("POST", send_again.group(1), data={"csrf_token": token}, expect=303)
    _, page = await c.call("GET", "/app/webhooks", expect=200)
    event_id = re.search(r'action="/app/webhooks/(\w+)/redeliver"', page).group(1)  # no webhook URL: skipped
    await c.call("POST", f"/app/webhooks/{event_id}/redeliver", data={"csrf_token": token}, expect=303)
    await c.call("POST", "/app/settings/webhook/test", data={"csrf_token": token}, expect=400)  # no URL set
    await c.call("POST", "/app/settings/webhook", data={"csrf_token": token, "webhook_url": "http://127.0.0.1:9/h"},
                 expect=200)
    await c.call("POST", "/app/settings/webhook/test", data={"csrf_token": token}, expect=303)
    await c.call("POST", "/app/logout", data={"csrf_token": token}, expect=303)
    await c.call("GET", "/app", expect=303)
    _, page = await c.call("GET", "/app/login", expect=200)
    await c.call("POST", "/app/login", data={"csrf_token": _csrf(page), "email": "pages@example.com",
                                             "password": "wrong-pass"}, expect=401)
    await c.call("POST", "/app/login", data={"csrf_token": _csrf(page), "email": "pages@example.com",
                                             "password": "s3cret-pass"}, expect=303)
    _, page = await c.call("GET", "/app", expect=200)
    # Another account's payload (this browser started no sign-in; no provider here): refused, page kept.
    foreign = oidc_payload.encode(AccountSession(friend.merchant_id, "friend@example.com", friend.token, None), False,
                                  "L" * 43)
    await c.call("POST", "/app/fragment", data={"csrf_token": _csrf(page), "kind": "google-auth",
                                                "value": foreign}, expect=503)
    assert "pages@example.com" in (await c.call("GET", "/app", expect=200))[1]
    await c.call("POST", "/app/fragment", data={"csrf_token": _csrf(page), "value": "no link here"}, expect=303)
    # 2FA on from the Security page (the recovery codes shown once), then the sign-in's code page.
    gateway = c.client.app[GATEWAY]
    _, page = await c.call("POST", "/app/security/setup", data={"csrf_token": _csrf(page)}, expect=200)
    totp = pyotp.TOTP(re.search(r'id="totp-secret"[^>]*>([A-Z2-7]+)</code>', page).group(1))
    _, page = await c.call("POST", "/app/security/verify", data={"csrf_token": _csrf(page),
                                                                  "code": totp.at(gateway.now())}, expect=200)
    assert len(re.findall(r"<li><code>([a-z2-7-]{19})</code></li>", page)) == 10
    advance_clock(gateway, 30)
    _, page = await c.call("POST", "/app/security/recovery-codes", data={"csrf_token": _csrf(page),
                                                                          "code": totp.at(gateway.now())}, expect=200)
    recovery = re.findall(r"<li><code>([a-z2-7-]{19})</code></li>", page)
    await c.call("POST", "/app/logout", data={"csrf_token": _csrf(page)}, expect=303)
    _, page = await c.call("GET", "/app/login", expect=200)
    await c.call("POST", "/app/login", data={"csrf_token": _csrf(page), "email": "pages@example.com",
                                             "password": "s3cret-pass"}, expect=303)
    _, page = await c.call("GET", "/app/login/code", expect=200)
    await c.call("POST", "/app/login/code", data={"csrf_token": _csrf(page), "totp_code": "000000"}, expect=401)
    await c.call("POST", "/app/login/code", data={"csrf_token": _csrf(page), "totp_code": recovery[0]}, expect=303)
    assert "pages@example.com" in (await c.call("GET", "/app", expect=200))[1]
    await c.call("GET", "/app/login/code", expect=303)  # signed in: nothing pending
    await c.call("POST", "/app/logout", data={"csrf_token": "stale"}, expect=403)
    await c.call("GET", "/static/dashboard/dashboard.css", expect=200)


async def test_real_responses_match_the_document(checked, receiver):
    hook_url = await receiver.start()
    devnet = Devnet(checked.client)
    await journey_public(checked)
    shop, friend = await journey_accounts(checked)
    await journey_settings(checked, shop, hook_url)
    await journey_api_keys(checked, shop, hook_url)
    payments = await journey_payments(checked, shop, devnet)
    await journey_dashboard(checked, shop)
    await journey_payouts(checked, shop, devnet, payments)
    await journey_transfers(checked, shop, friend)
    await journey_approvals(checked, shop)
    await journey_webhook_logs(checked, shop)
    await journey_schedules(checked, shop, friend)
    await journey_autowithdraw(checked, shop)
    await journey_swaps(checked, shop, friend)
    await journey_account_insights(checked, shop, friend)
    await journey_splits(checked, shop, friend, devnet)
    await journey_portfolio(checked, shop)
    await journey_links(checked, shop, friend)
    await journey_tips(checked, shop)
    await journey_brands(checked, shop, friend)
    await journey_subscriptions(checked, shop, friend)
    await journey_telegram(checked, shop, friend)
    await journey_lightning(checked, shop)
    await journey_operations(checked)
    await journey_dashboard_pages(checked, friend)

    # Coverage: every documented operation answered successfully at least once.
    succeeded = {(method, template) for method, template, status in checked.seen if status < 400}
    documented = {(m.upper(), p) for p, item in checked.document["paths"].items() for m in item}
    missing = sorted(documented - succeeded - set(UNEXERCISED))
    assert not missing, f"operations the journey never exercised (add a call to a journey_* step): {missing}"
    statuses = {status for _, _, status in checked.seen}
    assert {200, 303, 400, 401, 403, 404, 409} <= statuses


def test_the_checker_is_not_vacuous():
    """Strict validation refuses an undocumented field, a number amount and a bad status."""
    checker = DocumentValidator(strict(FULL_DOCUMENT))
    where = pointer("components", "schemas", "Transaction")
    good = {"tx_hash": "ab", "coin": "BTC", "amount": "0.5", "amount_usd": "30.00", "status": "CREDITED",
            "confirmations": 2}
    assert checker.errors(where, good) == []
    assert checker.errors(where, {**good, "surprise": 1})
    assert checker.errors(where, {**good, "amount": Decimal("0.5")})
    assert checker.errors(where, {**good, "status": "Credited"})
    assert checker.errors(where, {k: v for k, v in good.items() if k != "tx_hash"})
    bad_request = pointer("components", "responses", "BadRequest", "content", "application/json", "schema")
    error = {"data": None, "message": "validation error: x", "status": 400, "version": "2.0.0",
             "error": {"type": "validation", "message": "validation error: x"}}
    assert checker.errors(bad_request, error), "a validation error without detail is refused"
    assert checker.errors(bad_request, {**error, "error": {**error["error"], "detail": {"x": "is required"}}}) == []
