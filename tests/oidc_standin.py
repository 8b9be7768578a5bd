"""A local OpenID Connect provider speaking the published formats, for tests/test_oidc.py.

It judges what the gateway sends with code of its own, never ours:
* the authorization endpoint requires response_type=code, the registered
  client_id and redirect_uri, scope with openid, state, nonce and a PKCE
  S256 code_challenge;
* the token endpoint requires client_secret_basic (RFC 6749 2.3.1) with the
  right secret, grant_type=authorization_code, a known unexpired unused code,
  the same redirect_uri, and a code_verifier whose SHA-256 matches the
  challenge (RFC 7636 4.6), computed here with hashlib;
* ID tokens are RS256 JWS made here with ``cryptography`` (base64url of the
  header and claims, PKCS#1 v1.5 over SHA-256), published as a JWKS of RSA
  keys (n, e as base64url big-endian integers).

``user`` is who "consents" at the authorization endpoint; ``tamper`` bends
the next ID token (wrong key, wrong audience, expired, wrong nonce) to prove
the gateway refuses it. ``down`` makes every endpoint answer 503.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from aiohttp.test_utils import TestServer
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

CLIENT_ID = "orbchain-test-client.apps.example"
CLIENT_SECRET = "test-client-secret-9f2c"
CODE_TTL = 60


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _int_b64(value: int) -> str:
    return b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))


class SigningKey:
    """An RSA key with its kid; signs compact JWS with RS256 by hand."""

    def __init__(self, kid: str) -> None:
        self.kid = kid
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwk(self) -> dict[str, str]:
        numbers = self.private.public_key().public_numbers()
        return {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid,
                "n": _int_b64(numbers.n), "e": _int_b64(numbers.e)}

    def sign(self, claims: dict[str, Any], kid: str | None = None) -> str:
        header = {"alg": "RS256", "typ": "JWT", "kid": kid or self.kid}
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
        signature = self.private.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{b64url(signature)}"


class OidcProvider:
    def __init__(self) -> None:
        self.keys = [SigningKey("key-1")]
        self.user: dict[str, Any] = {"sub": "10001", "email": "ada@example.com", "email_verified": True}
        self.tamper: str | None = None
        self.down = False
        self.codes: dict[str, dict[str, Any]] = {}
        self.redeemed: set[str] = set()
        self.token_requests: list[dict[str, str]] = []
        self.jwks_fetches = 0
        self.discovery_fetches = 0
        self.issuer = ""
        self.redirect_uri = ""

    # -- the published endpoints ---------------------------------------------------------------

    async def discovery(self, request: web.Request) -> web.Response:
        self.discovery_fetches += 1
        if self.down:
            return web.Response(status=503, text="unavailable")
        return web.json_response({
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/o/authorize",
            "token_endpoint": f"{self.issuer}/o/token",
            "jwks_uri": f"{self.issuer}/o/certs",
            "userinfo_endpoint": f"{self.issuer}/o/userinfo",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", "email", "profile"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "code_challenge_methods_supported": ["S256"],
            "claims_supported": ["sub", "email", "email_verified", "iss", "aud", "exp", "iat", "nonce"],
        })

    async def certs(self, request: web.Request) -> web.Response:
        self.jwks_fetches += 1
        if self.down:
            return web.Response(status=503, text="unavailable")
        return web.json_response({"keys": [key.jwk() for key in self.keys]})

    def _authorize_error(self, why: str) -> web.Response:
        return web.Response(status=400, text=f"authorization request refused: {why}")

    async def authorize(self, request: web.Request) -> web.Response:
        q = request.query
        if self.down:
            return web.Response(status=503, text="unavailable")
        if q.get("client_id") != CLIENT_ID:
            return self._authorize_error("unknown client")
        if q.get("redirect_uri") != self.redirect_uri:
            return self._authorize_error("redirect_uri not registered")
        if q.get("response_type") != "code" or "openid" not in q.get("scope", "").split():
            return self._authorize_error("not an OpenID Connect code request")
        if not q.get("state") or not q.get("nonce"):
            return self._authorize_error("state and nonce required")
        if q.get("code_challenge_method") != "S256" or len(q.get("code_challenge", "")) != 43:
            return self._authorize_error("PKCE S256 required")
        code = secrets.token_urlsafe(24)
        self.codes[code] = {"challenge": q["code_challenge"], "redirect_uri": q["redirect_uri"], "nonce": q["nonce"],
                            "issued_at": time.time(), "user": dict(self.user)}
        return web.Response(status=302, headers={"Location": f"{q['redirect_uri']}?{urlencode({'code': code, 'state': q['state']})}"})

    @staticmethod
    def _token_error(error: str, status: int = 400) -> web.Response:
        return web.json_response({"error": error, "error_description": error.replace("_", " ")}, status=status)

    async def token(self, request: web.Request) -> web.Response:
        if self.down:
            return web.Response(status=503, text="<html>unavailable</html>", content_type="text/html")
        if request.content_type != "application/x-www-form-urlencoded":
            return self._token_error("invalid_request")
        form = {k: str(v) for k, v in (await request.post()).items()}
        self.token_requests.append(form)
        expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if request.headers.get("Authorization") != expected or "client_secret" in form:
            return self._token_error("invalid_client", 401)
        if form.get("grant_type") != "authorization_code":
            return self._token_error("unsupported_grant_type")
        code = form.get("code", "")
        grant = self.codes.get(code)
        if grant is None or code in self.redeemed or time.time() - grant["issued_at"] > CODE_TTL:
            return self._token_error("invalid_grant")
        if form.get("redirect_uri") != grant["redirect_uri"]:
            return self._token_error("invalid_grant")
        verifier = form.get("code_verifier", "")
        if not 43 <= len(verifier) <= 128 or b64url(hashlib.sha256(verifier.encode("ascii")).digest()) != grant["challenge"]:
            return self._token_error("invalid_grant")
        self.redeemed.add(code)
        access_token = secrets.token_urlsafe(24)
        return web.json_response({"access_token": access_token, "token_type": "Bearer", "expires_in": 3599,
                                  "scope": "openid email profile", "id_token": self._id_token(grant, access_token)})

    def _id_token(self, grant: dict[str, Any], access_token: str) -> str:
        now = int(time.time())
        at_hash = b64url(hashlib.sha256(access_token.encode()).digest()[:16])
        claims = {"iss": self.issuer, "aud": CLIENT_ID, "azp": CLIENT_ID, "iat": now, "exp": now + 3600,
                  "nonce": grant["nonce"], "at_hash": at_hash, **grant["user"]}
        key, kid = self.keys[-1], None
        tamper, self.tamper = self.tamper, None
        if tamper == "wrong_key":
            key, kid = SigningKey("attacker"), self.keys[-1].kid  # claims our kid, signed with another key
        elif tamper == "wrong_audience":
            claims["aud"] = claims["azp"] = "someone-else.apps.example"
        elif tamper == "expired":
            claims["iat"], claims["exp"] = now - 7200, now - 3600
        elif tamper == "wrong_nonce":
            claims["nonce"] = "not-the-nonce"
        elif tamper == "wrong_issuer":
            claims["iss"] = "https://evil.example"
        return key.sign(claims, kid)

    def rotate(self) -> None:
        self.keys = [SigningKey(f"key-{len(self.keys) + 1}-{secrets.token_hex(2)}")]

    def expire_codes(self) -> None:
        for grant in self.codes.values():
            grant["issued_at"] -= CODE_TTL + 1

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self.discovery)
        app.router.add_get("/o/certs", self.certs)
        app.router.add_get("/o/authorize", self.authorize)
        app.router.add_post("/o/token", self.token)
        return app


async def start_provider() -> tuple[OidcProvider, TestServer]:
    provider = OidcProvider()
    server = TestServer(provider.app())
    await server.start_server()
    provider.issuer = str(server.make_url("")).rstrip("/")
    return provider, server
