"""The payout role of a bitcoin-family chain: sign from the hot wallet, broadcast, follow.

``sign_payout`` selects outputs (``wallet.py``), checks each with ``gettxout``
(still unspent, the amount and the script we hold the key of), signs
(``transactions.py``) and reserves the inputs in the same step as it
remembers the change, so no two payouts ever spend one output. The fee rate
is ``estimatesmartfee fee_target_blocks`` (never below the node's mempool
minimum), else the configured fallback; above ``fee_ceiling_sat_per_vbyte``
nothing is signed and the payout waits (``fees.py``).

``payout_status`` works without ``-txindex``: a transaction in the mempool is
found with ``getrawtransaction``; once mined, the block that holds it is
found by searching the blocks since the payout was signed (txids only) and
remembered, and its confirmations are then that block's (``getblockheader``,
-1 when a reorganisation removed it, so the search starts again).

``close_dropped`` (``closing.py``): a payout missing past the drop timeout
is closed by a transaction of ours spending its inputs, never re-credited on
our node's word alone. ``bump_stuck`` (``bumping.py``): a payout waiting in
the mempool for ``bump_after_blocks`` is replaced by one paying more where
the node accepts replacements (payouts signal BIP 125; every version is
followed by ``payout_status``), else gets a child paying for it (CPFP).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

from ...api import (
    AddressError, BroadcastError, ChainUnavailable, DropClosure, HotWalletShort, PayoutOrder, PayoutSender,
    PayoutStatus, SignedPayout,
)
from ...api.addresses import keystore, next_counter
from . import bumping, closing, fees, replacing, versions, wallet
from .rpc import (
    RPC_DESERIALIZATION_ERROR, RPC_INVALID_ADDRESS_OR_KEY, RPC_VERIFY_ALREADY_IN_CHAIN, RPC_VERIFY_ERROR,
    RPC_VERIFY_REJECTED, NodeRpc, RpcError, coin_units, fee_rate_sat_per_kvb,
)
from .settings import CoinSettings
from .transactions import (
    SEQUENCE_RBF, Outpoint, Output, SignedTransaction, Spend, script_for_address, script_for_key, sign_transaction,
)

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

SELECTION_ATTEMPTS = 4
MAX_PAYOUT_SEARCH_BLOCKS = 2_000
# Node refusals worth retrying: the mempool is full or our chain of unconfirmed spends is long.
TRANSIENT_REFUSALS = ("mempool full", "too-long-mempool-chain", "mempool min fee not met")


class BitcoinPayouts(PayoutSender):
    """Mixed into the chain adapter; needs ``gateway``, ``rpc``, ``settings``, ``name``, ``network``."""

    gateway: "Gateway"
    rpc: NodeRpc
    settings: CoinSettings
    name: str
    network: str
    fee_estimator: fees.FeeEstimator  # the seam tests and other fee sources use (fees.py)
    replacement_refused: bool = False  # the node answered a replacement txn-mempool-conflict (replacing.py)

    # -- fees ------------------------------------------------------------------------------

    async def fee_rate(self) -> int:
        """Satoshis per 1,000 vbytes for a payout now: the estimate (else the fallback), at least the node's floor."""
        floor = 0
        try:
            info = await self.rpc.call("getmempoolinfo")
            floor = max(fee_rate_sat_per_kvb(info.get("mempoolminfee", 0) or 0),
                        fee_rate_sat_per_kvb(info.get("minrelaytxfee", 0) or 0))
        except (RpcError, TypeError):
            pass
        rate = await self.fee_estimator()
        if rate is None:
            rate = self.settings.fee_fallback_sat_per_vbyte * 1000
        return max(rate, floor)

    # -- signing ---------------------------------------------------------------------------

    def payout_family(self):
        return self.gateway.address_families.require(self.settings.spec.family, self.network)

    async def sign_payout(self, order: PayoutOrder) -> SignedPayout:
        spec = self.settings.spec
        if order.coin != spec.symbol:
            raise BroadcastError(f"{self.name} pays {spec.symbol}, not {order.coin}", permanent=True)
        family = self.payout_family()
        try:
            destination = script_for_address(spec.family, self.network, family.validate(order.destination))
        except (AddressError, ValueError) as exc:
            raise BroadcastError(f"invalid destination: {exc}", permanent=True) from None
        if order.amount < spec.change_min_sat:
            raise BroadcastError(f"amount {order.amount} is below the dust limit", permanent=True)
        await self.release_failed_payouts()
        signed, fee = await self.sign_spend(order.payout_id, order.amount, destination)
        log.info("%s: payout %s signed as %s (fee %d, vsize %d)", self.name, order.payout_id, signed.txid, fee,
                 signed.vsize)
        return SignedPayout(tx_hash=signed.txid, raw=signed.hex, network_fee=fee)

    async def sign_batch(self, orders: Sequence[PayoutOrder]) -> SignedPayout:
        """One transaction paying every order (one output each, in order), the change last; reserved under the
        first order's id (``Capability.BATCH_PAYOUTS``; the core shares the fee among the items)."""
        spec = self.settings.spec
        family = self.payout_family()
        payments: list[tuple[int, bytes]] = []
        for order in orders:
            if order.coin != spec.symbol:
                raise BroadcastError(f"{self.name} pays {spec.symbol}, not {order.coin}", permanent=True)
            try:
                script = script_for_address(spec.family, self.network, family.validate(order.destination))
            except (AddressError, ValueError) as exc:
                raise BroadcastError(f"invalid destination of {order.payout_id}: {exc}", permanent=True) from None
            if order.amount < spec.change_min_sat:
                raise BroadcastError(f"amount {order.amount} of {order.payout_id} is below the dust limit",
                                     permanent=True)
            payments.append((order.amount, script))
        await self.release_failed_payouts()
        signed, fee = await self.sign_outputs(orders[0].payout_id, payments)
        log.info("%s: %d payouts signed as one transaction %s (fee %d, vsize %d)", self.name, len(orders),
                 signed.txid, fee, signed.vsize)
        return SignedPayout(tx_hash=signed.txid, raw=signed.hex, network_fee=fee)

    async def sign_spend(self, spend_id: str, amount: int, destination: bytes,
                         store: Callable[[SignedTransaction, int], Awaitable[None]] | None = None,
                         ) -> tuple[SignedTransaction, int]:
        """Pay ``amount`` to ``destination`` from the hot wallet: (the signed transaction, its fee).

        The inputs are reserved and the change remembered under ``spend_id``
        (a payout's id, or a sweep to cold's) before this returns, so no two
        spends ever take one output; ``store(signed, fee)`` writes in that same
        transaction (a sweep keeps its bytes there). ``HotWalletShort`` when the
        wallet cannot pay it now.
        """
        return await self.sign_outputs(spend_id, [(amount, destination)], store)

    async def sign_outputs(self, spend_id: str, payments: Sequence[tuple[int, bytes]],
                           store: Callable[[SignedTransaction, int], Awaitable[None]] | None = None,
                           ) -> tuple[SignedTransaction, int]:
        """``sign_spend`` for one or more (amount, script) payments, in that output order, the change last."""
        amount = sum(a for a, _ in payments)
        destinations = [script for _, script in payments]
        spec = self.settings.spec
        rate = await self.fee_rate()
        fees.check_ceiling(rate, self.settings.fee_ceiling_sat_per_vbyte)  # above it: the payout waits
        height = int(await self.rpc.call("getblockcount"))
        change_script = self.change_script(0)  # its length is every change key's: for the fee estimate
        for _ in range(SELECTION_ATTEMPTS):
            candidates = await wallet.spendable_outputs(self.gateway, self.name, self.network)
            try:
                selection = wallet.select_outputs(
                    candidates, amount, rate_sat_per_kvb=rate, kind=spec.script,
                    destination_script=destinations, change_script=change_script, change_min=spec.change_min_sat)
            except wallet.InsufficientFunds as exc:
                raise HotWalletShort(f"{self.name}: {exc}") from None
            spends = await self.spends_of(selection.inputs)
            if spends is None:
                continue  # some were gone on the node: select again without them
            outputs = [Output(a, script) for a, script in payments]
            change_key_index = None
            if selection.change:
                change_key_index, script = await self.fresh_change_key()
                outputs.append(Output(selection.change, script))
            signed = sign_transaction(spends, outputs, sequence=SEQUENCE_RBF)  # replaceable: bumping
            try:
                await wallet.record_signed(self.gateway, self.name, wallet.SignedSpend(
                    payout_id=spend_id, tx_hash=signed.txid, inputs=selection.inputs,
                    change_index=len(payments) if selection.change else None,
                    change_amount=selection.change, change_key_index=change_key_index, signed_height=height),
                    also=None if store is None else partial(store, signed, selection.fee))
            except wallet.ReservationConflict:
                continue
            return signed, selection.fee
        raise BroadcastError(f"{self.name}: hot wallet busy, try again", permanent=False)

    def change_script(self, index: int) -> bytes:
        """The script of the platform's internal key ``index``: where change (and a consolidation) is paid."""
        public_key = self.payout_family().derive(keystore(self.gateway), wallet.PLATFORM_ACCOUNT, index,
                                                 change=True).public_key
        return script_for_key(self.settings.spec.script, public_key)

    async def fresh_change_key(self) -> tuple[int, bytes]:
        """A change key never handed out before (the chain's counter): (its index, its script)."""
        index = await next_counter(self.gateway, f"change:{self.name}:{self.network}")
        return index, self.change_script(index)

    async def spends_of(self, outputs, include_mempool: bool = True) -> list[Spend] | None:
        """Signing inputs for ``outputs`` after checking each on the node; None if any is gone.

        ``include_mempool=False``: unspent in the chain is enough (a replacement spends what the version it
        replaces spends in the mempool).
        """
        family = self.payout_family()
        store = keystore(self.gateway)
        spends, gone = [], []
        for output in outputs:
            coin = await self.rpc.call("gettxout", output.tx_hash, output.output_index, include_mempool)
            if coin is None:
                gone.append((output.tx_hash, output.output_index))
                continue
            public_key = family.derive(store, output.key_account, output.key_index, change=output.change).public_key
            script = script_for_key(self.settings.spec.script, public_key)
            if coin_units(coin["value"]) != output.amount or coin["scriptPubKey"]["hex"] != script.hex():
                log.error("%s: output %s:%d does not match our books; never spending it", self.name,
                          output.tx_hash, output.output_index)
                gone.append((output.tx_hash, output.output_index))
                continue
            private_key = store.private_key_for(family, output.key_account, output.key_index, change=output.change)
            spends.append(Spend(Outpoint(output.tx_hash, output.output_index), output.amount,
                                self.settings.spec.script, private_key))
        if gone:
            log.warning("%s: %d wallet output(s) are spent on the node; excluded", self.name, len(gone))
            await wallet.mark_spent(self.gateway, self.name, gone)
            return None
        return spends

    # -- broadcasting ----------------------------------------------------------------------

    async def broadcast(self, signed: SignedPayout) -> None:
        """Send ``signed``; a payout replaced by fee sends its newest version a node took instead."""
        replaced = await versions.latest_accepted(self.gateway, self.name, signed.tx_hash)
        if replaced is not None:
            signed = SignedPayout(replaced.tx_hash, replaced.raw_tx, replaced.fee)
        try:
            await self.rpc.call("sendrawtransaction", signed.raw)
        except RpcError as exc:
            text = exc.message.lower()
            if exc.code == RPC_VERIFY_ALREADY_IN_CHAIN or "already in" in text or "already-known" in text:
                return  # sent before: harmless
            if any(reason in text for reason in TRANSIENT_REFUSALS):
                raise BroadcastError(exc.message, permanent=False) from None
            if exc.code in (RPC_VERIFY_ERROR, RPC_VERIFY_REJECTED, RPC_DESERIALIZATION_ERROR):
                raise BroadcastError(exc.message, permanent=True) from None
            raise BroadcastError(exc.message, permanent=False) from None

    # -- following -------------------------------------------------------------------------

    async def payout_status(self, signed: SignedPayout) -> PayoutStatus:
        row = await wallet.payout_tx(self.gateway, self.name, signed.tx_hash)
        replaced = await versions.of(self.gateway, self.name, signed.tx_hash)
        if row is not None and replaced:  # every version: whichever is mined is the payout's
            change = await bumping.change_of(self, signed.tx_hash)
            return await replacing.status_of_versions(self, str(row["payout_id"]), signed, replaced,
                                                      None if change is None else change.output_index)
        confirmations, block_hash = await self.locate(
            signed.tx_hash, row["block_hash"] if row else None, int(row["signed_height"]) if row else None)
        if row is not None and row["block_hash"] and row["block_hash"] != block_hash:
            await wallet.forget_block(self.gateway, self.name, signed.tx_hash)  # reorganised away
        if confirmations is None:
            return PayoutStatus(found=False)
        if block_hash is not None:
            await self._confirmed(row, block_hash)
        status = PayoutStatus(found=True, confirmations=confirmations)
        return status if row is None else await bumping.status_with_bump(self, row["payout_id"], status)

    async def bump_stuck(self, payout_id: str, signed: SignedPayout) -> str | None:
        """A replacement, else a child, for a payout stuck ``bump_after_blocks`` blocks (``bumping.py``)."""
        return await bumping.bump_stuck(self, payout_id, signed)

    async def spend_owner(self, payout_id: str, signed: SignedPayout) -> str:
        """The id the wallet books ``signed``'s spend under: the payout's own, or its batch's first item's."""
        row = await wallet.payout_tx(self.gateway, self.name, signed.tx_hash)
        return payout_id if row is None else str(row["payout_id"])

    async def locate(self, txid: str, remembered_block: str | None,
                     since: int | None) -> tuple[int | None, str | None]:
        """(confirmations, block hash) of ``txid`` on the best chain: (0, None) in the mempool, (None, None) unknown.

        ``remembered_block`` is where it was last seen mined (checked first);
        else the blocks from ``since`` (the height it was signed at) are searched.
        """
        try:
            tx = await self.rpc.call("getrawtransaction", txid, True)
        except RpcError as exc:
            if exc.code != RPC_INVALID_ADDRESS_OR_KEY:
                raise ChainUnavailable(str(exc)) from None
            tx = None
        if tx is not None and not tx.get("blockhash"):
            return 0, None
        block_hash = (tx or {}).get("blockhash") or remembered_block
        if block_hash:
            header = await self.rpc.call("getblockheader", block_hash)
            confirmations = int(header.get("confirmations", -1))
            if confirmations > 0:
                return confirmations, block_hash
        found = await self._search_blocks(txid, since)
        if found is None:
            return None, None
        return found[1], found[0]

    async def close_dropped(self, payout_id: str, signed: SignedPayout) -> DropClosure:
        """Spend the dropped payout's inputs back to ourselves; closed once that is deep enough (``closing.py``)."""
        return await closing.close_dropped(self, await self.spend_owner(payout_id, signed), signed)

    async def _confirmed(self, row: Any, block_hash: str) -> None:
        if row is not None and row["block_hash"] != block_hash:
            await wallet.confirm_payout(self.gateway, self.name, row["payout_id"], block_hash)

    async def _search_blocks(self, txid: str, since: int | None) -> tuple[str, int] | None:
        """The best-chain block holding ``txid`` (searched from ``since``) and its confirmations."""
        tip = int(await self.rpc.call("getblockcount"))
        start = max(0, tip - MAX_PAYOUT_SEARCH_BLOCKS + 1, since if since is not None else tip - 100)
        heights = list(range(tip, start - 1, -1))
        hashes = await self.rpc.batch("getblockhash", [[h] for h in heights])
        for height, block_hash in zip(heights, hashes):
            if isinstance(block_hash, RpcError):
                raise ChainUnavailable(str(block_hash))
            block = await self.rpc.call("getblock", block_hash, 1)
            if txid in block.get("tx", ()):
                return block_hash, tip - height + 1
        return None

    # -- failures --------------------------------------------------------------------------

    async def release_payout(self, payout_id: str) -> None:
        """A failed payout's reserved inputs go back to the wallet when the node still has them unspent."""
        unspent: list[tuple[str, int]] = []
        gone: list[tuple[str, int]] = []
        for tx_hash, index in await wallet.reserved_inputs(self.gateway, self.name, payout_id):
            coin = await self.rpc.call("gettxout", tx_hash, index, True)
            (unspent if coin is not None else gone).append((tx_hash, index))
        await wallet.release_payout(self.gateway, self.name, payout_id, unspent, gone)
        if unspent or gone:
            log.info("%s: payout %s failed: %d input(s) released, %d spent elsewhere", self.name, payout_id,
                     len(unspent), len(gone))

    async def release_failed_payouts(self) -> None:
        """Self-healing: release what Failed payouts still hold (a missed ``payout_finished``)."""
        for payout_id in await wallet.failed_payouts_holding_inputs(self.gateway, self.name):
            await self.release_payout(payout_id)
