"""EVM deposits against a real anvil node: native and token, thresholds, reorgs, ignored transfers."""

from __future__ import annotations

import pytest
from eth_account import Account

from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import merchant_available

from .anvil import CHAIN_ID, PAYER, PAYER_KEY, REVERT_CODE, EvmShop, anvil, open_shop  # noqa: F401 - anvil is a fixture
from .support import api


@pytest.fixture
async def shop(anvil, make_client, make_config) -> EvmShop:  # noqa: F811 - anvil is the fixture
    return await open_shop(anvil, make_client, make_config)


async def _payment(shop: EvmShop, currency: str, amount: str) -> dict:
    status, body = await api(shop.client, "POST", "/v1/payment/white-label", shop.merchant.merchant_key,
                             json={"currency": currency, "amount": amount})
    assert status == 200, body
    assert body["data"]["address"].startswith("0x")
    return body["data"]


async def _view(shop: EvmShop, track_id: str) -> dict:
    return (await api(shop.client, "GET", f"/v1/payment/{track_id}", shop.merchant.merchant_key))[1]["data"]


async def _deposits(shop: EvmShop) -> list[dict]:
    return await shop.gateway.db.fetch_all("SELECT * FROM deposits ORDER BY created_at, output_index")


async def test_native_deposit_is_credited_at_twelve_confirmations(shop):
    payment = await _payment(shop, "ETH", "0.5")
    tx = shop.node.send(PAYER, payment["address"], value=5 * 10**17)
    await shop.scan()
    view = await _view(shop, payment["track_id"])
    assert view["status"] == "Paying" and view["transactions"][0]["tx_hash"] == tx
    await shop.mine(10)
    view = await _view(shop, payment["track_id"])
    assert view["status"] == "Paying" and view["transactions"][0]["confirmations"] == 11
    await shop.mine(1)
    view = await _view(shop, payment["track_id"])
    assert view["status"] == "Paid" and view["transactions"][0]["confirmations"] == 12
    assert await ledger.balance(shop.gateway.db, merchant_available(shop.merchant.merchant_id), "ETH") == 495 * 10**15
    (deposit,) = await _deposits(shop)
    assert deposit["output_index"] == 0 and deposit["address"] == payment["address"]  # EIP-55, as stored


async def test_token_deposit_credited_and_a_look_alike_contract_ignored(shop):
    payment = await _payment(shop, "USDT_ERC20", "25")
    shop.mint(PAYER, 100 * 10**6)
    shop.mint(PAYER, 100 * 10**6, token=shop.other_token)
    fake = shop.pay_token(payment["address"], 25 * 10**6, token=shop.other_token)
    real = shop.pay_token(payment["address"], 25 * 10**6)
    await shop.mine(11)
    (deposit,) = await _deposits(shop)
    assert deposit["tx_hash"] == real and deposit["tx_hash"] != fake and deposit["coin"] == "USDT_ERC20"
    assert deposit["output_index"] == int(shop.node.receipt(real)["logs"][0]["logIndex"], 16)
    view = await _view(shop, payment["track_id"])
    assert view["status"] == "Paid" and view["transactions"][0]["amount"] == "25"
    assert await ledger.balance(shop.gateway.db, merchant_available(shop.merchant.merchant_id), "USDT_ERC20") == 24_750_000


async def test_reverted_transactions_are_never_credited(shop):
    payment = await _payment(shop, "ETH", "0.1")
    address = payment["address"]
    # A value transfer to our address that reverts (the address given refusing code for a moment).
    shop.node.rpc("anvil_setCode", address, REVERT_CODE)
    reverted = shop.node.send(PAYER, address, value=10**17, gas=100_000)
    shop.node.rpc("anvil_setCode", address, "0x")
    assert shop.node.receipt(reverted)["status"] == "0x0"
    # A token transfer that reverts emits no log.
    shop.mint(PAYER, 10**6)
    shop.call_token(shop.token, PAYER, "setBlocked", ["address", "bool"], [address, True])
    failed_token = shop.pay_token(address, 10**6, gas=100_000)
    assert shop.node.receipt(failed_token)["status"] == "0x0"
    await shop.mine(12)
    assert await _deposits(shop) == []
    assert (await _view(shop, payment["track_id"]))["status"] == "Waiting"


async def test_reorg_before_crediting_takes_the_deposit_back(shop):
    payment = await _payment(shop, "ETH", "0.2")
    fork = shop.node.snapshot()
    shop.node.send(PAYER, payment["address"], value=2 * 10**17)
    await shop.mine(3)
    assert (await _view(shop, payment["track_id"]))["transactions"][0]["confirmations"] == 4
    shop.node.revert(fork)  # the block with the deposit is gone; a longer branch without it
    report = await shop.mine(14)
    assert report.disconnected == 4
    view = await _view(shop, payment["track_id"])
    assert view["status"] == "Paying" and view["transactions"][0]["confirmations"] == 0
    (deposit,) = await _deposits(shop)
    assert deposit["status"] == "PENDING" and not deposit["credited"] and deposit["block_hash"] is None
    assert await ledger.balance(shop.gateway.db, merchant_available(shop.merchant.merchant_id), "ETH") == 0


async def test_reorg_after_crediting_reverses_with_an_event(shop):
    payment = await _payment(shop, "ETH", "0.2")
    fork = shop.node.snapshot()
    shop.node.send(PAYER, payment["address"], value=2 * 10**17)
    await shop.mine(11)
    assert (await _view(shop, payment["track_id"]))["status"] == "Paid"
    account = merchant_available(shop.merchant.merchant_id)
    assert await ledger.balance(shop.gateway.db, account, "ETH") == 198 * 10**15
    shop.node.revert(fork)
    await shop.mine(15)
    assert (await _view(shop, payment["track_id"]))["status"] == "Paying"
    assert await ledger.balance(shop.gateway.db, account, "ETH") == 0
    events = await shop.gateway.db.fetch_all("SELECT event_type FROM webhook_events ORDER BY created_at")
    assert "deposit.reversed" in [e["event_type"] for e in events]
    assert (await ledger.check_ledger(shop.gateway.db)).ok


async def test_the_same_transaction_in_the_new_branch_is_credited_once(shop):
    payment = await _payment(shop, "ETH", "0.3")
    nonce = int(shop.node.rpc("eth_getTransactionCount", PAYER, "pending"), 16)
    signed = Account.sign_transaction({
        "type": 2, "chainId": CHAIN_ID, "nonce": nonce, "to": payment["address"], "value": 3 * 10**17,
        "gas": 21_000, "maxFeePerGas": 10 * 10**9, "maxPriorityFeePerGas": 10**9}, PAYER_KEY)
    raw = "0x" + bytes(signed.raw_transaction).hex()
    fork = shop.node.snapshot()
    tx = shop.node.rpc("eth_sendRawTransaction", raw)
    await shop.mine(2)
    shop.node.revert(fork)
    shop.node.mine(1)  # the new branch: one empty block, then the same bytes again
    assert shop.node.rpc("eth_sendRawTransaction", raw) == tx
    await shop.mine(12)
    (deposit,) = await _deposits(shop)
    assert deposit["status"] == "CREDITED" and int(deposit["credit_count"]) == 1
    assert (await _view(shop, payment["track_id"]))["status"] == "Paid"


async def test_with_credit_at_finalized_a_deposit_waits_for_its_block_to_be_final(anvil, make_client,  # noqa: F811
                                                                                  make_config):
    """Issue 46 item 4: on a chain with finality the credit waits for the `finalized` tag, not only the count."""
    shop = await open_shop(anvil, make_client, make_config, credit_at_finalized=True)
    payment = await _payment(shop, "ETH", "0.5")
    shop.node.send(PAYER, payment["address"], value=5 * 10**17)
    await shop.mine(11)
    view = await _view(shop, payment["track_id"])
    assert view["status"] == "Paying" and view["transactions"][0]["confirmations"] == 12  # enough by count alone
    (deposit,) = await _deposits(shop)
    finalized = int(shop.node.rpc("eth_getBlockByNumber", "finalized", False)["number"], 16)
    assert int(deposit["block_height"]) > finalized  # anvil finalizes 64 blocks behind its tip
    await shop.mine(64)  # the tip's block before these 64 is now final, and so is the deposit's
    assert int(shop.node.rpc("eth_getBlockByNumber", "finalized", False)["number"], 16) >= int(deposit["block_height"])
    view = await _view(shop, payment["track_id"])
    assert view["status"] == "Paid"
    assert await ledger.balance(shop.gateway.db, merchant_available(shop.merchant.merchant_id), "ETH") == 495 * 10**15
