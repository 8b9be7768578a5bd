"""``orbchain custody check`` on anvil (chains/evm/custody.py): USDT owed, held and taken.

A credited token deposit, its sweep into the hot wallet and a token payout
leave the node holding exactly what the ledger owes (the ETH the operator
put in the hot wallet for gas is a surplus, reported, not alarmed); USDT
moved out of the hot wallet by someone holding its key is a shortfall of
exactly that amount.
"""

from __future__ import annotations

import pytest
from eth_account import Account

from orbchain.chains.evm.keys import hot_wallet_address
from orbchain.core.custody.report import OK, SHORTFALL, SURPLUS
from orbchain.core.custody.run import run_custody_check

from .anvil import EvmShop, abi_call_data, anvil, credited_deposit, open_shop  # noqa: F401 - anvil is a fixture
from .support import api

USDT = "USDT_ERC20"


@pytest.fixture
async def shop(anvil, make_client, make_config) -> EvmShop:  # noqa: F811 - anvil is the fixture
    return await open_shop(anvil, make_client, make_config, sweep=True)


async def test_usdt_moved_out_of_the_hot_wallet_is_flagged(shop):
    await credited_deposit(shop, USDT, "40", 40 * 10**6)
    hot = hot_wallet_address(shop.gateway)
    shop.node.set_balance(hot, 10**18)  # the operator's gas money: not owed to anyone
    coins = (await run_custody_check(shop.gateway, "test")).by_coin()
    assert coins[USDT].status == OK and coins[USDT].held == 40 * 10**6 and coins[USDT].difference == 0
    assert coins["ETH"].status == SURPLUS and coins["ETH"].difference == 10**18

    for _ in range(3):  # top-up, token transfer, done
        await shop.sweep()
    assert shop.token_balance(hot) == 40 * 10**6
    status, body = await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                             json={"currency": USDT, "address": Account.create().address, "amount": "12.5"})
    assert status == 200, body
    await shop.work_payouts()
    usdt = (await run_custody_check(shop.gateway, "test")).by_coin()[USDT]
    assert usdt.status == OK and usdt.held == 27_500_000 and usdt.difference == 0 and usdt.books_difference == 0

    # Someone with the hot wallet's key sends 20 USDT away; the gateway never hears of it.
    shop.node.rpc("anvil_impersonateAccount", hot)
    shop.node.send(hot, shop.token, data=abi_call_data("transfer", ["address", "uint256"],
                                                       [Account.create().address, 20 * 10**6]))
    shop.node.rpc("anvil_stopImpersonatingAccount", hot)
    report = await run_custody_check(shop.gateway, "test")
    usdt = report.by_coin()[USDT]
    assert usdt.status == SHORTFALL and usdt.shortfall == 20 * 10**6 and usdt.held == 7_500_000
    assert report.lines(lambda coin, units: str(units))[-1] == f"custody SHORTFALL: {USDT} 20000000"
