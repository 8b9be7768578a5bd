"""The identity-provider routes in ``/openapi.json`` (``register_openapi``): the browser redirects, a member's
link call and the member's code step."""

from __future__ import annotations

from ...api import EVERYONE
from ...api.openapi import Op, Param, envelope, html, obj, redirect
from .second_step import STEP_PATH
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
           "403": html("The provider has not verified the e-mail (email_not_verified), the account is "
                       "disabled (merchant_disabled), the team member the identity is linked to was removed "
                       "(member_removed), or an invitation's proof named another address (address_mismatch)."),
           "409": html("The e-mail already signs in here and this identity is not linked to it "
                       "(identity_not_linked); a link or an invitation's proof with an identity that is someone "
                       "else's (identity_linked); the invited address signs in elsewhere (address_in_use)."),
           "503": html("Not configured here, or the provider cannot be reached."),
       }, page=True, errors=(401, 403, 409, 503),
       description="Verifies the ID token (signature against the provider's JWKS, issuer, audience, expiry, "
                   "nonce). An identity signs in only to what it is linked to; a verified e-mail that signs in "
                   "nowhere creates an account. Whoever has their own 2FA on (the account holder or a "
                   "team member) is sent to the code step (302 to " + STEP_PATH + ") instead: no session from the "
                   "provider alone."),
    Op("POST", "/dashboard/auth/google/link", "Link your identity-provider account", TAG,
       envelope(obj({"authorization_url": STRING})), auth=("jwt",), scope=EVERYONE,
       body=obj({}, {"password": {"type": "string", "description": "The account holder's password."},
                     "totp_code": {"type": "string", "description": "The holder's code, when their 2FA is on."}}),
       body_required=False, errors=(401, 429),
       description="A team member's token, or the account holder's with their password (or, 2FA on, a fresh code:"
                   " 400 naming the missing field, 401 wrong, 429 locked; a member sends no body). Sets the same"
                   " cookies as GET /dashboard/auth/google; send the browser to authorization_url. The callback"
                   " links that identity to whoever called (409 identity_linked when it is someone else's) and"
                   " signs them in; it then always signs in as them (a member until they are removed). An"
                   " identity is never linked by its e-mail alone. 503 not_configured without [plugin.oidc]."),
    Op("GET", STEP_PATH, "Identity-provider sign-in: the person's 2FA code", TAG,
       responses={"200": html("The form asking for the person's own 6-digit code (or a recovery code).")},
       page=True, description="Where the callback sends the account holder or a team member whose own 2FA is on."),
    Op("POST", STEP_PATH, "Finish an identity-provider sign-in with the person's code", TAG,
       body=obj({"totp_code": STRING}), body_media_type="application/x-www-form-urlencoded",
       responses={
           "302": redirect("To /app#google-auth=<payload>, as the callback would."),
           "400": html("The step expired or was used (invalid_state)."),
           "401": html("The form again: code missing (totp_required), or wrong or used (totp_invalid)."),
           "403": html("The member was removed (member_removed)."),
           "429": html("The member's code lockout is running."),
       }, page=True, errors=(401, 403, 429),
       description="Needs the step's HttpOnly cookie set by the callback (SameSite=Strict, this path). A recovery "
                   "code is taken in place of the code, once. Counted by the person's TOTP lockout, like their "
                   "password sign-in."),
]


def register(registry) -> None:
    for op in OPERATIONS:
        registry.add(op)
