"""A swap-only coin (XMR) is accepted only when a plugin converts it: ``decide_settlement_coin``.

The core keeps ``default_settlement_coin`` as account data (SPEC 2.7) but no
longer interprets it: the ``swaps`` plugin answers with it, another plugin
may answer instead, and with nobody answering the coin is refused even when
the field is set (docs/decisions.md, issue 30).
"""

from __future__ import annotations

import warnings

import pytest

from orbchain.core.accounts import settlement
from orbchain.core.infra.config import load_config
from orbchain.core.startup import build_gateway
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.web.keys import GATEWAY

from .support import api, signup

COINS = "/dashboard/settings/coins"


class Converter:
    """A third party converting XMR into what ``into`` says for every merchant."""

    def __init__(self, into: str | None) -> None:
        self.into = into

    @hookimpl
    def decide_settlement_coin(self, merchant, coin):
        return self.into


async def _shop(make_client, make_config, pm, settlement_coin: str | None = "BTC"):
    client = await make_client(make_config(scheduler={"enabled": False}), pm)
    merchant = await signup(client)
    await client.app[GATEWAY].db.execute("UPDATE merchants SET default_settlement_coin = :c WHERE id = :id",
                                         {"c": settlement_coin, "id": merchant.merchant_id})
    return client, merchant


async def test_the_swaps_plugin_answers_with_the_accounts_default_settlement_coin(make_client, make_config):
    client, merchant = await _shop(make_client, make_config, get_plugin_manager())
    status, body = await api(client, "PUT", COINS, merchant.jwt, json={"accepted_coins": ["BTC", "XMR"]})
    assert status == 200 and body["data"]["account"]["accepted_coins"] == ["BTC", "XMR"], body


async def test_without_a_converting_plugin_the_field_alone_accepts_nothing(make_client, make_config):
    client, merchant = await _shop(make_client, make_config, get_plugin_manager(blocked=["swaps"]))
    status, body = await api(client, "PUT", COINS, merchant.jwt, json={"accepted_coins": ["BTC", "XMR"]})
    assert status == 400 and "default_settlement_coin" in body["error"]["detail"]["accepted_coins"], body


@pytest.mark.parametrize("into, accepted", [("ETH", True), ("XMR", False), (None, False)])
async def test_another_plugin_may_decide(make_client, make_config, into, accepted):
    pm = get_plugin_manager([("converter", Converter(into))], blocked=["swaps"])
    client, merchant = await _shop(make_client, make_config, pm, settlement_coin=None)
    status, body = await api(client, "PUT", COINS, merchant.jwt, json={"accepted_coins": ["BTC", "XMR"]})
    assert (status == 200) is accepted, body


def test_a_coin_that_needs_no_swap_is_never_asked_about():
    gateway = build_gateway(load_config(None, environ={}),
                            get_plugin_manager([("converter", Converter(None))], blocked=["swaps"]))
    assert settlement.settles(gateway, {}, gateway.coins.require("BTC"))
    assert not settlement.settles(gateway, {"default_settlement_coin": "BTC"}, gateway.coins.require("XMR"))


def test_an_async_answer_is_refused_not_taken_for_a_yes():
    class Late:
        @hookimpl
        async def decide_settlement_coin(self, merchant):
            return None

    gateway = build_gateway(load_config(None, environ={}), get_plugin_manager([("late", Late())], blocked=["swaps"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the coroutine is closed, not left un-awaited
        with pytest.raises(TypeError, match="synchronously"):
            settlement.settles(gateway, {"default_settlement_coin": "BTC"}, gateway.coins.require("XMR"))
