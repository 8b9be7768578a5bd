"""The dashboard's pages in ``/openapi.json`` (``register_openapi``), as the hosted pages are documented.

They are HTML pages for people, not API operations: each answers text/html
(or a 303), takes the browser session cookie (never a header), and every
form carries ``csrf_token``. Documented because every route the server has is
(tests/test_openapi.py), under their own tag.
"""

from __future__ import annotations

from typing import Any

from ...api.openapi import Op, Param, html, obj, redirect

TAG = "Dashboard pages (HTML, /app)"
FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
STRING = {"type": "string"}
TEXT = {"type": "string", "maxLength": 4096}
SESSION = ("Signed-in pages need the session cookie set by the sign-in form; without it (or once the session "
           "ended: signed out, expired, idle) they answer 303 to /app/login with a notice naming why. The cookie "
           "never authenticates /v1 or /dashboard.")
PAGE = html("The page (works without JavaScript).")
TO_LOGIN = redirect("Not signed in (or the session ended): to /app/login?next=...&notice=<why>")
FORM_ERRORS = (401, 403, 409, 503)


def form(required: dict[str, Any] | None = None, optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return obj({"csrf_token": STRING, **(required or {})}, optional or {})


def page(path: str, summary: str, *, query: tuple[Param, ...] = (), description: str = "") -> Op:
    return Op("GET", path, summary, TAG, page=True, query=query, description=description or SESSION,
              responses={"200": PAGE, "303": TO_LOGIN, "400": html("A bad filter, named on the page.")})


def action(path: str, summary: str, body: dict[str, Any], done: str, *, media: str = FORM,
           shows: str | None = None, rate: bool = True, errors: tuple[int, ...] = FORM_ERRORS) -> Op:
    responses = {"303": redirect(done), "400": html("The form again, naming the bad field."),
                 "403": html("The form's CSRF token is missing or wrong, or it came from another origin.")}
    if shows:
        responses["200"] = html(shows)
    return Op("POST", path, summary, TAG, page=True, body=body, body_media_type=media, errors=errors,
              responses=responses, rate_limited=rate, description=SESSION)


PAYMENT_FORM = form({"type": {"type": "string", "enum": ["static_address", "white_label", "invoice"]}}, {
    name: TEXT for name in ("currency", "amount", "pay_currency", "order_id", "description", "lifetime",
                            "callback_url", "return_url", "email", "user_id")})
LIST_QUERY = tuple(Param(name, STRING) for name in ("status", "type", "currency", "order_id", "sort_order")) + (
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 200}), Param("offset", {"type": "integer",
                                                                                          "minimum": 0}))

OPERATIONS = [
    Op("GET", "/app/login", "Sign-in page", TAG, page=True, query=(Param("next", STRING), Param("notice", STRING)),
       responses={"200": PAGE, "303": redirect("Already signed in: to next.")}),
    Op("POST", "/app/login", "Sign in", TAG, page=True, body_media_type=FORM, errors=FORM_ERRORS,
       body=form({"email": TEXT, "password": TEXT}, {"next": TEXT, "turnstile_token": TEXT,
                                                      "cf-turnstile-response": TEXT, "totp_code": TEXT}),
       responses={"303": redirect("Signed in (session cookie set): to next or /app. With the person's own 2FA on,"
                                  " no session yet: to /app/login/code, with that step's cookie."),
                  "400": html("The form again."), "401": html("The form again: invalid credentials.")}),
    Op("GET", "/app/login/code", "Sign-in: the person's 2FA code", TAG, page=True,
       responses={"200": PAGE, "303": redirect("No pending sign-in in this browser: to /app/login (or /app when"
                                               " signed in).")},
       description="The page after a right password for whoever has their own 2FA on; the pending sign-in is an "
                   "HttpOnly, SameSite=Strict cookie on this path, lasting five minutes."),
    Op("POST", "/app/login/code", "Finish signing in with the code", TAG, page=True, body_media_type=FORM,
       errors=FORM_ERRORS, body=form({"totp_code": TEXT}),
       responses={"303": redirect("Signed in (session cookie set): to next or /app; an expired or used step: to"
                                  " /app/login with a notice."),
                  "401": html("The form again: code missing, wrong or used."),
                  "403": html("The form's CSRF token is missing or wrong, or it came from another origin."),
                  "429": html("The form again: the person's code lockout is running.")},
       description="The authenticator's 6-digit code, or one of the person's recovery codes (once each)."),
    Op("GET", "/app/signup", "Sign-up page", TAG, page=True, query=(Param("ref", STRING),),
       responses={"200": PAGE, "303": redirect("Already signed in.")}),
    Op("POST", "/app/signup", "Create an account", TAG, page=True, body_media_type=FORM, errors=FORM_ERRORS,
       body=form({"email": TEXT, "password": TEXT}, {"ref": TEXT, "turnstile_token": TEXT,
                                                      "cf-turnstile-response": TEXT}),
       responses={"200": html("Signed in; the three API keys, shown once."), "400": html("The form again."),
                  "409": html("The form again: email already registered.")}),
    action("/app/logout", "Sign out", form(), "To /app/login (session cookie cleared)."),
    action("/app/fragment", "Finish a sign-in or chat link from a URL fragment", form(
        {"value": TEXT}, {"kind": {"type": "string", "enum": ["google-auth", "tg-link"]}}),  # no kind: a pasted address
        "Signed in by the identity provider's payload (only in the browser that started that sign-in, once), to "
        "/app; refused (403, 400, 503 without a provider) the browser stays as it was.",
        shows="New account keys, or the chat link result.",
        rate=True),
    page("/app", "Home: balances, recent payments"),
    page("/app/payments", "Payments, with the SPEC filters and paging", query=LIST_QUERY),
    page("/app/payments/new", "New payment form"),
    action("/app/payments/new", "Create a payment", PAYMENT_FORM, "To the new payment's page."),
    page("/app/payments/{track_id}", "A payment: amount, fee and net, transactions, timeline with webhooks, receipt,"
                                     " refund"),
    Op("GET", "/app/payments/{track_id}/events", "Live status of one of the merchant's payments (Server-Sent Events)",
       TAG, page=True, errors=(404, 429, 503),
       responses={"200": {"description": "text/event-stream, as GET /pay/{track_id}/events sends for an invoice, for"
                                          " any type; `event: signed-out` then the end once the session is over.",
                          "content": {"text/event-stream": {"schema": STRING}}},
                  "303": TO_LOGIN, "404": html("Unknown, or another merchant's payment.")},
       description="What the payment detail's script follows while the payment is open. The session is checked"
                   " again every live.heartbeat_seconds (15). Bounded per merchant (live.max_streams_per_merchant,"
                   " 16 per process), per address (live.max_dashboard_streams_per_ip, 32), per payment"
                   " (live.max_page_share_percent, 10 %), each then 429, and in total (the process's stream"
                   " budget, then 503), each with Retry-After."
                   " Holds no database connection while idle."),
    action("/app/payments/{track_id}/cancel", "Cancel a Waiting payment", form(), "Back to the payment."),
    action("/app/payments/{track_id}/webhooks/{event_id}/send-again", "Send a webhook of this payment again"
           " (delivered, gave up or not sent; a delivered one at most once a minute)", form(),
           "Back to the payment, saying whether it was queued."),
    action("/app/payments/{track_id}/refund", "Refund a Paid payment", form(
        {"destination": TEXT}, {"amount": TEXT, "amount_usd": TEXT, "description": TEXT, "external_id": TEXT}),
        "Back to the payment."),
    page("/app/payouts", "Payouts: history, single and batch forms"),
    action("/app/payouts", "Review a payout (nothing is sent yet)", form(
        {"currency": TEXT, "address": TEXT, "amount": TEXT}, {"description": TEXT, "idempotency_key": TEXT}),
        "", shows="The review: coin, network, destination, amount, fee, what leaves the balance, the balance and"
                  " the coin's minimum, with Confirm and pay and Back/Edit; or the form naming the bad field."),
    action("/app/payouts/confirm", "Confirm a reviewed payout (action=confirm) or edit it (action=edit)", form(
        {"review_token": TEXT}, {"action": {"type": "string", "enum": ["confirm", "edit"]}, "currency": TEXT,
                                 "address": TEXT, "amount": TEXT, "description": TEXT, "idempotency_key": TEXT}),
        "Back to the payouts (paid once: a second confirm of the same review is refused, 409).",
        shows="Back/Edit: the form with the reviewed input."),
    action("/app/payouts/batch", "Review a CSV batch (currency,address,amount,external_id); nothing is sent yet",
           form({}, {"file": {"type": "string", "contentMediaType": "text/csv"}, "rows": TEXT}),
           "", media=MULTIPART, shows="The review: each row checked, refusals on their rows, totals per coin."),
    action("/app/payouts/batch/confirm", "Pay a reviewed batch (action=confirm) or edit it (action=edit)", form(
        {}, {"review_token": TEXT, "rows": TEXT, "action": {"type": "string", "enum": ["confirm", "edit"]}}),
        "", shows="The payouts page with each row's result (each external_id pays once), or the rows to edit."),
    page("/app/transfers", "Transfers: history and form"),
    action("/app/transfers", "Send an internal transfer", form(
        {"to_account_id": TEXT, "coin": TEXT, "amount": TEXT}, {"idempotency_key": TEXT, "totp_code": TEXT}),
        "Back to the transfers."),
    page("/app/settings", "Settings"),
    action("/app/settings/{section}", "Save a settings form (webhook, coins, confirmations, static-mode, rotate-key)",
           form({}, {"webhook_url": TEXT, "rotate_secret": TEXT, "accepted_coins": TEXT, "enabled": TEXT,
                     "key_type": TEXT}),
           "Back to the settings.", shows="A new secret or key, shown once."),
    action("/app/settings/webhook/test", "Send a signed webhook.test event to the webhook URL", form(),
           "To the webhook deliveries, where its attempts show (refused: the settings page with the reason, 400"
           " without a webhook URL, 429 past 3 a minute)."),
    page("/app/security", "Two-factor authentication (a team member's own, for a member)"),
    action("/app/security/{action}", "Set up, verify or turn off TOTP, or make new recovery codes (setup, verify,"
           " disable, recovery-codes)", form({}, {"code": TEXT}), "Back to the page (disable).",
           shows="The secret and its QR code (setup); the recovery codes, shown once (verify, recovery-codes)."),
    page("/app/keys", "Scoped API keys",
         query=(Param("brand", STRING, "A key's id: its brand form in place of the new-key form."),)),
    action("/app/keys", "Create a scoped key", form({"label": TEXT}, {
        "scopes": TEXT, "coin_allowlist": TEXT, "ip_allowlist": TEXT, "webhook_url": TEXT, "rate_limit_rpm": TEXT,
        "expires_in_days": TEXT, "brand_id": TEXT}), "", shows="The new key, shown once."),
    action("/app/keys/{key_id}/{action}", "Rotate, revoke or re-brand a scoped key (rotate, revoke, brand)",
           form({}, {"brand_id": TEXT}), "Back to the keys (revoked, brand changed; brand_id empty clears it).",
           shows="The rotated key, shown once."),
    page("/app/webhooks", "Webhook deliveries"),
    action("/app/webhooks/{event_id}/redeliver", "Send an event again (delivered, gave up or not sent; a delivered"
           " one at most once a minute)", form(), "Back to the deliveries, saying whether it was queued."),
    *(Op(method, "/app/{missing}", "Any other address under /app: the dashboard's not-found page", TAG, page=True,
         rate_limited=True, responses={"404": html("Page not found, in the dashboard's layout (with its navigation"
                                                   " when signed in), never the API's JSON."),
                                       "405": html("A page's address with a method it lacks.")})
      for method in ("GET", "POST")),
]


def register(registry: Any, gateway: Any) -> None:
    for operation in OPERATIONS:
        registry.add(operation)
    for entry in gateway.dashboard.rendered():  # pages other plugins render inside the dashboard
        registry.add(Op("GET", entry.path, f"{entry.title} (plugin {entry.plugin})", TAG, page=True,
                        query=(Param("key_id", STRING), Param("offset", STRING)),
                        description=SESSION, responses={"200": PAGE, "303": TO_LOGIN,
                                                        "400": html("The page, naming what is wrong with the "
                                                                    "query (an invalid or used link token).")}))
        if entry.submit is not None:
            registry.add(action(entry.path, f"{entry.title}: a form (plugin {entry.plugin})",
                                {"type": "object", "required": ["csrf_token"],
                                 "properties": {"csrf_token": STRING}, "additionalProperties": True},
                                "Back to the page, or on to where the form leads (a DashboardRedirect: an"
                                " identity provider's consent page, with the plugin's cookies).",
                                shows="The page again, or what the form created.",
                                errors=(*FORM_ERRORS, 404)))  # a form naming an object not this merchant's
