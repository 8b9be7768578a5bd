"""What a Solana node says the gateway holds (``Capability.CUSTODY``).

SOL only (the adapter's one coin): ``getBalance`` at the adapter's
commitment for the hot wallet, every address with credited deposits and the
operator's cold addresses. A payout the ledger still holds in flight whose
transaction already reached that commitment is added back at the books'
figure (its amount when it succeeded, and its fee), as on EVM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ...api import CustodyPlace, Holding, credited_addresses, payout_statuses
from .pool import hot_wallet

if TYPE_CHECKING:  # pragma: no cover
    from .adapter import SolanaAdapter

IN_FLIGHT = "Confirming"


async def _sum(adapter: "SolanaAdapter", addresses: Sequence[str]) -> int:
    return sum([await adapter.txs.balance(address) for address in addresses])


async def _settled_in_flight(adapter: "SolanaAdapter") -> int:
    db = adapter.gateway.db
    rows = await db.fetch_all("SELECT ref, amount, fee, signature FROM solana_txs WHERE kind = 'payout'"
                              " AND status IN ('sent', 'landed')")
    statuses = await payout_statuses(adapter.gateway, [r["ref"] for r in rows])
    taken = 0
    for row in (r for r in rows if statuses.get(r["ref"]) == IN_FLIGHT):
        status = await adapter.txs.signature_status(row["signature"])
        if status is None or not adapter.txs.settled(status):
            continue  # not at our commitment yet: the balance still holds it
        taken += (db.to_int(row["amount"]) if status.err is None else 0) + db.to_int(row["fee"])
    return taken


async def solana_holdings(adapter: "SolanaAdapter", cold: Sequence[str]) -> list[Holding]:
    hot = await hot_wallet(adapter.gateway)  # a seedless serve: as the signer published it
    deposits = sorted({c.address for c in await credited_addresses(adapter.gateway, adapter.name)})
    coin = adapter.native
    holdings = [Holding(coin, CustodyPlace.HOT_WALLET, await _sum(adapter, [hot]), 1),
                Holding(coin, CustodyPlace.DEPOSIT_ADDRESSES, await _sum(adapter, deposits), len(deposits))]
    in_flight = await _settled_in_flight(adapter)
    if in_flight:
        holdings.append(Holding(coin, CustodyPlace.PAYOUTS_IN_FLIGHT, in_flight, node_checked=False))
    if cold:
        holdings.append(Holding(coin, CustodyPlace.COLD, await _sum(adapter, cold), len(cold)))
    return holdings
