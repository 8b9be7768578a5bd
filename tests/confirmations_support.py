"""A payment on the real litecoind counted one confirmation at a time, for the live views' tests (issue 43).

The live views keep only a payment's latest state: a count shown for a
moment and replaced before anyone looked is indistinguishable from one
never sent. So ``count_every_confirmation`` mines ONE block, scans, and
awaits the watcher's ``shown(count)`` before it mines the next: a view that
misses any count from 0 (the transaction in the node's mempool) to the
deposit's threshold (Paid) fails at that count, by name.

The gateway is an in-process app on the session's litecoind
(``tests/litecoind.py``) with its scheduler off; the scan runs when the test
says, so the only way a count can reach a view is the change feed.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any, Awaitable, Callable

from orbchain.core.watching.scanner import scan_chain
from orbchain.web.keys import GATEWAY

from .litecoind import Faucet, Node
from .live_support import READ_TIMEOUT, EventStream

LTC = 100_000_000


def litecoin_plugins(node: Node) -> dict[str, Any]:
    """The ``plugin`` section of a gateway scanning ``node`` for LTC; the devnet keeps BTC only, so LTC is the
    node's. The scheduler stays off in these tests: the test scans."""
    return {"bitcoin": {"LTC": node.plugin_block()}, "devnet": {"coins": ["BTC"]}}


async def ltc_invoice(client: Any, key: str) -> dict[str, Any]:
    """An invoice payable in LTC only, scanned from the node's current tip."""
    response = await client.post("/v1/payment/invoice", headers={"merchant_api_key": key},
                                 json={"amount": "0.2", "currency": "LTC", "accepted_coins": ["LTC"]})
    assert response.status == 200, await response.text()
    gateway = client.app[GATEWAY]
    await scan_chain(gateway, gateway.chains.get("litecoin"))  # a fresh database starts at the tip
    return (await response.json())["data"]


async def count_every_confirmation(client: Any, faucet: Faucet, invoice: dict[str, Any],
                                   shown: Callable[[int, int], Awaitable[None]]) -> int:
    """Pay ``invoice`` in full, then mine and scan one block at a time up to the deposit's threshold,
    awaiting ``shown(count, threshold)`` after the payment (count 0) and after every block; the threshold."""
    gateway = client.app[GATEWAY]
    adapter = gateway.chains.get("litecoin")
    txid = faucet.pay(invoice["address"], int(Decimal(invoice["pay_amount"]) * LTC))
    await scan_chain(gateway, adapter)
    threshold = await gateway.db.fetch_val("SELECT threshold FROM deposits WHERE tx_hash = :t", {"t": txid})
    assert threshold and threshold > 2, f"a threshold of {threshold} leaves no count to the confirmation feed alone"
    await shown(0, threshold)
    for count in range(1, threshold + 1):
        faucet.mine(1)
        await scan_chain(gateway, adapter)
        await shown(count, threshold)
    return int(threshold)


async def next_count(stream: EventStream, count: int, threshold: int) -> dict[str, Any]:
    """The stream's next payment event, which must show ``count`` of ``threshold`` (Paid at the threshold)."""
    try:  # one bound for the event: stream.event's own bound is per line, and heartbeats keep renewing it
        state = await asyncio.wait_for(stream.event(), READ_TIMEOUT)
    except TimeoutError:
        raise AssertionError(f"the stream never showed {count} of {threshold} confirmations") from None
    assert state is not None, f"the stream ended before showing {count} of {threshold} confirmations"
    assert [t["confirmations"] for t in state["transactions"]] == [count], (count, state)
    assert state["confirmations_required"] == threshold, state
    assert state["status"] == ("Paid" if count == threshold else "Paying"), (count, state)
    return state


async def stream_shows_every_count(client: Any, faucet: Faucet, invoice: dict[str, Any], stream: EventStream) -> None:
    """``stream`` (just opened on ``invoice``) shows Waiting, then every count from 0 to the threshold, one event
    each, then ends: Paid is final."""
    assert (await stream.event())["status"] == "Waiting"
    seen: list[int] = []

    async def shown(count: int, threshold: int) -> None:
        await next_count(stream, count, threshold)
        seen.append(count)

    threshold = await count_every_confirmation(client, faucet, invoice, shown)
    assert seen == list(range(threshold + 1))
    assert await stream.event() is None
