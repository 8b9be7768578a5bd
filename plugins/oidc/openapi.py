"""The identity-provider routes in ``/openapi.json`` (``register_openapi``): two browser redirects."""

from __future__ import annotations

from ...api.openapi import Op, Param, html, redirect
from .settings import CALLBACK_PATH

TAG = "Dashboard: account"
STRING = {"type": "string"}

OPERATIONS = [
    Op("GET", "/dashboard/auth/google", "Sign in with an identity provider", TAG,
       responses={
           "302": redirect("To the provider's authorization endpoint (OpenID Connect code flow with PKCE S256, "
                           "state and nonce); sets a short-lived signed cookie for the callback and a browser-key "
                           "cookie on the app's path, to which the payload is bound."),
           "503": html("Not configured here, or the provider cannot be reached."),
       }, page=True, errors=(503,),
       description="A browser redirect, not an API call. Configure with [plugin.oidc] (docs/oidc.md); any "
                   "OpenID Connect provider works through its discovery URL, Google by default."),
    Op("GET", CALLBACK_PATH, "Identity-provider callback", TAG,
       query=(Param("code", STRING, "The authorization code."), Param("state", STRING, "The state sent out."),
              Param("error", STRING, "Set by the provider when the user declined.")),
       responses={
           "302": redirect("To /app#google-auth=<payload>: base64url JSON with token, merchant_id, email, "
                           "new_account, landing and, for a new account only, api_keys (shown once). Fragment "
                           "only: never sent to a server. The payload lands once, only in the browser that "
                           "started the sign-in (docs/oidc.md)."),
           "400": html("State missing, used before, expired, or started in another browser."),
           "401": html("The provider refused the code, or its ID token failed verification."),
           "403": html("The provider has not verified the e-mail (email_not_verified), or the account is "
                       "disabled (merchant_disabled)."),
           "503": html("Not configured here, or the provider cannot be reached."),
       }, page=True, errors=(401, 403, 503),
       description="Verifies the ID token (signature against the provider's JWKS, issuer, audience, expiry, "
                   "nonce). An existing account is linked only through a provider-verified e-mail."),
]


def register(registry) -> None:
    for op in OPERATIONS:
        registry.add(op)
