"""The hosted payment page ``GET /pay/{track_id}`` (SPEC 4.14), both databases."""

from __future__ import annotations

import re
from typing import Any

import pytest

from orbchain.chains.devnet import devnet_chain
from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY
from orbchain.core.pages.qr import qr_svg
from orbchain.core.payments.receive import qr_payload
from orbchain.web.routes.pay_page import countdown_text

# An open page, without JavaScript, refreshes itself every 15 s (SPEC 4.14, inside <noscript> so a
# browser running scripts follows the event stream instead) and offers a link to check at once.
CHECK_AGAIN = 'id="check-again-link"'
REFRESH = '<noscript><meta http-equiv="refresh" content="15"></noscript>'
BTC_ADDRESS = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"


async def merchant_key(client: Any, email: str = "payer-page@example.com") -> str:
    response = await client.post("/dashboard/auth/signup", json={"email": email, "password": "correct horse battery"})
    assert response.status == 200, await response.text()
    return (await response.json())["data"]["api_keys"]["merchant_api_key"]


async def new_invoice(client: Any, key: str, **fields: Any) -> dict[str, Any]:
    body = {"amount": "10", "currency": "USD", **fields}
    response = await client.post("/v1/payment/invoice", json=body, headers={"merchant_api_key": key})
    assert response.status == 200, await response.text()
    return (await response.json())["data"]


async def api_payment(client: Any, key: str, track_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/payment/{track_id}", headers={"merchant_api_key": key})
    assert response.status == 200
    return (await response.json())["data"]


async def page(client: Any, track_id: str, expect: int = 200) -> str:
    response = await client.get(f"/pay/{track_id}", allow_redirects=False)
    assert response.status == expect, await response.text()
    assert response.content_type == "text/html"
    return await response.text()


@pytest.fixture
async def shop(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}))
    return client, await merchant_key(client)


async def pay_and_confirm(client: Any, payment: dict[str, Any]) -> None:
    gateway = client.app[GATEWAY]
    chain = devnet_chain(gateway)
    coin = gateway.coins.require(payment["pay_currency"])
    await chain.pay(coin, payment["address"], coin.to_units(payment["pay_amount"]))
    for _ in range(coin.confirmations + 2):
        await chain.mine(1)
        await scan_chain(gateway, gateway.chains["devnet"])


# -- rendering --------------------------------------------------------------------


async def test_waiting_page_shows_everything_to_pay(shop):
    client, key = shop
    invoice = await new_invoice(client, key, description="Two <b>coffees</b>", order_id="ord-7",
                                callback_url="https://merchant.example/hook?token=s3cret", email="buyer@example.com")
    assert invoice["payment_url"].endswith(f"/pay/{invoice['track_id']}")
    html = await page(client, invoice["track_id"])
    assert CHECK_AGAIN in html and REFRESH in html
    assert invoice["address"] in html and invoice["pay_amount"] in html and invoice["pay_currency"] in html
    assert "10 USD" in html and invoice["network"] in html
    assert "<svg" in html and 'class="segno"' in html
    assert "Two &lt;b&gt;coffees&lt;/b&gt;" in html and "<b>coffees" not in html  # autoescaped
    assert re.search(r'id="countdown"[^>]*>(\d+:)?\d\d:\d\d<', html)  # server-rendered, no JS needed
    assert "<time datetime=" in html and "Waiting" in html
    assert '<link rel="stylesheet" href="/assets/orbchain.css">' in html
    assert not re.search(r'(src|href)="(https?:)?//', html)  # no external resources
    # Nothing private reaches the payer.
    for private in ("s3cret", "merchant.example", "buyer@example.com", key):
        assert private not in html


async def test_page_headers_forbid_external_resources_and_caching(shop):
    client, key = shop
    invoice = await new_invoice(client, key)
    response = await client.get(f"/pay/{invoice['track_id']}")
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "form-action 'self'" in csp
    assert "connect-src 'self'" in csp  # the page's own event stream, nothing else
    assert response.headers["Cache-Control"] == "no-store"
    nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
    assert f'<script nonce="{nonce}" src="/assets/pay.js" defer></script>' in await response.text()


async def test_stylesheet_is_served(client):
    response = await client.get("/assets/orbchain.css")
    assert response.status == 200 and response.content_type == "text/css"
    assert ".card" in await response.text()


async def test_qr_payloads_come_from_the_chain_plugins_and_default_to_the_bare_address(gateway):
    def payload(symbol: str, address: str, amount: str | None) -> str | None:
        view = {"address": address, "pay_amount": amount, "pay_currency": symbol}
        return qr_payload(gateway, view, gateway.coins.require(symbol))

    assert payload("BTC", BTC_ADDRESS, "0.001") == f"bitcoin:{BTC_ADDRESS}?amount=0.001"
    assert payload("BTC", BTC_ADDRESS, None) == f"bitcoin:{BTC_ADDRESS}"
    assert payload("LTC", "ltc1qx", "1.5") == "litecoin:ltc1qx?amount=1.5"
    assert payload("DOGE", "D8x", "3") == "dogecoin:D8x?amount=3"
    assert payload("SOL", "So1x", "2.5") == "solana:So1x?amount=2.5"
    assert payload("ETH", "0xabc", "1") == "ethereum:0xabc@1?value=1000000000000000000"  # EIP-681, chain id 1
    assert payload("USDT_TRC20", "Tx", "1") == "tron:Tx?amount=1&token=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
    assert payload("BTC_LN", "lnbc1x", "0.001") == "lnbc1x"  # no plugin answers: the bare address (the invoice)


@pytest.mark.parametrize("seconds, text", [(0, "00:00"), (-5, "00:00"), (59, "00:59"), (61 * 60 - 1, "1:00:59"),
                                           (3599, "59:59"), (3600, "1:00:00"), (43200 * 60, "720:00:00")])
def test_countdown_text(seconds, text):
    assert countdown_text(seconds) == text


# -- the coin picker -------------------------------------------------------------------


async def test_picker_switches_coin_and_redirects_to_the_clean_url(shop):
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC", "ETH"])
    track_id = invoice["track_id"]
    html = await page(client, track_id)
    assert '<form class="picker" method="get" action="/pay/' in html and 'name="pay_currency"' in html
    assert '<option value="ETH">' in html
    response = await client.get(f"/pay/{track_id}?pay_currency=ETH", allow_redirects=False)
    assert response.status == 303 and response.headers["Location"] == f"/pay/{track_id}"
    after = await api_payment(client, key, track_id)
    assert after["pay_currency"] == "ETH" and after["address"] != invoice["address"]
    assert after["address"].startswith("0x")
    html = await page(client, track_id)
    assert after["address"] in html and invoice["address"] not in html


async def test_picker_changes_nothing_in_maintenance(shop):
    # SPEC 7 "maintenance: all write operations rejected": switching the coin writes, though it is a GET.
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC", "ETH"])
    track_id = invoice["track_id"]
    client.app[GATEWAY].maintenance = True
    response = await client.get(f"/pay/{track_id}?pay_currency=ETH", allow_redirects=False)
    assert response.status == 503 and response.content_type == "text/html"
    assert invoice["address"] in await page(client, track_id)  # the page itself only reads and stays up
    client.app[GATEWAY].maintenance = False
    after = await api_payment(client, key, track_id)
    assert (after["pay_currency"], after["address"]) == (invoice["pay_currency"], invoice["address"])


@pytest.mark.parametrize("value", ["NOPE", "XMR", "", "eth'><script>", "A" * 200, "LTC"])
async def test_invalid_pay_currency_is_ignored(shop, value):
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC", "ETH"])
    track_id = invoice["track_id"]
    response = await client.get(f"/pay/{track_id}", params={"pay_currency": value}, allow_redirects=False)
    assert response.status == 303 and response.headers["Location"] == f"/pay/{track_id}"
    after = await api_payment(client, key, track_id)
    assert (after["pay_currency"], after["address"]) == (invoice["pay_currency"], invoice["address"])


async def test_single_coin_invoice_has_no_picker(shop):
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC"])
    assert 'name="pay_currency"' not in await page(client, invoice["track_id"])


# -- terminal states -----------------------------------------------------------------------


async def test_paid_page_stops_offering_a_reload_and_links_back(shop):
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC"], return_url="https://shop.example/thanks?o=1&x=2",
                                cancel_url="https://shop.example/cart")
    waiting = await page(client, invoice["track_id"])
    assert 'href="https://shop.example/cart"' in waiting and "Cancel and return to merchant" in waiting
    await pay_and_confirm(client, invoice)
    assert (await api_payment(client, key, invoice["track_id"]))["status"] == "Paid"
    html = await page(client, invoice["track_id"])
    assert CHECK_AGAIN not in html and 'http-equiv="refresh"' not in html
    assert 'id="paid-message"' in html and "Paid" in html
    assert 'href="https://shop.example/thanks?o=1&amp;x=2"' in html and "Return to the store" in html
    assert "shop.example/cart" not in html and 'name="pay_currency"' not in html and "devnet-pay" not in html
    assert re.search(r'class="confirmations">[2-9]\d*</span> confirmations', html)  # threshold reached: no "of"


async def test_paying_page_still_offers_a_reload_and_shows_confirmations(shop):
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC"])
    gateway = client.app[GATEWAY]
    chain = devnet_chain(gateway)
    coin = gateway.coins.require("BTC")
    await chain.pay(coin, invoice["address"], coin.to_units(invoice["pay_amount"]))
    await chain.mine(1)
    await scan_chain(gateway, gateway.chains["devnet"])
    assert (await api_payment(client, key, invoice["track_id"]))["status"] == "Paying"
    html = await page(client, invoice["track_id"])
    assert CHECK_AGAIN in html and REFRESH in html and "Paying" in html
    assert re.search(r'class="confirmations">1 of 2<', html)
    assert 'name="pay_currency"' not in html  # the coin is fixed once money is on the way


async def test_expired_page_hides_the_address(shop):
    client, key = shop
    invoice = await new_invoice(client, key, lifetime=1)
    gateway = client.app[GATEWAY]
    start = invoice["created_at"]
    gateway.clock = lambda: start + 61
    html = await page(client, invoice["track_id"])
    assert 'id="expired-message"' in html and "Expired" in html
    assert CHECK_AGAIN not in html and 'http-equiv="refresh"' not in html
    assert invoice["address"] not in html and "<svg" not in html and "devnet-pay" not in html
    assert 'name="pay_currency"' not in html


async def test_cancelled_page(shop):
    client, key = shop
    invoice = await new_invoice(client, key)
    response = await client.post(f"/v1/payment/{invoice['track_id']}/cancel", headers={"merchant_api_key": key})
    assert response.status == 200
    html = await page(client, invoice["track_id"])
    assert 'id="cancelled-message"' in html and CHECK_AGAIN not in html and 'http-equiv="refresh"' not in html
    assert invoice["address"] not in html and "<svg" not in html


# -- not found ---------------------------------------------------------------------------------


async def test_unknown_track_id_is_an_html_404(client):
    html = await page(client, "doesNotExist123", expect=404)
    assert "<!doctype html>" in html and "Payment not found" in html


async def test_only_invoices_have_a_hosted_page(shop):
    client, key = shop
    response = await client.post("/v1/payment/white-label", json={"currency": "BTC", "amount": "0.001"},
                                  headers={"merchant_api_key": key})
    assert response.status == 200, await response.text()
    track_id = (await response.json())["data"]["track_id"]
    html = await page(client, track_id, expect=404)
    assert "Payment not found" in html
    response = await client.get(f"/pay/{track_id}?pay_currency=ETH", allow_redirects=False)
    assert response.status == 404


# -- the devnet pay form --------------------------------------------------------------------------


async def test_devnet_form_in_development_pays_the_payment(shop):
    client, key = shop
    invoice = await new_invoice(client, key, accepted_coins=["BTC"])
    html = await page(client, invoice["track_id"])
    assert f'action="/pay/{invoice["track_id"]}/devnet-pay"' in html and "Pay with devnet" in html
    assert f'value="{invoice["pay_amount"]}"' in html
    response = await client.post(f"/pay/{invoice['track_id']}/devnet-pay", data={"amount": invoice["pay_amount"]},
                                 allow_redirects=False)
    assert response.status == 303
    (transfer,) = await devnet_chain(client.app[GATEWAY]).mempool()
    assert transfer.address == invoice["address"]


async def test_no_devnet_form_in_production(make_client, make_config):
    # Create the invoice in development (migrations run, secrets generated), then serve
    # the same database and secrets in production with the devnet switched on.
    dev_config = make_config(scheduler={"enabled": False})
    dev = await make_client(dev_config)
    invoice = await new_invoice(dev, await merchant_key(dev), accepted_coins=["BTC"])
    var = dev_config.data_dir
    prod = await make_client(make_config(
        scheduler={"enabled": False}, server={"environment": "production", "data_dir": str(var)},
        plugin={"devnet": {"enabled": True}}, signer={"in_process": True},  # this host signs too, said so
        secrets={"jwt_secret_file": str(var / "jwt_secret"), "seed_file": str(var / "seed"),
                 "receipt_signing_key_file": str(var / "receipt_signing_key")},
    ))
    html = await page(prod, invoice["track_id"])
    assert invoice["address"] in html
    assert "devnet-pay" not in html and "Pay with devnet" not in html


async def test_page_is_limited_per_ip_in_its_own_bucket(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, rate_limits={"pay_page_per_minute": 2}))
    client.app[GATEWAY].clock = lambda: 1_800_000_001.0  # all three requests inside one window
    for _ in range(2):
        assert (await client.get("/pay/anything")).status == 404
    limited = await client.get("/pay/anything")
    assert limited.status == 429 and limited.content_type == "text/html"  # a page, not JSON
    assert "Too many requests" in await limited.text() and int(limited.headers["Retry-After"]) > 0


async def test_page_errors_in_maintenance_are_pages_too(make_client, make_config):
    client = await make_client(make_config(scheduler={"enabled": False}, server={"maintenance": True}))
    response = await client.post("/pay/anything/devnet-pay")
    assert response.status == 503 and response.content_type == "text/html"
    assert "Temporarily unavailable" in await response.text()
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]


async def test_after_a_partial_payment_the_qr_and_wallet_link_ask_for_the_rest(shop):
    client, key = shop
    invoice = await new_invoice(client, key, amount="0.01", currency="BTC", accepted_coins=["BTC"])
    gateway = client.app[GATEWAY]
    coin = gateway.coins.require("BTC")
    sent = coin.to_units("0.00345679")  # leaves 0.00654321: exact in satoshis, no float anywhere
    await devnet_chain(gateway).pay(coin, invoice["address"], sent)
    await scan_chain(gateway, gateway.chains["devnet"])
    rest = coin.format(coin.to_units(invoice["pay_amount"]) - sent)
    assert rest == "0.00654321"
    html = await page(client, invoice["track_id"])
    assert 'id="status">Partly paid<' in html and 'still due <span id="due-amount">0.00654321</span>' in html
    uri = f"bitcoin:{invoice['address']}?amount=0.00654321"
    assert f'href="{uri}" id="wallet-link"' in html  # before: ?amount=0.01, the whole amount again
    assert str(await qr_svg(gateway.cpu, uri, scale=5)) in html  # the QR encodes the same request
