"""The devnet Lightning backend: BTC_LN in development with nothing to set up (both databases).

Its invoices are checked with the ``bolt11`` library (independent of the
gateway's decoder and encoder); settlement and payouts run the plugin's
production path through the backend contract.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from decimal import Decimal
from pathlib import Path

import bolt11
import coincurve
import pytest

from orbchain.chains.lightning import settlement
from orbchain.chains.lightning.devnet import NODE_KEY, PAYEE_KEY, DevnetLightningBackend, route_fee_msat
from orbchain.chains.lightning.receive import lightning_chain
from orbchain.chains.lightning.settings import read_settings
from orbchain.cli import main
from orbchain.core.ledger.check import check_ledger
from orbchain.testing.fixtures import open_shop

from .lightning_support import balance as shown_balance
from .lightning_support import create_payment, lightning_shop, payment
from .support import api


@pytest.fixture
async def shop(make_config, make_client):
    return await lightning_shop(make_config, make_client)  # the development defaults, nothing about Lightning


def node(shop) -> DevnetLightningBackend:
    chain = lightning_chain(shop.gateway)
    assert chain is not None and isinstance(chain.backend, DevnetLightningBackend)
    return chain.backend


async def balance(shop) -> Decimal:
    return Decimal(await shown_balance(shop))


def test_development_defaults_to_the_devnet_node_and_production_to_none(make_config):
    settings = read_settings(make_config())
    assert (settings.backend, settings.network, settings.subscribe) == ("devnet", "regtest", False)
    assert read_settings(make_config(server={"environment": "production"})).backend is None
    assert read_settings(make_config(plugin={"devnet": {"enabled": False}})).backend is None
    assert read_settings(make_config(plugin={"lightning": {"backend": "none"}})).backend is None


async def test_invoices_are_real_bolt11_signed_by_the_devnet_node(shop):
    data = await create_payment(shop)
    block = data["lightning"]
    decoded = bolt11.decode(block["bolt11"])  # not our decoder: the signature must verify elsewhere too
    assert decoded.currency == "bcrt" and decoded.amount_msat == 10_000_000
    assert decoded.payee == NODE_KEY.public_key.format().hex() and decoded.payment_hash == block["payment_hash"]
    assert decoded.description == f"Orbchain payment {data['track_id']}"
    assert abs(decoded.date + decoded.expiry - data["expires_at"]) <= 2


async def test_the_page_button_pays_the_invoice_and_credits_once(shop):
    data = await create_payment(shop, kind="invoice")
    track_id = data["track_id"]
    page = await (await shop.client.get(f"/pay/{track_id}")).text()
    action = f"/pay/{track_id}/lightning-devnet-pay"
    assert f'action="{action}"' in page and data["lightning"]["bolt11"].upper() in page
    response = await shop.client.post(action, allow_redirects=False)
    assert response.status == 303 and response.headers["Location"] == f"/pay/{track_id}"
    paid = await payment(shop, track_id)
    assert paid["status"] == "Paid" and paid["lightning"]["settle_amount_sat"] == "10000"
    credited = await balance(shop)
    assert credited > 0
    again = await shop.client.post(action, allow_redirects=False)
    assert again.status == 409
    assert await balance(shop) == credited
    hooks = await shop.gateway.db.fetch_all("SELECT body FROM webhook_events WHERE event_type = 'payment.paid'")
    assert len(hooks) == 1 and json.loads(hooks[0]["body"])["status"] == "PAID"
    page = await (await shop.client.get(f"/pay/{track_id}")).text()
    assert "lightning-devnet-pay" not in page and "Paid" in page
    assert (await check_ledger(shop.gateway.db)).ok


async def test_a_settlement_at_the_node_is_found_by_the_poll(shop):
    data = await create_payment(shop)
    await node(shop).settle(data["lightning"]["bolt11"])  # what `orbchain lightning pay` does
    assert (await payment(shop, data["track_id"]))["status"] == "Waiting"
    assert await settlement.poll_open_invoices(shop.gateway, node(shop)) == 1
    assert (await payment(shop, data["track_id"]))["status"] == "Paid"
    assert await settlement.poll_open_invoices(shop.gateway, node(shop)) == 0


async def test_the_stream_replays_settlements_after_the_cursor(shop):
    first, second = await create_payment(shop), await create_payment(shop)
    await node(shop).settle(first["lightning"]["bolt11"])
    await node(shop).settle(second["lightning"]["bolt11"])
    stream = node(shop).settled_invoices(1)
    state = await asyncio.wait_for(stream.__anext__(), 2)
    assert state.payment_hash == second["lightning"]["payment_hash"] and state.settle_index == 2
    await stream.aclose()


async def pay_out(shop, address, amount="0.0001"):
    return await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                     json={"currency": "BTC_LN", "address": address, "amount": amount})


async def fund(shop, amount="0.001"):
    data = await create_payment(shop, amount)
    await node(shop).settle(data["lightning"]["bolt11"])
    await settlement.poll_open_invoices(shop.gateway, node(shop))
    return await balance(shop)


async def test_payout_to_a_devnet_payee_invoice_is_confirmed_with_its_preimage(shop):
    before = await fund(shop)
    issued = await node(shop).issue_payee_invoice(10_000_000)
    assert bolt11.decode(issued.bolt11).payee == PAYEE_KEY.public_key.format().hex()
    status, body = await pay_out(shop, issued.bolt11)
    assert status == 200, body
    data = body["data"]
    assert data["status"] == "Confirmed" and data["tx_hash"] == issued.payment_hash
    assert hashlib.sha256(bytes.fromhex(data["lightning"]["preimage"])).hexdigest() == issued.payment_hash
    assert await balance(shop) == before - Decimal("0.0001")
    assert route_fee_msat(10_000_000) == 11_000  # 11 sat, under the ceiling of 50
    status, body = await pay_out(shop, issued.bolt11)
    assert status == 400 and body["error"]["code"] == "invoice_already_paid", body
    assert (await check_ledger(shop.gateway.db)).ok


def foreign_invoice(shop) -> str:
    """A real BOLT 11 invoice of 10,000 sat from a key the devnet node does not know."""
    tags = bolt11.Tags()
    tags.add(bolt11.TagChar.payment_hash, hashlib.sha256(os.urandom(32)).hexdigest())
    tags.add(bolt11.TagChar.payment_secret, os.urandom(32).hex())
    tags.add(bolt11.TagChar.description, "a real wallet")
    return bolt11.encode(bolt11.Bolt11(currency="bcrt", date=shop.gateway.now(), tags=tags,
                                       amount_msat=bolt11.MilliSatoshi(10_000_000)),
                         coincurve.PrivateKey().secret.hex())


async def test_payout_to_an_invoice_outside_the_devnet_has_no_route_and_is_recredited(shop):
    before = await fund(shop)
    foreign = foreign_invoice(shop)
    status, body = await pay_out(shop, foreign)
    assert status == 200, body
    assert body["data"]["status"] == "Failed" and body["data"]["failure_reason"] == "no_route"
    assert await balance(shop) == before
    assert (await check_ledger(shop.gateway.db)).ok


async def test_btc_ln_answers_503_without_a_node(make_config, make_client):
    shop = await open_shop(make_config, make_client, plugin={"lightning": {"backend": "none"}})
    await api(shop.client, "PUT", "/dashboard/settings/coins", shop.merchant.jwt, json={"accepted_coins": ["BTC_LN"]})
    status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                             json={"currency": "BTC_LN", "amount": "0.0001"})
    assert status == 503, body
    assert lightning_chain(shop.gateway) is None
    status, body = await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                             json={"currency": "BTC_LN", "address": "lnbc1...", "amount": "0.001"})
    assert status == 503 and body["error"]["code"] == "payouts_not_configured", body


# -- orbchain lightning pay|invoice ------------------------------------------------------------------


@pytest.fixture
def config_path(tmp_path, db_url) -> Path:
    path = tmp_path / "cli.toml"
    path.write_text(f'[server]\ndata_dir = "{tmp_path / "cli-var"}"\nenvironment = "development"\n'
                    f'[database]\nurl = "{db_url}"\n', encoding="utf-8")
    return path


async def cli(config_path: Path, *argv: str) -> int:
    return await asyncio.to_thread(main, ["--config", str(config_path), "lightning", *argv])


async def test_cli_pays_an_invoice_and_issues_payee_invoices(shop, config_path, capsys):
    data = await create_payment(shop)
    assert await cli(config_path, "pay", data["lightning"]["bolt11"]) == 0
    assert data["lightning"]["payment_hash"] in capsys.readouterr().out
    assert await settlement.poll_open_invoices(shop.gateway, node(shop)) == 1  # the server's poll job
    assert (await payment(shop, data["track_id"]))["status"] == "Paid"
    assert await cli(config_path, "pay", data["lightning"]["bolt11"]) == 2
    assert "already paid" in capsys.readouterr().err
    assert await cli(config_path, "pay", "lnbc1garbage") == 2
    assert "not a BOLT 11 invoice" in capsys.readouterr().err
    assert await cli(config_path, "invoice", "0.00002") == 0
    issued = capsys.readouterr().out.strip()
    assert bolt11.decode(issued).amount_msat == 2_000_000
    status, body = await pay_out(shop, issued, amount="0.00002")
    assert status == 200 and body["data"]["status"] == "Confirmed", body
    assert await cli(config_path, "invoice", "-1") == 2


# -- SPEC 4.8: BTC_LN is enabled through settings/coins; SPEC 4.2: only then are BTC_LN payments made -------


async def test_btc_ln_is_off_until_added_in_settings_coins(make_config, make_client):
    shop = await open_shop(make_config, make_client)
    merchant, jwt = shop.merchant, shop.merchant.jwt
    accepted = (await api(shop.client, "GET", "/v1/payment/accepted-currencies", merchant.merchant_key))[1]
    assert "BTC_LN" not in accepted["data"]["accepted_coins"]  # a new merchant: not accepted (SPEC 4.8)
    for kind, body in (("white-label", {"currency": "BTC_LN", "amount": "0.0001"}),
                       ("invoice", {"currency": "BTC_LN", "amount": "0.0001"}),
                       ("invoice", {"currency": "USD", "amount": "5", "pay_currency": "BTC_LN"})):
        status, answer = await api(shop.client, "POST", f"/v1/payment/{kind}", merchant.merchant_key, json=body)
        assert status == 400 and answer["error"]["message"] == "currency not accepted by merchant", (kind, answer)
    assert await shop.gateway.db.fetch_val("SELECT COUNT(*) FROM lightning_invoices") == 0

    status, body = await api(shop.client, "PUT", "/dashboard/settings/coins", jwt, json={"accepted_coins": ["BTC_LNX"]})
    assert status == 400 and body["error"]["type"] == "validation", body
    status, body = await api(shop.client, "PUT", "/dashboard/settings/coins", jwt,
                             json={"accepted_coins": ["btc", "btc_ln"]})
    assert status == 200, body
    account = body["data"]["account"]
    assert account["accepted_coins"] == ["BTC", "BTC_LN"] and account["confirmations"]["BTC_LN"] == 0
    accepted = (await api(shop.client, "GET", "/v1/payment/accepted-currencies", merchant.merchant_key))[1]
    assert "BTC_LN" in accepted["data"]["accepted_coins"]

    status, body = await api(shop.client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC_LN", "amount": "0.0001"})
    assert status == 200 and body["data"]["address"] is None and body["data"]["lightning"]["bolt11"], body

    # A fiat-priced invoice paid in BTC_LN: the locked BTC amount becomes the Lightning invoice's.
    status, body = await api(shop.client, "POST", "/v1/payment/invoice", merchant.merchant_key,
                             json={"currency": "USD", "amount": "6", "pay_currency": "BTC_LN"})
    assert status == 200, body
    data = body["data"]
    assert data["pay_currency"] == "BTC_LN" and data["address"] is None
    assert int(data["lightning"]["amount_sat"]) == int(Decimal(data["pay_amount"]) * 100_000_000) == 10_000

    # Switching a BTC invoice to BTC_LN on the hosted page issues the invoice then.
    status, body = await api(shop.client, "POST", "/v1/payment/invoice", merchant.merchant_key,
                             json={"currency": "BTC", "amount": "0.0002"})
    track_id = body["data"]["track_id"]
    response = await shop.client.get(f"/pay/{track_id}", params={"pay_currency": "BTC_LN"}, allow_redirects=False)
    assert response.status == 303, await response.text()
    switched = await payment(shop, track_id)
    assert switched["pay_currency"] == "BTC_LN" and switched["address"] is None
    assert switched["lightning"]["amount_sat"] == "20000"
    page = await (await shop.client.get(f"/pay/{track_id}")).text()
    assert switched["lightning"]["bolt11"].upper() in page

    # Taken off again: new BTC_LN payments are refused.
    status, body = await api(shop.client, "PUT", "/dashboard/settings/coins", jwt, json={"accepted_coins": ["BTC"]})
    assert status == 200, body
    status, body = await api(shop.client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC_LN", "amount": "0.0001"})
    assert status == 400 and body["error"]["message"] == "currency not accepted by merchant", body


def test_the_documented_payout_address_bound_covers_every_coin(make_config):
    from orbchain.core.startup import build_gateway
    from orbchain.web.openapi.paths_payouts import MAX_DESTINATION_LENGTH

    lengths = {coin.symbol: coin.max_destination_length for coin in build_gateway(make_config()).coins}
    assert max(lengths.values()) == lengths["BTC_LN"] == MAX_DESTINATION_LENGTH


async def test_ten_payouts_racing_to_an_invoice_the_node_never_issued_all_end_at_once(shop):
    """Issue 29 item 7: ten concurrent payouts to one foreign invoice end at once, none stuck in Confirming.

    Breaks caught: a claim released by a payout that no longer holds it (another payout's claim went
    with it, so two paid the hash at the same time), and the node recording two payments of one hash
    (``UniqueViolationError lightning_devnet_payments_pkey`` left a payout Confirming for minutes).
    """
    before = await fund(shop, "0.01")  # enough for all ten: no payout is refused for its balance
    foreign = foreign_invoice(shop)
    results = await asyncio.gather(*(pay_out(shop, foreign) for _ in range(10)))
    outcomes = [(status, body["data"]["status"] if status == 200 else body["error"]["code"])
                for status, body in results]
    assert all(outcome in ((200, "Failed"), (400, "invoice_already_paid")) for outcome in outcomes), outcomes
    rows = await shop.gateway.db.fetch_all("SELECT status, failure_reason FROM payouts")
    assert rows and all(r["status"] == "Failed" for r in rows), rows
    assert all(r["failure_reason"] in ("no_route", "invoice_already_paid") for r in rows), rows
    assert await balance(shop) == before
    claims = await shop.gateway.db.fetch_all("SELECT * FROM lightning_payout_claims")
    assert claims == []  # every claim was released by the payout that held it
    assert (await check_ledger(shop.gateway.db)).ok


async def test_a_failed_payout_asked_again_keeps_the_next_payouts_claim(shop):
    """The race's root, in order: the worker's "did it land?" question to a payout whose payment
    failed must not release the claim another payout has taken on the invoice since.

    Break caught: ``release_payment_hash`` by hash alone (the old code dropped ``po_second``'s claim,
    so a third payout could pay the same hash while the second was paying).
    """
    from orbchain.core.types.chains import BroadcastError, PayoutOrder

    chain = lightning_chain(shop.gateway)
    foreign = foreign_invoice(shop)
    first = await chain.sign_payout(PayoutOrder("po_first", "BTC_LN", foreign, 10_000))
    with pytest.raises(BroadcastError) as failed:
        await chain.broadcast(first)
    assert failed.value.reason == "no_route"
    second = await chain.sign_payout(PayoutOrder("po_second", "BTC_LN", foreign, 10_000))  # free again
    status = await chain.payout_status(first)  # the worker asks about the first payout once more
    assert status.failed and not status.found
    with pytest.raises(BroadcastError) as refused:
        await chain.sign_payout(PayoutOrder("po_third", "BTC_LN", foreign, 10_000))
    assert refused.value.reason == "invoice_already_paid"  # po_second still holds it
    assert second.tx_hash == first.tx_hash


async def test_the_node_sends_one_payment_per_hash_however_many_callers_race(shop):
    """The devnet node starts a payment of a hash once: concurrent callers get that payment's state.

    Break caught: the old check-then-insert, where two payments of one hash raced to the same
    primary key (``UniqueViolationError`` on PostgreSQL, one payment's record overwriting the
    other's on SQLite) and both reported being sent.
    """
    issued = await node(shop).issue_payee_invoice(10_000_000)
    results = await asyncio.gather(*(node(shop).pay(issued.bolt11, amount_msat=None, fee_limit_sat=50,
                                                    timeout_seconds=5) for _ in range(5)))
    assert {r.status for r in results} <= {"SUCCEEDED", "IN_FLIGHT"} and "SUCCEEDED" in {r.status for r in results}
    assert {r.preimage for r in results if r.status == "SUCCEEDED"} == {(await node(shop).payment(
        issued.payment_hash)).preimage}
    rows = await shop.gateway.db.fetch_all("SELECT status FROM lightning_devnet_payments")
    assert [r["status"] for r in rows] == ["SUCCEEDED"]
    payee = await shop.gateway.db.fetch_one(
        "SELECT state FROM lightning_devnet_invoices WHERE payment_hash = :h", {"h": issued.payment_hash})
    assert payee["state"] == "SETTLED"
