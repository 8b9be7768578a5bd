"""The devnet checkout a newcomer tries first, in Chromium on a phone (issue 49 items 1, 2): each coin's QR, read
from the screenshot by an independent decoder (zxing-cpp), is its real chain's payment URI for this payment
(EIP-681 for ETH and tokens, BIP-21, Solana Pay, ``tron:``) and equals the "Open in wallet" link; a token reads
"USDT on Ethereum (ERC-20)", never the internal symbol."""

from __future__ import annotations

import re
from typing import Any

import pytest

from orbchain.chains.devnet import devnet_chain
from orbchain.core.watching.scanner import scan_chain
from orbchain.testing.api import api, signup
from orbchain.web.keys import GATEWAY

from .browser import Browser, assert_png, serve_app
from .dashboard_support import Visitor
from .test_accessibility_browser import AXE, scripts_off, spec_refresh, violations
from .browser import require_chromium  # noqa: F401 - autouse fixture
from .qr_decode import decode_qr

USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7"  # the pinned mainnet contract the devnet's USDT_ERC20 keeps
USDT_TRON = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"  # and USDT_TRC20's


@pytest.fixture
def axe() -> str:
    """axe-core's source (scripts/ensure_node_tools.sh installs it); missing, the test fails, never skips."""
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run scripts/ensure_node_tools.sh (installs npm axe-core)", pytrace=False)
    return AXE.read_text()


@pytest.fixture
async def served(aiohttp_server, aiohttp_client, make_config):
    return await serve_app(aiohttp_server, aiohttp_client, make_config)


COINS = ["BTC", "LTC", "SOL", "TRX", "ETH", "USDT_ERC20", "USDT_TRC20"]


async def merchant_key(client: Any) -> str:
    """A new merchant accepting ``COINS``; its merchant API key."""
    merchant = await signup(client, "checkout@example.com")
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt, json={"accepted_coins": COINS})
    assert status == 200, body
    return merchant.keys["merchant_api_key"]


async def invoice(client: Any, key: str, symbol: str, amount: str) -> dict[str, Any]:
    response = await client.post("/v1/payment/invoice", headers={"merchant_api_key": key},
                                 json={"amount": amount, "currency": symbol, "accepted_coins": [symbol]})
    assert response.status == 200, await response.text()
    return (await response.json())["data"]


def expected_uri(payment: dict[str, Any], units: int) -> str:
    """The URI each chain's wallets read, written here from the payment's own fields (not the server's code)."""
    address, amount = payment["address"], payment["pay_amount"]
    return {
        "BTC": f"bitcoin:{address}?amount={amount}",
        "LTC": f"litecoin:{address}?amount={amount}",
        "SOL": f"solana:{address}?amount={amount}",
        "TRX": f"tron:{address}?amount={amount}",
        "ETH": f"ethereum:{address}@1?value={units}",
        "USDT_ERC20": f"ethereum:{USDT}@1/transfer?address={address}&uint256={units}",
        "USDT_TRC20": f"tron:{address}?amount={amount}&token={USDT_TRON}",
    }[payment["pay_currency"]]


async def scanned(browser: Browser, path: Any) -> list[str]:
    """What a camera reads from the page's QR as drawn (the element's own screenshot)."""
    await browser.page.locator(".qr").screenshot(path=path, scale="css")
    return decode_qr(path)


@pytest.mark.parametrize("symbol, amount, units", [
    ("USDT_ERC20", "30", 30_000_000), ("ETH", "0.25", 250_000_000_000_000_000),
    ("BTC", "0.001", None), ("LTC", "1.5", None), ("SOL", "2.5", None), ("TRX", "12", None),
    ("USDT_TRC20", "30", None),
])
async def test_each_qr_is_its_chains_uri_for_this_payment(served, tmp_path, symbol, amount, units):
    client = served
    payment = await invoice(client, await merchant_key(client), symbol, amount)
    coin = client.app[GATEWAY].coins.require(symbol)
    uri = expected_uri(payment, coin.to_units(payment["pay_amount"]) if units is None else units)
    async with Browser.launch(tmp_path) as browser:
        await browser.goto(payment["payment_url"])
        assert await scanned(browser, tmp_path / f"qr_{symbol}.png") == [uri]
        assert await browser.evaluate("document.getElementById('wallet-link').getAttribute('href')") == uri


async def test_a_token_reads_as_people_say_it_never_its_internal_code(served, tmp_path):
    client = served
    payment = await invoice(client, await merchant_key(client), "USDT_ERC20", "30")
    async with Browser.launch(tmp_path) as browser:
        await browser.goto(payment["payment_url"])
        body = await browser.evaluate("document.body.innerText")
        title = await browser.evaluate("document.title")
        assert "USDT_ERC20" not in body and "USDT_ERC20" not in title
        assert await browser.text("#pay-currency") == "USDT"
        assert await browser.text("#network") == "Ethereum (ERC-20)"
        assert "USDT on Ethereum (ERC-20)" in await browser.text("#asset-warning")
        assert await browser.text(".deposit .label") == "Deposit address (USDT on Ethereum (ERC-20))"
        assert await browser.text("#wallet-link") == "Open in wallet"


async def pay(client: Any, payment: dict[str, Any], amount: str, blocks: int) -> None:
    """The payer's wallet sends ``amount`` on the devnet; ``blocks`` are mined and scanned."""
    gateway = client.app[GATEWAY]
    chain, coin = devnet_chain(gateway), gateway.coins.require(payment["pay_currency"])
    await chain.pay(coin, payment["address"], coin.to_units(amount))
    for _ in range(blocks):
        await chain.mine(1)
        await scan_chain(gateway, gateway.chains["devnet"])


async def test_underpaid_says_what_arrived_what_is_due_and_asks_for_the_rest(served, tmp_path, axe):
    client = served
    key = await merchant_key(client)
    payment = await invoice(client, key, "USDT_ERC20", "30")
    await pay(client, payment, "10", blocks=1)
    rest = f"ethereum:{USDT}@1/transfer?address={payment['address']}&uint256=20000000"
    async with Browser.launch(tmp_path, javascript=True) as browser:  # a phone, 390x844
        await scripts_off(browser, True)  # as a payer without JavaScript; on only while axe runs
        await browser.goto(payment["payment_url"])
        assert await browser.text("#status") == "Partly paid"
        assert await browser.text("#amount-label") == "Still to pay"
        assert await browser.text("#pay-amount") == "20"
        assert "10 of 30 USDT" in await browser.text("#notice") and "20 USDT" in await browser.text("#notice")
        assert await browser.text("#paid-amount") == "10" and await browser.text("#due-amount") == "20"
        assert await browser.evaluate("document.getElementById('countdown') !== null")  # the clock still runs
        assert await scanned(browser, tmp_path / "qr_rest.png") == [rest]
        assert await browser.evaluate("document.getElementById('wallet-link').getAttribute('href')") == rest
        assert_png(await browser.screenshot(tmp_path / "pay_underpaid.png"))
        assert [v for v in await violations(browser, axe) if not spec_refresh(v, payment["payment_url"])] == []
    status, body = await api(client, "GET", f"/v1/payment/{payment['track_id']}", {"merchant_api_key": key})
    assert body["data"]["status"] == "Paying"  # the API's status is SPEC's, unchanged


async def test_underpaid_in_the_dashboard(served):
    client = served
    payment = await invoice(client, await merchant_key(client), "USDT_ERC20", "30")
    await pay(client, payment, "10", blocks=1)
    visitor = Visitor(client)
    await visitor.sign_in("checkout@example.com", "s3cret-pass")
    html = await visitor.get(f"/app/payments/{payment['track_id']}")
    assert 'id="underpaid">Underpaid<' in html
    assert "The payer sent 10 of 30 USDT_ERC20; 20 USDT_ERC20 is still due." in html


async def test_overpaid_says_where_the_excess_went(served, tmp_path):
    client = served
    payment = await invoice(client, await merchant_key(client), "USDT_ERC20", "30")
    await pay(client, payment, "35", blocks=14)
    async with Browser.launch(tmp_path) as browser:
        await browser.goto(payment["payment_url"])
        assert await browser.text("#status") == "Paid"
        assert "You sent 5 USDT more than the amount due" in await browser.text("#excess-message")


async def test_payers_see_the_shop_named_at_sign_up(served, tmp_path, axe):
    client = served
    visitor = Visitor(client)
    await visitor.get("/app/signup")
    response = await visitor.submit("/app/signup", {"display_name": "Ada's Books", "email": "ada@example.com",
                                                    "password": "correct horse battery"}, expect=200)
    key = re.search(r'id="merchant_api_key"[^>]*>([^<]+)<', visitor.page).group(1)
    assert response.status == 200 and 'id="shop-name-prompt"' not in await visitor.get("/app")
    payment = await invoice(client, key, "BTC", "0.001")
    async with Browser.launch(tmp_path, javascript=True) as browser:
        await scripts_off(browser, True)
        await browser.goto(payment["payment_url"])
        assert (await browser.evaluate("document.title")).endswith(" · Ada's Books")
        assert await browser.text("#merchant-name") == "Ada's Books"
        await browser.goto(str(client.server.make_url(f"/tip/{await account_id(client, visitor)}")))
        assert await browser.text("h1") == "Send a tip to Ada's Books"
        assert await browser.text("#account-id") is None  # the shop's name, not "To account ORB-..."
        options = await browser.evaluate("[...document.querySelectorAll('#coin option')].map(o => o.textContent)")
        assert "BTC · Bitcoin" in options and not any("_" in option for option in options)  # never USDT_ERC20
        assert (await browser.evaluate("document.title")).endswith(" · Ada's Books")
        assert await violations(browser, axe) == []


async def test_the_first_dashboard_visit_asks_for_a_missing_shop_name(served):
    visitor = Visitor(served)
    await visitor.sign_up("noname@example.com")
    assert 'href="/app/settings#display_name">Name your shop<' in await visitor.get("/app")


async def account_id(client: Any, visitor: Visitor) -> str:
    """The signed-in merchant's public account id (ORB-...), as the dashboard's home shows it."""
    return re.search(r'id="account-id"[^>]*>([^<]+)<', await visitor.get("/app")).group(1)


async def test_a_links_promise_in_the_dashboard_is_what_its_page_asks(served):
    """A buyer-entered link priced in fiat: the list says the buyer enters USD and pays in BTC, as its page asks."""
    visitor = Visitor(served)
    await visitor.sign_up("links@example.com")
    await visitor.get("/app/links")
    await visitor.submit("/app/links", {"action": "create", "coin": "BTC", "fiat_currency": "USD"})
    page = await visitor.get("/app/links")
    assert "buyer enters an amount in USD, pays in BTC" in page
    slug = re.search(r"<code>(\w{12})</code>", page).group(1)
    prompt = await (await served.get(f"/l/{slug}")).text()
    assert '<label for="amount">Amount in USD</label>' in prompt and "You pay in BTC (Bitcoin)" in prompt
