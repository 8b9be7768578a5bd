"""The teams plugin documents its public invitation page in ``/openapi.json`` (the Team page is the dashboard's)."""

from __future__ import annotations

from ...api.openapi import Op, Param, html, obj, redirect

PAGES = "Dashboard pages"
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
]


def register(registry) -> None:
    for op in OPERATIONS:
        registry.add(op)
