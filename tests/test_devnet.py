"""The built-in devnet: chain, adapter, plugin wiring, config and the pay form (both databases)."""

from __future__ import annotations

import asyncio
import re

import pytest

from orbchain.chains.devnet import DevnetAdapter, DevnetChain, devnet_chain
from orbchain.chains.devnet.chain import InvalidAddress, InvalidAmount, InvalidReorg, UnknownBlock, UnservedCoin
from orbchain.core.types.chains import ChainAdapter, Transfer
from orbchain.core.infra.config import ConfigError
from orbchain.core.infra.db import Database
from orbchain.core.startup import build_gateway
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.web.app import collect_routes
from orbchain.web.keys import GATEWAY

BTC_ADDRESS = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
EVM_ADDRESS = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
HEX64 = re.compile(r"^[0-9a-f]{64}$")
PAY_ROUTE = "POST /pay/{track_id}/devnet-pay"


@pytest.fixture
def chain(gateway) -> DevnetChain:
    return devnet_chain(gateway)


# -- the chain ------------------------------------------------------------------


async def test_genesis_is_created_on_first_use(chain):
    tip = await chain.tip()
    assert tip.height == 0 and HEX64.match(tip.hash)
    assert await chain.tip() == tip
    genesis = await chain.block(0)
    assert genesis.parent_hash == "0" * 64 and genesis.transfers == ()


async def test_mining_links_blocks_with_unique_hashes(chain):
    genesis = await chain.tip()
    refs = await chain.mine(3)
    assert [r.height for r in refs] == [1, 2, 3] and await chain.tip() == refs[-1]
    hashes = {genesis.hash, *(r.hash for r in refs)}
    assert len(hashes) == 4 and all(HEX64.match(h) for h in hashes)
    previous = genesis.hash
    for ref in refs:
        block = await chain.block(ref.height)
        assert block.hash == ref.hash and block.parent_hash == previous and block.ref == ref
        previous = ref.hash


async def test_pay_waits_in_the_mempool_then_is_mined(gateway, chain):
    btc = gateway.coins["BTC"]
    tx = await chain.pay(btc, BTC_ADDRESS, 50_000_000)
    assert HEX64.match(tx)
    assert await chain.mempool() == (Transfer(tx, 0, BTC_ADDRESS, "BTC", 50_000_000),)
    assert await chain.tx_status(tx) == ("mempool", None)
    (ref,) = await chain.mine()
    block = await chain.block(ref.height)
    assert block.transfers == (Transfer(tx, 0, BTC_ADDRESS, "BTC", 50_000_000),)
    assert await chain.mempool() == ()
    (empty,) = await chain.mine()
    assert (await chain.block(empty.height)).transfers == ()


async def test_amounts_beyond_64_bits_and_addresses_are_normalised(gateway, chain):
    eth = gateway.coins["ETH"]
    huge = 2**70 + 1  # wei: does not fit SQLite's integers
    tx = await chain.pay(eth, EVM_ADDRESS.lower(), huge)
    token = await chain.pay(gateway.coins["USDT_ERC20"], EVM_ADDRESS, 5_000_000)
    (ref,) = await chain.mine()
    transfers = {t.tx_hash: t for t in (await chain.block(ref.height)).transfers}
    assert transfers[tx] == Transfer(tx, 0, EVM_ADDRESS, "ETH", huge)  # EIP-55 form, as the gateway derives
    assert transfers[token].coin == "USDT_ERC20" and transfers[token].amount == 5_000_000


async def test_bad_addresses_amounts_and_coins_are_refused(gateway, chain):
    btc, eth = gateway.coins["BTC"], gateway.coins["ETH"]
    with pytest.raises(InvalidAddress, match="not a valid BTC address"):
        await chain.pay(btc, EVM_ADDRESS, 1)
    with pytest.raises(InvalidAddress, match="not a valid ETH address"):
        await chain.pay(eth, BTC_ADDRESS, 1)
    with pytest.raises(InvalidAddress):
        await chain.pay(eth, "0x9858EfFD232B4033E47d90003D41EC34EcaEda95", 1)  # bad checksum
    for amount in (0, -1, True, 1.5, "1"):
        with pytest.raises(InvalidAmount):
            await chain.pay(btc, BTC_ADDRESS, amount)
    with pytest.raises(UnservedCoin):
        await chain.pay(gateway.coins["XMR"], "4" * 95, 1)
    assert isinstance(InvalidAddress("x"), ValueError)
    assert await chain.mempool() == ()


async def test_reorg_replaces_blocks_and_returns_or_drops_their_txs(gateway, chain):
    btc = gateway.coins["BTC"]
    kept = await chain.pay(btc, BTC_ADDRESS, 1_000)
    (b1,) = await chain.mine()
    dropped = await chain.pay(btc, BTC_ADDRESS, 2_000)
    (b2,) = await chain.mine()
    waiting = await chain.pay(btc, BTC_ADDRESS, 3_000)
    genesis = await chain.block(0)

    await chain.reorg(2, drop=[dropped])

    tip = await chain.tip()
    assert tip.height == 3  # depth + 1 new blocks: the new chain is longer
    new1, new2 = await chain.block(1), await chain.block(2)
    assert new1.hash != b1.hash and new2.hash != b2.hash
    assert new1.parent_hash == genesis.hash and (await chain.block(0)).hash == genesis.hash
    assert new1.transfers == new2.transfers == (await chain.block(3)).transfers == ()
    assert {t.tx_hash for t in await chain.mempool()} == {kept, waiting}
    assert await chain.tx_status(dropped) == ("dropped", None)

    (b4,) = await chain.mine()
    assert {t.tx_hash for t in (await chain.block(b4.height)).transfers} == {kept, waiting}
    assert await chain.tx_status(dropped) == ("dropped", None)


async def test_reorg_can_drop_a_mempool_tx(gateway, chain):
    await chain.mine()
    tx = await chain.pay(gateway.coins["BTC"], BTC_ADDRESS, 1)
    await chain.reorg(1, drop=[tx.upper()])
    assert await chain.mempool() == () and await chain.tx_status(tx) == ("dropped", None)


async def test_bad_reorgs_change_nothing(gateway, chain):
    tx = await chain.pay(gateway.coins["BTC"], BTC_ADDRESS, 1)
    refs = await chain.mine(2)
    with pytest.raises(InvalidReorg, match="genesis"):
        await chain.reorg(3)
    with pytest.raises(InvalidReorg):
        await chain.reorg(0)
    with pytest.raises(InvalidReorg, match="cannot drop"):
        await chain.reorg(1, drop=["ab" * 32])
    with pytest.raises(InvalidReorg, match="cannot drop"):
        await chain.reorg(1, drop=[tx])  # mined at height 1, below the replaced block
    assert await chain.tip() == refs[-1] and await chain.tx_status(tx) == ("mined", 1)


async def test_block_above_the_tip_is_an_error(chain):
    with pytest.raises(UnknownBlock):
        await chain.block(5)


async def test_concurrent_mining_never_forks(gateway, config):
    """Two database handles stand for two processes (server job and CLI)."""
    other = Database(config.database_url)
    await other.connect()
    try:
        one = devnet_chain(gateway)
        two = DevnetChain(other, one.coins)
        tx = await one.pay(gateway.coins["BTC"], BTC_ADDRESS, 7)
        results = await asyncio.gather(*(c.mine() for c in (one, two) * 5), two.tip(), one.tip())
    finally:
        await other.disconnect()
    mined = [ref for refs in results[:10] for ref in refs]
    assert sorted(r.height for r in mined) == list(range(1, 11))
    assert len({r.hash for r in mined}) == 10
    for height in range(1, 11):
        assert (await one.block(height)).parent_hash == (await one.block(height - 1)).hash
    assert await one.tx_status(tx) == ("mined", 1)


async def test_concurrent_first_use_agrees_on_one_genesis(gateway, config):
    other = Database(config.database_url)
    await other.connect()
    try:
        one, two = devnet_chain(gateway), DevnetChain(other)
        tips = await asyncio.gather(one.tip(), two.tip(), one.mine(), two.mine())
    finally:
        await other.disconnect()
    one_genesis, two_genesis = await one.block(0), await DevnetChain(gateway.db).block(0)
    assert one_genesis == two_genesis
    for tip in tips[:2]:
        assert (await one.block(tip.height)).hash == tip.hash
    assert (await one.tip()).height == 2


# -- the adapter and the plugin ---------------------------------------------------


async def test_adapter_serves_every_simulable_coin(gateway):
    adapter = gateway.chains["devnet"]
    assert isinstance(adapter, DevnetAdapter) and isinstance(adapter, ChainAdapter)
    assert adapter.name == "devnet" and adapter.network == "mainnet"
    assert adapter.scan_seconds == 1.0 and adapter.start_height == 0
    assert {"BTC", "LTC", "DOGE", "ETH", "USDT_ERC20", "TRX", "SOL"} <= set(adapter.coins)
    assert not {"XMR", "BTC_LN"} & set(adapter.coins)
    assert adapter.serves("BTC") and not adapter.serves("XMR")


async def test_adapter_reports_blocks_and_mempool(gateway):
    adapter = gateway.chains["devnet"]
    tx = await adapter.chain.pay(gateway.coins["LTC"], "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh", 123)
    assert [t.tx_hash for t in await adapter.mempool()] == [tx]
    (ref,) = await adapter.chain.mine()
    assert await adapter.tip() == ref
    block = await adapter.block(ref.height)
    assert [(t.tx_hash, t.coin, t.amount) for t in block.transfers] == [(tx, "LTC", 123)]
    assert isinstance(block.timestamp, int) and block.timestamp > 0


def test_mining_job_and_migrations_are_registered(make_config):
    gateway = build_gateway(make_config(plugin={"devnet": {"block_seconds": 0.5}}))
    assert gateway.jobs["devnet.mine"].seconds == 0.5
    assert any(m.namespace == "devnet" for m in gateway.migrations)
    assert PAY_ROUTE in collect_routes(gateway).names()


async def test_mining_job_mines_one_block(gateway):
    await gateway.jobs["devnet.mine"].func(gateway)
    assert (await devnet_chain(gateway).tip()).height == 1


def test_disabled_in_production_by_default(make_config):
    gateway = build_gateway(make_config(server={"environment": "production"}))
    assert "devnet" not in gateway.chains and "devnet.mine" not in gateway.jobs
    assert devnet_chain(gateway) is None
    assert PAY_ROUTE not in collect_routes(gateway).names()
    # The schema is still there, so switching it on later needs no migration step.
    assert any(m.namespace == "devnet" for m in gateway.migrations)


def test_production_needs_an_explicit_switch_and_never_gets_the_pay_form(make_config):
    gateway = build_gateway(make_config(server={"environment": "production"}, plugin={"devnet": {"enabled": True}}))
    assert "devnet" in gateway.chains and "devnet.mine" in gateway.jobs
    assert PAY_ROUTE not in collect_routes(gateway).names()


def test_can_be_switched_off_or_blocked_in_development(make_config):
    off = build_gateway(make_config(plugin={"devnet": {"enabled": False}}))
    assert "devnet" not in off.chains and PAY_ROUTE not in collect_routes(off).names()
    blocked = make_config(plugins={"blocked": ["devnet"]})
    assert "devnet" not in build_gateway(blocked, get_plugin_manager(blocked=["devnet"])).chains


def test_coins_setting_limits_the_adapter(make_config):
    gateway = build_gateway(make_config(plugin={"devnet": {"coins": ["BTC", "USDT_TRC20"], "scan_seconds": 2}}))
    adapter = gateway.chains["devnet"]
    assert adapter.coins == ("BTC", "USDT_TRC20") and adapter.scan_seconds == 2.0
    assert adapter.chain.serves("BTC") and not adapter.chain.serves("ETH")


@pytest.mark.parametrize(
    "block, key",
    [
        ({"block_seconds": 0}, "plugin.devnet.block_seconds"),
        ({"block_seconds": -1}, "plugin.devnet.block_seconds"),
        ({"block_seconds": "3"}, "plugin.devnet.block_seconds"),
        ({"block_seconds": True}, "plugin.devnet.block_seconds"),
        ({"scan_seconds": 0}, "plugin.devnet.scan_seconds"),
        ({"enabled": "yes"}, "plugin.devnet.enabled"),
        ({"coins": "BTC"}, "plugin.devnet.coins"),
        ({"coins": []}, "plugin.devnet.coins"),
        ({"coins": ["NOPE"]}, "plugin.devnet.coins"),
        ({"coins": ["XMR"]}, "plugin.devnet.coins"),
        ({"coins": ["BTC_LN"]}, "plugin.devnet.coins"),
        ({"blok_seconds": 3}, "plugin.devnet.blok_seconds"),
    ],
)
def test_config_errors_name_the_key(make_config, block, key):
    with pytest.raises(ConfigError) as info:
        build_gateway(make_config(plugin={"devnet": block}))
    assert key in str(info.value)


# -- the pay form -------------------------------------------------------------------


async def _app_with_payment(make_client, make_config, *, status="Waiting", currency="BTC", address=BTC_ADDRESS,
                            pay_amount=12_345, **sections):
    from orbchain.core.accounts.merchants import sign_up

    sections.setdefault("scheduler", {"enabled": False})  # no mining job racing the assertions
    client = await make_client(make_config(**sections))
    gw = client.app[GATEWAY]
    merchant = await sign_up(gw, "devnet@example.com", "correct horse battery")
    now = gw.now()
    await gw.db.execute(
        "INSERT INTO payments (track_id, merchant_id, type, status, currency, pay_currency, pay_amount, address,"
        " chain, created_at, updated_at) VALUES ('trk1', :m, 'invoice', :s, :c, :c, :a, :addr, 'devnet', :t, :t)",
        {"m": merchant.merchant_id, "s": status, "c": currency, "addr": address, "t": now,
         "a": None if pay_amount is None else gw.db.amount_param(pay_amount)},
    )
    return client, gw


async def test_pay_form_sends_the_payment_amount_and_redirects(make_client, make_config):
    client, gw = await _app_with_payment(make_client, make_config)
    response = await client.post("/pay/trk1/devnet-pay", allow_redirects=False)
    assert response.status == 303 and response.headers["Location"] == "/pay/trk1"
    (transfer,) = await devnet_chain(gw).mempool()
    assert (transfer.address, transfer.coin, transfer.amount) == (BTC_ADDRESS, "BTC", 12_345)


async def test_pay_form_amount_lets_a_tester_underpay(make_client, make_config):
    client, gw = await _app_with_payment(make_client, make_config, status="Paying", pay_amount=None)
    response = await client.post("/pay/trk1/devnet-pay", data={"amount": "0.0001"}, allow_redirects=False)
    assert response.status == 303
    assert [t.amount for t in await devnet_chain(gw).mempool()] == [10_000]


async def test_pay_form_refusals(make_client, make_config):
    client, gw = await _app_with_payment(make_client, make_config)
    assert (await client.post("/pay/nope/devnet-pay")).status == 404
    bad = await client.post("/pay/trk1/devnet-pay", data={"amount": "0.000000001"}, allow_redirects=False)
    # A form for people: the refusal is a page that names the field.
    assert bad.status == 400 and bad.content_type == "text/html" and "amount" in await bad.text()
    await gw.db.execute("UPDATE payments SET status = 'Paid' WHERE track_id = 'trk1'")
    assert (await client.post("/pay/trk1/devnet-pay", allow_redirects=False)).status == 409
    await gw.db.execute("UPDATE payments SET status = 'Waiting', pay_currency = 'XMR' WHERE track_id = 'trk1'")
    assert (await client.post("/pay/trk1/devnet-pay", allow_redirects=False)).status == 400
    assert await devnet_chain(gw).mempool() == ()


def test_pay_form_action_tells_the_hosted_page_when_to_show_the_form(make_config):
    from orbchain.chains.devnet import pay_form_action

    dev = build_gateway(make_config())
    assert pay_form_action(dev, "a b", "BTC", "Waiting") == "/pay/a%20b/devnet-pay"
    assert pay_form_action(dev, "t", "BTC", "PAYING") == "/pay/t/devnet-pay"
    assert pay_form_action(dev, "t", "BTC", "Paid") is None
    assert pay_form_action(dev, "t", "XMR", "Waiting") is None
    prod = build_gateway(make_config(server={"environment": "production"}, plugin={"devnet": {"enabled": True}}))
    assert pay_form_action(prod, "t", "BTC", "Waiting") is None


async def test_pay_form_obeys_maintenance(make_client, make_config):
    client, gw = await _app_with_payment(make_client, make_config)
    gw.maintenance = True
    assert (await client.post("/pay/trk1/devnet-pay", allow_redirects=False)).status == 503
    assert await devnet_chain(gw).mempool() == ()
