"""What the node says a bitcoin-family hot wallet holds (``Capability.CUSTODY``).

The wallet is the outputs the books say the gateway holds (``wallet.py``):
credited deposit outputs and the change of confirmed payouts, minus those a
confirmed payout spent. Each is asked of the node with ``gettxout`` (its
confirmed UTXO set, batched): exact, and it costs one look-up per output
we hold, never a scan of the whole UTXO set. An output the node no longer
has counts zero, whoever spent it (a payout that failed, a key used outside
the gateway): that is the shortfall the check is for.

Inputs reserved by a payout the ledger still holds in flight are counted
at their booked value (``node_checked`` False) and that payout's change not
at all, so the figures move when the ledger settles the payout, never
between a block and the worker's next poll. The operator's cold addresses
are summed with ``scantxoutset``: a scan of the UTXO set, fine for a few
addresses on a schedule, but one at a time per node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ...api import ChainUnavailable, CustodyPlace, Holding, credited_outputs, payout_statuses
from . import wallet
from .cold_sweep import swept_cold_addresses
from .own_spends import statuses as own_spend_statuses
from .transactions import input_vsize
from .rpc import RpcError, coin_units

if TYPE_CHECKING:  # pragma: no cover
    from .adapter import BitcoinAdapter

BATCH = 1000  # gettxout calls per HTTP request
CONFIRMED, IN_FLIGHT = "Confirmed", "Confirming"

Outpoint = tuple[str, int]


async def _unspent_value(adapter: "BitcoinAdapter", outpoints: Sequence[Outpoint]) -> int:
    """Sum of what the node's confirmed UTXO set holds at ``outpoints`` (0 for each one gone)."""
    total = 0
    for start in range(0, len(outpoints), BATCH):
        chunk = outpoints[start:start + BATCH]
        for answer in await adapter.rpc.batch("gettxout", [[h, i, False] for h, i in chunk]):
            if isinstance(answer, RpcError):
                raise ChainUnavailable(f"{adapter.name}: gettxout: {answer}")
            if answer is not None:
                total += coin_units(answer["value"])
    return total


async def _cold_value(adapter: "BitcoinAdapter", cold: Sequence[str]) -> int:
    found: Any = await adapter.rpc.call("scantxoutset", "start", [f"addr({a})" for a in cold])
    if not isinstance(found, dict) or not found.get("success", False):
        raise ChainUnavailable(f"{adapter.name}: scantxoutset did not finish: {found!r}")
    return coin_units(found["total_amount"])


async def dust_threshold(adapter: "BitcoinAdapter") -> int:
    """The fee to spend one of our outputs at the current rate: an output worth no more is dust.

    Coin selection never picks such an output (``wallet.select_outputs``), so it is left where it is, and
    counted on its own line (``CustodyPlace.DUST``) and in ``orbchain_wallet_dust_*``, not swept at a loss.
    """
    return wallet.fee_for(input_vsize(adapter.settings.spec.script), await adapter.fee_rate())


async def bitcoin_holdings(adapter: "BitcoinAdapter", cold: Sequence[str]) -> list[Holding]:
    gateway, chain, db = adapter.gateway, adapter.name, adapter.gateway.db
    spends = await db.fetch_all(
        "SELECT tx_hash, output_index, payout_id FROM bitcoin_wallet_spends WHERE chain = :c", {"c": chain})
    change = await db.fetch_all(
        "SELECT tx_hash, output_index, amount, payout_id FROM bitcoin_change_outputs WHERE chain = :c", {"c": chain})
    statuses = await payout_statuses(gateway, [r["payout_id"] for r in [*spends, *change] if r["payout_id"]])
    statuses.update(await own_spend_statuses(adapter))  # a sweep or consolidation holds inputs and change like a payout
    spent_by = {(r["tx_hash"], int(r["output_index"])): statuses.get(r["payout_id"] or "") for r in spends}
    gone = {outpoint for outpoint, status in spent_by.items() if status == CONFIRMED}
    held_for_payout = {outpoint for outpoint, status in spent_by.items() if status == IN_FLIGHT}
    deposits = {(d.tx_hash, d.output_index): d.amount for d in await credited_outputs(gateway, chain, adapter.network)}
    ours_change = {(r["tx_hash"], int(r["output_index"])): db.to_int(r["amount"]) for r in change
                   if statuses.get(r["payout_id"]) == CONFIRMED}
    booked = {**deposits, **ours_change}
    in_flight = sum(amount for outpoint, amount in booked.items() if outpoint in held_for_payout)
    spend_cost = await dust_threshold(adapter)
    dust = [o for o, amount in booked.items() if amount <= spend_cost and o not in gone and o not in held_for_payout]
    ask_deposits = [o for o in deposits if o not in gone and o not in held_for_payout and o not in dust]
    ask_change = [o for o in ours_change if o not in gone and o not in held_for_payout and o not in dust]
    coin = adapter.coin
    holdings = [
        Holding(coin, CustodyPlace.DEPOSIT_ADDRESSES, await _unspent_value(adapter, ask_deposits), len(ask_deposits)),
        Holding(coin, CustodyPlace.HOT_WALLET, await _unspent_value(adapter, ask_change), len(ask_change)),
    ]
    dust_value = await _unspent_value(adapter, dust)
    gateway.metrics.wallet_dust(coin, len(dust), dust_value)
    if dust:
        holdings.append(Holding(coin, CustodyPlace.DUST, dust_value, len(dust)))
    if held_for_payout:
        holdings.append(Holding(coin, CustodyPlace.PAYOUTS_IN_FLIGHT, in_flight, len(held_for_payout),
                                node_checked=False))
    cold = list(dict.fromkeys([*cold, *await swept_cold_addresses(adapter)]))  # a cold xpub's swept-to addresses
    if cold:
        holdings.append(Holding(coin, CustodyPlace.COLD, await _cold_value(adapter, cold), len(cold)))
    return holdings
