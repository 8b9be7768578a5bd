"""Sweeping: move credited deposits from per-user T addresses to the hot wallet.

The job ``tron.sweep`` does two things each run:

1. Follows live sweeps (``tron_sweeps``): re-sends stored bytes the node
   lost, gives up on a transaction past its expiration (it can never be
   mined then), and books a transaction once it is ``payout_confirmations``
   deep.
2. Starts a sweep for every (address, coin) credited since its last sweep:
   tokens first, then TRX (skipped while a token sweep of that address is
   live, so it never spends the TRX sent for the token's fees).

A token sweep from an address without TRX first receives exactly what the
transfer will burn (``resources.py``): the energy the node's dry run
reports times the energy price, plus bandwidth in sun when the address's
free bandwidth (600 bytes a day once it exists) does not cover the signed
transfer's size. The top-up of a fresh address also creates the account:
the hot wallet pays the activation fee, booked on its own. A TRX sweep
sends the whole balance when free bandwidth covers it, else the balance
less the bandwidth burn; with ``sweep_max_fee_percent`` set it waits for a
later run while that burn is above the share of the balance
(``sweeping.check_fee_share``).

Crash safety: the sweep row is written first, then each transaction is
signed and stored before it is broadcast; a crash re-sends the same bytes.

Ledger (as the evm plugin's sweeps, docs/evm.md)::

    sweep:      world:tron:deposit_addresses -> world:tron:hot_wallet   (the coin)
    top-up:     world:tron:hot_wallet -> world:tron:deposit_addresses   (TRX)
    fees:       platform:network_fees -> world:tron                     (TRX, bandwidth + energy burned)
    activation: platform:network_fees -> world:tron                     (TRX, creating the account)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...api import BroadcastError, ChainUnavailable, NETWORK_FEES, Posting, WatchOnlyError, world
from .. import sweeping
from ..sweeping import SWEEP, TOPUP, SweepReport, SweepTables, deposit_addresses_account, hot_wallet_account
from .address import address_bytes
from .http import NodeError
from .keys import deposit_key, hot_wallet_address, hot_wallet_key
from .resources import account_state, chain_parameters, token_balance, transfer_data, transfer_energy
from .signer import MinedInfo, StoredTx
from .transactions import RefBlock, SignedTx, transfer, trigger

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway
    from .adapter import TronAdapter

log = logging.getLogger(__name__)

__all__ = ["SweepReport", "deposit_addresses_account", "hot_wallet_account", "sweep_chain", "sweep_job"]


# -- bookkeeping ---------------------------------------------------------------------------


async def _book(gateway: "Gateway", adapter: "TronAdapter", tx: StoredTx, mined: MinedInfo) -> None:
    """Ledger of one final sweep or top-up (references make it idempotent)."""
    chain, native = adapter.name, adapter.native
    burned = mined.fee - mined.activation_fee
    await sweeping.record_nonzero(gateway, chain, f"tron:{chain}:fee:{tx.tx_id}", "network_fee",
                                  [Posting(NETWORK_FEES, native, -burned), Posting(world(chain), native, burned)])
    await sweeping.record_nonzero(gateway, chain, f"tron:{chain}:activation:{tx.tx_id}", "tron_activation",
                                  [Posting(NETWORK_FEES, native, -mined.activation_fee),
                                   Posting(world(chain), native, mined.activation_fee)])
    if not mined.succeeded:
        return
    await sweeping.record_custody(gateway, chain, tx.kind, tx.coin, tx.amount, f"tron:{chain}:{tx.kind}:{tx.tx_id}",
                                  f"tron_{tx.kind}")


async def _store(adapter: "TronAdapter", kind: str, sweep_id: str, signed: SignedTx, block: RefBlock, sender: str,
                 recipient: str, coin: str, amount: int, fee_bound: int) -> StoredTx:
    return await adapter.txs.store(kind=kind, ref=sweep_id, signed=signed, sender=sender, recipient=recipient,
                                   coin=coin, amount=amount, fee_bound=fee_bound,
                                   expiration_ms=block.timestamp_ms + adapter.settings.expiration_seconds * 1000)


# -- the chain's steps --------------------------------------------------------------------------


class _Steps:
    """The Tron side of ``sweeping.sweep_chain``: stored transactions final ``payout_confirmations`` deep."""

    def __init__(self, adapter: "TronAdapter"):
        self.adapter, self.name, self.native = adapter, adapter.name, adapter.native
        self.tables = SweepTables("tron")

    async def find(self, kind: str, sweep_id: str) -> StoredTx | None:
        return await self.adapter.txs.find(kind, sweep_id)

    async def advance(self, gateway: "Gateway", tx: StoredTx) -> str:
        """Push one stored transaction along: 'pending', 'done' (final and booked) or 'failed'."""
        adapter = self.adapter
        if tx.status in ("failed", "expired"):
            return "failed"
        status, mined = await adapter.txs.status(tx.tx_id)
        if mined is not None:
            if mined.confirmations < adapter.payout_confirmations:
                return "pending"
            await adapter.txs.record_mined(tx.tx_id, mined)
            await _book(gateway, adapter, tx, mined)
            return "done" if mined.succeeded else "failed"
        if not status.found:
            head = await adapter.txs.ref_block()
            if head.timestamp_ms >= tx.expiration_ms:  # no block can take it any more
                await adapter.txs.set_status(tx.tx_id, "expired")
                return "failed"
            try:
                await adapter.txs.broadcast(tx.tx_id, tx.body)  # first send, or again after a crash or eviction
            except BroadcastError as exc:
                if exc.permanent:
                    log.warning("tron: %s %s refused: %s", tx.kind, tx.tx_id, exc)
                    await adapter.txs.set_status(tx.tx_id, "failed")
                    return "failed"
                log.info("tron: %s %s not sent yet: %s", tx.kind, tx.tx_id, exc)
        return "pending"

    async def topup_failed(self, sweep_id: str) -> None:
        """Nothing to release: an unsent transfer expires on its own."""

    def token_contract(self, coin: str) -> str | None:
        return self.adapter.token_contract(coin)

    async def token_balance(self, contract: str, address: str) -> int:
        return await token_balance(self.adapter.http, contract, address)

    async def start_token(self, gateway: "Gateway", address: str, coin: str, contract: str, amount: int,
                          through: int) -> str:
        adapter = self.adapter
        hot = hot_wallet_address(gateway, adapter.network)
        params = await chain_parameters(adapter.http)
        state = await account_state(adapter.http, address, params)
        energy_burn = state.energy_burn(await transfer_energy(adapter.http, address, contract, hot, amount), params)
        block = await adapter.txs.ref_block()
        key = await deposit_key(gateway, address, adapter.network)
        call = trigger(address_bytes(address), address_bytes(contract), transfer_data(hot, amount))
        signed = adapter.txs.build(call, block, key, max(energy_burn, adapter.settings.fee_limit_sun))
        needed = state.bandwidth_burn(signed.bandwidth, params) + energy_burn
        missing = needed - state.balance
        sweep_id = await self.tables.new_sweep(gateway, address, coin, "topup" if missing > 0 else "sweeping",
                                               amount, through)
        if missing > 0:
            top = transfer(address_bytes(hot), address_bytes(address), missing)
            top_signed = adapter.txs.build(top, block, hot_wallet_key(gateway, adapter.network))
            activation = 0 if state.exists else params.activation_fee
            await _store(adapter, TOPUP, sweep_id, top_signed, block, hot, address, adapter.native, missing,
                         top_signed.bandwidth * params.transaction_fee + activation)
        await _store(adapter, SWEEP, sweep_id, signed, block, address, hot, coin, amount, needed)
        return sweep_id

    async def start_native(self, gateway: "Gateway", address: str, through: int) -> str | None:
        adapter = self.adapter
        params = await chain_parameters(adapter.http)
        state = await account_state(adapter.http, address, params)
        hot = hot_wallet_address(gateway, adapter.network)
        creates = 0 if (await account_state(adapter.http, hot, params)).exists else params.activation_fee
        block = await adapter.txs.ref_block()
        key = await deposit_key(gateway, address, adapter.network)
        amount, cost, signed = state.balance, 0, None
        for _ in range(3):  # the burn depends on the size, the size (slightly) on the amount
            if amount <= 0:
                break
            signed = adapter.txs.build(transfer(address_bytes(address), address_bytes(hot), amount), block, key)
            # Creating the hot wallet's account burns the activation fee instead of bandwidth.
            cost = creates or state.bandwidth_burn(signed.bandwidth, params)
            if amount + cost <= state.balance:
                break
            amount, signed = state.balance - cost, None
        if amount <= 0 or signed is None:
            await self.tables.mark_swept(gateway, address, adapter.native, through)  # dust: not worth the burn
            return None
        sweeping.check_fee_share(cost, state.balance, adapter.settings.sweep_max_fee_percent, adapter.native)
        sweep_id = await self.tables.new_sweep(gateway, address, adapter.native, "sweeping", amount, through)
        await _store(adapter, SWEEP, sweep_id, signed, block, address, hot, adapter.native, amount, cost)
        return sweep_id


async def sweep_chain(gateway: "Gateway", adapter: "TronAdapter") -> SweepReport:
    """One run of the sweep job."""
    steps = _Steps(adapter)
    return await sweeping.sweep_chain(gateway, steps, steps.tables, topup_failure="TRX top-up failed",
                                      retry_later=(BroadcastError, ChainUnavailable, NodeError, LookupError,
                                                   WatchOnlyError))


def sweep_job(adapter: "TronAdapter"):
    async def run(gateway: "Gateway") -> None:
        await sweep_chain(gateway, adapter)

    return run
