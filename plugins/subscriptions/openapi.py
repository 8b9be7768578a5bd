"""The subscriptions plugin documents its routes in ``/openapi.json`` (``register_openapi``)."""

from __future__ import annotations

from ...api.openapi import Op, Param, envelope, html, obj, redirect, ref
from .plans import MAX_INTERVAL, MIN_INTERVAL
from .routes_api import SCOPE_CANCEL, SCOPE_CREATE, SCOPE_READ
from .store import SPEC_STATUSES

API, DASHBOARD, PAGES = "Subscriptions", "Dashboard: plans and subscriptions", "Hosted pages"
KEY, JWT = ("merchant_key",), ("jwt",)
STRING, BOOLEAN, INTEGER = {"type": "string"}, {"type": "boolean"}, {"type": "integer"}
TIME = {"$ref": "#/components/schemas/Timestamp"}
NULL_TIME = {"anyOf": [TIME, {"type": "null"}]}
NULL_STRING = {"anyOf": [STRING, {"type": "null"}]}
USD = {"type": "string", "description": "Exact decimal USD, at most 2 decimals (cents).", "pattern": r"^\d+(\.\d+)?$"}
INTERVAL = {"type": "integer", "minimum": MIN_INTERVAL, "maximum": MAX_INTERVAL}
COINS = {"type": "array", "items": STRING,
         "description": "Coins the invoices may be paid in; empty: every coin the merchant accepts at minting."}
STATUS = {"type": "string", "enum": list(SPEC_STATUSES)}  # SPEC 3.4: nothing else is ever shown

PLAN = obj({"id": STRING, "plan_id": STRING, "label": STRING, "amount_usd": USD, "interval_sec": INTERVAL,
            "accepted_coins": COINS, "enabled": BOOLEAN, "subscribe_url": STRING, "created_at": TIME,
            "brand_id": {"anyOf": [STRING, {"type": "null"}], "description": "The brand its pages and invoices wear."},
            "updated_at": TIME})
SUBSCRIPTION = obj({
    "subscription_id": STRING, "status": STATUS, "plan_id": STRING, "plan_label": STRING, "amount_usd": USD,
    "interval_sec": INTERVAL, "customer_ref": NULL_STRING, "customer_email": NULL_STRING,
    "next_billing_at": NULL_TIME, "current_period_start": NULL_TIME, "current_period_end": NULL_TIME,
    "pay_url": NULL_STRING, "last_error": NULL_STRING, "created_at": TIME,
    "manage_url": {"type": "string", "description": "The customer's page; contains the magic token."},
})
SUBSCRIPTION_PAGE = obj({"subscriptions": {"type": "array", "items": ref("Subscription")}, "total": INTEGER,
                         "limit": INTEGER, "offset": INTEGER})
SUMMARY = obj({"active": INTEGER, "paused": INTEGER, "failed": INTEGER, "cancelled": INTEGER,
               "pending": {"type": "integer", "description": "Customer-page enrolments waiting for their first "
                                                             "payment."},
               "expired": {"type": "integer", "description": "Customer-page enrolments whose first invoice lapsed "
                                                             "unpaid (kept for the retention, then pruned)."},
               "mrr_usd": {"type": "string", "description": "Paid periods only: sum over ACTIVE subscriptions whose "
                                                           "current period is paid of amount_usd per 30 days, "
                                                           "exact, rounded to cents (half even)."}})
CREATE_BODY = obj({"plan_id": STRING}, {
    "customer_ref": {"type": "string", "maxLength": 128}, "customer_email": {"type": "string", "format": "email"},
    "start_at": {"type": "string", "format": "date-time",
                 "description": "RFC 3339; defaults to now; a past time means now. Delays the first invoice."},
    "idempotency_key": {"type": "string", "maxLength": 128,
                        "description": "Extension: the same key from the same merchant answers the subscription it "
                                       "first created (409 idempotency_key_reused if plan_id, customer_ref or "
                                       "customer_email differ), so a retried request never enrols a customer twice."}})
LIST_QUERY = (Param("status", STATUS), Param("customer_ref", STRING),
              Param("limit", {"type": "integer", "minimum": 1, "maximum": 200, "default": 20}),
              Param("offset", {"type": "integer", "minimum": 0, "default": 0}))


def data_only(schema: dict) -> dict:
    return obj({"data": schema})


FORM = "application/x-www-form-urlencoded"
TOKEN_PAGE_404 = html("Unknown or rotated magic token.")

OPERATIONS = [
    Op("POST", "/v1/subscription", "Create a subscription", API, data_only(ref("Subscription")), auth=KEY,
       scope=SCOPE_CREATE, body=CREATE_BODY,
       description="ACTIVE at once. Starting now, the first period's invoice is opened in the request: pay_url "
                   "is set (send the customer there) and subscription.invoiced carries it too; null with "
                   "last_error when it could not be minted (the billing tick retries). With start_at ahead, "
                   "the tick opens it within 5 minutes of start_at. 400 plan_not_found_or_disabled."),
    Op("GET", "/v1/subscription", "List subscriptions", API, data_only(SUBSCRIPTION_PAGE), auth=KEY,
       scope=SCOPE_READ, query=LIST_QUERY,
       description="Newest first. Subscriptions only: a customer's enrolment on the plan's page joins the list, "
                   "ACTIVE, once its first invoice is paid (unpaid, it is an enrolment the dashboard shows)."),
    Op("GET", "/v1/subscription/{id}", "Show a subscription", API, data_only(ref("Subscription")), auth=KEY,
       scope=SCOPE_READ, description="Another merchant's id, and an enrolment not paid yet, answer 404."),
    Op("POST", "/v1/subscription/{id}/cancel", "Cancel a subscription", API, data_only(ref("Subscription")),
       auth=KEY, scope=SCOPE_CANCEL,
       description="Final; rotates the magic token (the old manage link stops working). Cancelling again "
                   "changes nothing. An open invoice stays payable."),
    Op("POST", "/dashboard/plans", "Create a plan", DASHBOARD, envelope(ref("SubscriptionPlan")), auth=JWT,
       body=obj({"label": {"type": "string", "minLength": 1, "maxLength": 80}, "amount_usd": USD,
                 "interval_sec": INTERVAL}, {"accepted_coins": COINS, "brand_id": {
                     "type": "string", "maxLength": 64, "description": "A live brand of this account: the plan's "
                     "customer pages and every invoice it bills wear it."}})),
    Op("GET", "/dashboard/plans", "List plans", DASHBOARD,
       envelope(obj({"plans": {"type": "array", "items": ref("SubscriptionPlan")}})), auth=JWT),
    Op("PATCH", "/dashboard/plans/{id}", "Change a plan", DASHBOARD, envelope(ref("SubscriptionPlan")), auth=JWT,
       body=obj({}, {"label": {"type": "string", "minLength": 1, "maxLength": 80}, "amount_usd": USD,
                     "interval_sec": INTERVAL, "accepted_coins": COINS, "enabled": BOOLEAN,
                     "brand_id": {"anyOf": [{"type": "string", "maxLength": 64}, {"type": "null"}],
                                  "description": "A live brand of this account, or null (or \"\") for the default "
                                                 "look: the plan's pages and the invoices it bills from now on."}}),
       description="A disabled plan refuses enrolment; its subscriptions keep billing. Price, interval and brand "
                   "changes apply from the next minted invoice."),
    Op("POST", "/dashboard/subscriptions", "Enrol a customer", DASHBOARD, envelope(ref("Subscription")), auth=JWT,
       body=CREATE_BODY),
    Op("GET", "/dashboard/subscriptions", "List subscriptions", DASHBOARD, envelope(SUBSCRIPTION_PAGE), auth=JWT,
       query=LIST_QUERY, description="As GET /v1/subscription: subscriptions only."),
    Op("GET", "/dashboard/subscriptions/summary", "Subscription counts and MRR", DASHBOARD, envelope(SUMMARY),
       auth=JWT),
    Op("GET", "/subscribe/{plan_id}", "Subscribe to a plan", PAGES, page=True,
       responses={"200": html("The enrolment form (works without JavaScript)."),
                  "404": html("Unknown or disabled plan.")}),
    Op("POST", "/subscribe/{plan_id}", "Enrol from the customer page", PAGES, page=True, body_media_type=FORM,
       body=obj({}, {"email": {"type": "string", "maxLength": 254}, "customer_ref": {"type": "string",
                                                                                   "maxLength": 128},
                     "cf-turnstile-response": {"type": "string", "description": "The captcha widget's token, "
                                                                                "when a captcha is configured."}}),
       responses={"303": redirect("To the hosted page of the first period's invoice; the enrolment waits for it "
                                  "(PENDING on the manage page, not a subscription of the API yet) until it is "
                                  "paid, and its return link is the manage page."),
                  "400": html("The form again, naming the bad field."),
                  "403": html("The form again: the captcha (check_public_form) refused."),
                  "404": html("Unknown or disabled plan."),
                  "429": html("This address already holds plugin.subscriptions.pending_per_ip unpaid enrolments "
                              "on the plan (default 3); see Retry-After.")}),
    Op("GET", "/subscribe/manage/{token}", "Manage a subscription", PAGES, page=True,
       responses={"200": html("Status, next billing, the open invoice's link and the history."),
                  "404": TOKEN_PAGE_404}),
] + [
    Op("POST", f"/subscribe/manage/{{token}}/{action}", f"{action.capitalize()} a subscription", PAGES, page=True,
       responses={"303": redirect("Back to the manage page (after a cancel: the new token's)."),
                  "400": html("The manage page again, saying the subscription's state refuses the change "
                              "(a page left open while it moved on)."),
                  "404": TOKEN_PAGE_404})
    for action in ("pause", "resume", "cancel")
]


def register(registry) -> None:
    registry.add_schema("SubscriptionPlan", PLAN)
    registry.add_schema("Subscription", SUBSCRIPTION)
    for op in OPERATIONS:
        registry.add(op)
