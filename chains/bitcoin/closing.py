"""Closing a dropped payout: spend its inputs back to ourselves before the merchant gets the money back.

A payout our node no longer has (evicted in a fee spike, lost in a restart)
may still sit in another node's mempool and be mined later. Re-crediting the
merchant on our node's word would then pay it twice. So past the drop
timeout the gateway signs one transaction of its own that spends the
payout's still-unspent inputs to a fresh change key of the platform (the
only output; the fee is the only value that leaves), stores it before the
broadcast, and answers ``closed`` only once that transaction is
``payout_confirmations`` deep. If the original is mined instead, the worker
sees it through ``payout_status`` and the payout ends Confirmed.

The closing fee pays at least the current rate and at least the original's
fee plus the node's incremental relay fee for its own size (so a node that
replaces by fee takes ours over the original); it is refused above
``CLOSING_FEE_LIMIT`` times that floor: the payout then waits, still
reserved, for fees to fall (docs/decisions.md, "Never paid twice").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...api import BroadcastError, DropClosure, SignedPayout
from . import conflicts, versions, wallet
from .conflicts import Conflict
from .rpc import RpcError, fee_rate_sat_per_kvb
from .transactions import SEQUENCE_RBF, Output, estimate_vsize, sign_transaction

if TYPE_CHECKING:  # pragma: no cover
    from .sender import BitcoinPayouts

log = logging.getLogger(__name__)

CLOSING_FEE_LIMIT = 10  # times the least a closing transaction must pay
DEFAULT_INCREMENTAL_SAT_PER_KVB = 1_000  # Bitcoin Core's and Litecoin Core's default -incrementalrelayfee


async def close_dropped(sender: "BitcoinPayouts", payout_id: str, signed: SignedPayout) -> DropClosure:
    """The ``PayoutSender.close_dropped`` of a bitcoin-family chain (see the module docstring)."""
    conflict = await conflicts.find(sender.gateway, sender.name, payout_id)
    if conflict is None:
        made = await _sign_closing(sender, payout_id, signed)
        if isinstance(made, str):
            return DropClosure(closed=False, detail=made)
        conflict = await conflicts.record(sender.gateway, sender.name, made)
    confirmations, block_hash = await sender.locate(conflict.tx_hash, conflict.block_hash, conflict.signed_height)
    await conflicts.remember_block(sender.gateway, sender.name, conflict, block_hash)
    if confirmations is not None and confirmations >= sender.payout_confirmations:
        await conflicts.settle(sender.gateway, sender.name, conflict, signed.tx_hash)
        log.info("%s: dropped payout %s closed by %s (fee %d); re-crediting", sender.name, payout_id,
                 conflict.tx_hash, conflict.fee)
        return DropClosure(closed=True, network_fee=conflict.fee)
    detail = f"closing transaction {conflict.tx_hash}: {confirmations or 0} confirmation(s)"
    if confirmations is None:  # not on the node (yet, or evicted too): offer the stored bytes again
        try:
            await sender.broadcast(SignedPayout(conflict.tx_hash, conflict.raw_tx, conflict.fee))
        except BroadcastError as exc:
            detail += f"; the node refused it for now: {exc}"
    return DropClosure(closed=False, detail=detail)


async def _sign_closing(sender: "BitcoinPayouts", payout_id: str, original: SignedPayout) -> Conflict | str:
    """A signed closing transaction for ``payout_id``, or why none can be made now."""
    gateway, spec = sender.gateway, sender.settings.spec
    outputs = await wallet.reserved_outputs(gateway, sender.name, sender.network, payout_id)
    unspent = [o for o in outputs if await sender.rpc.call("gettxout", o.tx_hash, o.output_index, True) is not None]
    if not unspent:
        log.error("%s: dropped payout %s: none of its inputs is unspent on the node, yet the payout is not found;"
                  " never re-credited on that word", sender.name, payout_id)
        return "no input of the payout is unspent on the node; the payout stays reserved (docs/payouts.md)"
    spends = await sender.spends_of(unspent)
    if spends is None:
        return "an input changed on the node while closing; trying again"
    key_index, script = await sender.fresh_change_key()
    vsize = estimate_vsize([spec.script] * len(spends), [script])
    replaced = await versions.latest_accepted(gateway, sender.name, original.tx_hash)  # a fee replacement's, if any
    paid = int(original.network_fee) if replaced is None else max(int(original.network_fee), replaced.fee)
    floor = paid + wallet.fee_for(vsize, await incremental_rate(sender))
    fee = max(floor, wallet.fee_for(vsize, await sender.fee_rate()))
    total = sum(o.amount for o in unspent)
    if fee > CLOSING_FEE_LIMIT * floor:
        return f"closing would pay a fee of {fee}, above {CLOSING_FEE_LIMIT} x {floor}; waiting for fees to fall"
    if total - fee < spec.change_min_sat:
        return f"the inputs ({total}) do not cover the closing fee {fee}; the payout stays reserved"
    closing = sign_transaction(spends, [Output(total - fee, script)], sequence=SEQUENCE_RBF)
    height = int(await sender.rpc.call("getblockcount"))
    log.warning("%s: payout %s was dropped; closing it with %s (fee %d) before any re-credit", sender.name,
                payout_id, closing.txid, fee)
    return Conflict(payout_id, closing.txid, closing.hex, fee, total - fee, key_index, height)


async def incremental_rate(sender: "BitcoinPayouts") -> int:
    """The node's incremental relay fee (satoshis per 1,000 vbytes): what a replacement pays for its own size."""
    try:
        info = await sender.rpc.call("getnetworkinfo")
        return fee_rate_sat_per_kvb(info.get("incrementalfee", 0) or 0) or DEFAULT_INCREMENTAL_SAT_PER_KVB
    except (RpcError, TypeError):
        return DEFAULT_INCREMENTAL_SAT_PER_KVB
