"""A Litecoin shop whose payout waits in the mempool: the set-up the bumping and replacement tests share.

The shop (devnet blocked) is paid 1 LTC on the node it is given, and asks a 0.3 LTC payout, which the worker
signs and broadcasts; blocks are then made by each test (``generateblock`` with nothing in them keeps the
payout waiting).
"""

from __future__ import annotations

from orbchain.chains.bitcoin import BitcoinAdapter
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.core.payouts import worker as payout_worker
from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY

from .litecoind import external_address
from .support import api, signup

LTC = 100_000_000


async def work(gateway, seconds: int = 5) -> None:
    later = gateway.now() + seconds
    gateway.clock = lambda: later
    await payout_worker.process_payouts(gateway)


async def funded_shop(make_client, make_config, node, faucet, email: str, deposits: int = 1,
                      ltc: dict | None = None, **signing):
    """A Litecoin shop (devnet blocked, scheduler off) paid ``deposits`` times 1 LTC, 6 blocks deep and scanned:
    (client, gateway, adapter, merchant). ``ltc``: more settings of its ``[plugin.bitcoin.LTC]`` block."""
    block = {**node.plugin_block(), **(ltc or {})}
    client = await make_client(make_config(scheduler={"enabled": False}, plugin={"bitcoin": {"LTC": block}},
                                           signing=signing), get_plugin_manager(blocked=["devnet"]))
    gateway = client.app[GATEWAY]
    adapter: BitcoinAdapter = gateway.chains.get("litecoin")
    merchant = await signup(client, email)
    await scan_chain(gateway, adapter)
    for _ in range(deposits):
        status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                                 json={"currency": "LTC", "amount": "1"})
        assert status == 200, body
        faucet.pay(body["data"]["address"], LTC)
    faucet.mine(6)
    await scan_chain(gateway, adapter)
    return client, gateway, adapter, merchant


async def stuck_payout(make_client, make_config, node, faucet, email: str, address_index: int = 5, **signing):
    """A shop whose 0.3 LTC payout (from a 1 LTC deposit) is broadcast and waits in the mempool."""
    client, gateway, adapter, merchant = await funded_shop(make_client, make_config, node, faucet, email, **signing)
    status, body = await api(client, "POST", "/v1/payout", merchant.payout_key,
                             json={"currency": "LTC", "address": external_address(address_index), "amount": "0.3"})
    assert status == 200, body
    await work(gateway)
    payout = await gateway.db.fetch_one("SELECT * FROM payouts WHERE track_id = :t", {"t": body["data"]["track_id"]})
    assert payout["stage"] == "broadcast", payout["last_error"]
    return client, gateway, adapter, merchant, payout
