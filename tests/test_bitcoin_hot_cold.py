"""Hot and cold wallets on a real Litecoin Core regtest node (issue 45 item 3).

Below the operator's floor (``[custody.hot_wallet.LTC] floor``): the custody
check says so loudly (ERROR, ``orbchain_hot_wallet_below_floor``), and a
payout the hot wallet cannot pay yet waits queued with the reason shown,
no attempt counted, then goes once the wallet is funded.
"""

from __future__ import annotations

import logging

import pytest

from orbchain.core.custody.run import run_custody_check
from orbchain.core.health.metrics_db import read_facts

from .litecoind import external_address, faucet, litecoind_node  # noqa: F401 - session fixtures
from .test_bitcoin_litecoind import Shop, create_payout, custody_difference, make_shop, payout_row, receiver, work  # noqa: F401

LTC = 100_000_000


@pytest.fixture
async def floored(make_client, make_config, litecoind_node, faucet, receiver) -> Shop:  # noqa: F811
    return await make_shop(make_client, make_config, litecoind_node, faucet, receiver,
                           custody={"hot_wallet": {"LTC": {"floor": "0.5"}}})


async def test_below_the_floor_alerts_and_a_payout_beyond_the_hot_balance_waits_then_goes(floored, caplog):
    shop = floored
    await shop.funded("1")
    report = await run_custody_check(shop.gateway, "test")
    assert report.by_coin()["LTC"].hot == LTC
    assert (await read_facts(shop.gateway)).hot_wallet_below_floor == {"LTC": 0}

    first = await create_payout(shop, "0.6", external_address(0))
    await work(shop)
    assert (await payout_row(shop, first["track_id"]))["stage"] == "broadcast"  # its change is not spendable yet
    with caplog.at_level(logging.ERROR, logger="orbchain.core.custody.run"):
        report = await run_custody_check(shop.gateway, "test")
    assert report.by_coin()["LTC"].hot == 0
    assert any("BELOW FLOOR: LTC holds 0" in r.getMessage() for r in caplog.records)
    assert (await read_facts(shop.gateway)).hot_wallet_below_floor == {"LTC": 1}

    # The merchant's 0.39 LTC are in the books, not yet spendable: the payout waits, it does not fail.
    second = await create_payout(shop, "0.3", external_address(1))
    for seconds in (5, 60, 3600):
        await work(shop, seconds)
        row = await payout_row(shop, second["track_id"])
        assert (row["status"], row["stage"], row["attempts"], row["tx_hash"]) == ("Confirming", "queued", 0, None)
        assert row["last_error"].startswith("waiting: hot wallet short: litecoin: hot wallet holds 0 spendable")

    shop.faucet.mine(1)  # the first payout confirms: its change funds the hot wallet
    await work(shop, 10)
    assert (await payout_row(shop, first["track_id"]))["status"] == "Confirmed"
    await work(shop, 60)
    row = await payout_row(shop, second["track_id"])
    assert row["stage"] == "broadcast" and row["last_error"] is None
    shop.faucet.mine(1)
    await work(shop, 10)
    assert (await payout_row(shop, second["track_id"]))["status"] == "Confirmed"
    assert await custody_difference(shop) == 0
