"""``tally_orbchain``: a feature plugin written the way a third party would, using only the
documented contract (hooks, registries, views, core services), imported from ``orbchain.api`` alone,
and its own table.

It adds a scope (``tally:read``), two routes documented in /openapi.json, a page from its own
template with its own static file, a dashboard entry, a webhook event kind (``tally.counted``)
sent by its own job, a payment field (``splits``) and a credit-time split of a payment between
merchants, and it records every lifecycle event it is told about.
"""

import json

import aiohttp_jinja2
from aiohttp import web

from orbchain.api import (
    PLATFORM_FEES, ConfigError, InvalidRequest, Migration, PayPageForm, Posting, ValidationError, enqueue_event,
    gateway_of, hookimpl, html_page, merchant_available, principal_of, requires, world,
)
from orbchain.api import envelope as reply
from orbchain.api.openapi import Op, envelope, html, obj, redirect

HERE = __import__("pathlib").Path(__file__).parent
SEEN = []  # (hook name, view) of every lifecycle event, for the test to read
STARTED = []
routes = web.RouteTableDef()


def _tables(dialect):
    return [
        "CREATE TABLE tally_splits (track_id TEXT PRIMARY KEY, shares TEXT NOT NULL)",
        "CREATE TABLE tally_paid (track_id TEXT PRIMARY KEY, merchant_id TEXT NOT NULL,"
        " announced {bool} NOT NULL DEFAULT FALSE)",
    ]


@hookimpl
def check_config(gateway):
    greeting = gateway.config.plugin_config("tally").get("greeting", "hello")
    if not isinstance(greeting, str):
        raise ConfigError("config key 'plugin.tally.greeting' must be a string")


@hookimpl
def register_migrations(registry):
    registry.add(Migration("tally", 1, "tables", _tables))


@hookimpl
def register_scopes(registry):
    registry.add("tally:read", "Read the tally of paid payments.")


@hookimpl
def register_event_kinds(registry):
    registry.add("tally.counted", "A paid payment was counted by the tally.")


@hookimpl
def register_routes(registry):
    registry.add(routes)


@hookimpl
def register_openapi(registry):
    registry.add_schema("Tally", obj({"paid": {"type": "integer"}}))
    registry.add(Op("GET", "/v1/tally", "Paid payments counted", "Tally", envelope({"$ref": "#/components/schemas/Tally"}),
                    auth=("merchant_key",), scope="tally:read"))
    registry.add(Op("GET", "/tally/page", "The tally page", "Tally", responses={"200": html("The page.")}))
    registry.add(Op("POST", "/tally/tip", "Tip from the hosted page", "Tally", responses={"303": redirect("To the page.")},
                    body_media_type="application/x-www-form-urlencoded", body=obj({}, {})))


class TallyPrices:
    name = "tally"

    async def fetch(self, symbols):
        return {}


@hookimpl
def register_price_sources(registry):
    registry.add(TallyPrices())


@hookimpl
def extra_pay_page_forms(gateway, payment):
    return [PayPageForm("/tally/tip", "Tip the tally", note="Counted by the tally plugin")]


@hookimpl
def register_templates(registry):
    registry.add(templates=HERE / "templates", static=HERE / "static")


@hookimpl
def register_dashboard_pages(registry):
    registry.add("header-nav", "Tally", "/tally/page", order=10)


@hookimpl
def register_jobs(registry):
    registry.add("tally.announce", announce, seconds=30)


@hookimpl
def register_commands(registry):
    registry.add("tally", "show the tally", lambda parser: parser.set_defaults(func=lambda args, gateway: 0))


@hookimpl
def gateway_started(gateway):
    STARTED.append("started")


@hookimpl
def gateway_stopping(gateway):
    STARTED.append("stopping")


# -- splits: a payment field and the credit-time postings ---------------------------------------


def parse_splits(gateway, value, payment_type, merchant_id):
    if not isinstance(value, list) or not 1 <= len(value) <= 10:
        raise ValidationError({"splits": "a list of 1 to 10 entries"})
    shares = []
    for entry in value:
        if not isinstance(entry, dict) or not isinstance(entry.get("merchant_id"), str) \
                or not isinstance(entry.get("bps"), int) or entry["bps"] <= 0:
            raise ValidationError({"splits": "each entry has merchant_id and a positive integer bps"})
        shares.append((entry["merchant_id"], entry["bps"]))
    if sum(bps for _, bps in shares) != 10000:
        raise InvalidRequest("splits must total 10000 bps", code="splits_bps_sum_not_10000")
    return shares


async def store_splits(gateway, payment, shares):
    await gateway.db.execute("INSERT INTO tally_splits (track_id, shares) VALUES (:t, :s)",
                             {"t": payment.track_id, "s": json.dumps(shares)})


@hookimpl
def register_payment_fields(registry):
    registry.add("splits", parse_splits, store_splits)


@hookimpl
async def filter_credit_postings(gateway, credit, postings):
    if credit.track_id is None:
        return None
    stored = await gateway.db.fetch_val("SELECT shares FROM tally_splits WHERE track_id = :t", {"t": credit.track_id})
    if stored is None:
        return None
    net = credit.amount - credit.fee
    shaped = [p for p in postings if p.account in (world(credit.chain), PLATFORM_FEES)]
    shares = json.loads(stored)
    given = 0
    for index, (merchant_id, bps) in enumerate(shares):
        # Integer base units; the last share absorbs the sub-unit remainder (SPEC 4.2 splits).
        part = net - given if index == len(shares) - 1 else net * bps // 10000
        given += part
        if part:
            shaped.append(Posting(merchant_available(merchant_id), credit.coin, part))
    return shaped


# -- lifecycle events and the job that announces them ------------------------------------------


@hookimpl
async def payment_paid(gateway, payment):
    SEEN.append(("payment_paid", payment))
    await gateway.db.execute(
        "INSERT INTO tally_paid (track_id, merchant_id) VALUES (:t, :m) ON CONFLICT DO NOTHING",
        {"t": payment.track_id, "m": payment.merchant_id})


@hookimpl
def payment_detected(gateway, payment):
    SEEN.append(("payment_detected", payment))


@hookimpl
def payment_expired(gateway, payment):
    SEEN.append(("payment_expired", payment))


@hookimpl
def payment_cancelled(gateway, payment):
    SEEN.append(("payment_cancelled", payment))


@hookimpl
def deposit_credited(gateway, deposit):
    SEEN.append(("deposit_credited", deposit))


@hookimpl
def deposit_reversed(gateway, deposit):
    SEEN.append(("deposit_reversed", deposit))


async def announce(gateway):
    """The job: one signed ``tally.counted`` webhook per paid payment, sent once."""
    rows = await gateway.db.fetch_all("SELECT track_id, merchant_id FROM tally_paid WHERE announced = FALSE")
    for row in rows:
        async with gateway.db.transaction():
            total = await gateway.db.fetch_val("SELECT COUNT(*) FROM tally_paid WHERE merchant_id = :m",
                                               {"m": row["merchant_id"]})
            await enqueue_event(gateway, merchant_id=row["merchant_id"], event_type="tally.counted",
                                body={"type": "tally", "track_id": row["track_id"], "paid": int(total)},
                                logical_key=f"tally.counted:{row['track_id']}")
            await gateway.db.execute("UPDATE tally_paid SET announced = TRUE WHERE track_id = :t",
                                     {"t": row["track_id"]})


# -- routes -------------------------------------------------------------------------------------


@routes.get("/v1/tally")
@requires("merchant_key", scope="tally:read")
async def tally(request):
    gateway = gateway_of(request)
    paid = await gateway.db.fetch_val("SELECT COUNT(*) FROM tally_paid WHERE merchant_id = :m",
                                      {"m": principal_of(request).merchant_id})
    return reply({"paid": int(paid)})


@routes.get("/tally/page")
@html_page
async def page(request):
    gateway = gateway_of(request)
    entries = gateway.dashboard.entries("header-nav")
    return aiohttp_jinja2.render_template("tally/page.html", request, {"entries": entries})


@routes.post("/tally/tip")
@html_page
async def tip(request):
    raise web.HTTPSeeOther("/tally/page")
