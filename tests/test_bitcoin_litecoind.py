"""The bitcoin plugin against a real Litecoin Core regtest node (``tests/litecoind.py``).

Deposits: seen in the mempool (Paying), credited after 6 blocks (Paid, webhooks
delivered), a reorganisation before and after the threshold, catching up after
downtime. Payouts: signed by the gateway, accepted by the node (the node is the
judge of our signatures), confirmed, change spent again; a refused broadcast
and a double-spent input fail the payout and re-credit the merchant; a destination changed by SQL
after the reserve is held by the signing policy, never signed.
Custody (``orbchain custody check``): zero difference after payments,
payouts and a refund, at every step; coins taken outside the gateway are a
shortfall of exactly their amount.
"""

from __future__ import annotations

import secrets
from decimal import Decimal

import pytest

from orbchain.chains.bitcoin import BitcoinAdapter, wallet
from orbchain.chains.bitcoin.transactions import Outpoint, Output, Spend, script_for_address, sign_transaction
from orbchain.core.custody.report import OK, SHORTFALL
from orbchain.core.custody.run import run_custody_check
from orbchain.core.payouts import worker as payout_worker
from orbchain.core.payouts.policy_holds import cancel_policy_hold
from orbchain.core.addresses.store import keystore
from orbchain.core.types.chains import ChainUnavailable
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.watching.scanner import scan_chain
from orbchain.core.events.webhooks import deliver_due
from orbchain.web.keys import GATEWAY
from tests.families import get_family

from .litecoind import external_address, faucet, litecoind_node  # noqa: F401 - session fixtures
from .support import WebhookReceiver, api, signup

LTC = 100_000_000


@pytest.fixture
async def receiver():
    hook = WebhookReceiver()
    yield hook
    await hook.close()


class Shop:
    def __init__(self, client, merchant, secret, faucet) -> None:  # noqa: F811 - the fixture, passed on
        self.client = client
        self.merchant = merchant
        self.secret = secret
        self.faucet = faucet
        self.gateway = client.app[GATEWAY]
        self.adapter: BitcoinAdapter = self.gateway.chains.get("litecoin")

    async def scan(self):
        return await scan_chain(self.gateway, self.adapter)

    async def mine(self, blocks: int = 1):
        self.faucet.mine(blocks)
        return await self.scan()

    async def payment(self, amount: str = "0.5") -> dict:
        status, body = await api(self.client, "POST", "/v1/payment/white-label", self.merchant.merchant_key,
                                 json={"currency": "LTC", "amount": amount})
        assert status == 200, body
        return body["data"]

    async def status(self, track_id: str) -> dict:
        return (await api(self.client, "GET", f"/v1/payment/{track_id}", self.merchant.merchant_key))[1]["data"]

    async def balance(self) -> dict[str, str]:
        body = (await api(self.client, "GET", "/v1/general/account/balance", self.merchant.general_key))[1]
        return {b["coin"]: b["amount"] for b in body["data"]["balances"]}

    async def funded(self, amount: str = "1") -> dict:
        """A Paid payment of ``amount`` LTC: the merchant holds 99 % of it, the hot wallet all of it."""
        payment = await self.payment(amount)
        self.faucet.pay(payment["address"], int(Decimal(amount) * LTC))
        await self.mine(6)
        assert (await self.status(payment["track_id"]))["status"] == "Paid"
        return payment


async def make_shop(make_client, make_config, node, faucet, receiver,  # noqa: F811 - the fixture, passed on
                    **sections: dict) -> Shop:
    config = make_config(scheduler={"enabled": False}, plugin={"bitcoin": {"LTC": node.plugin_block()}}, **sections)
    client = await make_client(config, get_plugin_manager(blocked=["devnet"]))
    merchant = await signup(client, "ltc-shop@example.com")
    url = await receiver.start()
    status, body = await api(client, "PUT", "/dashboard/settings/webhook", merchant.jwt, json={"webhook_url": url})
    assert status == 200, body
    shop = Shop(client, merchant, body["data"]["webhook_secret"], faucet)
    await shop.scan()  # a fresh database starts at the tip
    return shop


@pytest.fixture
async def shop(make_client, make_config, litecoind_node, faucet, receiver) -> Shop:  # noqa: F811
    return await make_shop(make_client, make_config, litecoind_node, faucet, receiver)


# -- deposits -----------------------------------------------------------------------------------


async def test_deposit_seen_in_mempool_then_paid_after_six_blocks(shop, receiver):
    payment = await shop.payment("0.5")
    assert payment["address"].startswith("rltc1q")
    txid = shop.faucet.pay(payment["address"], LTC // 2)
    await shop.scan()
    paying = await shop.status(payment["track_id"])
    assert paying["status"] == "Paying"
    assert paying["transactions"][0]["tx_hash"] == txid and paying["transactions"][0]["confirmations"] == 0

    await shop.mine(5)
    paying = await shop.status(payment["track_id"])
    assert paying["status"] == "Paying" and paying["transactions"][0]["confirmations"] == 5
    await shop.mine(1)
    paid = await shop.status(payment["track_id"])
    assert paid["status"] == "Paid"
    assert paid["transactions"][0]["status"] == "CREDITED" and paid["transactions"][0]["amount"] == "0.5"
    assert await shop.balance() == {"LTC": "0.495"}

    await deliver_due(shop.gateway)
    bodies = receiver.verified(shop.secret)
    assert sorted(b["event_type"] for b in bodies) == ["deposit.credited", "payment.paid", "payment.paying"]
    credited = receiver.of_type("deposit.credited")[0]
    assert credited["tx_hash"] == txid and credited["amount"] == "0.5" and credited["net_amount"] == "0.495"


async def test_reorg_before_and_after_the_threshold(shop, receiver, litecoind_node):  # noqa: F811
    node = litecoind_node
    payment = await shop.payment("0.25")
    txid = shop.faucet.pay(payment["address"], LTC // 4)
    block_hash = (await shop.mine(1)) and node.call("getblockhash", node.height())
    assert txid in node.call("getblock", block_hash, 1)["tx"]
    assert (await shop.status(payment["track_id"]))["transactions"][0]["confirmations"] == 1

    # Before the threshold: the block leaves the best chain, the deposit is back to unconfirmed.
    node.call("invalidateblock", block_hash)
    report = await shop.scan()
    assert report.disconnected == 1
    row = (await shop.status(payment["track_id"]))["transactions"][0]
    assert row["confirmations"] == 0 and row["status"] == "PENDING"
    node.call("reconsiderblock", block_hash)
    await shop.scan()
    assert (await shop.status(payment["track_id"]))["transactions"][0]["confirmations"] == 1

    # After it: credited, then reversed with an event, then credited again when the block returns.
    await shop.mine(5)
    assert (await shop.status(payment["track_id"]))["status"] == "Paid"
    assert await shop.balance() == {"LTC": "0.2475"}
    node.call("invalidateblock", block_hash)
    report = await shop.scan()
    assert report.disconnected == 6
    assert (await shop.status(payment["track_id"]))["status"] == "Paying"
    assert (await shop.balance()).get("LTC", "0") == "0"
    await deliver_due(shop.gateway)
    reversed_ = receiver.of_type("deposit.reversed")
    assert len(reversed_) == 1 and reversed_[0]["tx_hash"] == txid
    node.call("reconsiderblock", block_hash)
    await shop.scan()
    assert (await shop.status(payment["track_id"]))["status"] == "Paid"
    assert await shop.balance() == {"LTC": "0.2475"}


async def test_catches_up_after_the_gateway_was_stopped(make_client, make_config, litecoind_node, faucet,  # noqa: F811
                                                       receiver):
    shop = await make_shop(make_client, make_config, litecoind_node, faucet, receiver)
    payment = await shop.payment("0.1")
    faucet.pay(payment["address"], LTC // 10)
    await shop.scan()
    assert (await shop.status(payment["track_id"]))["status"] == "Paying"
    await shop.client.close()  # the gateway is down while the chain moves on

    faucet.mine(8)
    config = make_config(scheduler={"enabled": False}, plugin={"bitcoin": {"LTC": litecoind_node.plugin_block()}})
    restarted = await make_client(config, get_plugin_manager(blocked=["devnet"]))
    again = Shop(restarted, shop.merchant, shop.secret, faucet)
    report = await again.scan()
    assert report.blocks == 8 and report.credited == 1
    paid = await again.status(payment["track_id"])
    assert paid["status"] == "Paid" and paid["transactions"][0]["confirmations"] == 8


# -- payouts ------------------------------------------------------------------------------------


async def create_payout(shop: Shop, amount: str, address: str) -> dict:
    status, body = await api(shop.client, "POST", "/v1/payout", shop.merchant.payout_key,
                             json={"currency": "LTC", "address": address, "amount": amount})
    assert status == 200, body
    return body["data"]


async def payout_row(shop: Shop, track_id: str):
    return await shop.gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": track_id})


async def network_fees(shop: Shop) -> int:
    rows = await shop.gateway.db.fetch_all("SELECT network_fee FROM payouts WHERE status = 'Confirmed'")
    return sum(int(r["network_fee"] or 0) for r in rows)


async def custody_difference(shop: Shop) -> int | None:
    """The custody check's held - owed for LTC (asserting the books agree with the node too)."""
    ltc = (await run_custody_check(shop.gateway, "test")).by_coin()["LTC"]
    assert ltc.books_difference == ltc.difference, ltc
    return ltc.difference


async def work(shop: Shop, seconds: int = 5) -> int:
    later = shop.gateway.now() + seconds
    shop.gateway.clock = lambda: later
    return await payout_worker.process_payouts(shop.gateway)


async def test_payout_signed_by_the_gateway_is_accepted_and_confirmed(shop, litecoind_node):  # noqa: F811
    node = litecoind_node
    paid = await shop.funded("1")
    assert await custody_difference(shop) == 0
    destination = external_address(0)
    payout = await create_payout(shop, "0.3", destination)
    await work(shop)
    assert await custody_difference(shop) == 0  # in flight: its inputs at their booked value
    row = await payout_row(shop, payout["track_id"])
    assert row["stage"] == "broadcast", row["last_error"]
    assert row["tx_hash"] in node.call("getrawmempool")  # sendrawtransaction accepted our signatures
    tx = node.call("getrawtransaction", row["tx_hash"], True)
    assert tx["vout"][0]["value"] == Decimal("0.3") and tx["vout"][0]["scriptPubKey"]["addresses"] == [destination]
    assert tx["vsize"] <= 141
    # Replaceable by fee (BIP 125), so a stuck payout can be bumped where the node allows it.
    assert {i["sequence"] for i in tx["vin"]} == {0xFFFFFFFD}
    assert node.call("getmempoolentry", row["tx_hash"])["bip125-replaceable"] is True

    shop.faucet.mine(1)
    assert await custody_difference(shop) == 0  # mined, the ledger not yet told: still in flight for both
    await work(shop, 10)
    row = await payout_row(shop, payout["track_id"])
    assert row["status"] == "Confirmed" and row["confirmations"] == 1
    assert await shop.balance() == {"LTC": "0.69"}
    change = await shop.gateway.db.fetch_all("SELECT * FROM bitcoin_change_outputs WHERE payout_id = :p",
                                             {"p": row["id"]})
    assert [c["status"] for c in change] == ["available"]
    fee = LTC - 30_000_000 - int(change[0]["amount"])
    assert 0 < fee < 10_000  # 10 sat/vB fallback on regtest

    # The next payout spends the change (the gateway's internal key) and confirms too.
    second = await create_payout(shop, "0.2", external_address(1))
    await work(shop)
    spent = await payout_row(shop, second["track_id"])
    assert spent["stage"] == "broadcast", spent["last_error"]
    decoded = node.call("getrawtransaction", spent["tx_hash"], True)
    assert [(i["txid"], i["vout"]) for i in decoded["vin"]] == [(row["tx_hash"], 1)]
    shop.faucet.mine(1)
    await work(shop, 10)
    assert (await payout_row(shop, second["track_id"]))["status"] == "Confirmed"
    assert await shop.balance() == {"LTC": "0.49"}

    # A refund is a payout too; afterwards the node holds exactly what the ledger owes.
    status, body = await api(shop.client, "POST", f"/v1/payment/{paid['track_id']}/refund", shop.merchant.payout_key,
                             json={"amount": "0.1", "destination": external_address(4)})
    assert status == 200, body
    await work(shop)
    shop.faucet.mine(1)
    await work(shop, 10)
    assert (await payout_row(shop, body["data"]["track_id"]))["status"] == "Confirmed"
    report = await run_custody_check(shop.gateway, "test")
    ltc = report.by_coin()["LTC"]
    assert ltc.status == OK and ltc.difference == 0 and report.ok
    assert ltc.held == ltc.owed.total == LTC - 60_000_000 - (await network_fees(shop))


async def test_a_payout_redirected_by_sql_is_held_not_signed_and_cancel_recredits_it(shop, litecoind_node):  # noqa: F811
    """The signer's policy on a real node: a destination changed in the database after the reserve is never paid."""
    await shop.funded("1")
    payout = await create_payout(shop, "0.3", external_address(0))
    attacker = external_address(2)
    await shop.gateway.db.execute("UPDATE payouts SET destination = :d WHERE track_id = :t",
                                  {"d": attacker, "t": payout["track_id"]})
    await work(shop)
    row = await payout_row(shop, payout["track_id"])
    assert (row["stage"], row["policy_hold"], row["tx_hash"]) == ("policy_held", "binding_mismatch", None)
    paid_to = [out["scriptPubKey"].get("addresses") for txid in litecoind_node.call("getrawmempool")
               for out in litecoind_node.call("getrawtransaction", txid, True)["vout"]]
    assert [attacker] not in paid_to
    assert await cancel_policy_hold(shop.gateway, row["id"], "operator") is not None
    assert await shop.balance() == {"LTC": "0.99"}


async def test_refused_broadcast_fails_the_payout_and_releases_its_inputs(shop, monkeypatch):
    await shop.funded("1")

    async def no_fee() -> int:
        return 0

    monkeypatch.setattr(shop.adapter, "fee_rate", no_fee)  # the node refuses a zero-fee transaction
    payout = await create_payout(shop, "0.4", external_address(2))
    await work(shop)
    row = await payout_row(shop, payout["track_id"])
    assert row["status"] == "Failed" and row["failure_reason"].startswith("broadcast_rejected: min relay fee")
    assert await shop.balance() == {"LTC": "0.99"}  # re-credited
    assert len(await wallet.spendable_outputs(shop.gateway, "litecoin", "regtest")) == 1  # input released

    monkeypatch.undo()
    retry = await create_payout(shop, "0.4", external_address(2))
    await work(shop)
    assert (await payout_row(shop, retry["track_id"]))["stage"] == "broadcast"


async def test_double_spent_input_fails_the_payout(shop, monkeypatch, litecoind_node):  # noqa: F811
    node = litecoind_node
    payment = await shop.funded("1")

    async def node_down(signed) -> None:
        raise ChainUnavailable("node down")

    monkeypatch.setattr(shop.adapter, "broadcast", node_down)
    payout = await create_payout(shop, "0.5", external_address(3))
    await work(shop)
    row = await payout_row(shop, payout["track_id"])
    assert row["stage"] == "signed" and row["status"] == "Confirming"

    # Meanwhile the deposit output is spent by a transaction the gateway did not make.
    gateway = shop.gateway
    deposit = await gateway.db.fetch_one(
        "SELECT d.tx_hash, d.output_index, d.amount, a.key_index, m.key_account FROM deposits d"
        " JOIN deposit_addresses a ON a.address = d.address JOIN merchants m ON m.id = a.merchant_id"
        " WHERE d.address = :a", {"a": payment["address"]})
    family = get_family("ltc", "regtest")
    key = keystore(gateway).private_key_for(family, deposit["key_account"], deposit["key_index"])
    thief = external_address(100 + secrets.randbelow(10**9))  # fresh on the shared node, for the cold check below
    theft = sign_transaction(
        [Spend(Outpoint(deposit["tx_hash"], deposit["output_index"]), LTC, "p2wpkh", key)],
        [Output(LTC - 20_000, script_for_address("ltc", "regtest", thief))])
    node.call("sendrawtransaction", theft.hex)
    shop.faucet.mine(1)

    monkeypatch.undo()
    await gateway.db.execute("UPDATE payouts SET next_attempt_at = 0 WHERE id = :id", {"id": row["id"]})
    await work(shop)
    row = await payout_row(shop, payout["track_id"])
    assert row["status"] == "Failed" and "missingorspent" in row["failure_reason"]
    assert await shop.balance() == {"LTC": "0.99"}
    state = await gateway.db.fetch_val("SELECT state FROM bitcoin_wallet_spends WHERE tx_hash = :h",
                                       {"h": deposit["tx_hash"]})
    assert state == "spent"  # never selected again
    assert await wallet.spendable_outputs(gateway, "litecoin", "regtest") == []
    # The merchant was re-credited, but the coins are gone: the custody check says so, to the satoshi.
    report = await run_custody_check(gateway, "test")
    ltc = report.by_coin()["LTC"]
    assert ltc.status == SHORTFALL and ltc.shortfall == LTC and ltc.held == 0 and ltc.owed.total == LTC
    assert report.lines(lambda coin, units: str(units))[-1] == f"custody SHORTFALL: LTC {LTC}"
    # Had the operator moved it to its own cold address (given as watch-only), only the fee would be missing.
    config = gateway.config
    gateway.config = config.with_overrides(custody={"cold": [f"litecoin:{thief}"]})
    try:
        ltc = (await run_custody_check(gateway, "test")).by_coin()["LTC"]
    finally:
        gateway.config = config
    assert [(h.place, h.amount) for h in ltc.holdings if h.place == "cold"] == [("cold", LTC - 20_000)]
    assert ltc.shortfall == 20_000


async def test_dust_is_left_and_reported_by_the_custody_check(shop):
    """An output worth less than the fee to spend it now is counted on its own line and in the metric."""
    await shop.funded("1")
    small = await shop.payment("0.001")
    shop.faucet.pay(small["address"], 100_000)
    await shop.mine(6)

    async def spike() -> int:  # 2,000 sat/vB: spending a 68 vB input costs 136,000 sat
        return 2_000_000

    gateway = shop.gateway
    gateway.chains.get("litecoin").fee_estimator = spike
    report = await run_custody_check(gateway, "test")
    ltc = report.by_coin()["LTC"]
    assert [(h.amount, h.count) for h in ltc.holdings if h.place == "dust"] == [(100_000, 1)]
    assert ltc.difference == 0 and ltc.hot == LTC  # still held and owed; not what a payout can spend
    assert "  dust: 100000 (1 asked, node)" in report.lines(lambda coin, units: str(units))
    assert gateway.metrics.wallet_dust_units.labels("LTC")._value.get() == 100_000
    assert gateway.metrics.wallet_dust_outputs.labels("LTC")._value.get() == 1
    spendable = await wallet.spendable_outputs(gateway, "litecoin", "regtest")
    selection = wallet.select_outputs(spendable, 50_000_000, rate_sat_per_kvb=2_000_000, kind="p2wpkh",
                                      destination_script=b"\x00" * 22, change_script=b"\x00" * 22, change_min=1000)
    assert [o.amount for o in selection.inputs] == [LTC]  # never picked to be spent at a loss
