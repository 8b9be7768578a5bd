"""Who is calling: route declarations and the middleware that enforces them.

A handler declares what it accepts with ``@requires(...)``, for example
``@requires("merchant_key", scope="payment:create")`` or ``@requires("jwt")``;
a handler without a declaration is public. The middleware authenticates the
request and sets ``request[PRINCIPAL]`` to a :class:`Principal`.

Rules (SPEC 5.1-5.3):

* a legacy key is valid only in its own header (``merchant_api_key`` ...);
* a scoped key is accepted in any of the three headers and authorised by
  its scopes; a route without a ``scope`` accepts legacy keys only;
* revoked, expired or rotated-out keys and bad tokens are 401; a call from
  outside a key's ``ip_allowlist`` is 401 ``ip_not_allowed``; a missing scope
  is 403; a disabled account is 403 ``merchant_disabled``;
* the request is counted for the principal once identified, a failed
  authentication for the client IP (web/rate_identity.py).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Sequence

from aiohttp import web

from ..core.accounts import auth, jwt_revocation
from ..core.accounts.auth_cache import auth_cache
from ..core.accounts.dashboard_tokens import dashboard_token_claims
from ..core.accounts.key_powers import ACCOUNT_HOLDER, HOLDER, KeyIssuer, legacy_scopes, member_person
from ..core.types.errors import ApiError, Forbidden, Unauthorized
from ..core.gateway import Gateway
from .keys import GATEWAY, PRINCIPAL
from .middlewares import client_ip
from .rate_identity import count_failure, count_for, refuse_if_blocked

AUTH_ATTR = "__orbchain_auth__"

# Route kind -> (header, legacy key kind).
KEY_HEADERS = {
    "merchant_key": ("merchant_api_key", "merchant"),
    "payout_key": ("payout_api_key", "payout"),
    "general_key": ("general_api_key", "general"),
}
KINDS = frozenset({"jwt", *KEY_HEADERS})


@dataclass(frozen=True)
class Principal:
    """The authenticated caller of one request."""

    merchant_id: str
    via: str  # "jwt", "merchant_key", "payout_key", "general_key" or "scoped_key"
    key_id: str | None = None
    scopes: frozenset[str] = field(default_factory=frozenset)
    coin_allowlist: tuple[str, ...] = ()
    webhook_url: str | None = None
    brand_id: str | None = None
    rate_limit_rpm: int | None = None
    member_id: str | None = None  # a team member's dashboard session (scopes: their role's), None: the holder
    member_email: str | None = None
    issued_by: str | None = None  # a key's person: "holder" or "member:<id>" (who created or last rotated it)

    @property
    def is_dashboard(self) -> bool:
        return self.via == "jwt"

    @property
    def actor(self) -> str | None:
        """Who acts, for logs: ``member <e-mail>``, ``key <id>``; None for the account holder's own session."""
        if self.member_id is not None:
            return f"member {self.member_email}"
        return f"key {self.key_id}" if self.key_id is not None else None

    @property
    def requester(self) -> str:
        """Who asks for a payout, as ``payouts.requested_by`` stores it: ``member:<id>`` or ``holder``.

        A key asks as the person who issued it (created or last rotated it), so every approval rule
        (self-approval, daily limits) sees through the key to that person; ``key_id`` names the key.
        """
        if self.member_id is not None:
            return member_person(self.member_id)
        return self.issued_by or HOLDER

    def key_issuer(self) -> KeyIssuer:
        """This caller as the issuer of a key they mint or rotate: the holder holds every scope, others theirs."""
        if self.is_dashboard and self.member_id is None:
            return ACCOUNT_HOLDER
        return KeyIssuer(self.requester, self.scopes)

    def has_scope(self, scope: str) -> bool:
        # The account holder's dashboard may do everything its own keys may; a member only what their role grants.
        return (self.is_dashboard and self.member_id is None) or scope in self.scopes


@dataclass(frozen=True)
class AuthSpec:
    kinds: frozenset[str]
    scope: str | None = None


def requires(*kinds: str, scope: str | None = None) -> Callable:
    """Declare the credentials a handler accepts, and the scope it needs from a key."""
    unknown = set(kinds) - KINDS
    if not kinds or unknown:
        raise ValueError(f"requires() takes one or more of {sorted(KINDS)}, got {sorted(unknown) or 'nothing'}")

    def mark(handler: Callable) -> Callable:
        setattr(handler, AUTH_ATTR, AuthSpec(frozenset(kinds), scope))
        return handler

    return mark


def principal_of(request: web.Request) -> Principal:
    """The caller of an authenticated route (set by the middleware)."""
    return request[PRINCIPAL]


def bind_principal(request: web.Request, principal: Principal) -> None:
    """Name the caller of a request a plugin authenticated itself (a dashboard page's session cookie),
    so what the request does is attributed to them (security events' ``actor``)."""
    request[PRINCIPAL] = principal


def ensure_coin_allowed(principal: Principal, coin: str) -> None:
    """403 ``coin_not_allowed`` when a key's non-empty coin allowlist excludes ``coin``."""
    if principal.coin_allowlist and coin not in principal.coin_allowlist:
        raise Forbidden(f"coin {coin} is not allowed for this API key", code="coin_not_allowed")


def _disabled() -> ApiError:
    return Forbidden("account disabled", code="merchant_disabled")


async def _merchant_state(gateway: Gateway, merchant_id: str) -> Any:
    """``enabled`` and ``token_version`` of a merchant, from the auth cache when it holds them."""
    cache = auth_cache(gateway)
    row = cache.merchant(merchant_id)
    if row is None:
        generation = cache.generation
        row = await gateway.db.fetch_one("SELECT enabled, token_version FROM merchants WHERE id = :id",
                                         {"id": merchant_id})
        if row is not None:
            cache.put_merchant(merchant_id, row, generation)
    return row


async def _from_jwt(gateway: Gateway, token: str) -> Principal:
    claims = dashboard_token_claims(gateway, token, gateway.now())
    row = await _merchant_state(gateway, claims["sub"])
    if row is None or int(row["token_version"]) != claims.get("tv", 0):
        raise Unauthorized("invalid token")
    if await jwt_revocation.is_revoked(gateway, claims):
        raise Unauthorized("token revoked")
    if not row["enabled"]:
        raise _disabled()
    member_id = claims.get("mbr")
    if member_id is None:
        return Principal(merchant_id=claims["sub"], via="jwt")
    member = await gateway.hooks.decide_member(merchant_id=claims["sub"], member_id=member_id)
    if member is None or member.merchant_id != claims["sub"]:
        raise Unauthorized("this member's access to the account has ended", code="member_removed")
    return Principal(merchant_id=claims["sub"], via="jwt", scopes=frozenset(member.scopes), member_id=member_id,
                     member_email=member.email)


async def dashboard_principal(gateway: Gateway, token: str) -> Principal:
    """Who a dashboard JWT stands for now (the holder, or a member with their scopes); 401/403 as the API answers."""
    return await _from_jwt(gateway, token)


def _ip_allowed(request: web.Request, cidrs: Sequence[str]) -> bool:
    try:
        address = ipaddress.ip_address(client_ip(request).split("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    for cidr in cidrs:
        try:
            if address in ipaddress.ip_network(cidr, strict=False):
                return True
        except ValueError:
            continue
    return False


@lru_cache(maxsize=64)
def _header_order(kinds: frozenset[str]) -> tuple[str, ...]:
    """The key headers to read for a route accepting ``kinds``: its own first (worked out once per kind set)."""
    return (*(k for k in KEY_HEADERS if k in kinds), *(k for k in KEY_HEADERS if k not in kinds))


async def _from_key(request: web.Request, spec: AuthSpec) -> Principal | None:
    """The key principal, None when no usable key header is present."""
    gateway = request.app[GATEWAY]
    headers = request.headers
    for route_kind in _header_order(spec.kinds):
        header, legacy_kind = KEY_HEADERS[route_kind]
        value = headers.get(header)
        if not value or not (value := value.strip()):
            continue
        cache = auth_cache(gateway)
        match = auth.cached_api_key(value, cache) or await auth.find_api_key(gateway.db, value, cache)
        if match is None:
            raise Unauthorized("invalid API key")
        row = match.row
        if row["is_legacy"]:
            if row["kind"] != legacy_kind:
                # A legacy key in a foreign header: refuse it where the route
                # reads that header, ignore it where the client sent extras.
                if route_kind in spec.kinds:
                    raise Unauthorized("invalid API key")
                continue
            if route_kind not in spec.kinds:
                continue  # e.g. a general key sent along to a payment route
        problem = auth.key_problem(match, gateway.now())
        if problem:
            raise Unauthorized(problem)
        if not row["merchant_enabled"]:
            raise _disabled()
        return await _principal_for_key(request, gateway, match)
    return None


@lru_cache(maxsize=4096)
def _json_list(text: str | None) -> tuple[str, ...]:
    """A key's JSON list column (scopes, coin and IP allowlists), parsed once per distinct text, not per request."""
    return tuple(json.loads(text or "[]"))


def _key_principal(gateway: Gateway, match: auth.KeyMatch) -> Principal:
    """The principal a key grants, built once per cached match (it depends on the key's row alone)."""
    principal = match.derived.get("principal")
    if principal is not None:
        return principal
    row = match.row
    if row["is_legacy"]:
        via = f"{row['kind']}_key"
        scopes = legacy_scopes(gateway, row["kind"])
    else:
        via, scopes = "scoped_key", frozenset(_json_list(row["scopes"]))
    principal = Principal(
        merchant_id=row["merchant_id"],
        via=via,
        key_id=row["id"],
        scopes=scopes,
        coin_allowlist=_json_list(row["coin_allowlist"]),
        webhook_url=row["webhook_url"],
        brand_id=row["brand_id"],
        rate_limit_rpm=row["rate_limit_rpm"],
        issued_by=match.issued_by,
    )
    match.derived["principal"] = principal
    return principal


async def _principal_for_key(request: web.Request, gateway: Gateway, match: auth.KeyMatch) -> Principal:
    row = match.row
    ip_allowlist = _json_list(row["ip_allowlist"])
    if ip_allowlist and not _ip_allowed(request, ip_allowlist):
        raise Unauthorized("request address not in the key's IP allowlist", code="ip_not_allowed")
    now = gateway.now()
    if auth_cache(gateway).should_touch(row["id"], row["last_used_at"], now):
        await auth.touch_api_key(gateway.db, row["id"], None, now)
    return _key_principal(gateway, match)


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    if header[:7].lower() == "bearer " and header[7:].strip():
        return header[7:].strip()
    return None


async def identify(request: web.Request, spec: AuthSpec) -> Principal:
    """Who the caller of a route declaring ``spec`` is, or 401 (403 for a disabled account)."""
    gateway = request.app[GATEWAY]
    token = _bearer(request) if "jwt" in spec.kinds else None
    if token is not None:
        return await _from_jwt(gateway, token)
    if spec.kinds - {"jwt"}:
        principal = await _from_key(request, spec)
        if principal is not None:
            return principal
        raise Unauthorized("missing API key" if "jwt" not in spec.kinds else "missing credentials")
    raise Unauthorized("missing token")


# What a team member needs for a dashboard write whose route names no scope (default deny: plugins' pages too).
UNSCOPED_WRITE_SCOPE = "settings:manage"
# A dashboard route every signed-in person may use, a member whatever their role: their own settings (their 2FA).
EVERYONE = "*"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def member_scope_for(scope: str | None, method: str) -> str | None:
    """The scope a member needs for a route declaring ``scope``: reads without one are open, writes need one
    (``EVERYONE``: none)."""
    if scope == EVERYONE:
        return None
    if scope is None and method.upper() not in SAFE_METHODS:
        return UNSCOPED_WRITE_SCOPE
    return scope


def missing_scope(principal: Principal, scope: str | None, method: str = "GET") -> str | None:
    """The scope a team member lacks for a route declaring ``scope`` (None: allowed; never for the holder)."""
    if principal.member_id is None:
        return None
    needed = member_scope_for(scope, method)
    return needed if needed is not None and needed not in principal.scopes else None


def member_refused(scope: str) -> Forbidden:
    """The 403 a team member gets for a route their role does not cover, naming the scope (SPEC 7 envelope)."""
    return Forbidden(f"access denied: your role lacks scope {scope}", code="missing_scope", detail={"scope": scope})


def authorize(principal: Principal, spec: AuthSpec, method: str = "GET") -> None:
    """403 unless the identified caller may use a route declaring ``spec`` (``method``: the request's)."""
    if spec.scope is None and principal.via == "scoped_key":
        raise Forbidden("access denied: this route takes a legacy key")
    if principal.member_id is not None:
        lacking = missing_scope(principal, spec.scope, method)
        if lacking is not None:
            raise member_refused(lacking)
        return
    if spec.scope is not None and not principal.has_scope(spec.scope):
        raise Forbidden(f"access denied: the key lacks scope {spec.scope}")


async def authenticate(request: web.Request, spec: AuthSpec) -> Principal:
    """Resolve the caller for a route declaring ``spec``, or raise 401/403."""
    principal = await identify(request, spec)
    authorize(principal, spec, request.method)
    return principal


async def authenticate_request(request: web.Request, kind: str | None) -> Principal | None:
    """Authenticate, then count the request for whoever was authenticated (the last step before a handler).

    ``kind`` ("read", "write" or None) is the rate-limit class the edge
    middleware left to count here. Failed authentication counts per client
    IP (its own bucket, every route); reads and writes count per principal
    once known; routes without credentials count per IP. The rate-limit step
    has already counted sign-in and public pages. Returns the principal, None
    on a public route.
    """
    spec = getattr(getattr(request.match_info, "handler", None), AUTH_ATTR, None)
    if isinstance(spec, AuthSpec):
        refuse_if_blocked(request)
        try:
            principal = await identify(request, spec)
        except Unauthorized:
            await count_failure(request)
            raise
        # Known before the rate limit and the scope check, so a refused request
        # (429, 403) is still reported to ``api_key_request_answered`` (key audit logs).
        request[PRINCIPAL] = principal
        if kind is not None:
            await count_for(request, kind, principal)
        authorize(principal, spec, request.method)
        return principal
    if kind is not None:
        await count_for(request, kind, None)
    return None
