"""Re-signing a stuck transaction at its own nonce with higher fees (issue 46 item 2, EVM part).

A payout or a gas top-up signed with ``maxFeePerGas`` below what the chain
now asks (the base fee rose past it, or the tip market did) waits in the
mempool and holds every later hot-wallet nonce. Once its newest version is
``bump_after_blocks`` blocks old and priced below the market, it is signed
again with the SAME nonce, recipient, value, data and gas limit (read back
from the stored bytes, never from a caller), the tip and maxFee each raised
by at least the replacement minimum nodes ask (``signer.bumped``: geth's
10 % plus one wei) and maxFee to ``2 × next base fee + tip`` like a fresh
signing. Never above the chain's ``fee_ceiling_gwei``: when even the least
acceptable replacement is above it, ``FeeAboveCeiling`` and the transaction
waits where it is. A payout's re-signing also passes the signer's caps
first (``authorize``: ``authorize_fee_bump`` in the chain's native coin, the
coin gas is paid in, also for a token payout), counted by what it may cost
more: gas limit × the maxFee rise; refused, nothing is signed and the
payout waits with the cap named.

All versions share one nonce, so exactly one can be mined: the transfer
goes out once. Each is stored (``versions.py``) before it is broadcast and
the receipts of all of them are checked (``TxStore.status``), so the mined
one is what the payout shows and books (its gas used × effective price).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Awaitable, Callable

from ...api import BroadcastError, FeeAboveCeiling
from . import versions
from .eth_account_import import Account
from .rpc import quantity
from .signer import Fees, bumped, gwei

if TYPE_CHECKING:  # pragma: no cover
    from .signer import StoredTx, TxStore

log = logging.getLogger(__name__)

LIVE = ("stored", "broadcast")
# Asked before a payout's version is signed: (reference, extra fee in wei) -> the signer's cap it passes, or None.
Authorize = Callable[[str, int], Awaitable["str | None"]]


def replacement_fees(newest: versions.Version, next_base: int, market_tip: int, ceiling: int | None) -> Fees:
    """The fees of the next version: above ``newest``'s by the replacement minimum, at the market, under the ceiling.

    Raises ``FeeAboveCeiling`` when the least fees a node would take in
    place of ``newest`` (or the least that can be mined at the next base
    fee) are above ``ceiling``.
    """
    tip = max(bumped(newest.max_priority_fee_per_gas), market_tip)
    least = max(bumped(newest.max_fee_per_gas), next_base + tip)
    if ceiling is not None and least > ceiling:
        raise FeeAboveCeiling(gwei(least), gwei(ceiling), "gwei")
    max_fee = max(least, 2 * next_base + tip)
    return Fees(max_fee if ceiling is None else min(max_fee, ceiling), tip)


def priced_out(newest: versions.Version, next_base: int, market_tip: int) -> bool:
    """Is ``newest`` below what the next block asks? Otherwise a replacement would only burn fees."""
    return newest.max_fee_per_gas < next_base + market_tip or newest.max_priority_fee_per_gas < market_tip


async def bump_stuck(txs: "TxStore", stored: "StoredTx", key: bytes, after_blocks: int,
                     authorize: Authorize | None = None) -> str | None:
    """Re-sign ``stored`` at its nonce when it is stuck (see the module docstring); why it waits, or None.

    Called while the transaction waits unmined; idempotent: a version stored
    by a concurrent twin is not signed twice (same number), and a version is
    due only ``after_blocks`` blocks after the newest one. ``authorize``
    (payouts) judges the extra fee before anything is signed.
    """
    if after_blocks == 0 or stored.status not in LIVE:
        return None
    if Account.from_key(key).address != stored.sender:
        raise BroadcastError(f"{stored.kind} {stored.ref} was not signed by this key", permanent=True)
    newest = (await txs.versions(stored))[-1]
    height = quantity(await txs.rpc.call("eth_blockNumber"))
    if newest.signed_height is not None and height - newest.signed_height < after_blocks:
        return None
    next_base, market_tip = await txs.market()
    if not priced_out(newest, next_base, market_tip):
        return None
    fees = replacement_fees(newest, next_base, market_tip, txs.fee_ceiling_wei)
    fields = versions.signed_fields(newest.raw)
    if authorize is not None:
        extra = fields["gas"] * (fees.max_fee_per_gas - newest.max_fee_per_gas)
        refused = await authorize(f"{txs.chain}:{stored.tx_hash}:v{newest.number + 1}:{fees.max_fee_per_gas}", extra)
        if refused is not None:
            return f"stuck in the mempool; a replacement costing up to {extra} wei more is over the signer's {refused}"
    signed = Account.sign_transaction({
        "type": 2, "chainId": txs.chain_id, "nonce": stored.nonce, "to": fields["to"], "value": fields["value"],
        "data": fields["data"], "gas": fields["gas"], "maxFeePerGas": fees.max_fee_per_gas,
        "maxPriorityFeePerGas": fees.max_priority_fee_per_gas,
    }, key)
    version = versions.Version(newest.number + 1, "0x" + bytes(signed.hash).hex(),
                               "0x" + bytes(signed.raw_transaction).hex(), fees.max_fee_per_gas,
                               fees.max_priority_fee_per_gas, height)
    if not await _store(txs, stored, version):
        return None
    log.info("%s: %s %s stuck at nonce %d: re-signed as %s, maxFee %s -> %s gwei, tip %s -> %s gwei", txs.chain,
             stored.kind, stored.ref, stored.nonce, version.tx_hash, gwei(newest.max_fee_per_gas),
             gwei(version.max_fee_per_gas), gwei(newest.max_priority_fee_per_gas),
             gwei(version.max_priority_fee_per_gas))
    try:
        await txs.broadcast(version.tx_hash, version.raw)
    except BroadcastError as exc:
        if exc.permanent:  # no node took it (the original was just mined, funds short): it can never be mined
            await versions.forget_unsent(txs.gateway, txs.chain, version.tx_hash)
        log.info("%s: re-signed %s refused for now: %s", txs.chain, version.tx_hash, exc)
    return None


async def _store(txs: "TxStore", stored: "StoredTx", version: versions.Version) -> bool:
    """Store ``version`` under the sender's nonce lock, while the transaction is still live; False otherwise."""
    db = txs.gateway.db
    async with db.transaction():
        await txs.lock_sender(stored.sender)
        status = await db.fetch_val("SELECT status FROM evm_txs WHERE id = :id", {"id": stored.id})
        if status not in LIVE:
            return False  # mined, or a cancel took the nonce meanwhile
        return await versions.insert(txs.gateway, txs.chain, stored, version)
