"""The hot wallet of one bitcoin-family chain: what the gateway can spend, and coin selection.

Spendable outputs are derived from the books, never from the node's wallet:

* credited deposit outputs on the chain (the core's ``credited_outputs``
  service), signed with the deposit address's key (the merchant's
  ``key_account`` and the address's ``key_index``);
* the change of the gateway's own payouts once the payout confirmed
  (``bitcoin_change_outputs``), on the platform's account 0, internal branch;

minus every output in ``bitcoin_wallet_spends`` (reserved by a signed payout,
or known spent). The pool is shared: a payout of one merchant may spend
another merchant's deposit; the ledger, not the UTXO, says whose money it is.

Coin selection is largest-first: the fewest inputs (smallest, cheapest
transaction) and a simple, predictable reservation. Outputs worth less than
the fee to spend them at the current rate are never selected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable, Iterable, Sequence

from ...api import credited_outputs, payout_statuses
from .transactions import estimate_vsize, input_vsize

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

PLATFORM_ACCOUNT = 0  # change lives on the platform's own HD account, internal branch
MAX_INPUTS = 500  # keeps a payout far below the 100,000-vbyte standardness limit
RESERVED, SPENT = "reserved", "spent"
PENDING_CHANGE, AVAILABLE_CHANGE = "pending", "available"
CHANGE_OUTPUT_INDEX = 1  # a payout's outputs: the destination, then the change (a batch's: after every item)


@dataclass(frozen=True)
class WalletOutput:
    """One output the gateway holds the key of."""

    tx_hash: str
    output_index: int
    amount: int
    key_account: int
    key_index: int
    change: bool = False


@dataclass(frozen=True)
class Selection:
    inputs: tuple[WalletOutput, ...]
    fee: int
    change: int  # 0: no change output (the remainder went to the fee)

    @property
    def total(self) -> int:
        return sum(o.amount for o in self.inputs)


class InsufficientFunds(RuntimeError):
    """The hot wallet cannot pay this now (it may later: pending change, new deposits)."""


class ReservationConflict(RuntimeError):
    """Another payout reserved one of the selected outputs first."""


def fee_for(vsize: int, rate_sat_per_kvb: int) -> int:
    return -(-vsize * rate_sat_per_kvb // 1000)


def select_outputs(
    candidates: Iterable[WalletOutput], amount: int, *, rate_sat_per_kvb: int, kind: str,
    destination_script: bytes | Sequence[bytes], change_script: bytes, change_min: int,
) -> Selection:
    """Largest-first selection paying ``amount`` plus the fee at ``rate_sat_per_kvb``.

    ``destination_script``: the one destination, or a batch's (``amount`` is
    then their total). Change at least ``change_min`` gets its own output; a
    smaller remainder is added to the fee.
    """
    destinations = [destination_script] if isinstance(destination_script, bytes) else list(destination_script)
    spend_cost = fee_for(input_vsize(kind), rate_sat_per_kvb)
    chosen: list[WalletOutput] = []
    total = 0
    for output in sorted(candidates, key=lambda o: (-o.amount, o.tx_hash, o.output_index)):
        if output.amount <= spend_cost:
            break  # sorted: every later one costs more to spend than it holds
        if len(chosen) == MAX_INPUTS:
            break
        chosen.append(output)
        total += output.amount
        kinds = [kind] * len(chosen)
        fee_alone = fee_for(estimate_vsize(kinds, destinations), rate_sat_per_kvb)
        if total < amount + fee_alone:
            continue
        fee_with_change = fee_for(estimate_vsize(kinds, [*destinations, change_script]), rate_sat_per_kvb)
        change = total - amount - fee_with_change
        if change >= change_min:
            return Selection(tuple(chosen), fee_with_change, change)
        return Selection(tuple(chosen), total - amount, 0)
    raise InsufficientFunds(
        f"hot wallet holds {total} spendable in {len(chosen)} output(s), payout needs {amount} plus fee")


# -- reads -------------------------------------------------------------------------------------


async def spendable_outputs(gateway: "Gateway", chain: str, network: str) -> list[WalletOutput]:
    """Every output the gateway may spend on ``chain`` now (not reserved, not spent)."""
    db = gateway.db
    # The core lists credited outputs, spent or not; what we spent is our own record.
    spent = {(r["tx_hash"], int(r["output_index"])) for r in await db.fetch_all(
        "SELECT tx_hash, output_index FROM bitcoin_wallet_spends WHERE chain = :c", {"c": chain})}
    change = await db.fetch_all(
        "SELECT o.tx_hash, o.output_index, o.amount, o.key_index FROM bitcoin_change_outputs o"
        " WHERE o.chain = :c AND o.status = :available AND NOT EXISTS ("
        "  SELECT 1 FROM bitcoin_wallet_spends s WHERE s.chain = o.chain AND s.tx_hash = o.tx_hash"
        "  AND s.output_index = o.output_index)",
        {"c": chain, "available": AVAILABLE_CHANGE},
    )
    found = [WalletOutput(d.tx_hash, d.output_index, d.amount, d.key_account, d.key_index)
             for d in await credited_outputs(gateway, chain, network) if (d.tx_hash, d.output_index) not in spent]
    found += [WalletOutput(r["tx_hash"], int(r["output_index"]), db.to_int(r["amount"]), PLATFORM_ACCOUNT,
                           int(r["key_index"]), change=True) for r in change]
    return found


async def reserved_inputs(gateway: "Gateway", chain: str, payout_id: str) -> list[tuple[str, int]]:
    rows = await gateway.db.fetch_all(
        "SELECT tx_hash, output_index FROM bitcoin_wallet_spends WHERE chain = :c AND payout_id = :p AND state = :r",
        {"c": chain, "p": payout_id, "r": RESERVED})
    return [(r["tx_hash"], int(r["output_index"])) for r in rows]


async def reserved_outputs(gateway: "Gateway", chain: str, network: str, payout_id: str) -> list[WalletOutput]:
    """The outputs ``payout_id`` reserved, with what signing them needs (amount, key); oldest books first."""
    reserved = set(await reserved_inputs(gateway, chain, payout_id))
    if not reserved:
        return []
    db = gateway.db
    owned = [WalletOutput(d.tx_hash, d.output_index, d.amount, d.key_account, d.key_index)
             for d in await credited_outputs(gateway, chain, network)]
    owned += [WalletOutput(r["tx_hash"], int(r["output_index"]), db.to_int(r["amount"]), PLATFORM_ACCOUNT,
                           int(r["key_index"]), change=True) for r in await db.fetch_all(
        "SELECT tx_hash, output_index, amount, key_index FROM bitcoin_change_outputs WHERE chain = :c AND status = :a",
        {"c": chain, "a": AVAILABLE_CHANGE})]
    return [o for o in owned if (o.tx_hash, o.output_index) in reserved]


async def failed_payouts_holding_inputs(gateway: "Gateway", chain: str) -> list[str]:
    """Payouts that ended Failed but still hold reservations (a missed release)."""
    rows = await gateway.db.fetch_all(
        "SELECT DISTINCT payout_id FROM bitcoin_wallet_spends"
        " WHERE chain = :c AND state = :r AND payout_id IS NOT NULL",
        {"c": chain, "r": RESERVED})
    statuses = await payout_statuses(gateway, [r["payout_id"] for r in rows])
    return sorted(payout_id for payout_id, status in statuses.items() if status == "Failed")


async def payout_tx(gateway: "Gateway", chain: str, tx_hash: str):
    return await gateway.db.fetch_one(
        "SELECT * FROM bitcoin_payout_txs WHERE chain = :c AND tx_hash = :h", {"c": chain, "h": tx_hash})


# -- writes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SignedSpend:
    """What a signed payout holds in the wallet: its inputs and its change."""

    payout_id: str
    tx_hash: str
    inputs: Sequence[WalletOutput]
    change_index: int | None  # output index of the change, None without change
    change_amount: int
    change_key_index: int | None
    signed_height: int


async def record_signed(gateway: "Gateway", chain: str, spend: SignedSpend,
                        also: Callable[[], Awaitable[None]] | None = None) -> None:
    """Reserve the inputs and remember the change, in one transaction (with ``also``'s writes, when given).

    Raises ``ReservationConflict`` when another payout took an input first
    (the caller selects again). A previous signature of the same payout
    (never stored by the core, so never broadcast) is replaced.
    """
    db = gateway.db
    now = gateway.now()
    try:
        async with db.transaction():
            await _forget_payout(gateway, chain, spend.payout_id)
            for output in spend.inputs:
                await db.execute(
                    "INSERT INTO bitcoin_wallet_spends (chain, tx_hash, output_index, payout_id, state, created_at)"
                    " VALUES (:c, :h, :i, :p, :s, :t)",
                    {"c": chain, "h": output.tx_hash, "i": output.output_index, "p": spend.payout_id,
                     "s": RESERVED, "t": now})
            if spend.change_index is not None:
                await db.execute(
                    "INSERT INTO bitcoin_change_outputs (chain, tx_hash, output_index, amount, key_index, payout_id,"
                    " status, created_at) VALUES (:c, :h, :i, :a, :k, :p, :s, :t)",
                    {"c": chain, "h": spend.tx_hash, "i": spend.change_index,
                     "a": db.amount_param(spend.change_amount), "k": spend.change_key_index, "p": spend.payout_id,
                     "s": PENDING_CHANGE, "t": now})
            await db.execute(
                "INSERT INTO bitcoin_payout_txs (chain, tx_hash, payout_id, signed_height, created_at)"
                " VALUES (:c, :h, :p, :sh, :t)",
                {"c": chain, "h": spend.tx_hash, "p": spend.payout_id, "sh": spend.signed_height, "t": now})
            if also is not None:
                await also()
    except Exception as exc:  # only a unique violation means a lost race
        text = str(exc).lower()
        if "unique" in text or "duplicate" in text:
            raise ReservationConflict(str(exc)) from None
        raise


async def _forget_payout(gateway: "Gateway", chain: str, payout_id: str) -> None:
    values = {"c": chain, "p": payout_id}
    await gateway.db.execute(
        "DELETE FROM bitcoin_wallet_spends WHERE chain = :c AND payout_id = :p AND state = 'reserved'", values)
    await gateway.db.execute(
        "DELETE FROM bitcoin_change_outputs WHERE chain = :c AND payout_id = :p AND status = 'pending'", values)
    await gateway.db.execute("DELETE FROM bitcoin_payout_txs WHERE chain = :c AND payout_id = :p", values)


async def mark_spent(gateway: "Gateway", chain: str, outputs: Iterable[tuple[str, int]]) -> None:
    """Outputs the node says are gone (spent elsewhere): never select them again."""
    for tx_hash, index in outputs:
        await gateway.db.execute(
            "INSERT INTO bitcoin_wallet_spends (chain, tx_hash, output_index, payout_id, state, created_at)"
            " VALUES (:c, :h, :i, NULL, :s, :t) ON CONFLICT (chain, tx_hash, output_index) DO UPDATE SET state = :s",
            {"c": chain, "h": tx_hash, "i": index, "s": SPENT, "t": gateway.now()})


async def confirm_payout(gateway: "Gateway", chain: str, payout_id: str, block_hash: str | None = None) -> None:
    """The payout's transaction is in a block: its inputs are spent, its change is ours."""
    values = {"c": chain, "p": payout_id}
    async with gateway.db.transaction():
        await gateway.db.execute(
            "UPDATE bitcoin_wallet_spends SET state = 'spent' WHERE chain = :c AND payout_id = :p", values)
        await gateway.db.execute(
            "UPDATE bitcoin_change_outputs SET status = 'available' WHERE chain = :c AND payout_id = :p", values)
        if block_hash is not None:
            await gateway.db.execute(
                "UPDATE bitcoin_payout_txs SET block_hash = :b WHERE chain = :c AND payout_id = :p",
                {**values, "b": block_hash})


async def forget_block(gateway: "Gateway", chain: str, tx_hash: str) -> None:
    await gateway.db.execute("UPDATE bitcoin_payout_txs SET block_hash = NULL WHERE chain = :c AND tx_hash = :h",
                             {"c": chain, "h": tx_hash})


async def release_payout(gateway: "Gateway", chain: str, payout_id: str,
                         still_unspent: Sequence[tuple[str, int]], gone: Sequence[tuple[str, int]]) -> None:
    """A failed payout gives its inputs back (those the node still has unspent)."""
    db = gateway.db
    async with db.transaction():
        for tx_hash, index in still_unspent:
            await db.execute(
                "DELETE FROM bitcoin_wallet_spends WHERE chain = :c AND tx_hash = :h AND output_index = :i"
                " AND payout_id = :p AND state = 'reserved'",
                {"c": chain, "h": tx_hash, "i": index, "p": payout_id})
        for tx_hash, index in gone:
            await db.execute(
                "UPDATE bitcoin_wallet_spends SET state = 'spent' WHERE chain = :c AND tx_hash = :h"
                " AND output_index = :i AND payout_id = :p",
                {"c": chain, "h": tx_hash, "i": index, "p": payout_id})
        await db.execute(
            "DELETE FROM bitcoin_change_outputs WHERE chain = :c AND payout_id = :p AND status = 'pending'",
            {"c": chain, "p": payout_id})
