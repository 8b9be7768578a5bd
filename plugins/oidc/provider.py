"""The identity provider as the gateway sees it: discovery, keys, code exchange, ID-token check.

The protocol is authlib's (and joserfc's, authlib's JOSE library): the
authorization URL (``prepare_grant_uri``), the PKCE S256 challenge, the
token request body and client authentication, the JWS signature check
against the provider's JWK set, and the OpenID Connect ID-token claim rules
(``CodeIDToken``: iss, aud, exp, iat, nonce, azp, at_hash). Only the
transport is ours: the gateway's outbound aiohttp session, with its timeout
and private-address guard.

Discovery documents and JWK sets are cached per process for an hour; an
ID token signed with a key id the cached set lacks refetches the set once
(the provider rotated its keys), then fails.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Mapping

import aiohttp
from authlib.oauth2.auth import encode_client_secret_basic
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from .settings import OidcSettings

log = logging.getLogger("orbchain.plugins.oidc")

CACHE_SECONDS = 3600
CLOCK_LEEWAY = 60  # seconds of clock skew tolerated on exp and iat
# Asymmetric signatures only: "none" and HS256 (keyed with the client secret) are refused.
ALLOWED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
# Google documents both spellings of its issuer in ID tokens.
ISSUER_ALIASES = {"https://accounts.google.com": ("accounts.google.com",)}


class ProviderUnavailable(Exception):
    """The provider could not be asked (down, slow, an answer that is not its format)."""


class ProviderRefused(Exception):
    """The provider answered no: the code is invalid, expired or used, or the client is refused."""


class InvalidIdToken(Exception):
    """The ID token fails verification: signature, issuer, audience, expiry, nonce or shape."""


@dataclass(frozen=True)
class Identity:
    """Who the provider says signed in: ``issuer`` and ``subject`` name the person for good."""

    issuer: str
    subject: str
    email: str | None
    email_verified: bool


@dataclass
class _Cached:
    value: Any = None
    fetched_at: float = 0.0

    def fresh(self) -> bool:
        return self.value is not None and time.monotonic() - self.fetched_at < CACHE_SECONDS

    def set(self, value: Any) -> Any:
        self.value, self.fetched_at = value, time.monotonic()
        return value


@dataclass
class Provider:
    """One configured provider: settings plus this process's caches of its documents."""

    settings: OidcSettings
    http: aiohttp.ClientSession
    _metadata: _Cached = field(default_factory=_Cached)
    _keys: _Cached = field(default_factory=_Cached)

    def _timeout(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=self.settings.timeout_seconds)

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            async with self.http.get(url, allow_redirects=False, timeout=self._timeout(),
                                     headers={"Accept": "application/json"}) as response:
                if response.status != 200:
                    raise ProviderUnavailable(f"{what}: HTTP {response.status}")
                document = await response.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            raise ProviderUnavailable(f"{what}: {type(exc).__name__}") from exc
        if not isinstance(document, dict):
            raise ProviderUnavailable(f"{what}: not a JSON object")
        return document

    async def metadata(self) -> dict[str, Any]:
        """The discovery document, checked for what the code flow needs."""
        if self._metadata.fresh():
            return self._metadata.value
        document = await self._get_json(self.settings.discovery_url, "discovery")
        for name in ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not isinstance(document.get(name), str) or not document[name]:
                raise ProviderUnavailable(f"discovery: no {name}")
        # OpenID Connect Discovery 4.3: the issuer must be the URL the document was found under.
        expected = self.settings.discovery_url.removesuffix("/.well-known/openid-configuration").rstrip("/")
        if document["issuer"].rstrip("/") != expected:
            raise ProviderUnavailable(f"discovery: issuer {document['issuer']!r} does not match the discovery URL")
        return self._metadata.set(document)

    async def authorization_url(self, state: str, nonce: str, code_verifier: str) -> str:
        """Where to send the browser: the code flow with state, nonce and a PKCE S256 challenge."""
        metadata = await self.metadata()
        settings = self.settings
        return prepare_grant_uri(
            metadata["authorization_endpoint"], settings.client_id, "code", redirect_uri=settings.redirect_uri,
            scope=" ".join(settings.scopes), state=state, nonce=nonce,
            code_challenge=create_s256_code_challenge(code_verifier), code_challenge_method="S256")

    async def exchange_code(self, code: str, code_verifier: str) -> dict[str, Any]:
        """The token endpoint's answer for ``code`` (client_secret_basic, with the PKCE verifier)."""
        metadata = await self.metadata()
        settings = self.settings
        body = prepare_token_request("authorization_code", redirect_uri=settings.redirect_uri, code=code,
                                     code_verifier=code_verifier)
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        client = SimpleNamespace(client_id=settings.client_id, client_secret=settings.client_secret)
        url, headers, body = encode_client_secret_basic(client, "POST", metadata["token_endpoint"], headers, body)
        try:
            async with self.http.post(url, data=body.encode(), headers=headers, allow_redirects=False,
                                      timeout=self._timeout()) as response:
                status = response.status
                answer = await response.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            raise ProviderUnavailable(f"token endpoint: {type(exc).__name__}") from exc
        if not isinstance(answer, dict):
            raise ProviderUnavailable(f"token endpoint: HTTP {status}, not a JSON object")
        if "error" in answer:  # RFC 6749 5.2: invalid_grant, invalid_client, ...
            raise ProviderRefused(str(answer["error"])[:64])
        if status != 200:
            raise ProviderUnavailable(f"token endpoint: HTTP {status}")
        if not isinstance(answer.get("id_token"), str):
            raise InvalidIdToken("the token response carries no id_token")
        return answer

    async def _key_set(self, refresh: bool) -> KeySet:
        if refresh or not self._keys.fresh():
            metadata = await self.metadata()
            document = await self._get_json(metadata["jwks_uri"], "jwks")
            try:
                self._keys.set(KeySet.import_key_set(document))  # type: ignore[arg-type]
            except (JoseError, ValueError, TypeError, KeyError) as exc:
                raise ProviderUnavailable(f"jwks: {type(exc).__name__}") from exc
        return self._keys.value

    async def verify_id_token(self, token: Mapping[str, Any], nonce: str, now: int) -> Identity:
        """The identity in the token response's ID token, after every check OpenID Connect asks for."""
        metadata = await self.metadata()
        offered = metadata.get("id_token_signing_alg_values_supported") or ["RS256"]
        algorithms = [a for a in offered if a in ALLOWED_ALGORITHMS] if isinstance(offered, list) else []
        if not algorithms:
            raise ProviderUnavailable("discovery: no supported asymmetric ID token algorithm")
        raw = token["id_token"]
        try:
            try:
                decoded = jwt.decode(raw, await self._key_set(refresh=False), algorithms=algorithms)
            except InvalidKeyIdError:
                log.info("ID token signed with an unknown key id: refreshing the provider's key set")
                decoded = jwt.decode(raw, await self._key_set(refresh=True), algorithms=algorithms)
            issuer = metadata["issuer"]
            claims = CodeIDToken(
                decoded.claims, decoded.header,
                {"iss": {"essential": True, "values": [issuer, *ISSUER_ALIASES.get(issuer, ())]},
                 "aud": {"essential": True, "value": self.settings.client_id},
                 "exp": {"essential": True}, "sub": {"essential": True}},
                {"nonce": nonce, "client_id": self.settings.client_id,
                 "access_token": token.get("access_token")})
            claims.validate(now=now, leeway=CLOCK_LEEWAY)
        except JoseError as exc:
            raise InvalidIdToken(f"{type(exc).__name__}: {exc}") from exc
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidIdToken(type(exc).__name__) from exc
        if claims.get("nonce") != nonce:  # CodeIDToken checks nonce only when present; we always send one
            raise InvalidIdToken("nonce missing")
        subject, email = claims.get("sub"), claims.get("email")
        if not isinstance(subject, str) or not subject or len(subject) > 255:
            raise InvalidIdToken("bad sub")
        if email is not None and (not isinstance(email, str) or "@" not in email or len(email) > 254):
            raise InvalidIdToken("bad email")
        # Some providers send the boolean as the string "true"; anything else is not verified.
        verified = claims.get("email_verified") in (True, "true")
        return Identity(issuer, subject, email, verified)
