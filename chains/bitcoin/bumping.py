"""Bumping a stuck payout: a replacement where the node takes one, else a child paying for both (CPFP).

Replacement first (``replacing.py``, BIP 125): it needs no change to spend
and no second transaction to land, and it is what BTCPay does where the
network relays replacements. A node that refuses replacements (Litecoin
Core's default, most Dogecoin nodes) answers ``txn-mempool-conflict`` to the
first one; the payout then gets a child, and so does every later payout of
this process (``bump_by_replacement = false`` skips the attempt). Every bump's
extra fee passes the signer's caps first (``authorize_fee_bump``).

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

from ...api import BroadcastError, PayoutStatus, SignedPayout, authorize_fee_bump
from . import bumps, replacing, versions, wallet
from .bumps import Bump
from .rpc import RpcError, coin_units
from .transactions import SEQUENCE_RBF, Output, estimate_vsize, sign_transaction

if TYPE_CHECKING:  # pragma: no cover
    from .sender import BitcoinPayouts

log = logging.getLogger(__name__)


async def bump_stuck(sender: "BitcoinPayouts", payout_id: str, signed: SignedPayout) -> str | None:
    """The ``PayoutSender.bump_stuck`` of a bitcoin-family chain: a replacement where the node takes one
    (``replacing.py``), else a child (see the module docstring); why it waits, or None."""
    settings = sender.settings
    if settings.bump_after_blocks == 0:
        return None
    owner = await sender.spend_owner(payout_id, signed)
    if await bumps.find(sender.gateway, sender.name, owner) is not None:
        return None  # one child per payout; ``status_with_bump`` re-broadcasts it
    row = await wallet.payout_tx(sender.gateway, sender.name, signed.tx_hash)
    tip = int(await sender.rpc.call("getblockcount"))
    if row is None or tip - int(row["signed_height"]) < settings.bump_after_blocks:
        return None
    change = await change_of(sender, signed.tx_hash)
    replaced = await versions.of(sender.gateway, sender.name, signed.tx_hash)
    if replaced or (settings.bump_by_replacement and not sender.replacement_refused):
        outcome = await replacing.replace_stuck(sender, owner, payout_id, signed, change, tip)
        if outcome is not replacing.REFUSED:
            return outcome if isinstance(outcome, str) else None
    if change is None:
        return ("stuck in the mempool with no change output for a child to spend, and the node refuses"
                " replacements; waiting for the network")
    return await _bump_by_child(sender, owner, payout_id, signed, change, tip, int(row["signed_height"]))


async def _bump_by_child(sender: "BitcoinPayouts", owner: str, payout_id: str, signed: SignedPayout,
                         change: wallet.WalletOutput, tip: int, signed_height: int) -> str | None:
    """One child spending the payout's change, the package at the current rate up to the ceiling."""
    settings = sender.settings
    try:
        entry = await sender.rpc.call("getmempoolentry", signed.tx_hash)
    except RpcError:
        return None  # mined or gone since the status was read
    parent_vsize, parent_fee = int(entry["vsize"]), coin_units(entry["fees"]["base"])
    rate = min(await sender.fee_rate(), settings.fee_ceiling_sat_per_vbyte * 1000)
    spec = settings.spec
    key_index, script = await sender.fresh_change_key()
    child_vsize = estimate_vsize([spec.script], [script])
    fee = wallet.fee_for(parent_vsize + child_vsize, rate) - parent_fee
    if fee < wallet.fee_for(child_vsize, rate):
        return None  # the parent alone already pays the rate: a child would not help
    if change.amount - fee < spec.change_min_sat:
        log.warning("%s: payout %s is stuck; its change %d cannot pay a bump of %d", sender.name, payout_id,
                    change.amount, fee)
        return f"stuck in the mempool; its change {change.amount} cannot pay a child's fee of {fee}; waiting"
    refused = await authorize_fee_bump(sender.gateway, payout_id, f"{sender.name}:{signed.tx_hash}:child:{fee}", fee)
    if refused is not None:
        return f"stuck in the mempool; a child paying {fee} is over the signer's {refused}"
    spends = await sender.spends_of([change])
    if spends is None:
        return None
    child = sign_transaction(spends, [Output(change.amount - fee, script)], sequence=SEQUENCE_RBF)
    bump = await bumps.record(sender.gateway, sender.name,
                              Bump(owner, child.txid, child.hex, signed.tx_hash, parent_fee, fee, tip),
                              (change.tx_hash, change.output_index), change.amount - fee, key_index)
    if bump is None:
        return None
    log.info("%s: payout %s stuck for %d block(s); child %s pays %d more", sender.name, payout_id,
             tip - signed_height, child.txid, fee)
    await _offer(sender, bump)
    return None


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
        change = await change_of(sender, bump.parent_tx_hash)
        index = wallet.CHANGE_OUTPUT_INDEX if change is None else change.output_index  # a batch's is after its items
        await wallet.release_payout(sender.gateway, sender.name, bumps.owner(payout_id),
                                    [(bump.parent_tx_hash, index)], [])
        return status
    if confirmations is None:
        await _offer(sender, bump)
    return PayoutStatus(found=True, confirmations=0)


async def change_of(sender: "BitcoinPayouts", tx_hash: str) -> wallet.WalletOutput | None:
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
