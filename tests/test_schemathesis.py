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
stopping at 401. Rate limits are raised so 429 does not hide the handlers.
Examples are bounded and derandomized, and nothing stops at the first
failure: every failing operation is reported at once.

schemathesis drives ``requests`` synchronously, so it runs in a worker
thread while the test's event loop serves the app.
"""

from __future__ import annotations

import asyncio
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

from .hostile_support import is_server_error, unlimited_rate_limits
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
    """What the run saw: distinct failures, requests sent and statuses."""

    failures: list[str] = field(default_factory=list)
    sent: int = 0
    statuses: dict[int, int] = field(default_factory=dict)


def exercise(operation: Any, mode: GenerationMode, headers: dict[str, str], base_url: str,
             session: requests.Session, tally: Tally) -> None:
    """Send EXAMPLES generated cases of one operation in one mode; record what does not conform."""
    seen: set[str] = set()

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def one(case: schemathesis.Case) -> None:
        response = case.call(base_url=base_url, session=session, headers=headers)
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


def run_schemathesis(base_url: str, shop: Merchant, spare: Merchant) -> tuple[list[str], int]:
    """Every operation x mode; (failures, requests sent)."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    # The suite supplies real credentials; generated (or, in negative mode, removed) ones would only
    # test the 401 path over and over.
    schema.config.generation.update(with_security_parameters=False)
    tally = Tally()
    with requests.Session() as session:
        for result in schema.get_all_operations():
            operation = result.ok()
            merchant = spare if (operation.method.upper(), operation.path) in SACRIFICIAL else shop
            for mode in MODES:
                exercise(operation, mode, headers_for(operation, merchant), base_url, session, tally)
    print(f"schemathesis: {tally.sent} requests, statuses {dict(sorted(tally.statuses.items()))}")
    return tally.failures, tally.sent


async def test_schemathesis_finds_no_server_error_and_no_undocumented_response(
        make_client: Callable, make_config: Callable) -> None:
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits=unlimited_rate_limits()))
    shop = await signup(client, "fuzz@example.com")
    spare = await signup(client, "spare@example.com")
    base_url = str(client.server.make_url("")).rstrip("/")

    failures, sent = await asyncio.to_thread(run_schemathesis, base_url, shop, spare)

    assert sent >= 200, f"schemathesis sent only {sent} requests"
    health = await client.get("/health")
    assert health.status == 200
    assert not failures, f"{len(failures)} failing case(s) in {sent} requests:\n" + "\n".join(failures)
