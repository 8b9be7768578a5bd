"""A third-party chain package with a NEW address family takes a payment with no core edit.

``zeta_orbchain`` is installed the way pip would (a module plus dist-info
with an ``orbchain`` entry point). It registers its coin (with a price id
and a development price), its address family (derivation scheme, encoder,
validator on every network) and its QR payload. The devnet simulates it
because it simulates whatever registered coin has a derivable family; the
payment is created, paid, confirmed and credited, on both databases.

A second throwaway plugin supplies receive targets for a coin of a
validate-only family (the shape a Lightning or venue plugin takes).
"""

from __future__ import annotations

import sys
import textwrap

import pytest

# The plugins written here (the zeta package's source, the invoice classes) use the public API alone
# (tests/test_third_party_imports.py); the test itself also asks the core what it registered.
from orbchain.api import (
    GATEWAY, NETWORKS, AddressError, AddressFamily, ChainAdapter, Coin, ReceiveTarget, get_plugin_manager, hookimpl,
)
from orbchain.core.contract.plugins import plugin_names
from orbchain.core.payments.receive import qr_payload

from .support import Devnet, api, signup

ZETA_MODULE = textwrap.dedent('''
    """A throwaway third-party chain package with its own address format (test only)."""
    from orbchain.api import (
        NETWORKS, SECP256K1, AddressError, AddressFamily, Coin, DerivationScheme, coin_type_for, hookimpl,
    )
    from orbchain.api.addresses import check_zero_payload, hash160

    PREFIX = {"mainnet": "zeta1", "testnet": "tzeta1", "regtest": "rzeta1"}

    def encoder(network):
        return lambda public_key: PREFIX[network] + hash160(public_key).hex()

    def validate_zeta(address, network):
        text = address.strip() if isinstance(address, str) else ""
        body = text[len(PREFIX[network]):]
        if not text.startswith(PREFIX[network]) or len(body) != 40 or body.strip("0123456789abcdef"):
            raise AddressError("not a zeta address")
        check_zero_payload(bytes.fromhex(body), "hash")
        return text

    @hookimpl
    def register_coins(registry):
        registry.add(Coin("ZETA", "Zeta", "zeta", 6, 1, "1", "zeta", price_id="zeta-coin", dev_price_usd="2"))

    @hookimpl
    def register_address_families(registry):
        for network in NETWORKS:
            registry.add(AddressFamily("zeta", network, "Zeta account", validate_zeta,
                                       DerivationScheme(SECP256K1, 44, coin_type_for(77777, network)),
                                       encoder(network)))

    @hookimpl
    def decide_qr_payload(payment, coin):
        if coin.symbol == "ZETA" and payment.get("address"):
            return f"zeta:{payment['address']}?amount={payment['pay_amount']}"
''')


@pytest.fixture
def zeta_package(tmp_path, monkeypatch):
    """Install ``zeta_orbchain`` the way pip would: a module plus dist-info with entry points."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "zeta_orbchain.py").write_text(ZETA_MODULE)
    dist = site / "zeta_orbchain-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: zeta-orbchain\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[orbchain]\nzeta = zeta_orbchain\n")
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("zeta_orbchain", None)


async def test_a_new_chain_package_takes_a_payment_on_devnet(zeta_package, make_client, make_config):
    pm = get_plugin_manager()
    assert "zeta" in plugin_names(pm)
    client = await make_client(make_config(scheduler={"enabled": False}), pm)
    gateway = client.app[GATEWAY]
    assert "ZETA" in gateway.coins and gateway.address_families.find("zeta", "mainnet") is not None
    assert gateway.chains.get("devnet").serves("ZETA")

    merchant = await signup(client, "zeta@example.com")
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt, json={"accepted_coins": ["ZETA"]})
    assert status == 200, body
    status, prices = await api(client, "GET", "/v1/common/prices", {})
    assert status == 200 and prices["data"]["ZETA"] == 2  # the package's price id / dev price

    # Priced in USD through the package's price: 10 USD at 2 USD = 5 ZETA.
    status, body = await api(client, "POST", "/v1/payment/invoice", merchant.merchant_key,
                             json={"amount": "10", "currency": "USD", "pay_currency": "ZETA"})
    assert status == 200, body
    payment = body["data"]
    assert payment["pay_currency"] == "ZETA" and payment["pay_amount"] == "5"
    address = payment["address"]
    assert address.startswith("zeta1") and gateway.address_families.validate("zeta", address) == address
    view = {"address": address, "pay_amount": payment["pay_amount"]}
    assert qr_payload(gateway, view, gateway.coins.require("ZETA")) == f"zeta:{address}?amount=5"
    page = await client.get(f"/pay/{payment['track_id']}")
    assert page.status == 200 and address in await page.text()

    devnet = Devnet(client)
    await devnet.pay("ZETA", address, "5")
    await devnet.mine(1)
    status, body = await api(client, "GET", f"/v1/payment/{payment['track_id']}", merchant.merchant_key)
    assert body["data"]["status"] == "Paid", body
    _, body = await api(client, "GET", "/v1/general/account/balance", merchant.general_key)
    assert body["data"]["balances"] == [{"coin": "ZETA", "amount": "4.95"}]  # minus the default 1 % fee

    # The family validates payout destinations: a malformed or null zeta address is refused.
    with pytest.raises(AddressError):
        gateway.address_families.validate("zeta", "zeta1xyz")
    with pytest.raises(AddressError):
        gateway.address_families.validate("zeta", "zeta1" + "0" * 40)


class InvoiceChain(ChainAdapter):
    """A chain whose payer pays an issued invoice: nothing to derive or scan."""

    name = "invoicenet"
    coins = ("INVX",)

    async def tip(self):  # pragma: no cover - never scanned here
        raise NotImplementedError

    async def block(self, height):  # pragma: no cover
        raise NotImplementedError


class InvoiceCoin:
    PLUGIN_NAME = "invoice_coin"

    @hookimpl
    def register_coins(self, registry):
        registry.add(Coin("INVX", "Invoice coin", "invoicenet", 8, 0, "0.00000001", "invx", dev_price_usd="1"))

    @hookimpl
    def register_address_families(self, registry):
        for network in NETWORKS:
            registry.add(AddressFamily("invx", network, "Invoices (validate only)", lambda a, n: str(a),
                                       no_derivation_reason="invoices come from the node"))

    @hookimpl
    def register_chains(self, registry):
        registry.add(InvoiceChain())


class InvoiceIssuer:
    PLUGIN_NAME = "invoice_issuer"

    @hookimpl
    async def decide_receive_target(self, payment, coin):
        if coin.symbol != "INVX":
            return None
        return ReceiveTarget(None, {"invoice": {"bolt": f"inv-{payment['track_id']}", "amount": payment["pay_amount"]}})


@pytest.mark.parametrize("issuer", [False, True])
async def test_a_plugin_supplies_the_receive_target(issuer, make_client, make_config):
    plugins = [InvoiceCoin()] + ([InvoiceIssuer()] if issuer else [])
    client = await make_client(make_config(scheduler={"enabled": False}), get_plugin_manager(plugins))
    merchant = await signup(client, "invx@example.com")
    status, body = await api(client, "PUT", "/dashboard/settings/coins", merchant.jwt, json={"accepted_coins": ["INVX"]})
    assert status == 200, body
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "INVX", "amount": "0.001"})
    if not issuer:
        # A validate-only family and nobody supplying targets: not configured, never a 500.
        assert status == 503 and body["error"]["type"] == "not_configured", body
        return
    assert status == 200, body
    payment = body["data"]
    assert payment["address"] is None
    assert payment["invoice"] == {"bolt": f"inv-{payment['track_id']}", "amount": 100_000}
    _, body = await api(client, "GET", f"/v1/payment/{payment['track_id']}", merchant.merchant_key)
    assert body["data"]["invoice"] == payment["invoice"] and body["data"]["status"] == "Waiting"
