"""Sweeping: move credited deposits from per-payment addresses to the hot wallet.

The job ``solana.sweep`` does two things each run:

1. Follows live sweeps: re-sends stored bytes the node lost; books a sweep
   once it is *finalized* (a fork can no longer take it back); gives up one
   whose blockhash can no longer land (``TxStore.expired``), so the next
   run signs a fresh sweep of whatever the address then holds.
2. Starts a sweep for every deposit address with a credit since it was
   last swept: the address pays its own fee and sends ``balance - fee``,
   leaving exactly zero lamports. A zero account is closed by the runtime,
   so the rent-exempt minimum never strands a remainder (a partial sweep
   would have to leave at least that minimum behind).

Ledger, like the EVM sweeps (a sweep moves no merchant's money)::

    sweep:  world:solana:deposit_addresses -> world:solana:hot_wallet   (amount)
    fee:    platform:network_fees -> world:solana                       (meta.fee)
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...api import BroadcastError, ChainUnavailable, NETWORK_FEES, Posting, WatchOnlyError, credited_addresses, world
from .. import sweeping
from ..sweeping import SWEEP, deposit_addresses_account, hot_wallet_account
from .keys import deposit_key, hot_wallet_address
from .rpc import RpcError
from .txstore import LIVE, NothingToSend, StoredTx

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from .adapter import SolanaAdapter

log = logging.getLogger(__name__)

__all__ = ["SweepReport", "deposit_addresses_account", "hot_wallet_account", "sweep_chain", "sweep_job"]


@dataclass
class SweepReport(sweeping.SweepReport):
    expired: int = 0


async def _book(gateway: "Gateway", adapter: "SolanaAdapter", tx: StoredTx, fee: int, succeeded: bool) -> None:
    chain, coin = adapter.name, adapter.native
    await sweeping.record_nonzero(gateway, chain, f"solana:fee:{tx.signature}", "network_fee",
                                  [Posting(NETWORK_FEES, coin, -fee), Posting(world(chain), coin, fee)])
    if succeeded:
        await sweeping.record_custody(gateway, chain, SWEEP, coin, tx.amount, f"solana:sweep:{tx.signature}",
                                      "solana_sweep")


async def _mark_swept(gateway: "Gateway", address: str, through: int) -> None:
    await gateway.db.execute(
        "INSERT INTO solana_sweep_marks (address, swept_through) VALUES (:a, :t)"
        " ON CONFLICT (address) DO UPDATE SET swept_through = excluded.swept_through"
        " WHERE solana_sweep_marks.swept_through < excluded.swept_through", {"a": address, "t": through})


async def _follow(gateway: "Gateway", adapter: "SolanaAdapter", tx: StoredTx, report: SweepReport) -> None:
    txs = adapter.txs
    status = await txs.signature_status(tx.signature)
    if status is None:
        if await txs.expired(tx):
            await txs.set_status(tx.signature, "expired")  # can never land: the next run signs anew
            report.expired += 1
            return
        try:
            await txs.broadcast(tx)  # first send, or again after a crash or a dropped packet
        except BroadcastError as exc:
            if exc.permanent:
                await txs.set_status(tx.signature, "rejected")
                report.failed += 1
            log.info("solana: sweep %s not sent: %s", tx.signature, exc)
        return
    if status.level != "finalized":
        return  # landed; booked once no fork can take it back
    fee = await txs.fee_paid(tx.signature)
    succeeded = status.err is None
    await _book(gateway, adapter, tx, fee, succeeded)
    await txs.set_status(tx.signature, "landed" if succeeded else "failed", slot=status.slot,
                         fee_paid=gateway.db.amount_param(fee))
    if succeeded:
        await _mark_swept(gateway, tx.sender, tx.created_at)
        report.finished += 1
    else:
        report.failed += 1


async def _candidates(gateway: "Gateway", chain: str) -> list[str]:
    """Addresses with a credit since their last sweep read the balance, and no live sweep."""
    marks = {r["address"]: int(r["swept_through"])
             for r in await gateway.db.fetch_all("SELECT address, swept_through FROM solana_sweep_marks")}
    live = {r["sender"] for r in await gateway.db.fetch_all(
        "SELECT sender FROM solana_txs WHERE kind = 'sweep' AND status IN ('stored', 'sent')")}
    return sorted({credit.address for credit in await credited_addresses(gateway, chain)
                   if credit.address not in live and credit.last_credited_at >= marks.get(credit.address, 0)})


async def _start(gateway: "Gateway", adapter: "SolanaAdapter", address: str, hot: str) -> StoredTx | None:
    now, txs = gateway.now(), adapter.txs
    if await txs.balance(hot) == 0 and await txs.balance(address) < 2 * await txs.rent_exempt_minimum():
        # A new hot wallet must receive at least the rent-exempt minimum (plus the fee here):
        # the runtime would refuse a smaller first transfer. Wait for more deposits or funding.
        log.info("solana: %s too small to open the hot wallet; left for later", address)
        return None
    try:
        return await txs.sign_and_store(kind=SWEEP, ref="swp_" + secrets.token_hex(10),
                                        seed=await deposit_key(gateway, address), recipient=hot,
                                        coin=adapter.native, amount=None)
    except NothingToSend:
        await _mark_swept(gateway, address, now)  # empty or dust: nothing worth a fee
        return None


async def sweep_chain(gateway: "Gateway", adapter: "SolanaAdapter") -> SweepReport:
    """One run of the sweep job."""
    report = SweepReport()
    rows = await gateway.db.fetch_all(
        f"SELECT kind, ref FROM solana_txs WHERE kind = 'sweep' AND status IN {LIVE!r} ORDER BY created_at")
    for row in rows:
        tx = await adapter.txs.find(row["kind"], row["ref"])
        if tx is not None:
            await _follow(gateway, adapter, tx, report)
    hot = hot_wallet_address(gateway)
    for address in await _candidates(gateway, adapter.name):
        try:
            tx = await _start(gateway, adapter, address, hot)
            if tx is not None:
                report.started += 1
                await _follow(gateway, adapter, tx, report)
        except (BroadcastError, ChainUnavailable, RpcError, LookupError, WatchOnlyError) as exc:
            log.warning("solana: cannot sweep %s yet: %s", address, exc)
    return report


def sweep_job(adapter: "SolanaAdapter"):
    async def run(gateway: "Gateway") -> None:
        await sweep_chain(gateway, adapter)

    return run
