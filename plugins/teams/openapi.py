"""The teams plugin documents its public invitation page and a member's own 2FA routes in ``/openapi.json``.

(The Team page is the dashboard's.)"""

from __future__ import annotations

from ...api import EVERYONE
from ...api.openapi import Op, Param, envelope, html, obj, redirect, ref
from .own_2fa import BASE

PAGES = "Dashboard pages"
OWN_2FA = "Dashboard: a team member's own 2FA"
STRING = {"type": "string"}
CODE = obj({"code": {"type": "string", "pattern": "^[0-9]{6}$", "description": "A fresh 6-digit code."}})
NOT_HOLDER = (" A member's token only (403 not_a_member for the account holder's: theirs is /dashboard/mfa/*);"
              " no role permission needed (scope \"*\"), so a member limited by \"require 2FA\" can set it up.")
RECOVERY_CODES = ref("RecoveryCodes")
TOKEN = Param("token", {"type": "string"}, "The invitation's token, from the link.")

OPERATIONS = [
    Op("GET", "/app/team/accept", "Accept a team invitation", PAGES, query=(TOKEN,),
       responses={"200": html("The form to choose a password (works without JavaScript)."),
                  "404": html("Not a valid invitation link."), "410": html("The invitation was used or expired.")},
       page=True, errors=(410,),
       description="Public, rate-limited like sign-in. Sets a cookie the form must echo (CSRF)."),
    Op("POST", "/app/team/accept", "Join the account: choose a password", PAGES,
       body=obj({"token": {"type": "string"}, "password": {"type": "string"},
                 "password_confirm": {"type": "string"}, "csrf_token": {"type": "string"}}),
       body_media_type="application/x-www-form-urlencoded",
       responses={"303": redirect("To /app/login with the member's e-mail filled in."),
                  "400": html("The form again, with what to fix."), "403": html("Forged or expired form."),
                  "404": html("Not a valid invitation link."), "409": html("The e-mail is a member already."),
                  "410": html("The invitation was used or expired.")},
       page=True, errors=(410,),
       description="Single use: the first accepted form creates the member; the link then answers 410."),
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
