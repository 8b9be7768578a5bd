"""Tron deposits through the stand-in node: TRX, pinned TRC-20 only, failed calls never credited, reorgs."""

from __future__ import annotations

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import merchant_available

from .tron_node import TRANSFER_SELECTOR, account_id
from .tron_support import TronShop, open_tron_shop, tron_node  # noqa: F401 - fixtures

THRESHOLD = 19  # TRX and TRC-20: SPEC 2.7's default


@pytest.fixture
async def shop(tron_node, make_config, make_client) -> TronShop:  # noqa: F811 - the fixture
    return await open_tron_shop(tron_node, make_config, make_client)


async def _balance(shop: TronShop, coin: str) -> int:
    return await ledger.balance(shop.gateway.db, merchant_available(shop.merchant.merchant_id), coin)


async def test_trx_deposit_credited_at_the_default_threshold(shop):
    payment = await shop.payment("TRX", "12.5")
    tx_id = shop.node.pay_trx(payment["address"], 12_500_000)
    await shop.mine(1)
    (deposit,) = await shop.deposits()
    assert (deposit["tx_hash"], deposit["coin"], int(deposit["threshold"])) == (tx_id, "TRX", THRESHOLD)
    assert (await shop.view(payment["track_id"]))["status"] == "Paying"
    await shop.mine(THRESHOLD - 1)
    view = await shop.view(payment["track_id"])
    assert view["status"] == "Paid" and view["transactions"][0]["confirmations"] == THRESHOLD
    assert await _balance(shop, "TRX") > 0


async def test_only_pinned_tokens_count_and_failed_calls_never_credit(shop):
    node = shop.node
    payment = await shop.payment("USDT_TRC20", "30")
    address = payment["address"]
    ignored = node.pay_token(shop.online.other, address, 30_000_000)  # same shape, contract not pinned
    node.mine(1)
    node.revert_calls_to(shop.online.usdt)
    failed = node.pay_token(shop.online.usdt, address, 30_000_000)  # mined, REVERT: moves nothing
    node.mine(1)
    assert node.find_mined(failed).info["receipt"]["result"] == "REVERT"
    assert node.find_mined(ignored).info["log"], "the unpinned token did emit a Transfer"
    node.reverting.clear()
    good = node.pay_token(shop.online.usdt, address, 30_000_000)
    await shop.mine(THRESHOLD)
    deposits = await shop.deposits()
    assert [(d["tx_hash"], d["coin"], int(d["amount"])) for d in deposits] == [(good, "USDT_TRC20", 30_000_000)]
    assert (await shop.view(payment["track_id"]))["status"] == "Paid"
    assert await _balance(shop, "TRX") == 0


async def test_out_of_energy_call_is_not_credited(shop):
    node = shop.node
    payment = await shop.payment("USDT_TRC20", "5")
    data = TRANSFER_SELECTOR + account_id(payment["address"])[1:].rjust(32, b"\0") + (5_000_000).to_bytes(32, "big")
    message = node.pb.TriggerSmartContract(owner_address=node.payer, contract_address=account_id(shop.online.usdt),
                                           data=data)
    # A fee limit worth 1,000 energy: far below the 29,650 a first transfer to a holder needs.
    body = node.payer_tx(node.pb.Transaction.Contract.TriggerSmartContract, message, fee_limit=420 * 1000)
    assert node.broadcast(body)["result"] is True
    await shop.mine(THRESHOLD)
    assert node.find_mined(body["txID"]).info["receipt"]["result"] == "OUT_OF_ENERGY"
    assert await shop.deposits() == []


async def test_reorg_takes_a_credited_token_deposit_back(shop):
    payment = await shop.payment("USDT_TRC20", "7")
    tx_id = shop.node.pay_token(shop.online.usdt, payment["address"], 7_000_000)
    await shop.mine(THRESHOLD)
    assert (await shop.view(payment["track_id"]))["status"] == "Paid"
    credited = await _balance(shop, "USDT_TRC20")
    assert credited > 0
    shop.node.reorg(THRESHOLD)
    report = await shop.scan()
    assert report.disconnected == THRESHOLD
    view = await shop.view(payment["track_id"])
    assert view["status"] == "Paying" and view["transactions"][0]["tx_hash"] == tx_id
    assert view["transactions"][0]["confirmations"] == 0
    assert await _balance(shop, "USDT_TRC20") == 0
    assert (await ledger.check_ledger(shop.gateway.db)).ok


async def test_the_api_key_header_is_sent(shop):
    """The stand-in refuses requests without TRON-PRO-API-KEY; scanning works, so the header went out."""
    import httpx

    async with httpx.AsyncClient() as client:
        refused = await client.post(f"{shop.online.url}/wallet/getnowblock", content="{}")
    assert refused.status_code == 401
    assert (await shop.adapter.tip()).height == shop.node.head.number


async def test_a_token_whose_contract_begins_with_0x41_is_seen(tron_node, make_config, make_client):  # noqa: F811
    """A log names its contract by the bare 20 bytes; one contract in 256 begins with 0x41 and was unseen."""
    contract = tron_node.node.deploy_token("USDT41", 10**15, first_byte=0x41)
    assert account_id(contract)[1] == 0x41
    shop = await open_tron_shop(tron_node, make_config, make_client, contracts={"USDT_TRC20": contract})
    payment = await shop.payment("USDT_TRC20", "3")
    tx_id = shop.node.pay_token(contract, payment["address"], 3_000_000)
    await shop.mine(1)
    assert [(d["tx_hash"], d["coin"], int(d["amount"])) for d in await shop.deposits()] == [
        (tx_id, "USDT_TRC20", 3_000_000)]
