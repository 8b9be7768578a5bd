"""schemathesis against the served /openapi.json, on both databases (issue 10).

The app runs as a real HTTP server on a loopback port (the aiohttp test
server); schemathesis loads the document from it over HTTP and, for every
operation, generates requests that fit the document (positive mode) and
requests that break it (negative mode). Each response must pass:

* ``not_a_server_error``: never a 5xx (the spec's 503 refusals aside: a
  feature or provider this deployment lacks, ``error.type`` not_configured);
* ``status_code_conformance``: the status is documented for the operation;
* ``content_type_conformance``: the content type is documented;
* ``response_schema_conformance``: the body matches the documented schema;
* ``response_headers_conformance``: documented headers (Retry-After) hold.

Requests carry the credentials each operation names in ``security`` (the
merchant's JWT or legacy keys), so they reach the handlers instead of
stopping at 401. The HTML form routes (issue 29) are sent as a signed-in
browser: the session and pre-session cookies, and the form's CSRF token put
into every generated form body, with the ids of a merchant's real invoice,
plan, subscription, link and key in the path (positive mode); the run fails
when a form route of the app's router was never reached past the session
and CSRF checks. Rate limits are raised so 429 does not hide the handlers.
Examples are bounded and derandomized, and nothing stops at the first
failure: every failing operation is reported at once.

schemathesis drives ``requests`` synchronously, so it runs in a worker
thread while the test's event loop serves the app.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
from dataclasses import dataclass, field
from typing import Any, Callable

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from .hostile_support import (
    CSRF_FIELD, Browser, form_and_page_routes, is_server_error, page_world, unlimited_rate_limits,
)
from .support import Merchant, signup


def no_server_error(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> bool | None:
    """``not_a_server_error``, except the spec's 503 refusals (a feature this deployment lacks, SPEC 7)."""
    if response.status_code == 503 and not is_server_error(503, response.content):
        return None
    return not_a_server_error(ctx, response, case)


CHECKS = [no_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]
# Examples per operation and generation mode: ~45 operations x 2 modes x EXAMPLES requests per database.
EXAMPLES = 12
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
# Credentials whose successful use would lock the fuzzing merchant out of the rest of the run
# (rotating a legacy key, a new password) belong to a second merchant.
SACRIFICIAL = {("POST", "/dashboard/settings/rotate-key"), ("POST", "/dashboard/settings/change-password")}


def credentials(merchant: Merchant) -> dict[str, dict[str, str]]:
    """securitySchemes name -> the headers that satisfy it for this merchant."""
    # The mini-app's bearer (no bot configured here) gets the dashboard token, which it must refuse with 401.
    return {"bearerAuth": merchant.jwt, "miniAppBearer": merchant.jwt, "merchantApiKey": merchant.merchant_key,
            "payoutApiKey": merchant.payout_key, "generalApiKey": merchant.general_key}


def headers_for(operation: Any, merchant: Merchant) -> dict[str, str]:
    schemes = credentials(merchant)
    for requirement in operation.definition.raw.get("security", []):
        for name in requirement:
            return dict(schemes[name])
    return {}


@dataclass
class Tally:
    """What the run saw: distinct failures, requests sent and statuses, form routes whose handler ran."""

    failures: list[str] = field(default_factory=list)
    sent: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    reached: set[tuple[str, str]] = field(default_factory=set)


@dataclass
class Pages:
    """The signed-in browser the HTML form routes are sent as, and the real ids their paths take."""

    browser: Browser
    ids: dict[str, str]
    form_routes: set[tuple[str, str]]

    def prepare(self, case: schemathesis.Case, mode: GenerationMode) -> dict[str, str]:
        """This browser's token in the form (when the form is a dict), real ids in the path; its cookies."""
        if isinstance(case.body, dict):
            signed_out = case.operation.path in ("/app/login", "/app/signup")
            case.body[CSRF_FIELD] = self.browser.pre_csrf if signed_out else self.browser.csrf
        if mode is GenerationMode.POSITIVE and case.path_parameters:
            for name in case.path_parameters:
                if name in self.ids:
                    case.path_parameters[name] = self.ids[name]
        return {"orb_pre": self.browser.pre, "orb_session": self.browser.session}


def exercise(operation: Any, mode: GenerationMode, headers: dict[str, str], base_url: str,
             session: requests.Session, tally: Tally, pages: Pages) -> None:
    """Send EXAMPLES generated cases of one operation in one mode; record what does not conform."""
    seen: set[str] = set()
    key = (operation.method.upper(), operation.path)
    is_form = key in pages.form_routes

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def one(case: schemathesis.Case) -> None:
        cookies = pages.prepare(case, mode) if is_form else None
        response = case.call(base_url=base_url, session=session, headers=headers, cookies=cookies)
        if is_form:
            location = (response.headers.get("location") or [""])[0]  # lower-case names, lists of values
            lost = 300 <= response.status_code < 400 and location.startswith("/app/login")
            if response.status_code != 403 and not (lost and "signed-out" not in location):
                tally.reached.add(key)
            if lost:  # the sign-out form ended the session (or a hostile cookie never had one)
                pages.browser.sign_in()
        tally.sent += 1
        tally.statuses[response.status_code] = tally.statuses.get(response.status_code, 0) + 1
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - collected, reported together below
            summary = f"{operation.label} [{mode.value}] -> {response.status_code}: " + \
                      " ".join(str(exc).split())[:900]
            if summary not in seen:
                seen.add(summary)
                tally.failures.append(summary)

    try:
        one()
    except Unsatisfiable:
        # An operation without parameters or body has nothing negative mode can break.
        assert mode is GenerationMode.NEGATIVE, f"{operation.label}: no positive case generated"


def run_schemathesis(base_url: str, shop: Merchant, spare: Merchant,
                     form_routes: set[tuple[str, str]]) -> tuple[list[str], int, set[tuple[str, str]]]:
    """Every operation x mode; (failures, requests sent, form routes never reached)."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    # The suite supplies real credentials; generated (or, in negative mode, removed) ones would only
    # test the 401 path over and over.
    schema.config.generation.update(with_security_parameters=False)
    tally = Tally()
    browser, ids = page_world(int(base_url.rsplit(":", 1)[1]))
    pages = Pages(browser, ids, form_routes)
    with requests.Session() as session:
        # The cookies are the suite's to choose per request: none kept from answers (a sign-in sets one).
        session.cookies.set_policy(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
        operations = [result.ok() for result in schema.get_all_operations()]
        # The sign-out form last: every case of it ends the session the others use.
        for operation in sorted(operations, key=lambda op: (op.method.upper(), op.path) == ("POST", "/app/logout")):
            merchant = spare if (operation.method.upper(), operation.path) in SACRIFICIAL else shop
            for mode in MODES:
                exercise(operation, mode, headers_for(operation, merchant), base_url, session, tally, pages)
    print(f"schemathesis: {tally.sent} requests, statuses {dict(sorted(tally.statuses.items()))},"
          f" {len(tally.reached)} of {len(form_routes)} form routes reached, {browser.sign_ins} sign-ins")
    return tally.failures, tally.sent, form_routes - tally.reached


async def test_schemathesis_finds_no_server_error_and_no_undocumented_response(
        make_client: Callable, make_config: Callable) -> None:
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits=unlimited_rate_limits()))
    shop = await signup(client, "fuzz@example.com")
    spare = await signup(client, "spare@example.com")
    base_url = str(client.server.make_url("")).rstrip("/")

    form_routes, _ = form_and_page_routes(client.app)

    failures, sent, unreached = await asyncio.to_thread(run_schemathesis, base_url, shop, spare, form_routes)

    assert sent >= 200, f"schemathesis sent only {sent} requests"
    assert len(form_routes) >= 25 and not unreached, f"form routes never reached past session and CSRF: {unreached}"
    health = await client.get("/health")
    assert health.status == 200
    assert not failures, f"{len(failures)} failing case(s) in {sent} requests:\n" + "\n".join(failures)
