"""Sweeping: move credited deposits from per-user addresses to the chain's hot wallet.

The job ``evm.<chain>.sweep`` does two things each run:

1. Follows live sweeps (``evm_sweeps``): re-sends stored bytes the node
   lost, and when a transaction is mined records it (ledger, status).
2. Starts a sweep for every (address, coin) with a deposit credited since
   it was last swept: tokens first (the address needs gas: a top-up from
   the hot wallet, then ``transfer`` to the hot wallet), then the native
   balance minus the gas bound (skipped while a token sweep of that address
   is live, so it never spends the gas sent for it).

Crash safety: the sweep row is written first, then each transaction is
signed and stored (``evm_txs``, idempotent by kind and sweep id) before it
is broadcast, so a crash anywhere re-sends the same bytes and never signs
with another nonce. The token transfer is signed together with its top-up
(same fees), and broadcast once the top-up is mined.

Ledger: a sweep is an internal movement, the merchants' balances do not
change. Custody sub-accounts of the outside world record where the coins
sit (docs/evm.md)::

    sweep:   world:<chain>:deposit_addresses -> world:<chain>:hot_wallet   (the coin)
    top-up:  world:<chain>:hot_wallet -> world:<chain>:deposit_addresses   (native)
    gas:     platform:network_fees -> world:<chain>                       (native, actual fee)
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from eth_utils import to_checksum_address

from ...core import ledger
from ...core.chains import BroadcastError, ChainUnavailable
from ...core.ledger import Posting
from ...core.keys import WatchOnlyError
from ...core.ledger_accounts import NETWORK_FEES, world
from ...core.services import CreditedAddress, credited_addresses
from .keys import deposit_key, hot_wallet_address, hot_wallet_key
from .rpc import RpcError, quantity
from .signer import NATIVE_TRANSFER_GAS, StoredTx
from .tokens import balance_of_calldata, decode_uint, transfer_calldata

if TYPE_CHECKING:  # pragma: no cover
    from ...core.gateway import Gateway
    from .adapter import EvmAdapter

log = logging.getLogger(__name__)

SWEEP, TOPUP = "sweep", "topup"
LIVE = ("topup", "sweeping")


def deposit_addresses_account(chain: str) -> str:
    return f"{world(chain)}:deposit_addresses"


def hot_wallet_account(chain: str) -> str:
    return f"{world(chain)}:hot_wallet"


@dataclass
class SweepReport:
    started: int = 0
    finished: int = 0
    failed: int = 0


# -- chain reads ---------------------------------------------------------------------------


async def _native_balance(adapter: "EvmAdapter", address: str) -> int:
    return quantity(await adapter.rpc.call("eth_getBalance", address, "latest"))


async def _token_balance(adapter: "EvmAdapter", contract: str, address: str) -> int:
    return decode_uint(await adapter.rpc.call("eth_call", {"to": contract, "data": balance_of_calldata(address)},
                                              "latest"))


# -- bookkeeping ---------------------------------------------------------------------------


async def _post(gateway: "Gateway", reference: str, kind: str, postings: list[Posting]) -> None:
    if all(p.amount for p in postings):
        await ledger.post_and_notify(gateway, kind=kind, reference=reference, postings=postings)


async def _record_mined(gateway: "Gateway", adapter: "EvmAdapter", tx: StoredTx, receipt: Mapping[str, Any]) -> bool:
    """Ledger and status of one mined sweep or top-up; True when it succeeded."""
    fee = await adapter.txs.record_receipt(tx.tx_hash, receipt)
    chain, native = adapter.name, adapter.native
    await _post(gateway, f"evm:{chain}:gas:{tx.tx_hash}", "network_fee",
                [Posting(NETWORK_FEES, native, -fee), Posting(world(chain), native, fee)])
    if quantity(receipt["status"]) == 0:
        return False
    source, target = ((deposit_addresses_account(chain), hot_wallet_account(chain)) if tx.kind == SWEEP
                      else (hot_wallet_account(chain), deposit_addresses_account(chain)))
    await _post(gateway, f"evm:{chain}:{tx.kind}:{tx.tx_hash}", f"evm_{tx.kind}",
                [Posting(source, tx.coin, -tx.amount), Posting(target, tx.coin, tx.amount)])
    return True


async def _set(gateway: "Gateway", sweep_id: str, status: str, reason: str | None = None) -> None:
    await gateway.db.execute("UPDATE evm_sweeps SET status = :s, failure_reason = :r, updated_at = :now WHERE id = :id",
                             {"s": status, "r": reason, "now": gateway.now(), "id": sweep_id})


async def _mark_swept(gateway: "Gateway", chain: str, address: str, coin: str, through: int) -> None:
    await gateway.db.execute(
        "INSERT INTO evm_sweep_marks (chain, address, coin, swept_through) VALUES (:c, :a, :k, :t)"
        " ON CONFLICT (chain, address, coin) DO UPDATE SET swept_through = excluded.swept_through"
        " WHERE evm_sweep_marks.swept_through < excluded.swept_through",
        {"c": chain, "a": address, "k": coin, "t": through})


# -- following live sweeps -------------------------------------------------------------------


async def _advance_tx(gateway: "Gateway", adapter: "EvmAdapter", tx: StoredTx) -> str:
    """Push one stored transaction along: 'pending', 'mined' or 'failed'."""
    if tx.status == "abandoned":
        return "failed"
    if tx.status in ("mined", "reverted"):
        return "mined" if tx.status == "mined" else "failed"
    status, receipt = await adapter.txs.status(tx.tx_hash)
    if receipt is not None:
        return "mined" if await _record_mined(gateway, adapter, tx, receipt) else "failed"
    try:
        await adapter.txs.broadcast(tx.tx_hash, tx.raw)  # first send, or again after a crash or eviction
    except BroadcastError as exc:
        if exc.permanent:
            log.warning("%s: %s %s refused: %s", adapter.name, tx.kind, tx.tx_hash, exc)
            return "failed"
        log.info("%s: %s %s not sent yet: %s", adapter.name, tx.kind, tx.tx_hash, exc)
    return "pending"


async def _follow(gateway: "Gateway", adapter: "EvmAdapter", sweep: Mapping[str, Any], report: SweepReport) -> None:
    sweep_id = sweep["id"]
    if sweep["status"] == "topup":
        topup = await adapter.txs.find(TOPUP, sweep_id)
        state = "mined" if topup is None else await _advance_tx(gateway, adapter, topup)
        if state == "failed":
            transfer = await adapter.txs.find(SWEEP, sweep_id)
            if transfer is not None:
                await adapter.txs.abandon_unsent(transfer.tx_hash)  # its nonce goes to the next sweep
            await _set(gateway, sweep_id, "failed", "gas top-up failed")
            report.failed += 1
            return
        if state == "pending":
            return
        await _set(gateway, sweep_id, "sweeping")
    transfer = await adapter.txs.find(SWEEP, sweep_id)
    if transfer is None:  # crashed between writing the sweep and signing it
        await _set(gateway, sweep_id, "failed", "not signed")
        report.failed += 1
        return
    state = await _advance_tx(gateway, adapter, transfer)
    if state == "mined":
        await _set(gateway, sweep_id, "done")
        await _mark_swept(gateway, adapter.name, sweep["address"], sweep["coin"], int(sweep["credited_through"]))
        report.finished += 1
    elif state == "failed":
        await _set(gateway, sweep_id, "failed", "sweep transaction failed")
        report.failed += 1


# -- starting new sweeps ------------------------------------------------------------------------


async def _candidates(gateway: "Gateway", chain: str) -> list[CreditedAddress]:
    """(address, coin) with a deposit credited since its last sweep read the balance, none live.

    ``swept_through`` is the time the last sweep read the balance: everything
    credited before then was in it. Credits of that same second are looked
    at once more (a zero balance then just moves the mark). The credits come
    from the core's service; marks and live sweeps are this plugin's tables.
    """
    marks = {(r["address"], r["coin"]): int(r["swept_through"]) for r in await gateway.db.fetch_all(
        "SELECT address, coin, swept_through FROM evm_sweep_marks WHERE chain = :c", {"c": chain})}
    live = {r["address"] for r in await gateway.db.fetch_all(
        "SELECT DISTINCT address FROM evm_sweeps WHERE chain = :c AND status IN ('topup', 'sweeping')", {"c": chain})}
    return [credit for credit in await credited_addresses(gateway, chain)
            if credit.address not in live and credit.last_credited_at >= marks.get((credit.address, credit.coin), 0)]


async def _new_sweep(gateway: "Gateway", chain: str, address: str, coin: str, status: str, amount: int,
                     through: int) -> str:
    sweep_id = "swp_" + secrets.token_hex(10)
    now = gateway.now()
    await gateway.db.execute(
        "INSERT INTO evm_sweeps (id, chain, address, coin, status, amount, credited_through, created_at, updated_at)"
        " VALUES (:id, :c, :a, :k, :s, :amt, :t, :now, :now)",
        {"id": sweep_id, "c": chain, "a": address, "k": coin, "s": status, "amt": gateway.db.amount_param(amount),
         "t": through, "now": now})
    return sweep_id


async def _start_token(gateway: "Gateway", adapter: "EvmAdapter", address: str, coin: str,
                       through: int) -> str | None:
    contract = adapter.token_contract(coin)
    if contract is None:
        return None
    amount = await _token_balance(adapter, contract, address)
    if amount <= 0:
        await _mark_swept(gateway, adapter.name, address, coin, through)
        return None
    hot = hot_wallet_address(gateway)
    data = transfer_calldata(hot, amount)
    gas = await adapter.txs.estimate_gas(address, contract, 0, data)
    fees = await adapter.txs.fees()
    missing = gas * fees.max_fee_per_gas - await _native_balance(adapter, address)
    sweep_id = await _new_sweep(gateway, adapter.name, address, coin, "topup" if missing > 0 else "sweeping",
                                amount, through)
    if missing > 0:
        await adapter.txs.sign_and_store(kind=TOPUP, ref=sweep_id, key=hot_wallet_key(gateway), to=address,
                                         value=missing, coin=adapter.native, amount=missing,
                                         gas_limit=NATIVE_TRANSFER_GAS, fees=fees)
    await adapter.txs.sign_and_store(kind=SWEEP, ref=sweep_id, key=await deposit_key(gateway, address), to=contract,
                                     value=0, data=data, coin=coin, amount=amount, gas_limit=gas, fees=fees)
    return sweep_id


async def _start_native(gateway: "Gateway", adapter: "EvmAdapter", address: str, through: int) -> str | None:
    balance = await _native_balance(adapter, address)
    fees = await adapter.txs.fees()
    if balance <= NATIVE_TRANSFER_GAS * fees.max_fee_per_gas:
        await _mark_swept(gateway, adapter.name, address, adapter.native, through)  # dust: not worth the gas
        return None
    sweep_id = await _new_sweep(gateway, adapter.name, address, adapter.native, "sweeping", balance, through)
    stored = await adapter.txs.sign_and_store(
        kind=SWEEP, ref=sweep_id, key=await deposit_key(gateway, address), to=hot_wallet_address(gateway),
        value=balance, coin=adapter.native, amount=balance, gas_limit=NATIVE_TRANSFER_GAS, fees=fees,
        value_after_fees=True)
    await gateway.db.execute("UPDATE evm_sweeps SET amount = :a WHERE id = :id",
                             {"a": gateway.db.amount_param(stored.amount), "id": sweep_id})
    return sweep_id


async def sweep_chain(gateway: "Gateway", adapter: "EvmAdapter") -> SweepReport:
    """One run of the sweep job for one chain."""
    report = SweepReport()
    for sweep in await gateway.db.fetch_all(
            "SELECT * FROM evm_sweeps WHERE chain = :c AND status IN ('topup', 'sweeping') ORDER BY created_at",
            {"c": adapter.name}):
        await _follow(gateway, adapter, sweep, report)
    candidates = await _candidates(gateway, adapter.name)
    busy: set[str] = set()
    started: list[str] = []
    # Tokens first: a native sweep of the same address would spend the gas they need.
    for credit in sorted(candidates, key=lambda c: c.coin == adapter.native):
        address, coin = to_checksum_address(credit.address), credit.coin
        if address in busy:
            continue
        try:
            if coin == adapter.native:
                sweep_id = await _start_native(gateway, adapter, address, gateway.now())
            else:
                sweep_id = await _start_token(gateway, adapter, address, coin, gateway.now())
        except (BroadcastError, ChainUnavailable, RpcError, LookupError, WatchOnlyError) as exc:
            log.warning("%s: cannot sweep %s %s yet: %s", adapter.name, coin, address, exc)
            busy.add(address)
            continue
        if sweep_id is not None:
            busy.add(address)
            started.append(sweep_id)
            report.started += 1
    # Send what was just signed (the same path re-sends after a crash).
    for sweep_id in started:
        row = await gateway.db.fetch_one("SELECT * FROM evm_sweeps WHERE id = :id", {"id": sweep_id})
        assert row is not None, "the sweep was stored above, and sweeps are never deleted"
        await _follow(gateway, adapter, row, report)
    return report


def sweep_job(adapter: "EvmAdapter"):
    async def run(gateway: "Gateway") -> None:
        await sweep_chain(gateway, adapter)

    return run
