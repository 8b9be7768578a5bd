"""Above the operator's fee ceiling bitcoin-family payouts wait queued, on a real Litecoin Core node.

Regtest's ``estimatesmartfee`` has no data, so the estimate comes through
the adapter's estimator seam (``fee_estimator``): 200 sat/vB against a
ceiling of 50. The payouts wait (not failed, nothing signed or reserved),
with the reason on the payout, in ``/metrics`` and on the dashboard; when
the estimate falls to 20 they go, each in one transaction, confirmed once.
"""

from __future__ import annotations

from orbchain.chains.bitcoin import BitcoinAdapter
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.ledger.check import check_ledger
from orbchain.core.payouts import worker as payout_worker
from orbchain.core.payouts.fee_waits import FEE_RECHECK_SECONDS
from orbchain.core.watching.scanner import scan_chain
from orbchain.plugins.dashboard.payout_review import payout_history
from orbchain.web.keys import GATEWAY

from .litecoind import external_address, faucet, litecoind_node  # noqa: F401 - session fixtures
from .support import api, signup

LTC = 100_000_000
TOKEN = "fee-ceiling-metrics-token"
WAITING = "waiting: fee 200 sat/vB above the ceiling 50"


def estimate(sat_per_kvb: int):
    async def estimator() -> int:
        return sat_per_kvb
    return estimator


async def work(gateway, seconds: int) -> None:
    later = gateway.now() + seconds
    gateway.clock = lambda: later
    await payout_worker.process_payouts(gateway)


async def waiting_metric(client) -> str:
    text = await (await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})).text()
    return "\n".join(line for line in text.splitlines() if line.startswith("orbchain_payouts_waiting_for_fees{"))


async def test_payouts_wait_above_the_fee_ceiling_and_go_once_the_estimate_falls(
        make_client, make_config, litecoind_node, faucet):  # noqa: F811 - the fixtures
    node = litecoind_node
    block = node.plugin_block(fee_ceiling_sat_per_vbyte=50)
    client = await make_client(make_config(scheduler={"enabled": False}, metrics={"token": TOKEN},
                                           plugin={"bitcoin": {"LTC": block}}),
                               get_plugin_manager(blocked=["devnet"]))
    gateway = client.app[GATEWAY]
    adapter: BitcoinAdapter = gateway.chains.get("litecoin")
    merchant = await signup(client, "fee-ceiling-shop@example.com")
    await scan_chain(gateway, adapter)
    for _ in range(2):  # two deposits: two outputs, so both payouts can be signed in one tick
        status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                                 json={"currency": "LTC", "amount": "0.5"})
        assert status == 200, body
        faucet.pay(body["data"]["address"], LTC // 2)
    faucet.mine(6)
    await scan_chain(gateway, adapter)

    adapter.fee_estimator = estimate(200_000)  # 200 sat/vB: a fee spike
    track_ids = []
    for index in (5, 6):
        status, body = await api(client, "POST", "/v1/payout", merchant.payout_key,
                                 json={"currency": "LTC", "address": external_address(index), "amount": "0.2"})
        assert status == 200, body
        track_ids.append(body["data"]["track_id"])
    mempool_before = set(node.call("getrawmempool"))
    for _ in range(2):  # asked again after the recheck delay: still waiting, never failed
        await work(gateway, FEE_RECHECK_SECONDS)
    rows = await gateway.db.fetch_all("SELECT * FROM payouts WHERE merchant_id = :m", {"m": merchant.merchant_id})
    assert [(r["status"], r["stage"], r["last_error"], r["attempts"], r["tx_hash"]) for r in rows] == [
        ("Confirming", "queued", WAITING, 0, None)] * 2
    assert set(node.call("getrawmempool")) == mempool_before  # nothing signed, nothing sent
    assert await gateway.db.fetch_val("SELECT COUNT(*) FROM bitcoin_wallet_spends") == 0  # nothing reserved
    assert await waiting_metric(client) == 'orbchain_payouts_waiting_for_fees{coin="LTC"} 2.0'
    shown = await payout_history(gateway, merchant.merchant_id, 10)
    assert [p["words"] for p in shown["payouts"]] == [
        "Waiting for network fees to fall (fee 200 sat/vB above the ceiling 50); it is sent when they do"] * 2

    adapter.fee_estimator = estimate(20_000)  # the spike ends: 20 sat/vB
    await work(gateway, FEE_RECHECK_SECONDS)
    rows = await gateway.db.fetch_all("SELECT * FROM payouts WHERE merchant_id = :m", {"m": merchant.merchant_id})
    assert [(r["stage"], r["last_error"]) for r in rows] == [("broadcast", None)] * 2
    for row in rows:
        entry = node.call("getmempoolentry", row["tx_hash"])
        assert entry["fees"]["base"] * LTC * 1000 >= 20_000 * entry["vsize"]  # paid the rate that fell
    assert await waiting_metric(client) == ""
    faucet.mine(1)
    await scan_chain(gateway, adapter)
    await work(gateway, 5)
    rows = await gateway.db.fetch_all("SELECT * FROM payouts WHERE merchant_id = :m", {"m": merchant.merchant_id})
    assert sorted(r["track_id"] for r in rows) == sorted(track_ids)
    assert [r["status"] for r in rows] == ["Confirmed"] * 2
    assert len({r["tx_hash"] for r in rows}) == 2
    for row in rows:  # each paid once: one output to its destination, mined
        mined = node.call("getrawtransaction", row["tx_hash"], True, node.call("getbestblockhash"))
        assert [int(round(o["value"] * LTC)) for o in mined["vout"]].count(20_000_000) == 1
    assert (await check_ledger(gateway.db)).ok
