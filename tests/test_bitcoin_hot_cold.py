"""Hot and cold wallets on a real Litecoin Core regtest node (issue 45 item 3).

Above the operator's ceiling (``[custody.hot_wallet.LTC] ceiling``, ``cold``):
one sweep of exactly the excess to the cold address, stored before it is
broadcast (a failed broadcast sends the same bytes again), recorded once
confirmed and booked once by serve (``ledger.book_sweeps``: the signer
writes no ledger), the custody check counting it in between; the ledger check is clean and the custody check balances with the
cold address counted.

Below the operator's floor (``[custody.hot_wallet.LTC] floor``): the custody
check says so loudly (ERROR, ``orbchain_hot_wallet_below_floor``, the
operator's ``custody.below_floor`` event once per episode), and a
payout the hot wallet cannot pay yet waits queued with the reason shown,
no attempt counted, then goes once the wallet is funded.
"""

from __future__ import annotations

import json
import logging
import secrets

from decimal import Decimal

import pytest

from orbchain.chains.bitcoin import wallet
from orbchain.chains.bitcoin.cold_sweep import sweep_to_cold
from orbchain.core.custody.report import OK, SHORTFALL
from orbchain.core.custody.run import run_custody_check
from orbchain.core.health.metrics_db import read_facts
from orbchain.core.keys import SeedKeyStore
from orbchain.core.ledger.book import balance
from orbchain.core.ledger.check import check_ledger
from orbchain.core.ledger.sweep_bookings import book_sweeps
from orbchain.core.types.chains import ChainUnavailable, CustodyPlace
from tests.families import get_family

from .litecoind import external_address, faucet, litecoind_node  # noqa: F401 - session fixtures
from .test_bitcoin_litecoind import Shop, create_payout, custody_difference, make_shop, payout_row, receiver, work  # noqa: F401

LTC = 100_000_000


@pytest.fixture
async def floored(make_client, make_config, litecoind_node, faucet, receiver) -> Shop:  # noqa: F811
    """A shop whose LTC hot wallet should keep 0.5; the operator's webhook is set (events are written)."""
    return await make_shop(make_client, make_config, litecoind_node, faucet, receiver,
                           custody={"hot_wallet": {"LTC": {"floor": "0.5"}}},
                           operator={"webhook_url": "http://127.0.0.1:9/operator", "webhook_secret": "s" * 20})


@pytest.fixture
async def ceilinged(make_client, make_config, litecoind_node, faucet, receiver) -> Shop:  # noqa: F811
    """A shop whose LTC hot wallet keeps 0.4 at most; its cold address is fresh (one node serves both databases)."""
    cold = external_address(1000 + secrets.randbelow(1_000_000))
    shop = await make_shop(make_client, make_config, litecoind_node, faucet, receiver,
                           custody={"hot_wallet": {"LTC": {"ceiling": "0.4", "cold": cold}}})
    shop.cold = cold
    return shop


async def test_above_the_ceiling_the_excess_is_swept_once_to_the_cold_address(ceilinged, litecoind_node, monkeypatch):  # noqa: F811
    shop, node, cold = ceilinged, litecoind_node, ceilinged.cold
    assert "bitcoin.litecoin.cold_sweep" in shop.gateway.jobs  # what the scheduler runs every minute
    await shop.funded("1")
    assert await custody_difference(shop) == 0

    async def node_away(signed) -> None:
        raise ChainUnavailable("node away")

    monkeypatch.setattr(shop.adapter, "broadcast", node_away)
    with pytest.raises(ChainUnavailable):
        await sweep_to_cold(shop.adapter)  # signed and stored, never sent
    stored = await shop.gateway.db.fetch_one("SELECT * FROM bitcoin_cold_sweeps")
    assert stored["status"] == "sent" and stored["tx_hash"] not in node.call("getrawmempool")
    monkeypatch.undo()
    assert await sweep_to_cold(shop.adapter) == stored["id"]  # the same bytes, not a second signature
    assert stored["tx_hash"] in node.call("getrawmempool")
    tx = node.call("getrawtransaction", stored["tx_hash"], True)
    assert tx["vout"][0]["value"] == Decimal("0.6") and tx["vout"][0]["scriptPubKey"]["addresses"] == [cold]
    assert await custody_difference(shop) == 0  # in flight: its inputs at their booked value

    shop.faucet.mine(1)
    assert await sweep_to_cold(shop.adapter) == stored["id"]
    sweeps = await shop.gateway.db.fetch_all("SELECT * FROM bitcoin_cold_sweeps")
    assert [(s["status"], int(s["amount"])) for s in sweeps] == [("done", 60_000_000)]
    fee = int(sweeps[0]["fee"])
    spendable = await wallet.spendable_outputs(shop.gateway, "litecoin", "regtest")
    assert sum(o.amount for o in spendable) == 40_000_000 - fee and 0 < fee < 10_000
    assert await sweep_to_cold(shop.adapter) is None  # below the ceiling now: nothing more

    cold_books = "world:litecoin:cold"
    assert await balance(shop.gateway.db, cold_books, "LTC") == 0  # recorded, not booked yet
    assert await custody_difference(shop) == 0  # ... and counted by the custody check meanwhile
    assert await book_sweeps(shop.gateway) == 1 and await book_sweeps(shop.gateway) == 0  # serve books it once
    assert await balance(shop.gateway.db, cold_books, "LTC") == 60_000_000
    assert (await check_ledger(shop.gateway.db)).ok
    report = await run_custody_check(shop.gateway, "test")
    ltc = report.by_coin()["LTC"]
    assert ltc.status == OK and ltc.difference == 0 and ltc.books_difference == 0 and report.ok
    assert [h.amount for h in ltc.holdings if h.place == CustodyPlace.COLD] == [60_000_000]
    assert await shop.balance() == {"LTC": "0.99"}  # the merchant's money did not move


async def test_a_cold_xpub_gets_a_fresh_address_per_sweep_counted_only_where_it_derives(
        make_client, make_config, litecoind_node, faucet, receiver):  # noqa: F811
    family, cold_wallet = get_family("ltc", "regtest"), SeedKeyStore(secrets.token_bytes(32))
    xpub = cold_wallet.account_xpub(family, 3)  # watch-only: the gateway never holds the cold keys
    shop = await make_shop(make_client, make_config, litecoind_node, faucet, receiver,
                           custody={"hot_wallet": {"LTC": {"ceiling": "0.4", "cold": xpub}}})
    for amount in ("1", "0.5"):
        await shop.funded(amount)
        sweep_id = await sweep_to_cold(shop.adapter)
        shop.faucet.mine(1)
        assert await sweep_to_cold(shop.adapter) == sweep_id
    sweeps = await shop.gateway.db.fetch_all("SELECT * FROM bitcoin_cold_sweeps ORDER BY cold_index")
    assert [(s["status"], s["cold_index"], s["destination"]) for s in sweeps] == [
        ("done", i, family.derive(cold_wallet, 3, i).address) for i in (0, 1)]
    ltc = (await run_custody_check(shop.gateway, "test")).by_coin()["LTC"]
    assert ltc.status == OK and ltc.difference == 0
    assert [h.amount for h in ltc.holdings if h.place == CustodyPlace.COLD] == [sum(int(s["amount"]) for s in sweeps)]

    # A destination rewritten by SQL is counted only if the xpub derives it: a stranger's address hides nothing.
    await shop.gateway.db.execute("UPDATE bitcoin_cold_sweeps SET destination = :d WHERE cold_index = 1",
                                  {"d": external_address(0)})
    ltc = (await run_custody_check(shop.gateway, "test")).by_coin()["LTC"]
    assert ltc.status == SHORTFALL and ltc.shortfall == int(sweeps[1]["amount"])


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
    await run_custody_check(shop.gateway, "test")  # still below: announced once, not at every check
    events = await shop.gateway.db.fetch_all("SELECT event_type, body FROM operator_events")
    assert [e["event_type"] for e in events] == ["custody.below_floor"]
    body = json.loads(events[0]["body"])
    assert (body["coin"], body["hot"], body["floor"]) == ("LTC", "0", "0.5")
    assert (await read_facts(shop.gateway)).operator_events == {("custody.below_floor", "pending"): 1}

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
    assert await shop.gateway.db.fetch_val("SELECT COUNT(*) FROM operator_events") == 1


def test_hot_wallet_limits_are_judged_at_start(make_config):
    """A float, an unknown key or coin, a ceiling below the floor or without a valid cold address stop the start."""
    from orbchain.core.custody.hot_wallet import HotWalletLimits, hot_wallet_limits
    from orbchain.core.infra.config import ConfigError
    from orbchain.core.startup import build_gateway

    from .test_payouts import BTC_DEST

    def limits(**table):
        return make_config(custody={"hot_wallet": {"BTC": table}})

    with pytest.raises(ConfigError, match="custody.hot_wallet.BTC.floor' must be a string"):
        limits(floor=0.5)
    with pytest.raises(ConfigError, match="unknown config key 'custody.hot_wallet.BTC.ceil'"):
        limits(ceil="1")
    with pytest.raises(ConfigError, match="NOPE' names a coin this gateway does not serve"):
        build_gateway(make_config(custody={"hot_wallet": {"NOPE": {"floor": "1"}}}))
    with pytest.raises(ConfigError, match="ceiling' is below its floor"):
        build_gateway(limits(floor="2", ceiling="1", cold=BTC_DEST))
    with pytest.raises(ConfigError, match="go together"):
        build_gateway(limits(ceiling="1"))
    with pytest.raises(ConfigError, match="cold' is not a BTC address"):
        build_gateway(limits(ceiling="1", cold="not-an-address"))
    gateway = build_gateway(limits(floor="0.5", ceiling="2", cold=BTC_DEST))
    assert hot_wallet_limits(gateway) == {"BTC": HotWalletLimits("BTC", 50_000_000, 200_000_000, BTC_DEST)}
