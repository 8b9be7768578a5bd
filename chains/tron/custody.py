"""What a Tron node says the gateway holds (``Capability.CUSTODY``).

Per coin: TRX (``getaccount``) and each pinned TRC-20 (``balanceOf`` as a
constant call) at the hot wallet, at every address with credited deposits
(TRX at all of them: top-ups leave TRX for fees at token addresses; each
token at the addresses credited with it) and at the operator's cold
addresses. A payout the ledger still holds in flight whose transaction is
already in a block is added back at the books' figure (its amount, and the
TRX it burned), as on EVM (``chains/evm/custody.py``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Sequence

from ...api import BroadcastError, ChainUnavailable, Holding, credited_addresses, payout_statuses
from ..account_custody import account_holdings
from .keys import hot_wallet_address
from .resources import account_state, chain_parameters, token_balance
from .signer import mined_info

if TYPE_CHECKING:  # pragma: no cover
    from .adapter import TronAdapter

IN_FLIGHT = "Confirming"


NO_CONTRACT = "No contract"  # java-tron's answer for a constant call to an address without code


async def _balances(adapter: "TronAdapter", wanted: Sequence[tuple[str, str]], silent: set[str]) -> dict[str, int]:
    """Sum per coin of the balances of ``wanted`` (coin, address) pairs, one call each; a token whose
    pinned contract does not exist on this network goes into ``silent``: not known, not zero."""
    params = await chain_parameters(adapter.http)
    totals: dict[str, int] = defaultdict(int)
    for coin, address in wanted:
        contract = adapter.token_contracts.get(coin)
        if contract is None:
            totals[coin] += (await account_state(adapter.http, address, params)).balance
        elif coin not in silent:
            try:
                totals[coin] += await token_balance(adapter.http, contract, address)
            except BroadcastError as exc:
                if NO_CONTRACT not in str(exc):
                    raise
                silent.add(coin)
    return totals


async def _mined_in_flight(adapter: "TronAdapter") -> dict[str, int]:
    db = adapter.gateway.db
    rows = await db.fetch_all("SELECT ref, coin, amount, tx_id FROM tron_txs WHERE kind = 'payout'"
                              " AND status IN ('broadcast', 'mined')")
    statuses = await payout_statuses(adapter.gateway, [r["ref"] for r in rows])
    taken: dict[str, int] = defaultdict(int)
    tip = None
    for row in (r for r in rows if statuses.get(r["ref"]) == IN_FLIGHT):
        tip = tip if tip is not None else (await adapter.tip()).height
        mined = mined_info(await adapter.txs.info(row["tx_id"]), tip)
        if mined is None:
            continue
        if mined.succeeded:
            taken[row["coin"]] += db.to_int(row["amount"])
        taken[adapter.native] += mined.fee
    return taken


async def tron_holdings(adapter: "TronAdapter", cold: Sequence[str]) -> list[Holding]:
    try:
        hot = hot_wallet_address(adapter.gateway, adapter.network)
    except Exception as exc:  # noqa: BLE001 - a watch-only process has no hot wallet key to derive it from
        raise ChainUnavailable(f"{adapter.name}: the hot wallet address is unknown here: {exc}") from None
    credited = await credited_addresses(adapter.gateway, adapter.name)
    deposit_pairs = sorted({(adapter.native, c.address) for c in credited}
                           | {(c.coin, c.address) for c in credited if c.coin in adapter.coins})
    return await account_holdings(adapter, hot=hot, deposit_pairs=deposit_pairs, cold=cold, balances=_balances,
                                  in_flight=await _mined_in_flight(adapter))
