"""Public endpoints (SPEC 4.1), hosted pages (SPEC 4.14) and the document itself."""

from __future__ import annotations

from .operations import Op, Param, html, redirect
from .schemas import BOOLEAN, INTEGER, STRING, array, envelope, nullable, obj, ref

TAG, PAGES, OPS = "Public", "Hosted pages", "Operations"

# One configured node: its URL without credentials, path or query; state up, behind, set aside, refused, down or
# unknown; refused: why (wrong_network, initial_sync, behind_peers, stale_tip), else null.
_NODE_STATE = obj({"name": STRING, "state": STRING, "height": nullable(INTEGER), "error": nullable(STRING),
                   "refused": nullable(STRING)})
_CHAIN_READINESS = obj({"chain": STRING, "reachable": BOOLEAN, "synced": BOOLEAN, "node_height": nullable(INTEGER),
                        "scanned_height": nullable(INTEGER), "lag": nullable(INTEGER), "error": nullable(STRING),
                        "nodes": array(_NODE_STATE)})
# Anyone gets "ready" alone; the rest only with the metrics token (or on metrics.listen's address).
READINESS = obj({"ready": BOOLEAN}, {
    "database": obj({"ok": BOOLEAN, "error": nullable(STRING)}),
    "migrations": obj({"ok": BOOLEAN, "pending": nullable(INTEGER)}),
    "chains": array(_CHAIN_READINESS),
})

_TX_STATE = obj({"tx_hash": STRING, "amount": STRING, "coin": STRING, "status": STRING, "confirmations": INTEGER,
                 "required": INTEGER})
# One event of GET /pay/{track_id}/events (web/live_state.py): what the hosted page shows, nothing private.
LIVE_STATE = obj({
    "track_id": STRING, "type": STRING, "status": STRING, "final": BOOLEAN, "pay_currency": STRING,
    "pay_amount": nullable(STRING),
    "paid_amount": STRING, "due_amount": nullable(STRING), "expires_at": nullable(INTEGER),
    "remaining_seconds": nullable(INTEGER), "confirmations": nullable(INTEGER),
    "confirmations_required": nullable(INTEGER), "transactions": array(_TX_STATE), "paid_at": nullable(INTEGER),
    "return_url": nullable(STRING),
})

OPERATIONS = [
    Op("GET", "/health", "Liveness", TAG, obj({"ok": BOOLEAN}), rate_limited=False,
       description="A bare object, not the envelope; 200 while the process runs."),
    Op("GET", "/ready", "Readiness", OPS, READINESS, rate_limited=False,
       responses={"503": {"description": "Not ready: the same object (with the token, naming what is missing)",
                          "content": {"application/json": {"schema": READINESS}}}},
       description="A bare object. 200 when the database answers, no migration is pending and every watched "
                   "chain's node is reachable with the scanner within readiness.max_lag_blocks; else 503. "
                   "Without Authorization: Bearer <metrics.token> only {ready}; with it (or on the "
                   "metrics.listen address) also database, migrations and chains. /health stays the liveness "
                   "probe (SPEC 4.1). docs/operations.md."),
    Op("GET", "/metrics", "Prometheus metrics", OPS, None, rate_limited=False, errors=(401, 404),
       responses={"200": {"description": "Prometheus text exposition format 0.0.4",
                          "content": {"text/plain": {"schema": {"type": "string"}}}}},
       description="Needs Authorization: Bearer <metrics.token>; 404 when no token is configured or when "
                   "metrics.listen serves it on a separate address. docs/operations.md."),
    Op("GET", "/v1/common/currencies", "Coin table", TAG, envelope(array(ref("Currency")))),
    Op("GET", "/v1/common/prices", "USD prices", TAG,
       envelope({"type": "object", "additionalProperties": {"type": "number", "minimum": 0},
                 "description": "Coin symbol to USD price (informational; 0 when unavailable)."}),
       errors=(503,), description="Cached 60 s. Never used to compute payout amounts."),
    Op("GET", "/v1/common/receipt-public-key", "Receipt signing key", TAG, envelope(ref("ReceiptPublicKey"))),
    Op("GET", "/openapi.json", "This OpenAPI document", TAG,
       {"type": "object", "required": ["openapi", "info", "paths"]}, rate_limited=False,
       description="The OpenAPI 3.1 document of the routes this server has; a bare object."),
    Op("GET", "/pay/{track_id}", "Hosted payment page", PAGES,
       query=(Param("pay_currency", {"type": "string"},
                    "Re-price a Waiting invoice in this coin, then 303 to the clean URL; bad values ignored."),),
       responses={
           "200": html("The server-rendered payment page (works without JavaScript)."),
           "303": redirect("After ?pay_currency=: back to the clean page URL."),
           "404": html("Unknown track id, or not an invoice."),
       }, page=True, errors=(503,),
       description="Only invoices have a hosted page. While open, its script (/assets/pay.js) follows"
                   " /pay/{track_id}/events and updates the page in place; without JavaScript a refresh meta tag"
                   " inside <noscript> polls every 15 s. Counted per IP in its own bucket"
                   " (rate_limits.pay_page_per_minute, default 300), not the public pages' 60. 503 when the"
                   " CPU pool that draws the QR code is full."),
    Op("GET", "/pay/{track_id}/events", "Live status of a hosted payment (Server-Sent Events)", PAGES,
       responses={
           "200": {"description": "text/event-stream: at once, then on every change, an event `payment` whose data"
                                  " is the JSON object of LiveState; a `: heartbeat` comment every"
                                  " live.heartbeat_seconds (15); the stream ends after the event whose `final` is"
                                  " true (Paid, Expired, Cancelled). Headers Cache-Control: no-cache and"
                                  " X-Accel-Buffering: no.",
                   "content": {"text/event-stream": {"schema": LIVE_STATE}}},
       }, errors=(404, 503),
       description="The hosted page's live status (the page dispatches each state as a document"
                   " `orbchain:payment` CustomEvent for a merchant's embed). Only invoices: 404 in the envelope for"
                   " any other track id. Holds no database connection while idle. Open streams are bounded:"
                   " live.max_streams_per_ip (8 per IPv4 address or IPv6 /64 per process, then 429), one"
                   " payment's share live.max_page_share_percent (10 % of the process's streams, then 429) and"
                   " the process's budget (live.max_streams, 2000 per server, each of N workers 1/N, never more"
                   " than its open files allow, then 503), each with Retry-After; a slot is free again once the"
                   " client's connection closes. Counted per IP in rate_limits.pay_page_per_minute."),
    Op("GET", "/assets/pay.js", "Script of the hosted payment page", PAGES, rate_limited=False,
       responses={"200": {"description": "JavaScript (countdown and live status)",
                          "content": {"text/javascript": {"schema": {"type": "string"}}}}}),
    Op("GET", "/assets/orbchain.css", "Stylesheet of the hosted pages", PAGES,
       responses={"200": {"description": "CSS", "content": {"text/css": {"schema": {"type": "string"}}}}}),
    Op("GET", "/assets/accent/{color}.css", "Accent colour of a branded page", PAGES,
       responses={"200": {"description": "CSS custom properties --accent and --accent-text",
                          "content": {"text/css": {"schema": {"type": "string"}}}},
                  "404": {"description": "color is not six hex digits"}},
       description="color is six hex digits (a brand_color without #). Pages link it instead of inline "
                   "style, so their CSP keeps style-src 'self'. Cached for a year: the URL names the colour."),
]
