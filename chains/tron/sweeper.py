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
less the bandwidth burn.

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
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ...core import ledger
from ...core.chains import BroadcastError, ChainUnavailable
from ...core.keys import WatchOnlyError
from ...core.ledger import Posting
from ...core.ledger_accounts import NETWORK_FEES, world
from ...core.services import CreditedAddress, credited_addresses
from .address import address_bytes
from .http import NodeError
from .keys import deposit_key, hot_wallet_address, hot_wallet_key
from .resources import account_state, chain_parameters, token_balance, transfer_data, transfer_energy
from .signer import MinedInfo, StoredTx
from .transactions import RefBlock, SignedTx, transfer, trigger

if TYPE_CHECKING:  # pragma: no cover
    from ...core.gateway import Gateway
    from .adapter import TronAdapter

log = logging.getLogger(__name__)

SWEEP, TOPUP = "sweep", "topup"


def deposit_addresses_account(chain: str) -> str:
    return f"{world(chain)}:deposit_addresses"


def hot_wallet_account(chain: str) -> str:
    return f"{world(chain)}:hot_wallet"


@dataclass
class SweepReport:
    started: int = 0
    finished: int = 0
    failed: int = 0


# -- bookkeeping ---------------------------------------------------------------------------


async def _post(gateway: "Gateway", reference: str, kind: str, postings: list[Posting]) -> None:
    if all(p.amount for p in postings):
        await ledger.post_and_notify(gateway, kind=kind, reference=reference, postings=postings)


async def _book(gateway: "Gateway", adapter: "TronAdapter", tx: StoredTx, mined: MinedInfo) -> None:
    """Ledger of one final sweep or top-up (references make it idempotent)."""
    chain, native = adapter.name, adapter.native
    burned = mined.fee - mined.activation_fee
    await _post(gateway, f"tron:{chain}:fee:{tx.tx_id}", "network_fee",
                [Posting(NETWORK_FEES, native, -burned), Posting(world(chain), native, burned)])
    await _post(gateway, f"tron:{chain}:activation:{tx.tx_id}", "tron_activation",
                [Posting(NETWORK_FEES, native, -mined.activation_fee),
                 Posting(world(chain), native, mined.activation_fee)])
    if not mined.succeeded:
        return
    source, target = ((deposit_addresses_account(chain), hot_wallet_account(chain)) if tx.kind == SWEEP
                      else (hot_wallet_account(chain), deposit_addresses_account(chain)))
    await _post(gateway, f"tron:{chain}:{tx.kind}:{tx.tx_id}", f"tron_{tx.kind}",
                [Posting(source, tx.coin, -tx.amount), Posting(target, tx.coin, tx.amount)])


async def _set(gateway: "Gateway", sweep_id: str, status: str, reason: str | None = None) -> None:
    await gateway.db.execute("UPDATE tron_sweeps SET status = :s, failure_reason = :r, updated_at = :now"
                             " WHERE id = :id", {"s": status, "r": reason, "now": gateway.now(), "id": sweep_id})


async def _mark_swept(gateway: "Gateway", address: str, coin: str, through: int) -> None:
    await gateway.db.execute(
        "INSERT INTO tron_sweep_marks (address, coin, swept_through) VALUES (:a, :k, :t)"
        " ON CONFLICT (address, coin) DO UPDATE SET swept_through = excluded.swept_through"
        " WHERE tron_sweep_marks.swept_through < excluded.swept_through", {"a": address, "k": coin, "t": through})


# -- following live sweeps -------------------------------------------------------------------


async def _advance_tx(gateway: "Gateway", adapter: "TronAdapter", tx: StoredTx) -> str:
    """Push one stored transaction along: 'pending', 'done' (final and booked) or 'failed'."""
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


async def _follow(gateway: "Gateway", adapter: "TronAdapter", sweep: Mapping[str, Any], report: SweepReport) -> None:
    sweep_id = sweep["id"]
    if sweep["status"] == "topup":
        topup = await adapter.txs.find(TOPUP, sweep_id)
        state = "done" if topup is None else await _advance_tx(gateway, adapter, topup)
        if state == "failed":
            await _set(gateway, sweep_id, "failed", "TRX top-up failed")
            report.failed += 1
            return
        if state == "pending":
            return
        await _set(gateway, sweep_id, "sweeping")
    transfer_tx = await adapter.txs.find(SWEEP, sweep_id)
    if transfer_tx is None:  # crashed between writing the sweep and signing it
        await _set(gateway, sweep_id, "failed", "not signed")
        report.failed += 1
        return
    state = await _advance_tx(gateway, adapter, transfer_tx)
    if state == "done":
        await _set(gateway, sweep_id, "done")
        await _mark_swept(gateway, sweep["address"], sweep["coin"], int(sweep["credited_through"]))
        report.finished += 1
    elif state == "failed":
        await _set(gateway, sweep_id, "failed", "sweep transaction failed")
        report.failed += 1


# -- starting new sweeps ------------------------------------------------------------------------


async def _candidates(gateway: "Gateway", chain: str) -> list[CreditedAddress]:
    """(address, coin) credited since its last sweep read the balance, with no sweep of the address live."""
    marks = {(r["address"], r["coin"]): int(r["swept_through"]) for r in await gateway.db.fetch_all(
        "SELECT address, coin, swept_through FROM tron_sweep_marks")}
    live = {r["address"] for r in await gateway.db.fetch_all(
        "SELECT DISTINCT address FROM tron_sweeps WHERE status IN ('topup', 'sweeping')")}
    return [credit for credit in await credited_addresses(gateway, chain)
            if credit.address not in live and credit.last_credited_at >= marks.get((credit.address, credit.coin), 0)]


async def _new_sweep(gateway: "Gateway", address: str, coin: str, status: str, amount: int, through: int) -> str:
    sweep_id = "swp_" + secrets.token_hex(10)
    now = gateway.now()
    await gateway.db.execute(
        "INSERT INTO tron_sweeps (id, address, coin, status, amount, credited_through, created_at, updated_at)"
        " VALUES (:id, :a, :k, :s, :amt, :t, :now, :now)",
        {"id": sweep_id, "a": address, "k": coin, "s": status, "amt": gateway.db.amount_param(amount),
         "t": through, "now": now})
    return sweep_id


async def _store(adapter: "TronAdapter", kind: str, sweep_id: str, signed: SignedTx, block: RefBlock, sender: str,
                 recipient: str, coin: str, amount: int, fee_bound: int) -> StoredTx:
    return await adapter.txs.store(kind=kind, ref=sweep_id, signed=signed, sender=sender, recipient=recipient,
                                   coin=coin, amount=amount, fee_bound=fee_bound,
                                   expiration_ms=block.timestamp_ms + adapter.settings.expiration_seconds * 1000)


async def _start_token(gateway: "Gateway", adapter: "TronAdapter", address: str, coin: str,
                       through: int) -> str | None:
    contract = adapter.token_contract(coin)
    if contract is None:
        return None
    amount = await token_balance(adapter.http, contract, address)
    if amount <= 0:
        await _mark_swept(gateway, address, coin, through)
        return None
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
    sweep_id = await _new_sweep(gateway, address, coin, "topup" if missing > 0 else "sweeping", amount, through)
    if missing > 0:
        top = transfer(address_bytes(hot), address_bytes(address), missing)
        top_signed = adapter.txs.build(top, block, hot_wallet_key(gateway, adapter.network))
        activation = 0 if state.exists else params.activation_fee
        await _store(adapter, TOPUP, sweep_id, top_signed, block, hot, address, adapter.native, missing,
                     top_signed.bandwidth * params.transaction_fee + activation)
    await _store(adapter, SWEEP, sweep_id, signed, block, address, hot, coin, amount, needed)
    return sweep_id


async def _start_native(gateway: "Gateway", adapter: "TronAdapter", address: str, through: int) -> str | None:
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
        await _mark_swept(gateway, address, adapter.native, through)  # dust: not worth the burn
        return None
    sweep_id = await _new_sweep(gateway, address, adapter.native, "sweeping", amount, through)
    await _store(adapter, SWEEP, sweep_id, signed, block, address, hot, adapter.native, amount, cost)
    return sweep_id


async def sweep_chain(gateway: "Gateway", adapter: "TronAdapter") -> SweepReport:
    """One run of the sweep job."""
    report = SweepReport()
    for sweep in await gateway.db.fetch_all(
            "SELECT * FROM tron_sweeps WHERE status IN ('topup', 'sweeping') ORDER BY created_at"):
        await _follow(gateway, adapter, sweep, report)
    busy: set[str] = set()
    started: list[str] = []
    # Tokens first: a TRX sweep of the same address would spend what their fees need.
    for credit in sorted(await _candidates(gateway, adapter.name), key=lambda c: c.coin == adapter.native):
        address, coin = credit.address, credit.coin
        if address in busy:
            continue
        try:
            if coin == adapter.native:
                sweep_id = await _start_native(gateway, adapter, address, gateway.now())
            else:
                sweep_id = await _start_token(gateway, adapter, address, coin, gateway.now())
        except (BroadcastError, ChainUnavailable, NodeError, LookupError, WatchOnlyError) as exc:
            log.warning("tron: cannot sweep %s %s yet: %s", coin, address, exc)
            busy.add(address)
            continue
        if sweep_id is not None:
            busy.add(address)
            started.append(sweep_id)
            report.started += 1
    for sweep_id in started:  # send what was just signed (the same path re-sends after a crash)
        row = await gateway.db.fetch_one("SELECT * FROM tron_sweeps WHERE id = :id", {"id": sweep_id})
        assert row is not None, "the sweep was stored above, and sweeps are never deleted"
        await _follow(gateway, adapter, row, report)
    return report


def sweep_job(adapter: "TronAdapter"):
    async def run(gateway: "Gateway") -> None:
        await sweep_chain(gateway, adapter)

    return run
