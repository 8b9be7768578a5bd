"""The EVM hot wallet's native coin above the operator's ceiling, swept to the cold address, against anvil."""

from __future__ import annotations

import secrets

import pytest
from eth_utils import to_checksum_address

from orbchain.chains.evm.cold_sweep import sweep_to_cold
from orbchain.chains.evm.keys import hot_wallet_address
from orbchain.core.custody.run import run_custody_check
from orbchain.core.events.operator import deliver_operator_events
from orbchain.core.ledger import book as ledger
from orbchain.core.types.chains import CustodyPlace

from .anvil import anvil, credited_deposit, open_shop  # noqa: F401 - anvil is a fixture
from .support import WebhookReceiver

ETH = 10**18


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


async def test_above_the_ceiling_the_native_excess_is_swept_once_to_cold(anvil, make_client, make_config,  # noqa: F811
                                                                          receiver):
    cold = to_checksum_address("0x" + secrets.token_hex(20))
    shop = await open_shop(anvil, make_client, make_config,
                           custody={"hot_wallet": {"ETH": {"ceiling": "1", "cold": cold}}},
                           overrides={"operator": {"webhook_url": await receiver.start(), "webhook_secret": "s" * 20}})
    assert "evm.ethereum.cold_sweep" in shop.gateway.jobs  # what the scheduler runs every minute
    await credited_deposit(shop, "ETH", "2", 2 * ETH)
    await shop.sweep()
    assert (await shop.sweep()).finished == 1  # the deposit is in the hot wallet, booked
    hot = hot_wallet_address(shop.gateway)
    before = (await run_custody_check(shop.gateway, "test")).by_coin()["ETH"]
    held_before = shop.node.balance(hot)

    tx_hash = await sweep_to_cold(shop.adapter)  # signed, stored, broadcast
    shop.node.settle()
    assert await sweep_to_cold(shop.adapter) == tx_hash  # mined: booked, no second sweep
    (tx,) = await shop.gateway.db.fetch_all("SELECT * FROM evm_txs WHERE ref LIKE 'cold_%'")
    amount, fee = int(tx["amount"]), int(tx["fee_paid"])
    assert tx["status"] == "mined" and tx["recipient"] == cold and shop.node.balance(cold) == amount
    assert shop.node.balance(hot) == held_before - amount - fee >= ETH  # at the ceiling, the gas bound's rest on top
    assert await sweep_to_cold(shop.adapter) is None
    await deliver_operator_events(shop.gateway)  # the operator hears of the sweep to cold, once
    ((sweep),) = receiver.verified("s" * 20)
    assert (sweep["event_type"], sweep["coin"], sweep["destination"], sweep["tx_hash"]) == (
        "custody.cold_sweep", "ETH", cold, tx_hash)

    assert (await ledger.check_ledger(shop.gateway.db)).ok
    after = (await run_custody_check(shop.gateway, "test")).by_coin()["ETH"]
    assert after.status == before.status and after.difference == before.difference  # the gas: held and owed alike
    assert after.books_difference == before.books_difference
    assert [h.amount for h in after.holdings if h.place == CustodyPlace.COLD] == [amount]
