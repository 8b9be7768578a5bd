"""The core services plugins read through (orbchain.api, core/*_services.py), on a devnet journey, both databases."""

from __future__ import annotations

import time

import pytest

from orbchain import api as services
from tests.families import get_family

from .support import Devnet, api, signup


@pytest.fixture
async def paid(make_client, make_config):
    """A white-label LTC payment paid and credited (6 confirmations), plus one still pending."""
    client = await make_client(make_config(scheduler={"enabled": False}))
    merchant = await signup(client, "services@example.com")
    devnet = Devnet(client)
    created = []
    for amount in ("0.5", "0.25"):
        status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                                 json={"currency": "LTC", "amount": amount})
        assert status == 200, body
        created.append(body["data"])
    first = await devnet.pay("LTC", created[0]["address"], "0.5")
    await devnet.mine(6)
    devnet.gateway.clock = lambda: time.time() + 10  # the second deposit is seen later: a defined order
    await devnet.pay("LTC", created[1]["address"], "0.1")
    return devnet.gateway, merchant, created, first


async def test_find_payment_is_a_view_with_integer_amounts(paid):
    gateway, merchant, created, _ = paid
    paid_view = await services.find_payment(gateway, created[0]["track_id"])
    assert paid_view == services.PaymentRecord(created[0]["track_id"], merchant.merchant_id, "Paid", False, "LTC",
                                               50_000_000, created[0]["address"])
    open_view = await services.find_payment(gateway, created[1]["track_id"])
    assert open_view.status == "Paying" and open_view.is_open and open_view.pay_amount == 25_000_000
    assert await services.find_payment(gateway, "no-such-track") is None


async def test_recent_deposits_newest_first(paid):
    gateway, merchant, created, first = paid
    deposits = await services.recent_deposits(gateway, merchant.merchant_id, 10)
    assert [(d.amount, d.status, d.address) for d in deposits] == [
        (10_000_000, "PENDING", created[1]["address"]), (50_000_000, "CREDITED", created[0]["address"])]
    credited = deposits[1]
    assert credited.tx_hash == first and credited.coin == "LTC" and credited.confirmations == 6
    assert credited.credited_at is not None and deposits[0].credited_at is None
    assert await services.recent_deposits(gateway, merchant.merchant_id, 1) == deposits[:1]
    assert await services.recent_deposits(gateway, "m_nobody", 10) == []


async def test_find_deposit_by_id_is_the_same_record(paid):
    gateway, merchant, _, _ = paid
    deposits = await services.recent_deposits(gateway, merchant.merchant_id, 10)
    for deposit in deposits:
        assert await services.find_deposit(gateway, deposit.id) == deposit
    assert await services.find_deposit(gateway, "dep_nobody") is None


async def test_credited_outputs_and_addresses_list_only_credited_deposits(paid):
    gateway, merchant, created, first = paid
    chain, network = "devnet", gateway.chains.get("devnet").network
    outputs = await services.credited_outputs(gateway, chain, network)
    assert [(o.tx_hash, o.address, o.coin, o.amount) for o in outputs] == [
        (first, created[0]["address"], "LTC", 50_000_000)]
    key = await services.address_key(gateway, created[0]["address"], "ltc")
    assert (outputs[0].key_account, outputs[0].key_index) == (key.key_account, key.key_index)
    assert await services.credited_outputs(gateway, chain, "another-network") == []
    assert await services.credited_outputs(gateway, "bitcoin", network) == []
    addresses = await services.credited_addresses(gateway, chain)
    assert [(a.address, a.coin) for a in addresses] == [(created[0]["address"], "LTC")]
    assert addresses[0].last_credited_at > 0


async def test_address_key_locates_the_address_in_the_seed(paid):
    gateway, merchant, created, _ = paid
    key = await services.address_key(gateway, created[0]["address"], "ltc")
    assert key.merchant_id == merchant.merchant_id and key.family == "ltc"
    from orbchain.core.addresses.store import keystore

    derived = get_family("ltc", key.network).derive(keystore(gateway, key.network), key.key_account, key.key_index)
    assert derived.address == created[0]["address"]
    assert await services.address_key(gateway, created[0]["address"], "evm") is None
    assert await services.address_key(gateway, "ltc1qnotours", "ltc") is None


async def test_payout_statuses_of_known_ids_only(paid):
    gateway, merchant, _, _ = paid
    ids = [f"po_{i}" for i in range(600)]  # more than one IN-list chunk
    for i, payout_id in enumerate(ids):
        await gateway.db.execute(
            "INSERT INTO payouts (id, track_id, merchant_id, coin, chain, destination, amount, status, stage,"
            " next_attempt_at, created_at, updated_at) VALUES (:id, :id, :m, 'LTC', 'devnet', 'x', :a, :s, 'queued',"
            " 0, 0, 0)",
            {"id": payout_id, "m": merchant.merchant_id, "a": gateway.db.amount_param(1),
             "s": "Failed" if i % 2 else "Confirming"})
    statuses = await services.payout_statuses(gateway, [*ids, "po_unknown"])
    assert len(statuses) == 600 and "po_unknown" not in statuses
    assert statuses["po_1"] == "Failed" and statuses["po_598"] == "Confirming"
    assert await services.payout_statuses(gateway, []) == {}


async def test_account_services_for_sign_in_plugins(gateway):
    """account_by_email, create_account and sign_in_account (used by plugins/oidc)."""
    from orbchain.core.accounts import merchants as accounts, auth
    from orbchain.core.types.errors import Conflict, Forbidden, Unauthorized

    assert await services.account_by_email(gateway, "new@example.com") is None
    created = await services.create_account(gateway, "New@Example.com")
    assert created.email == "new@example.com" and set(created.api_keys or {}) == {
        "merchant_api_key", "payout_api_key", "general_api_key"}
    claims = auth.decode_dashboard_token(gateway.require_secrets().jwt_secret, created.token, gateway.now())
    assert claims["sub"] == created.merchant_id
    found = await services.account_by_email(gateway, "NEW@example.com")
    assert found == services.AccountRecord(created.merchant_id, "new@example.com", True)
    with pytest.raises(Conflict):
        await services.create_account(gateway, "new@example.com")
    with pytest.raises(Unauthorized):  # no password was set: no password signs in
        await accounts.log_in(gateway, "new@example.com", accounts.NO_PASSWORD)
    session = await services.sign_in_account(gateway, created.merchant_id)
    assert session.merchant_id == created.merchant_id and session.api_keys is None and session.token
    await gateway.db.execute("UPDATE merchants SET enabled = :f WHERE id = :id",
                             {"f": False, "id": created.merchant_id})
    with pytest.raises(Forbidden) as refused:
        await services.sign_in_account(gateway, created.merchant_id)
    assert refused.value.code == "merchant_disabled"
