"""The teams plugin documents its public invitation page and a member's own 2FA routes in ``/openapi.json``.

(The Team page is the dashboard's.)"""

from __future__ import annotations

from ...api import EVERYONE
from ...api.openapi import Op, Param, array, envelope, html, nullable, obj, redirect, ref
from .member_routes import BASE as MEMBERS
from .own_2fa import BASE
from .page import SCOPE

PAGES = "Dashboard pages"
OWN_2FA = "Dashboard: a team member's own 2FA"
TEAM = "Dashboard: team"
STRING = {"type": "string"}
CODE = obj({"code": {"type": "string", "pattern": "^[0-9]{6}$", "description": "A fresh 6-digit code."}})
NOT_HOLDER = (" A member's token only (403 not_a_member for the account holder's: theirs is /dashboard/mfa/*);"
              " no role permission needed (scope \"*\"), so a member limited by \"require 2FA\" can set it up.")
RECOVERY_CODES = ref("RecoveryCodes")
TOKEN = Param("token", {"type": "string"}, "The invitation's token, from the link.")
KEY_IDS = array(STRING)
KEYS_CHOICE = {"type": "string", "enum": ["revoke", "keep"]}
MEMBER = obj({"id": {"type": "string", "description": "mbr_...; \"holder\" for the account holder."},
              "email": STRING, "role": STRING, "holder": {"type": "boolean"},
              "created_at": nullable({"$ref": "#/components/schemas/Timestamp"}),
              "api_keys": {**KEY_IDS, "description": "Working API keys the member issued (created or last rotated)."}})

OPERATIONS = [
    Op("GET", "/app/team/accept", "See a team invitation", PAGES, query=(TOKEN,),
       responses={"200": html("The invitation; opened with the mailed join link, the form to choose a password;"
                              " opened with the invitation's page link, the ways to prove the address (works"
                              " without JavaScript)."),
                  "404": html("Not a valid invitation link."), "410": html("The invitation was used or expired.")},
       page=True, errors=(410,),
       description="Public, rate-limited like sign-in. Sets a cookie the forms must echo (CSRF). The join link is"
                   " mailed to the invited address only; the page link, which the inviter may hold, joins nobody."),
    Op("POST", "/app/team/accept", "Join the account: choose a password, or prove the address", PAGES,
       body=obj({"token": {"type": "string"}, "csrf_token": {"type": "string"}},
                {"action": {"type": "string", "enum": ["join", "prove"]}, "password": {"type": "string"},
                 "password_confirm": {"type": "string"}}),
       body_media_type="application/x-www-form-urlencoded",
       responses={"303": redirect("join: to /app/login with the member's e-mail filled in. prove: to the identity"
                                  " provider, with its login cookies (decide_address_prover)."),
                  "400": html("The form again, with what to fix."),
                  "403": html("Forged or expired form; or a join with the invitation's page link, which proves"
                              " nothing (proof_required)."),
                  "404": html("Not a valid invitation link."),
                  "409": html("The address already signs in to an Orbchain account (address_in_use)."),
                  "410": html("The invitation was used or expired."),
                  "503": html("prove: no identity provider is configured.")},
       page=True, errors=(410,),
       description="join (the default): only with the join link mailed to the invited address; single use, the"
                   " first accepted form creates the member and the link then answers 410. prove: the identity"
                   " provider must vouch for the invited address itself, in this browser."),
    Op("GET", MEMBERS, "List the account's team", TEAM, envelope(obj({"members": array(MEMBER)})), auth=("jwt",),
       scope=SCOPE, description="The account holder first, then members oldest first, each with the API keys they"
                                " issued."),
    Op("POST", f"{MEMBERS}/{{member_id}}/remove", "Remove a member", TEAM,
       envelope(obj({"removed": STRING, "api_keys": KEYS_CHOICE, "keys": KEY_IDS})), auth=("jwt",), scope=SCOPE,
       body=obj({"api_keys": {**KEYS_CHOICE, "description": "What becomes of the API keys the member issued"
                                                            " (created or last rotated): revoked (default) or kept."}}),
       description="Their sessions end at their next request. keys lists the keys revoked or kept; the activity log"
                   " records the removal and the choice. 403 owner_required to remove an owner unless an owner;"
                   " 403 last_owner for the account holder."),
    Op("POST", f"{BASE}/setup", "Start your own TOTP set-up (member)", OWN_2FA,
       envelope(obj({"secret": STRING, "otpauth_url": STRING, "qr_code": STRING})), auth=("jwt",), scope=EVERYONE,
       description="A new pending secret; 2FA stays off until verify. 400 while it is on." + NOT_HOLDER),
    Op("POST", f"{BASE}/verify", "Turn your own TOTP on (member)", OWN_2FA,
       envelope(obj({"ok": {"const": True}, "totp_enabled": {"const": True}, "recovery_codes": RECOVERY_CODES})),
       auth=("jwt",), body=CODE, scope=EVERYONE,
       description="The first code of the pending secret (401 totp_invalid); the answer carries your recovery"
                   " codes, shown once (each signs you in once in place of a code)." + NOT_HOLDER),
    Op("POST", f"{BASE}/recovery-codes", "New recovery codes (member)", OWN_2FA,
       envelope(obj({"recovery_codes": RECOVERY_CODES})), auth=("jwt",), body=CODE, scope=EVERYONE,
       description="Against a fresh code of yours: a new set, the old one stops working (403 totp_setup_required"
                   " while your 2FA is off, 401 totp_invalid)." + NOT_HOLDER),
    Op("POST", f"{BASE}/disable", "Turn your own TOTP off (member)", OWN_2FA,
       envelope(obj({"ok": {"const": True}, "totp_enabled": {"const": False}})), auth=("jwt",), body=CODE,
       scope=EVERYONE, description="A fresh code of yours (401 totp_invalid)." + NOT_HOLDER),
]


def register(registry) -> None:
    for op in OPERATIONS:
        registry.add(op)
