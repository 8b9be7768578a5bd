"""The plugin contract carries a feature: a third-party package installed through the ``orbchain``
entry-point group adds a scope, documented routes, a page from its own template and static folder,
a dashboard entry, a webhook event kind sent by its own job, a payment field and a credit-time split
between two merchants, with no core edit; end to end on devnet, both databases, ledger clean after.

The package's source is ``tests/third_party/tally_plugin.py``; ``install_entry_point_package``
installs it the way pip would (module files plus a dist-info with the entry point).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.cli.commands import build_parser
from orbchain.core.infra.config import ConfigError
from orbchain.core.watching.deposits import complete_credit
from orbchain.core.startup import build_gateway
from orbchain.core.ledger.check import check_ledger
from orbchain.core.payments.status import expire_payments
from orbchain.core.contract.plugins import for_key_kinds, get_plugin_manager, hookimpl, plugin_names
from orbchain.core.contract.registries import DashboardPage
from orbchain.core.types.views import Credit, DepositView, PaymentView
from orbchain.core.events.webhooks import deliver_due
from orbchain.web.keys import GATEWAY
from orbchain.web.openapi import app_routes

from .support import Devnet, WebhookReceiver, api, install_entry_point_package, signup

SOURCE = Path(__file__).parent / "third_party" / "tally_plugin.py"
PAGE = """<!doctype html><html><head><link rel="stylesheet" href="/static/tally/tally.css"></head>
<body><nav>{% for e in entries %}<a href="{{ e.path }}">{{ e.title }} ({{ e.plugin }})</a>{% endfor %}</nav>
<h1>Tally page</h1></body></html>
"""


@pytest.fixture
def tally_package(tmp_path, monkeypatch):
    site = tmp_path / "site"
    install_entry_point_package(site, "tally_orbchain", "tally", {
        "__init__.py": SOURCE.read_text(encoding="utf-8"),
        "templates/page.html": PAGE,
        "static/tally.css": "h1 { color: teal; }\n",
    })
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("tally_orbchain", None)


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


def _units(balances, coin="BTC"):
    return {b["coin"]: b["amount"] for b in balances}.get(coin)


async def test_a_third_party_feature_package_works_end_to_end(tally_package, receiver, make_client, make_config):
    pm = get_plugin_manager(blocked=["splits"])  # tally brings its own "splits" field: one owner per field
    assert "tally" in plugin_names(pm)
    client = await make_client(make_config(scheduler={"enabled": False}), pm)
    gateway = client.app[GATEWAY]
    import tally_orbchain

    assert tally_orbchain.STARTED == ["started"]  # gateway_started ran when the app started
    shop = await signup(client, "shop@example.com")
    partner = await signup(client, "partner@example.com")
    hook_url = await receiver.start()
    status, body = await api(client, "PUT", "/dashboard/settings/webhook", shop.jwt, json={"webhook_url": hook_url})
    assert status == 200, body
    secret = body["data"]["webhook_secret"]

    # A scope: a scoped key can hold it and the plugin's route requires it.
    status, body = await api(client, "POST", "/dashboard/api-keys", shop.jwt,
                             json={"label": "tally", "scopes": ["tally:read"]})
    assert status == 200, body
    tally_key = {"merchant_api_key": body["data"]["api_key"]}
    status, body = await api(client, "POST", "/dashboard/api-keys", shop.jwt,
                             json={"label": "reader", "scopes": ["payment:read"]})
    reader_key = {"merchant_api_key": body["data"]["api_key"]}
    status, body = await api(client, "POST", "/dashboard/api-keys", shop.jwt,
                             json={"label": "bad", "scopes": ["nobody:registered"]})
    assert status == 400 and "scopes" in body["error"]["detail"]
    assert (await api(client, "GET", "/v1/tally", tally_key))[1]["data"] == {"paid": 0}
    status, body = await api(client, "GET", "/v1/tally", reader_key)
    assert status == 403 and "tally:read" in body["error"]["message"]

    # Routes in the OpenAPI document, every registered route documented.
    document = await (await client.get("/openapi.json")).json()
    documented = {(m.upper(), p) for p, item in document["paths"].items() for m in item}
    assert app_routes(client.app) == documented
    assert document["paths"]["/v1/tally"]["get"]["security"] == [{"merchantApiKey": ["tally:read"]}]
    assert "Tally" in document["components"]["schemas"]
    assert "tally:read" in document["components"]["schemas"]["Scope"]["enum"]

    # A page from its own template, its static file, its dashboard entry.
    tally_entries = [e for e in gateway.dashboard.entries("header-nav") if e.plugin == "tally"]
    assert tally_entries == [DashboardPage("header-nav", "Tally", "/tally/page", "tally", 10)]
    response = await client.get("/tally/page")
    assert response.status == 200
    assert '<a href="/tally/page">Tally (tally)</a>' in await response.text()
    css = await client.get("/static/tally/tally.css")
    assert css.status == 200 and "teal" in await css.text()
    assert css.headers["Cache-Control"] == "public, max-age=3600"
    for escape in ("/static/tally/..%2F__init__.py", "/static/tally/missing.css", "/static/other/tally.css"):
        assert (await client.get(escape)).status == 404, escape

    # A payment field and a credit-time split between two merchants.
    status, body = await api(client, "POST", "/v1/payment/white-label", shop.merchant_key, json={
        "currency": "BTC", "amount": "0.001",
        "splits": [{"merchant_id": shop.merchant_id, "bps": 7000}, {"merchant_id": partner.merchant_id, "bps": 2000}]})
    assert status == 400 and body["error"]["code"] == "splits_bps_sum_not_10000"
    status, body = await api(client, "POST", "/v1/payment/white-label", shop.merchant_key, json={
        "currency": "BTC", "amount": "0.001",
        "splits": [{"merchant_id": shop.merchant_id, "bps": 7000}, {"merchant_id": partner.merchant_id, "bps": 3000}]})
    assert status == 200, body
    payment = body["data"]
    devnet = Devnet(client)
    await devnet.pay("BTC", payment["address"], payment["pay_amount"])
    await devnet.mine(6)
    view = (await api(client, "GET", f"/v1/payment/{payment['track_id']}", shop.merchant_key))[1]["data"]
    assert view["status"] == "Paid"
    # 100000 sat, 1% platform fee once: 99000 net, 70% / 30%.
    shop_balance = (await api(client, "GET", "/v1/general/account/balance", shop.general_key))[1]["data"]["balances"]
    partner_balance = (await api(client, "GET", "/v1/general/account/balance",
                                 partner.general_key))[1]["data"]["balances"]
    assert (_units(shop_balance), _units(partner_balance)) == ("0.000693", "0.000297")
    assert await ledger.balance(gateway.db, ledger.PLATFORM_FEES, "BTC") == 1000

    # Lifecycle hooks got documented views.
    names = [name for name, _ in tally_orbchain.SEEN]
    assert names == ["payment_detected", "deposit_credited", "payment_paid"]
    paid = tally_orbchain.SEEN[-1][1]
    assert isinstance(paid, PaymentView) and paid.status == "Paid" and paid.pay_amount == 100_000
    assert isinstance(tally_orbchain.SEEN[1][1], DepositView) and tally_orbchain.SEEN[1][1].fee == 1000

    # Its job sends its own event kind as a signed webhook, once.
    await gateway.jobs["tally.announce"].func(gateway)
    await gateway.jobs["tally.announce"].func(gateway)
    await deliver_due(gateway)
    counted = [b for b in receiver.verified(secret) if b["event_type"] == "tally.counted"]
    assert [(b["track_id"], b["paid"]) for b in counted] == [(payment["track_id"], 1)]
    assert (await api(client, "GET", "/v1/tally", tally_key))[1]["data"] == {"paid": 1}

    # Its hosted-page form, price source and CLI command are there too.
    status, body = await api(client, "POST", "/v1/payment/invoice", shop.merchant_key, json={"amount": "0.001"})
    assert status == 200, body
    page_html = await (await client.get(f"/pay/{body['data']['track_id']}")).text()
    assert 'action="/tally/tip"' in page_html and "Tip the tally" in page_html
    tip = await client.post("/tally/tip", allow_redirects=False)
    assert tip.status == 303 and tip.headers["Location"] == "/tally/page"
    assert gateway.price_sources.owner("tally") == "tally"
    assert build_parser().parse_args(["tally"]).func is not None

    assert (await check_ledger(gateway.db)).ok


async def test_a_feature_plugin_checks_its_config(tally_package, make_config):
    with pytest.raises(ConfigError, match="plugin.tally.greeting"):
        build_gateway(make_config(plugin={"tally": {"greeting": 5}}))


async def test_a_blocked_feature_plugin_vanishes(tally_package, make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, plugins={"blocked": ["tally", "splits"]}))
    gateway = client.app[GATEWAY]
    assert "tally" not in plugin_names(gateway.pm)
    assert [e for e in gateway.dashboard.entries("header-nav") if e.plugin == "tally"] == []
    assert "tally:read" not in gateway.scopes and "tally.counted" not in gateway.event_kinds
    document = await (await client.get("/openapi.json")).json()
    assert "/v1/tally" not in document["paths"]
    assert (await client.get("/static/tally/tally.css")).status == 404  # the static route stays (the dashboard's)
    shop = await signup(client)
    status, body = await api(client, "POST", "/v1/payment/white-label", shop.merchant_key, json={
        "currency": "BTC", "amount": "0.001", "splits": [{"merchant_id": shop.merchant_id, "bps": 10000}]})
    assert status == 503, body


ACME = "swap:acme"  # the converter's own ledger account: a plugin spells the accounts it opens


class Converter:
    """An auto-settle stand-in: credits go to a swap venue and wait CONFIRMED until converted.
    ``broken`` makes its filter return postings that mint money, which the core must refuse."""

    PLUGIN_NAME = "converter"

    def __init__(self) -> None:
        self.broken = False
        self.credits: list[Credit] = []
        self.events: list[tuple[str, object]] = []

    @hookimpl
    def filter_credit_postings(self, credit, postings):
        self.credits.append(credit)
        venue = ledger.Posting(ACME, credit.coin, credit.amount - credit.fee)
        shaped = [p for p in postings if not p.account.startswith("merchant:")] + [venue]
        if self.broken:
            shaped.append(ledger.Posting(ledger.merchant_available(credit.merchant_id), credit.coin, 5))
        return shaped

    @hookimpl
    def decide_credit_status(self, credit):
        return "CONFIRMED"

    @hookimpl
    def deposit_reversed(self, deposit):
        self.events.append(("deposit_reversed", deposit))

    @hookimpl
    def payment_expired(self, payment):
        self.events.append(("payment_expired", payment))

    @hookimpl
    def payment_cancelled(self, payment):
        self.events.append(("payment_cancelled", payment))


async def test_held_credit_refused_postings_and_lifecycle_events(make_client, make_config):
    converter = Converter()
    client = await make_client(make_config(scheduler={"enabled": False}), get_plugin_manager([converter]))
    gateway = client.app[GATEWAY]
    shop = await signup(client)
    devnet = Devnet(client)

    async def create(**extra):
        status, body = await api(client, "POST", "/v1/payment/white-label", shop.merchant_key,
                                 json={"currency": "BTC", "amount": "0.001", **extra})
        assert status == 200, body
        return body["data"]

    async def show(track_id):
        return (await api(client, "GET", f"/v1/payment/{track_id}", shop.merchant_key))[1]["data"]

    # Postings that mint money are refused: nothing posted, the deposit stays PENDING and is retried.
    converter.broken = True
    payment = await create()
    await devnet.pay("BTC", payment["address"], payment["pay_amount"])
    await devnet.mine(6)
    assert (await show(payment["track_id"]))["transactions"][0]["status"] == "PENDING"
    assert await ledger.balance(gateway.db, ACME, "BTC") == 0
    converter.broken = False
    await devnet.mine(1)

    # Held CONFIRMED: the money sits at the venue, the payment stays Paying until the conversion lands.
    view = await show(payment["track_id"])
    assert view["status"] == "Paying" and view["transactions"][0]["status"] == "CONFIRMED"
    assert await ledger.balance(gateway.db, ACME, "BTC") == 99_000
    deposit_id = converter.credits[-1].deposit.id
    payment_two = await create()  # expiry must not take a payment whose deposit is converting
    gateway.clock = lambda: 10**10
    await expire_payments(gateway)
    assert (await show(payment["track_id"]))["status"] == "Paying"
    await ledger.transfer(gateway.db, from_account=ACME,
                          to_account=ledger.merchant_available(shop.merchant_id), coin="BTC", amount=99_000,
                          reference=f"acme:{deposit_id}")
    assert await complete_credit(gateway, deposit_id) is True
    assert await complete_credit(gateway, deposit_id) is False
    assert (await show(payment["track_id"]))["status"] == "Paid"

    expired = [p for name, p in converter.events if name == "payment_expired"]
    assert [p.track_id for p in expired] == [payment_two["track_id"]] and expired[0].status == "Expired"

    # Cancel fires once; a reorg reverses the held-then-completed credit exactly.
    payment_three = await create()
    await api(client, "POST", f"/v1/payment/{payment_three['track_id']}/cancel", shop.merchant_key)
    await api(client, "POST", f"/v1/payment/{payment_three['track_id']}/cancel", shop.merchant_key)
    cancelled = [p for name, p in converter.events if name == "payment_cancelled"]
    assert [(p.track_id, p.status) for p in cancelled] == [(payment_three["track_id"], "Cancelled")]
    await devnet.chain.reorg(7)
    await devnet.scan()
    reversed_ = [d for name, d in converter.events if name == "deposit_reversed"]
    assert [(d.id, d.status, d.amount) for d in reversed_] == [(deposit_id, "PENDING", 100_000)]
    assert await ledger.balance(gateway.db, ledger.world("devnet"), "BTC") == 0
    # The conversion already paid the merchant, so the venue carries the reorg's loss, visibly.
    report = await check_ledger(gateway.db)
    assert [(p.kind, p.subject) for p in report.problems] == [("negative", ACME)], report.lines()


class KeyWatcher:
    """A third-party ``api_key_request_answered`` listener: sees legacy and scoped keys, never the dashboard."""

    PLUGIN_NAME = "keywatcher"

    def __init__(self) -> None:
        self.seen: list[object] = []

    @hookimpl
    async def api_key_request_answered(self, request):
        self.seen.append(request)


class PayoutKeyWatcher(KeyWatcher):
    """Wants requests made with the legacy payout key only."""

    PLUGIN_NAME = "payoutkeywatcher"

    @hookimpl
    @for_key_kinds("payout_key")
    async def api_key_request_answered(self, request):
        self.seen.append(request)


async def test_api_key_request_hook_sees_only_the_key_kinds_it_asks_for(make_client, make_config):
    everything, payouts = KeyWatcher(), PayoutKeyWatcher()
    client = await make_client(make_config(scheduler={"enabled": False}),
                               get_plugin_manager([everything, payouts]))
    shop = await signup(client)
    assert (await api(client, "GET", "/v1/payment/accepted-currencies", shop.merchant_key))[0] == 200
    assert (await api(client, "GET", "/v1/payout/nope", shop.payout_key))[0] == 404
    assert [r.key_kind for r in everything.seen] == ["merchant_key", "payout_key"]
    assert [(r.key_kind, r.route, r.status) for r in payouts.seen] == [("payout_key", "/v1/payout/{track_id}", 404)]


async def test_no_key_request_is_built_for_a_kind_nobody_wants(make_client, make_config, monkeypatch):
    import orbchain.web.key_requests as key_requests

    built: list[object] = []
    real = key_requests.KeyRequest
    monkeypatch.setattr(key_requests, "KeyRequest", lambda **fields: built.append(fields) or real(**fields))
    payouts = PayoutKeyWatcher()
    client = await make_client(make_config(scheduler={"enabled": False}), get_plugin_manager([payouts]))
    shop = await signup(client)
    for _ in range(3):
        assert (await api(client, "GET", "/v1/payment/accepted-currencies", shop.merchant_key))[0] == 200
    assert built == [] and payouts.seen == []
    assert (await api(client, "GET", "/v1/payout/nope", shop.payout_key))[0] == 404
    assert len(built) == 1 and [r.key_kind for r in payouts.seen] == ["payout_key"]


def test_for_key_kinds_needs_a_kind():
    with pytest.raises(ValueError):
        for_key_kinds()


async def test_api_key_request_hook_sees_each_keyed_request_once(make_client, make_config):
    watcher = KeyWatcher()
    client = await make_client(make_config(scheduler={"enabled": False}), get_plugin_manager([watcher]))
    shop = await signup(client)
    status, _ = await api(client, "GET", "/v1/payment/accepted-currencies", shop.merchant_key)
    assert status == 200
    status, _ = await api(client, "GET", "/dashboard/account", shop.jwt)
    assert status == 200
    assert len(watcher.seen) == 1
    seen = watcher.seen[0]
    assert (seen.key_kind, seen.method, seen.route, seen.status) == (
        "merchant_key", "GET", "/v1/payment/accepted-currencies", 200)
    assert seen.merchant_id == shop.merchant_id and len(seen.request_id) == 16
