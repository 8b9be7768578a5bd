"""Tron payouts from the hot wallet, judged by the stand-in; and the stand-in's own judgement of bad bytes."""

from __future__ import annotations

import json

import pytest

from orbchain.chains.tron.keys import hot_wallet_address
from orbchain.chains.tron.transactions import RefBlock, sign, transfer
from orbchain.core.ledger import book as ledger
from orbchain.core.ledger.accounts import NETWORK_FEES, merchant_available
from orbchain.core.payouts.worker import process_payouts
from orbchain.testing import api

from .tron_node import ENERGY_NEW_HOLDER, PARAMETERS, account_id
from .tron_support import TronShop, fresh_address, open_tron_shop, tron_node  # noqa: F401 - fixtures


async def _shop(tron_node, make_config, make_client, **settings) -> TronShop:  # noqa: F811 - the fixture
    shop = await open_tron_shop(tron_node, make_config, make_client, payout_confirmations=1, **settings)
    payment = await shop.payment("USDT_TRC20", "50")
    shop.node.pay_token(shop.online.usdt, payment["address"], 50_000_000)
    await shop.mine(19)
    hot = hot_wallet_address(shop.gateway)
    shop.node.pay_trx(hot, 100 * 10**6)
    shop.node.pay_token(shop.online.usdt, hot, 50_000_000)
    shop.node.mine(1)
    return shop


async def _payout(shop: TronShop, destination: str, amount: str) -> dict:
    status, body = await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                             json={"currency": "USDT_TRC20", "address": destination, "amount": amount})
    assert status == 200, body
    return body["data"]


async def _work(shop: TronShop, seconds: int = 30) -> dict:
    later = shop.gateway.now() + seconds
    shop.gateway.clock = lambda: later
    await process_payouts(shop.gateway)
    return {}


async def _row(shop: TronShop, track_id: str):
    return await shop.gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": track_id})


async def test_token_payout_carries_the_fee_limit_and_books_the_burn(tron_node, make_config, make_client):  # noqa: F811 - the fixture
    shop = await _shop(tron_node, make_config, make_client)
    destination = fresh_address()
    payout = await _payout(shop, destination, "10")
    await _work(shop)
    (body,) = shop.node.broadcasts
    assert body["raw_data"]["fee_limit"] == 50_000_000  # the default fee_limit_sun
    shop.node.mine(1)
    await _work(shop)
    row = await _row(shop, payout["track_id"])
    assert row["status"] == "Confirmed", dict(row)
    assert shop.node.token_balance(shop.online.usdt, destination) == 10_000_000
    burned = ENERGY_NEW_HOLDER * PARAMETERS["getEnergyFee"]  # bandwidth: the hot wallet's free 600 bytes
    assert await ledger.balance(shop.gateway.db, NETWORK_FEES, "TRX") == -burned
    assert (await ledger.check_ledger(shop.gateway.db)).ok


async def test_a_fee_limit_too_low_fails_the_payout_and_re_credits(tron_node, make_config, make_client):  # noqa: F811 - the fixture
    shop = await _shop(tron_node, make_config, make_client, fee_limit_sun=420 * 1000)
    available = merchant_available(shop.merchant.merchant_id)
    before = await ledger.balance(shop.gateway.db, available, "USDT_TRC20")
    payout = await _payout(shop, fresh_address(), "10")
    await _work(shop)
    shop.node.mine(1)
    await _work(shop)
    row = await _row(shop, payout["track_id"])
    assert (row["status"], row["failure_reason"]) == ("Failed", "reverted")
    (mined,) = [m for b in shop.node.blocks for m in b.txs if m.tx_id == row["tx_hash"]]
    assert mined.info["receipt"]["result"] == "OUT_OF_ENERGY"
    assert await ledger.balance(shop.gateway.db, available, "USDT_TRC20") == before
    assert await ledger.balance(shop.gateway.db, NETWORK_FEES, "TRX") == -420 * 1000  # the whole fee_limit burned
    assert (await ledger.check_ledger(shop.gateway.db)).ok


async def test_a_transaction_the_node_lost_is_sent_again_unchanged(tron_node, make_config, make_client):  # noqa: F811 - the fixture
    shop = await _shop(tron_node, make_config, make_client)
    destination = fresh_address()
    payout = await _payout(shop, destination, "5")
    await _work(shop)
    shop.node.drop_pending()
    await _work(shop)  # missing from the node: the stored bytes go out again
    first, again = shop.node.broadcasts
    assert first == again
    shop.node.mine(1)
    await _work(shop)
    assert (await _row(shop, payout["track_id"]))["status"] == "Confirmed"
    assert shop.node.token_balance(shop.online.usdt, destination) == 5_000_000


# -- the stand-in judges: bytes it must refuse ---------------------------------------------------


def _signed_body(node, key: bytes, owner: bytes, amount: int = 1_000_000) -> dict:
    head = node.head
    call = transfer(owner, account_id(fresh_address()), amount)
    signed = sign(call, RefBlock(head.number, head.block_id, head.timestamp), key,
                  expiration_ms=head.timestamp + 60_000, timestamp_ms=head.timestamp)
    return signed.payload


@pytest.fixture
def funded(tron_node):  # noqa: F811 - the fixture
    import secrets

    from .tron_node import address_of, t_address

    key = secrets.token_bytes(32)
    owner = address_of(key)
    tron_node.node.pay_trx(t_address(owner), 10 * 10**6)
    tron_node.node.mine(1)
    return tron_node.node, key, owner


def test_our_transaction_is_accepted_as_signed(funded):
    node, key, owner = funded
    assert node.broadcast(_signed_body(node, key, owner))["result"] is True


def test_a_signature_by_another_key_is_refused(funded):
    import secrets

    node, _, owner = funded
    answer = node.broadcast(_signed_body(node, secrets.token_bytes(32), owner))
    assert answer["code"] == "SIGERROR"


def test_json_that_disagrees_with_the_bytes_is_refused(funded):
    node, key, owner = funded
    body = _signed_body(node, key, owner)
    body["raw_data"]["contract"][0]["parameter"]["value"]["amount"] += 1
    assert node.broadcast(body)["code"] == "SIGERROR"


def test_a_wrong_txid_or_a_foreign_field_is_refused(funded):
    node, key, owner = funded
    body = _signed_body(node, key, owner)
    assert node.broadcast({**body, "txID": "00" * 32})["code"] == "SIGERROR"
    raw = bytes.fromhex(body["raw_data_hex"]) + bytes([0xF8, 0x01, 0x01])  # field 31 varint: not Tron's
    assert node.broadcast({**body, "raw_data_hex": raw.hex()})["code"] in ("SIGERROR", "OTHER_ERROR")


def test_more_than_the_balance_is_refused(funded):
    node, key, owner = funded
    answer = node.broadcast(_signed_body(node, key, owner, amount=50 * 10**6))
    assert answer["code"] == "CONTRACT_VALIDATE_ERROR"
    assert json.dumps(answer)  # the refusal is plain JSON, like java-tron's
