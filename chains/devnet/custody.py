"""What the simulated chain says the gateway holds (``Capability.CUSTODY``).

The devnet keeps transfers, not balances: the hot wallet holds what was
mined to an address the gateway credited deposits at, minus what its own
payouts (``devnet_txs.payout_id``) sent in a mined block. A payout the
ledger still holds in flight is counted back at its amount (the books'
figure), so a block mined between the worker's polls is no false alarm.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Sequence

from ...api import CustodyPlace, Database, Holding, credited_addresses, payout_statuses

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

IN_FLIGHT_STATUS = "Confirming"


async def devnet_holdings(gateway: "Gateway", chain: str, coins: Sequence[str],
                          cold_addresses: Sequence[str]) -> list[Holding]:
    db = gateway.db
    ours = {(c.address, c.coin) for c in await credited_addresses(gateway, chain)}
    cold = set(cold_addresses)
    received: dict[str, int] = defaultdict(int)
    in_cold: dict[str, int] = defaultdict(int)
    asked: dict[str, int] = defaultdict(int)
    for row in await db.fetch_all("SELECT address, coin, amount, payout_id FROM devnet_txs WHERE status = 'mined'"):
        amount, coin = Database.to_int(row["amount"]), row["coin"]
        if row["payout_id"] is None and (row["address"], coin) in ours:
            received[coin] += amount
            asked[coin] += 1
        if row["address"] in cold:
            in_cold[coin] += amount
    sent_rows = await db.fetch_all(
        "SELECT payout_id, coin, amount FROM devnet_txs WHERE status = 'mined' AND payout_id IS NOT NULL")
    statuses = await payout_statuses(gateway, [r["payout_id"] for r in sent_rows])
    sent: dict[str, int] = defaultdict(int)
    in_flight: dict[str, int] = defaultdict(int)
    for row in sent_rows:
        amount, coin = Database.to_int(row["amount"]), row["coin"]
        sent[coin] += amount
        if statuses.get(row["payout_id"]) == IN_FLIGHT_STATUS:
            in_flight[coin] += amount
    holdings = []
    for coin in coins:
        holdings.append(Holding(coin, CustodyPlace.HOT_WALLET, received[coin] - sent[coin], asked[coin]))
        if in_flight[coin]:
            holdings.append(Holding(coin, CustodyPlace.PAYOUTS_IN_FLIGHT, in_flight[coin], node_checked=False))
        if cold:
            holdings.append(Holding(coin, CustodyPlace.COLD, in_cold[coin], len(cold)))
    return holdings
