"""Bumping a stuck payout: a child spending its change pays for both (CPFP).

A payout still in the mempool ``bump_after_blocks`` blocks after it was
signed gets one child: it spends the payout's change output to a fresh
internal change key, with a fee that brings the package (parent + child) to
the current rate, never above ``fee_ceiling_sat_per_vbyte``. CPFP works on
every node, also Litecoin Core and Dogecoin nodes that refuse replacements,
and leaves the payout's own transaction (its txid, what the merchant sees)
unchanged. The child is stored before it is broadcast (``bumps.py``).

While a child exists the payout's confirmations are the lesser of the two,
and its ``network_fee`` once the child is mined is the parent's plus the
child's: the fee booked is the fee paid. A child that vanished while the
parent is deep enough is forgotten and the change given back; the payout is
then booked with the parent's fee alone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...api import BroadcastError, PayoutStatus, SignedPayout
from ...api.addresses import keystore, next_counter
from . import bumps, wallet
from .bumps import Bump
from .rpc import RpcError, coin_units
from .transactions import SEQUENCE_RBF, Output, estimate_vsize, script_for_key, sign_transaction

if TYPE_CHECKING:  # pragma: no cover
    from .sender import BitcoinPayouts

log = logging.getLogger(__name__)


async def bump_stuck(sender: "BitcoinPayouts", payout_id: str, signed: SignedPayout) -> None:
    """The ``PayoutSender.bump_stuck`` of a bitcoin-family chain (see the module docstring)."""
    settings = sender.settings
    if settings.bump_after_blocks == 0:
        return
    existing = await bumps.find(sender.gateway, sender.name, payout_id)
    if existing is not None:
        return  # one child per payout; ``status_with_bump`` re-broadcasts it
    row = await wallet.payout_tx(sender.gateway, sender.name, signed.tx_hash)
    tip = int(await sender.rpc.call("getblockcount"))
    if row is None or tip - int(row["signed_height"]) < settings.bump_after_blocks:
        return
    change = await _change_of(sender, signed.tx_hash)
    if change is None:
        log.info("%s: payout %s is stuck and has no change to pay for it", sender.name, payout_id)
        return
    try:
        entry = await sender.rpc.call("getmempoolentry", signed.tx_hash)
    except RpcError:
        return  # mined or gone since the status was read
    parent_vsize, parent_fee = int(entry["vsize"]), coin_units(entry["fees"]["base"])
    rate = min(await sender.fee_rate(), settings.fee_ceiling_sat_per_vbyte * 1000)
    spec = settings.spec
    family = sender.payout_family()
    key_index = await next_counter(sender.gateway, f"change:{sender.name}:{sender.network}")
    script = script_for_key(spec.script, family.derive(keystore(sender.gateway), wallet.PLATFORM_ACCOUNT, key_index,
                                                       change=True).public_key)
    child_vsize = estimate_vsize([spec.script], [script])
    fee = wallet.fee_for(parent_vsize + child_vsize, rate) - parent_fee
    if fee < wallet.fee_for(child_vsize, rate):
        return  # the parent alone already pays the rate: a child would not help
    if change.amount - fee < spec.change_min_sat:
        log.warning("%s: payout %s is stuck; its change %d cannot pay a bump of %d", sender.name, payout_id,
                    change.amount, fee)
        return
    spends = await sender.spends_of([change])
    if spends is None:
        return
    child = sign_transaction(spends, [Output(change.amount - fee, script)], sequence=SEQUENCE_RBF)
    bump = await bumps.record(sender.gateway, sender.name,
                              Bump(payout_id, child.txid, child.hex, signed.tx_hash, parent_fee, fee, tip),
                              (change.tx_hash, change.output_index), change.amount - fee, key_index)
    if bump is None:
        return
    log.info("%s: payout %s stuck for %d block(s); child %s pays %d more", sender.name, payout_id,
             tip - int(row["signed_height"]), child.txid, fee)
    await _offer(sender, bump)


async def status_with_bump(sender: "BitcoinPayouts", payout_id: str, status: PayoutStatus) -> PayoutStatus:
    """``status`` of the payout's own transaction, made to account for its child (if any)."""
    bump = await bumps.find(sender.gateway, sender.name, payout_id)
    if bump is None or not status.found:
        return status
    confirmations, block_hash = await sender.locate(bump.tx_hash, bump.block_hash, bump.signed_height)
    await bumps.remember_block(sender.gateway, sender.name, bump, block_hash)
    if confirmations:
        await wallet.confirm_payout(sender.gateway, sender.name, bumps.owner(payout_id))
        return PayoutStatus(found=True, confirmations=min(status.confirmations, confirmations),
                            network_fee=bump.parent_fee + bump.fee)
    if confirmations is None and status.confirmations >= sender.payout_confirmations:
        # The child vanished and the parent made it alone: the change is ours again, the parent's fee stands.
        change = await _change_of(sender, bump.parent_tx_hash)
        index = wallet.CHANGE_OUTPUT_INDEX if change is None else change.output_index  # a batch's is after its items
        await wallet.release_payout(sender.gateway, sender.name, bumps.owner(payout_id),
                                    [(bump.parent_tx_hash, index)], [])
        return status
    if confirmations is None:
        await _offer(sender, bump)
    return PayoutStatus(found=True, confirmations=0)


async def _change_of(sender: "BitcoinPayouts", tx_hash: str) -> wallet.WalletOutput | None:
    row: Any = await sender.gateway.db.fetch_one(
        "SELECT output_index, amount, key_index FROM bitcoin_change_outputs WHERE chain = :c AND tx_hash = :h",
        {"c": sender.name, "h": tx_hash})
    if row is None:
        return None
    return wallet.WalletOutput(tx_hash, int(row["output_index"]), sender.gateway.db.to_int(row["amount"]),
                               wallet.PLATFORM_ACCOUNT, int(row["key_index"]), change=True)


async def _offer(sender: "BitcoinPayouts", bump: Bump) -> None:
    try:
        await sender.broadcast(SignedPayout(bump.tx_hash, bump.raw_tx, bump.fee))
    except BroadcastError as exc:
        log.info("%s: the bump %s of payout %s was refused for now: %s", sender.name, bump.tx_hash, bump.payout_id,
                 exc)
