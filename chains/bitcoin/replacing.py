"""Bumping a stuck payout by replacement (BIP 125 RBF), where the node accepts replacements.

A replacement spends the payout's inputs and pays the same outputs (the
same recipients, the same amounts); only its change is smaller: the extra
fee comes from the change alone. Its fee is the current rate for its size,
at least the version it replaces plus the node's incremental relay fee for
its own size (BIP 125 rules 3-4), and never above ``fee_ceiling_sat_per_vbyte``.
Each version is stored before it is broadcast (``versions.py``), its extra
fee counted against the signer's caps first (``authorize_fee_bump``).

Litecoin Core (and most Dogecoin nodes) refuse replacements unless started
with ``-mempoolreplacement=1``: the node answers ``txn-mempool-conflict``.
The signed replacement is put to ``testmempoolaccept`` before its fee is
counted or it is stored; refused so, its bytes are discarded, ``REFUSED`` is
answered so the caller bumps by a child instead (``bumping.py``), and the
sender does not try replacements again until it restarts. A stored version a
node refuses when it is sent (after a restart of the node, a crash before
sending) and that no node ever took is deleted.

A later bump, when fees rise again, is a new replacement of the newest
version, ``bump_after_blocks`` after that one was signed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...api import PayoutStatus, SignedPayout, authorize_fee_bump
from . import versions, wallet
from .closing import incremental_rate
from .rpc import RPC_VERIFY_ALREADY_IN_CHAIN, RpcError, coin_units
from .transactions import SEQUENCE_RBF, Output, estimate_vsize, sign_transaction
from .versions import Version

if TYPE_CHECKING:  # pragma: no cover
    from .sender import BitcoinPayouts

log = logging.getLogger(__name__)

REFUSED = object()  # the node refuses replacements: bump by a child instead
REPLACEMENT_REFUSAL = "txn-mempool-conflict"  # what a node without replace-by-fee answers a conflicting spend


async def replace_stuck(sender: "BitcoinPayouts", owner: str, payout_id: str, signed: SignedPayout,
                        change: wallet.WalletOutput | None, tip: int) -> str | None | object:
    """Sign and offer the next version of a stuck payout: why it waits (a reason), None, or ``REFUSED``."""
    gateway, chain = sender.gateway, sender.name
    known = await versions.of(gateway, chain, signed.tx_hash)
    current = known[-1] if known else None
    if current is not None and not current.accepted:
        return await _offer(sender, current)  # stored, never taken yet (a crash, a refusal): the same bytes
    if current is not None and tip - current.signed_height < sender.settings.bump_after_blocks:
        return None  # the newest version waits its own blocks before another bump
    if change is None:
        return ("stuck in the mempool with no change output to pay a bump from (a replacement would need another"
                " input); waiting for the network")
    current_hash = signed.tx_hash if current is None else current.tx_hash
    try:
        entry = await sender.rpc.call("getmempoolentry", current_hash)
    except RpcError:
        return None  # mined or gone since the status was read
    current_fee = coin_units(entry["fees"]["base"])
    current_change = change.amount if current is None else current.change_amount
    decoded = await sender.rpc.call("decoderawtransaction", signed.raw if current is None else current.raw_tx)
    outputs = [Output(coin_units(o["value"]), bytes.fromhex(o["scriptPubKey"]["hex"])) for o in decoded["vout"]]
    spends = await _spends(sender, owner, decoded)
    if isinstance(spends, str):
        return spends
    spec = sender.settings.spec
    vsize = max(int(entry["vsize"]), estimate_vsize([spec.script] * len(spends), [o.script for o in outputs]))
    ceiling = sender.settings.fee_ceiling_sat_per_vbyte * 1000
    wanted = wallet.fee_for(vsize, min(await sender.fee_rate(), ceiling))
    if wanted <= current_fee:
        return None  # it already pays the current rate: a replacement would not help
    fee = max(wanted, current_fee + wallet.fee_for(vsize, await incremental_rate(sender)))
    if fee > wallet.fee_for(vsize, ceiling):
        return (f"stuck in the mempool at {current_fee} sat; a replacement would pay {fee}, above the fee ceiling"
                f" {sender.settings.fee_ceiling_sat_per_vbyte} sat/vB; waiting")
    new_change = current_change - (fee - current_fee)
    if new_change < spec.change_min_sat:
        return f"stuck in the mempool; its change {current_change} cannot pay a replacement fee of {fee}; waiting"
    outputs[change.output_index] = Output(new_change, outputs[change.output_index].script)
    number = 1 if current is None else current.version + 1
    replacement = sign_transaction(spends, outputs, sequence=SEQUENCE_RBF)
    verdict = (await sender.rpc.call("testmempoolaccept", [replacement.hex]))[0]
    if not verdict.get("allowed"):  # asked before anything is counted or stored: the bytes are discarded
        reason = str(verdict.get("reject-reason", ""))
        if REPLACEMENT_REFUSAL in reason:
            log.info("%s: the node refuses replacements (%s); bumping by a child", chain, reason)
            sender.replacement_refused = True
            return REFUSED
        return f"stuck in the mempool; the node would refuse a replacement: {reason}"
    refused = await authorize_fee_bump(gateway, payout_id, f"{chain}:{signed.tx_hash}:v{number}:{fee}",
                                       fee - current_fee)
    if refused is not None:
        return f"stuck in the mempool; a replacement paying {fee - current_fee} more is over the signer's {refused}"
    made = Version(signed.tx_hash, number, replacement.txid, replacement.hex, fee, new_change, tip)
    first = [] if current is not None else [Version(signed.tx_hash, 0, signed.tx_hash, signed.raw, current_fee,
                                                    change.amount, tip, accepted=True)]
    if not await versions.record(gateway, chain, [*first, made]):
        return None  # another worker made this version: it offers it
    log.info("%s: payout %s stuck; replacement %s (version %d) pays %d more", chain, payout_id, replacement.txid,
             number, fee - current_fee)
    return await _offer(sender, made)


async def _spends(sender: "BitcoinPayouts", owner: str, decoded: Any):
    """Signing inputs for the payout's inputs, in the transaction's order; a reason when they are not ours."""
    reserved = {(o.tx_hash, o.output_index): o for o in await wallet.reserved_outputs(
        sender.gateway, sender.name, sender.network, owner)}
    ordered = [reserved.get((i["txid"], int(i["vout"]))) for i in decoded["vin"]]
    if any(o is None for o in ordered) or len(ordered) != len(reserved):
        return "the payout's inputs are not the ones reserved for it; not replaced"
    spends = await sender.spends_of(ordered, include_mempool=False)  # the inputs are spent in the mempool: by it
    return spends if spends is not None else "an input of the payout is gone on the node; not replaced"


async def _offer(sender: "BitcoinPayouts", version: Version) -> str | None | object:
    try:
        await sender.rpc.call("sendrawtransaction", version.raw_tx)
    except RpcError as exc:
        text = exc.message.lower()
        if not (exc.code == RPC_VERIFY_ALREADY_IN_CHAIN or "already in" in text or "already-known" in text):
            await versions.forget_refused(sender.gateway, sender.name, version)
            if REPLACEMENT_REFUSAL in text and version.version == 1:
                log.info("%s: the node refuses replacements (%s); bumping by a child", sender.name, exc.message)
                sender.replacement_refused = True
                return REFUSED
            log.info("%s: replacement %s refused: %s", sender.name, version.tx_hash, exc.message)
            return f"stuck in the mempool; the node refused a replacement: {exc.message}"
    await versions.mark_accepted(sender.gateway, sender.name, version.tx_hash)
    return None


async def status_of_versions(sender: "BitcoinPayouts", owner: str, signed: SignedPayout, known: list[Version],
                             change_index: int | None) -> PayoutStatus:
    """``payout_status`` of a replaced payout: whichever version is mined (or waits in the mempool)."""
    in_pool = False
    for version in reversed(known):  # the newest first: usually the one that is mined
        confirmations, block_hash = await sender.locate(version.tx_hash, version.block_hash, version.signed_height)
        await versions.remember_block(sender.gateway, sender.name, version, block_hash)
        if confirmations is None:
            continue
        if confirmations == 0:
            in_pool = True
            continue
        await versions.settle(sender.gateway, sender.name, owner, known, version, change_index)
        await wallet.confirm_payout(sender.gateway, sender.name, owner)
        mined = None if version.tx_hash == signed.tx_hash else SignedPayout(version.tx_hash, version.raw_tx,
                                                                            version.fee)
        return PayoutStatus(found=True, confirmations=confirmations, network_fee=version.fee, mined=mined)
    return PayoutStatus(found=in_pool, confirmations=0)
