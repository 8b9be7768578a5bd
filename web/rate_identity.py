"""Which bucket a read or write counts in (rate-limit identity, docs/decisions.md).

Reads and writes count per authenticated principal (merchant plus key id,
or the merchant for the dashboard JWT), never per whatever key header
happens to come first; routes without credentials count per client IP.
Failed authentication counts per client IP in its own bucket; past its
limit the IP is refused (429) before any look-up until the window ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from ..core.types.errors import RateLimited
from ..core.infra.ratelimit import RATE_LIMITER, Blocks
from .keys import GATEWAY
from .middlewares import client_ip, count_request
from ..core.types.services import ServiceKey

if TYPE_CHECKING:  # pragma: no cover
    from .auth import Principal


def principal_bucket(kind: str, principal: "Principal") -> str:
    """Merchant plus key id for an API key; merchant plus ``jwt`` for the dashboard."""
    return f"{kind}:m:{principal.merchant_id}:{principal.key_id or principal.via}"


def limit_for(request: web.Request, kind: str, principal: "Principal | None") -> int:
    """SPEC 8: reads 300, writes 60 or the key's ``rate_limit_rpm``."""
    limits = request.app[GATEWAY].config.rate_limits
    if kind == "read":
        return limits.read_per_minute
    override = principal.rate_limit_rpm if principal is not None else None
    return override or limits.write_per_minute


async def count_for(request: web.Request, kind: str, principal: "Principal | None") -> None:
    """Count one read or write for the principal, or for the client IP on a public route."""
    bucket = principal_bucket(kind, principal) if principal is not None else f"{kind}:ip:{client_ip(request)}"
    await count_request(request, bucket, limit_for(request, kind, principal))


FAILURE_BLOCKS = ServiceKey("auth_failure_blocks", Blocks)  # this process's blocked IPs


def _failure_bucket(request: web.Request) -> str:
    return "authfail:ip:" + client_ip(request)


def _blocks(request: web.Request) -> Blocks:
    """This process's blocked IPs, created with the first failure (one per gateway)."""
    gateway = request.app[GATEWAY]
    blocks = gateway.services.get(FAILURE_BLOCKS)
    if blocks is None:
        blocks = gateway.services[FAILURE_BLOCKS] = Blocks(lambda: gateway.clock())
    return blocks


def refuse_if_blocked(request: web.Request) -> None:
    """429 before any look-up while this IP is over its failed-authentication limit."""
    blocks = request.app[GATEWAY].services.get(FAILURE_BLOCKS)
    if not blocks:  # no IP has been blocked in this process (the usual case): nothing to look up
        return
    if not request.app[GATEWAY].config.rate_limits.enabled:
        return
    seconds = blocks.blocked_for(_failure_bucket(request))
    if seconds:
        raise RateLimited("too many failed authentications", headers={"Retry-After": str(seconds)})


async def count_failure(request: web.Request) -> None:
    """One failed authentication for the client IP; past the limit, 429 and blocked for the window."""
    gateway = request.app[GATEWAY]
    limits = gateway.config.rate_limits
    if not limits.enabled:
        return
    bucket = _failure_bucket(request)
    decision = await gateway.services[RATE_LIMITER].hit(bucket, limits.auth_failures_per_minute)
    if not decision.allowed:
        _blocks(request).block(bucket, decision.retry_after)
        raise RateLimited("too many failed authentications", headers={"Retry-After": str(decision.retry_after)})
