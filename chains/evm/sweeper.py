"""Sweeping: move credited deposits from per-user addresses to the chain's hot wallet.

The job ``evm.<chain>.sweep`` does two things each run:

1. Follows live sweeps (``evm_sweeps``): re-sends stored bytes the node
   lost, re-signs a gas top-up priced out in the mempool at its nonce
   (``bumping.py``), and when a transaction is mined records it (ledger,
   status).
2. Starts a sweep for every (address, coin) with a deposit credited since
   it was last swept: tokens first (the address needs gas: a top-up from
   the hot wallet, then ``transfer`` to the hot wallet), then the native
   balance minus the gas bound (skipped while a token sweep of that address
   is live, so it never spends the gas sent for it). A native sweep whose
   gas bound is above ``sweep_max_fee_percent`` of the balance waits for a
   later run (``sweeping.check_fee_share``).

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
from typing import TYPE_CHECKING, Any, Mapping

from eth_utils import to_checksum_address

from ...api import BroadcastError, ChainUnavailable, FeeAboveCeiling, NETWORK_FEES, Posting, WatchOnlyError, world
from .. import sweeping
from ..sweeping import SWEEP, TOPUP, SweepReport, SweepTables, deposit_addresses_account, hot_wallet_account
from . import bumping
from .keys import deposit_key, hot_wallet_address, hot_wallet_key
from .rpc import RpcError, quantity
from .signer import NATIVE_TRANSFER_GAS, StoredTx
from .tokens import balance_of_calldata, decode_uint, transfer_calldata

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from .adapter import EvmAdapter

log = logging.getLogger(__name__)

__all__ = ["SweepReport", "deposit_addresses_account", "hot_wallet_account", "sweep_chain", "sweep_job"]


# -- chain reads ---------------------------------------------------------------------------


async def _native_balance(adapter: "EvmAdapter", address: str) -> int:
    return quantity(await adapter.rpc.call("eth_getBalance", address, "latest"))


async def _token_balance(adapter: "EvmAdapter", contract: str, address: str) -> int:
    return decode_uint(await adapter.rpc.call("eth_call", {"to": contract, "data": balance_of_calldata(address)},
                                              "latest"))


# -- bookkeeping ---------------------------------------------------------------------------


async def _record_mined(gateway: "Gateway", adapter: "EvmAdapter", tx: StoredTx, receipt: Mapping[str, Any]) -> bool:
    """Ledger and status of one mined sweep or top-up; True when it succeeded."""
    fee = await adapter.txs.record_receipt(tx.tx_hash, receipt)
    chain, native = adapter.name, adapter.native
    await sweeping.record_nonzero(gateway, chain, f"evm:{chain}:gas:{tx.tx_hash}", "network_fee",
                                  [Posting(NETWORK_FEES, native, -fee), Posting(world(chain), native, fee)])
    if quantity(receipt["status"]) == 0:
        return False
    await sweeping.record_custody(gateway, chain, tx.kind, tx.coin, tx.amount, f"evm:{chain}:{tx.kind}:{tx.tx_hash}",
                                  f"evm_{tx.kind}")
    return True


# -- one chain's steps --------------------------------------------------------------------------


class _Steps:
    """The EVM side of ``sweeping.sweep_chain``: signed transactions in ``evm_txs``, final once mined."""

    def __init__(self, adapter: "EvmAdapter"):
        self.adapter, self.name, self.native = adapter, adapter.name, adapter.native
        self.tables = SweepTables("evm", chain=adapter.name)

    async def find(self, kind: str, sweep_id: str) -> StoredTx | None:
        return await self.adapter.txs.find(kind, sweep_id)

    async def advance(self, gateway: "Gateway", tx: StoredTx) -> str:
        """Push one stored transaction along: 'pending', 'done' (mined and booked) or 'failed'."""
        adapter = self.adapter
        if tx.status == "abandoned":
            return "failed"
        if tx.status in ("mined", "reverted"):
            return "done" if tx.status == "mined" else "failed"
        status, receipt = await adapter.txs.status(tx.tx_hash)
        if receipt is not None:
            return "done" if await _record_mined(gateway, adapter, tx, receipt) else "failed"
        if tx.kind == TOPUP:  # waiting in a pool, or evicted from it by a fee spike
            await self._bump_topup(gateway, tx)
        try:
            await adapter.txs.broadcast(tx.tx_hash, tx.raw)  # first send, or again after a crash or eviction
        except BroadcastError as exc:
            if exc.permanent:
                log.warning("%s: %s %s refused: %s", adapter.name, tx.kind, tx.tx_hash, exc)
                return "failed"
            log.info("%s: %s %s not sent yet: %s", adapter.name, tx.kind, tx.tx_hash, exc)
        return "pending"

    async def _bump_topup(self, gateway: "Gateway", tx: StoredTx) -> None:
        """A gas top-up priced out in the mempool holds every later hot-wallet nonce: re-sign it (``bumping.py``).

        Only top-ups: they are the hot wallet's. A deposit address's own
        sweep spends its whole balance (native) or exactly the gas sent to it
        (tokens), so it has nothing to pay a higher fee with.
        """
        try:
            await bumping.bump_stuck(self.adapter.txs, tx, hot_wallet_key(gateway),
                                     self.adapter.settings.bump_after_blocks)
        except FeeAboveCeiling as exc:
            log.info("%s: top-up %s stays as it is: %s", self.name, tx.tx_hash, exc)

    async def topup_failed(self, sweep_id: str) -> None:
        transfer = await self.adapter.txs.find(SWEEP, sweep_id)
        if transfer is not None:
            await self.adapter.txs.abandon_unsent(transfer.tx_hash)  # its nonce goes to the next sweep

    def token_contract(self, coin: str) -> str | None:
        return self.adapter.token_contract(coin)

    async def token_balance(self, contract: str, address: str) -> int:
        return await _token_balance(self.adapter, contract, address)

    async def start_token(self, gateway: "Gateway", address: str, coin: str, contract: str, amount: int,
                          through: int) -> str:
        adapter = self.adapter
        hot = hot_wallet_address(gateway)
        data = transfer_calldata(hot, amount)
        gas = await adapter.txs.estimate_gas(address, contract, 0, data)
        fees = await adapter.txs.fees()
        missing = gas * fees.max_fee_per_gas - await _native_balance(adapter, address)
        sweep_id = await self.tables.new_sweep(gateway, address, coin, "topup" if missing > 0 else "sweeping",
                                               amount, through)
        if missing > 0:
            await adapter.txs.sign_and_store(kind=TOPUP, ref=sweep_id, key=hot_wallet_key(gateway), to=address,
                                             value=missing, coin=adapter.native, amount=missing,
                                             gas_limit=NATIVE_TRANSFER_GAS, fees=fees)
        await adapter.txs.sign_and_store(kind=SWEEP, ref=sweep_id, key=await deposit_key(gateway, address),
                                         to=contract, value=0, data=data, coin=coin, amount=amount, gas_limit=gas,
                                         fees=fees)
        return sweep_id

    async def start_native(self, gateway: "Gateway", address: str, through: int) -> str | None:
        adapter = self.adapter
        balance = await _native_balance(adapter, address)
        fees = await adapter.txs.fees()
        if balance <= NATIVE_TRANSFER_GAS * fees.max_fee_per_gas:
            await self.tables.mark_swept(gateway, address, adapter.native, through)  # dust: not worth the gas
            return None
        sweeping.check_fee_share(NATIVE_TRANSFER_GAS * fees.max_fee_per_gas, balance,
                                 adapter.settings.sweep_max_fee_percent, adapter.native)  # a fee spike: wait
        sweep_id = await self.tables.new_sweep(gateway, address, adapter.native, "sweeping", balance, through)
        stored = await adapter.txs.sign_and_store(
            kind=SWEEP, ref=sweep_id, key=await deposit_key(gateway, address), to=hot_wallet_address(gateway),
            value=balance, coin=adapter.native, amount=balance, gas_limit=NATIVE_TRANSFER_GAS, fees=fees,
            value_after_fees=True)
        await gateway.db.execute("UPDATE evm_sweeps SET amount = :a WHERE id = :id",
                                 {"a": gateway.db.amount_param(stored.amount), "id": sweep_id})
        return sweep_id


async def sweep_chain(gateway: "Gateway", adapter: "EvmAdapter") -> SweepReport:
    """One run of the sweep job for one chain."""
    steps = _Steps(adapter)
    return await sweeping.sweep_chain(gateway, steps, steps.tables, topup_failure="gas top-up failed",
                                      retry_later=(BroadcastError, ChainUnavailable, RpcError, LookupError,
                                                   WatchOnlyError),
                                      address_of=to_checksum_address)


def sweep_job(adapter: "EvmAdapter"):
    async def run(gateway: "Gateway") -> None:
        await sweep_chain(gateway, adapter)

    return run
