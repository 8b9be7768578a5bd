"""Unpaid invoices minted for anonymous visitors are pruned after their retention (core/payments/pruning.py).

Issue 29 item 5: a payment link, a tip page or a customer's enrolment mints an
invoice for whoever asks; left unpaid it must cost the merchant a row for a
while, not forever. On both databases; time moves through ``gateway.clock``.
"""

from __future__ import annotations

import pytest

from orbchain.chains.lightning import settlement
from orbchain.chains.lightning.receive import lightning_chain
from orbchain.core.payments import pruning as payment_pruning
from orbchain import api as services
from orbchain.core.infra.config import ConfigError
from orbchain.core.startup import build_gateway
from orbchain.core.ledger.check import check_ledger
from orbchain.core.payments.status import expire_payments
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.plugins.links import store as links_store
from orbchain.plugins.subscriptions.billing import run_billing
from orbchain.testing.fixtures import Shop, open_shop
from orbchain.web.keys import GATEWAY

from .lightning_support import lightning_shop
from .support import Devnet, advance_clock, api, freeze_clock, signup

DAY = 86400
RETENTION = 30 * DAY  # the default of [plugin.links], [plugin.tips] and [plugin.subscriptions]


class Watcher:
    """A third-party ``payments_pruning`` implementation: what it was told, and whether it could still look."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[bool]]] = []

    @hookimpl
    async def payments_pruning(self, gateway, track_ids):
        self.calls.append((sorted(track_ids), [await services.find_payment(gateway, t) is not None
                                               for t in track_ids]))


async def status_of(shop, track_id):
    status, body = await api(shop.client, "GET", f"/v1/payment/{track_id}", shop.merchant.merchant_key)
    return body["data"]["status"] if status == 200 else status


async def link_invoice(shop, slug):
    shop.client.session.cookie_jar.clear()  # a new visitor each time
    response = await shop.client.get(f"/l/{slug}", allow_redirects=False)
    assert response.status == 302, await response.text()
    return response.headers["Location"].rsplit("/", 1)[1]


async def test_unpaid_link_and_tip_invoices_go_after_their_retention_and_nothing_else(make_config, make_client):
    """Breaks caught: nothing ever deleted a minted invoice; and a prune must never touch a paid invoice,
    the merchant's own API invoice, or an address a late payer may still send to."""
    watcher = Watcher()
    pm = get_plugin_manager()
    pm.register(watcher, "watcher")
    config = make_config(scheduler={"enabled": False})
    client = await make_client(config, pm)
    shop = Shop(client, await signup(client), client.app[GATEWAY])
    gateway = shop.gateway
    freeze_clock(gateway)
    status, body = await api(client, "POST", "/dashboard/payment-links", shop.merchant.jwt,
                             json={"coin": "BTC", "amount": "0.001", "lifetime": 30})
    link = body["data"]
    unpaid, paid = await link_invoice(shop, link["slug"]), await link_invoice(shop, link["slug"])
    account = (await api(client, "GET", "/dashboard/account", shop.merchant.jwt))[1]["data"]["account"]["account_id"]
    tip = await client.post(f"/tip/{account}", data={"coin": "BTC", "amount": "0.002"}, allow_redirects=False)
    tip_id = tip.headers["Location"].rsplit("/", 1)[1]
    api_invoice = (await api(client, "POST", "/v1/payment/invoice", shop.merchant.merchant_key,
                             json={"amount": "0.003", "currency": "BTC", "lifetime": 30}))[1]["data"]["track_id"]
    devnet = Devnet(client)
    paid_view = (await api(client, "GET", f"/v1/payment/{paid}", shop.merchant.merchant_key))[1]["data"]
    await devnet.pay("BTC", paid_view["address"], "0.001")
    await devnet.mine(2)
    unpaid_address = (await api(client, "GET", f"/v1/payment/{unpaid}", shop.merchant.merchant_key))[1]["data"][
        "address"]

    advance_clock(gateway, 3 * 3600)  # every lifetime is over (tips: the default hour)
    await expire_payments(gateway)
    assert await payment_pruning.prune_unpaid(gateway) == 0  # within the retention: kept
    advance_clock(gateway, RETENTION)
    assert await payment_pruning.prune_unpaid(gateway) == 2
    assert watcher.calls == [(sorted([unpaid, tip_id]), [True, True])]  # told before, while still there
    assert await status_of(shop, unpaid) == 404 and await status_of(shop, tip_id) == 404
    assert await status_of(shop, paid) == "Paid" and await status_of(shop, api_invoice) == "Expired"
    rows = await gateway.db.fetch_all("SELECT track_id FROM payment_link_invoices")
    assert [r["track_id"] for r in rows] == [paid]
    [row] = await links_store.list_for(gateway, shop.merchant.merchant_id)  # (the dashboard JWT expired by now)
    assert row["uses"] == 2  # uses counts minted invoices, pruned or not
    assert await payment_pruning.prune_unpaid(gateway) == 0 and len(watcher.calls) == 1

    # The address stays watched: a payer who pays the forgotten invoice months later is still credited.
    await devnet.pay("BTC", unpaid_address, "0.001")
    await devnet.mine(2)
    deposits = (await api(client, "GET", "/v1/deposits", shop.merchant.merchant_key,
                          params={"address": unpaid_address}))[1]["data"]["deposits"]
    assert [(d["status"], d["track_id"], d["credited"]) for d in deposits] == [("Credited", None, True)]
    assert (await check_ledger(gateway.db)).ok


async def test_a_lapsed_page_enrolment_is_pruned_with_its_invoice(make_config, make_client):
    shop = await open_shop(make_config, make_client)
    gateway = shop.gateway
    start = freeze_clock(gateway)
    status, body = await api(shop.client, "POST", "/dashboard/plans", shop.merchant.jwt, json={
        "label": "Pro", "amount_usd": "5", "interval_sec": 30 * DAY, "accepted_coins": ["BTC"]})
    plan = body["data"]
    enrolled = await shop.client.post(f"/subscribe/{plan['id']}", data={}, allow_redirects=False)
    assert enrolled.status == 303
    advance_clock(gateway, DAY + 1)
    await expire_payments(gateway)
    gateway.clock = lambda: start + DAY + 1 + RETENTION
    assert await payment_pruning.prune_unpaid(gateway) == 1
    assert await gateway.db.fetch_all("SELECT id FROM subscriptions") == []
    assert await gateway.db.fetch_all("SELECT id FROM subscription_invoices") == []
    assert (await run_billing(gateway)).minted == 0


async def test_a_pruned_lightning_invoice_leaves_no_node_row(make_config, make_client):
    shop = await lightning_shop(make_config, make_client)
    gateway = shop.gateway
    freeze_clock(gateway)
    account = (await api(shop.client, "GET", "/dashboard/account", shop.merchant.jwt))[1]["data"]["account"]
    tip = await shop.client.post(f"/tip/{account['account_id']}", data={"coin": "BTC_LN", "amount": "0.0001"},
                                 allow_redirects=False)
    track_id = tip.headers["Location"].rsplit("/", 1)[1]
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM lightning_invoices WHERE track_id = :t",
                                      {"t": track_id}) == 1
    advance_clock(gateway, 2 * 3600)
    await expire_payments(gateway)
    await settlement.poll_open_invoices(gateway, lightning_chain(gateway).backend)
    advance_clock(gateway, RETENTION)
    assert await payment_pruning.prune_unpaid(gateway) == 1
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM lightning_invoices WHERE track_id = :t",
                                      {"t": track_id}) == 0


def test_the_prune_job_is_hourly_and_retentions_are_checked(make_config):
    gateway = build_gateway(make_config())
    job = gateway.jobs[payment_pruning.JOB_NAME]
    assert job.seconds == 3600 and job.func is payment_pruning.prune_job
    for plugin, block, key in (
            ("links", {"unpaid_retention_days": 6}, "unpaid_retention_days"),
            ("tips", {"unpaid_retention_days": 3651}, "unpaid_retention_days"),
            ("subscriptions", {"unpaid_retention_days": "30"}, "unpaid_retention_days"),
            ("subscriptions", {"pending_per_ip": -1}, "pending_per_ip"),
            ("subscriptions", {"pending_per_ipp": 3}, "pending_per_ipp")):
        with pytest.raises(ConfigError, match=key):
            build_gateway(make_config(plugin={plugin: block}))
