"""What an EVM node says the gateway holds (``Capability.CUSTODY``).

Per coin: the hot wallet's balance (``eth_getBalance``, ERC-20
``balanceOf`` of each pinned contract), every address with credited
deposits (native balance at each, since top-ups leave gas money at token
addresses; each token at the addresses credited with it) and the
operator's cold addresses, all at the latest block in batched requests.
The cost grows with the addresses ever credited (docs/decisions.md).

A payout the ledger still holds in flight whose transaction the node has
mined is added back (its amount, and its gas in the native coin) at the
books' figure, so the check does not cry shortfall between a block and the
worker's next poll; a broadcast one not yet mined has taken nothing yet.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Sequence

from eth_utils import to_checksum_address

from ...api import ChainUnavailable, Holding, credited_addresses, payout_statuses
from ..account_custody import account_holdings
from .keys import hot_wallet_address
from .rpc import quantity
from .tokens import balance_of_calldata, decode_uint

if TYPE_CHECKING:  # pragma: no cover
    from .adapter import EvmAdapter

BATCH = 500
IN_FLIGHT = "Confirming"


def _balance_call(adapter: "EvmAdapter", coin: str, address: str) -> tuple[str, Sequence[Any]]:
    if coin == adapter.native:
        return "eth_getBalance", (address, "latest")
    contract = adapter.token_contract(coin)
    return "eth_call", ({"to": contract, "data": balance_of_calldata(address)}, "latest")


async def _balances(adapter: "EvmAdapter", wanted: Sequence[tuple[str, str]],
                    silent: set[str]) -> dict[str, int]:
    """Sum per coin of the balances of ``wanted`` (coin, address) pairs; a token whose pinned contract
    answers nothing (no code at that address on this network) goes into ``silent``: not known, not zero."""
    totals: dict[str, int] = defaultdict(int)
    for start in range(0, len(wanted), BATCH):
        chunk = wanted[start:start + BATCH]
        answers = await adapter.rpc.batch([_balance_call(adapter, coin, address) for coin, address in chunk])
        for (coin, _), answer in zip(chunk, answers):
            if coin == adapter.native:
                totals[coin] += quantity(answer)
            elif answer in ("0x", "", None):
                silent.add(coin)
            else:
                totals[coin] += decode_uint(answer)
    return totals


async def _mined_in_flight(adapter: "EvmAdapter") -> dict[str, int]:
    """Per coin, what payouts still in flight in the ledger already took on the chain (amount and gas)."""
    db = adapter.gateway.db
    rows = await db.fetch_all(
        "SELECT ref, coin, amount, tx_hash FROM evm_txs WHERE chain = :c AND kind = 'payout'"
        " AND status IN ('broadcast', 'mined')", {"c": adapter.name})
    statuses = await payout_statuses(adapter.gateway, [r["ref"] for r in rows])
    live = [r for r in rows if statuses.get(r["ref"]) == IN_FLIGHT]
    taken: dict[str, int] = defaultdict(int)
    if not live:
        return taken
    hashes = [await _version_hashes(adapter, r) for r in live]  # a re-signed payout: any version may be the mined one
    answers = iter(await adapter.rpc.batch([("eth_getTransactionReceipt", (h,)) for each in hashes for h in each]))
    for row, each in zip(live, hashes):
        receipt = next((r for r in [next(answers) for _ in each] if isinstance(r, dict)), None)
        if receipt is None:
            continue  # not mined: the balance still holds it
        if quantity(receipt.get("status", "0x1")) == 1:
            taken[row["coin"]] += db.to_int(row["amount"])
        taken[adapter.native] += quantity(receipt["gasUsed"]) * quantity(receipt["effectiveGasPrice"])
    return taken


async def _version_hashes(adapter: "EvmAdapter", row: Any) -> list[str]:
    """The hashes of every signed version of a stored payout (``versions.py``), the first one first."""
    rows = await adapter.gateway.db.fetch_all(
        "SELECT v.tx_hash FROM evm_tx_versions v JOIN evm_txs t ON t.id = v.tx_id WHERE t.chain = :c"
        " AND t.tx_hash = :h ORDER BY v.version", {"c": adapter.name, "h": row["tx_hash"]})
    return [row["tx_hash"], *(r["tx_hash"] for r in rows)]


async def evm_holdings(adapter: "EvmAdapter", cold: Sequence[str]) -> list[Holding]:
    try:
        hot = hot_wallet_address(adapter.gateway)
    except Exception as exc:  # noqa: BLE001 - a watch-only process has no hot wallet key to derive it from
        raise ChainUnavailable(f"{adapter.name}: the hot wallet address is unknown here: {exc}") from None
    credited = await credited_addresses(adapter.gateway, adapter.name)
    deposit_pairs = sorted({(adapter.native, c.address) for c in credited}
                           | {(c.coin, c.address) for c in credited if c.coin in adapter.coins})
    return await account_holdings(adapter, hot=hot, deposit_pairs=deposit_pairs,
                                  cold=[to_checksum_address(a) for a in cold], balances=_balances,
                                  in_flight=await _mined_in_flight(adapter))
