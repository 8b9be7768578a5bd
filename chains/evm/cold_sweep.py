"""The EVM hot wallet's native coin above the operator's ceiling, swept to the cold address (``[custody.hot_wallet]``).

One sweep at a time per chain, as the job ``evm.<chain>.cold_sweep``. The
hot wallet's balance (``pending``: what signed payouts will take is already
out) above ``ceiling`` is sent to ``cold`` as a plain value transfer, the gas
on top. It is a transaction of kind ``sweep`` with a ``cold_`` reference in
``evm_txs`` (``TxStore``: the nonce taken and the bytes stored in one
database transaction before the broadcast; a live one is sent again until
mined), so a crash never signs a second sweep. Why that kind: the table's
CHECK allows payout, sweep and topup, widening it means rebuilding the table
on SQLite, and the deposit sweeper finds its transactions by its own
``swp_`` ids only. The destination is the config's, judged at start, never a
column read back. Once ``payout_confirmations`` deep it is booked, once by
its reference (recorded here, booked by ``serve``: core/ledger/sweep_bookings.py)::

    hot wallet -> cold:  world:<chain>:hot_wallet -> world:<chain>:cold (the amount)
    its gas:             platform:network_fees -> world:<chain>

Tokens and an xpub destination (account-model chains have no watch-only
derivation here) are not swept yet; the cold address is counted by the custody
check (``core/custody/check.py``), tokens held there too.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING, Any

from ...api import NETWORK_FEES, BroadcastError, Posting, hot_wallet_limits, ledger, notify_cold_sweep, world
from ..sweeping import cold_account, hot_wallet_account
from .keys import hot_wallet_address, hot_wallet_key
from .rpc import quantity
from .signer import NATIVE_TRANSFER_GAS, StoredTx

if TYPE_CHECKING:  # pragma: no cover
    from .adapter import EvmAdapter

log = logging.getLogger(__name__)

KIND, REF_PREFIX = "sweep", "cold_"  # evm_txs kind and reference prefix of a sweep to cold
LEDGER_KIND = "cold_sweep"


async def sweep_to_cold(adapter: "EvmAdapter") -> str | None:
    """One tick: follow the live sweep, or start one above the ceiling; the sweep's transaction hash."""
    gateway = adapter.gateway
    live = await gateway.db.fetch_one(
        "SELECT ref FROM evm_txs WHERE chain = :c AND kind = :k AND ref LIKE :p AND status IN ('stored', 'broadcast')"
        " ORDER BY created_at LIMIT 1", {"c": adapter.name, "k": KIND, "p": REF_PREFIX + "%"})
    if live is not None:
        tx = await adapter.txs.find(KIND, live["ref"])
        assert tx is not None, "found just above"
        await _follow(adapter, tx)
        return tx.tx_hash
    limits = hot_wallet_limits(gateway).get(adapter.native)
    if limits is None or limits.ceiling is None or limits.cold is None:
        return None
    hot = hot_wallet_address(gateway)
    balance = quantity(await adapter.rpc.call("eth_getBalance", hot, "pending"))
    fees = await adapter.txs.fees()
    gas = NATIVE_TRANSFER_GAS * fees.max_fee_per_gas
    excess = balance - limits.ceiling - gas  # the gas comes from what stays: the wallet ends at the ceiling
    if excess <= gas:
        return None  # not worth the gas
    tx = await adapter.txs.sign_and_store(
        kind=KIND, ref=REF_PREFIX + secrets.token_hex(10), key=hot_wallet_key(gateway), to=limits.cold, value=excess,
        coin=adapter.native, amount=excess, gas_limit=NATIVE_TRANSFER_GAS, fees=fees)
    log.info("%s: sweeping %d to cold %s as %s", adapter.name, excess, limits.cold, tx.tx_hash)
    await _follow(adapter, tx)
    return tx.tx_hash


async def _follow(adapter: "EvmAdapter", tx: StoredTx) -> None:
    status, receipt = await adapter.txs.status(tx.tx_hash)
    if receipt is None:
        try:
            await adapter.txs.broadcast(tx.tx_hash, tx.raw)  # first send, or again after a crash or eviction
        except BroadcastError as exc:
            log.log(logging.ERROR if exc.permanent else logging.WARNING, "%s: cold sweep %s not accepted: %s",
                    adapter.name, tx.tx_hash, exc)
        return
    if status.confirmations >= adapter.payout_confirmations:
        await _book(adapter, tx, receipt)


async def _book(adapter: "EvmAdapter", tx: StoredTx, receipt: Any) -> None:
    """Gas always, the move only when it succeeded; recorded for ``serve`` to book (idempotent by reference)
    before the row stops being live."""
    gateway, chain, native = adapter.gateway, adapter.name, adapter.native
    fee = quantity(receipt["gasUsed"]) * quantity(receipt["effectiveGasPrice"])
    postings = [Posting(NETWORK_FEES, native, -fee), Posting(world(chain), native, fee)] if fee else []
    if quantity(receipt["status"]) == 1:
        postings += [Posting(hot_wallet_account(chain), native, -tx.amount), Posting(cold_account(chain), native,
                                                                                       tx.amount)]
    else:
        log.error("%s: cold sweep %s reverted; only its gas is booked", chain, tx.tx_hash)
    if postings:
        await ledger.record_sweep_booking(gateway, chain=chain, kind=LEDGER_KIND,
                                          reference=f"evm:{chain}:{LEDGER_KIND}:{tx.tx_hash}", postings=postings)
    if quantity(receipt["status"]) == 1:
        await notify_cold_sweep(gateway, chain=chain, coin=native, amount=tx.amount, destination=tx.recipient,
                                tx_hash=tx.tx_hash)
    await adapter.txs.record_receipt(tx.tx_hash, receipt)  # mined or reverted: no longer live


def cold_sweep_job(adapter: "EvmAdapter"):
    async def run(gateway: Any) -> None:
        await sweep_to_cold(adapter)
    return run
