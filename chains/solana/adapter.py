"""``SolanaAdapter``: SOL on one Solana cluster seen through the chain contract.

Heights are slots (``blocks.py`` says how skipped slots and forks map onto
the core scanner's rules). Every read names the configured commitment
(``confirmed`` by default, or ``finalized``), so the scanner's tip and the
blocks it reads are the cluster's view at that level, and the SPEC's 32
confirmations are 32 slots on top of it (docs/solana.md). ``mempool()`` is
not offered: Solana has no public mempool, a transfer shows from its block.
Slots the node pruned raise ``BlocksPruned``; the scanner then catches up
through ``address_history`` (``history.py``). Several ``rpc_url`` nodes:
``self.rpc`` fails over, ``tip``/``block`` are what ``quorum`` agree on
(``NodeQuorum``); ``address_history`` asks one node (docs/solana.md).

With ``ws_url`` set the adapter declares ``Capability.PUSH``: ``push``
follows PubSub ``slotSubscribe`` and wakes the scan for every slot the node
processes (about 2.5 a second). A processed slot is not yet confirmed, so
the scan it wakes may find nothing new; the next slot's wakes it again, and
the scan then reads the few slots confirmed since, as a poll would.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ...api import (
    Block, BlockRef, BlocksPruned, Capability, ChainAdapter, ChainUnavailable, Holding, NodeIdentity, NodeQuorum,
    NodeSet, PastTransfer,
)
from ..subscription import follow
from . import blocks
from .custody import solana_holdings
from .history import AddressHistory
from .payouts import SolanaPayouts
from .pubsub import SLOTS, slot_of
from .rpc import BLOCK_CLEANED_UP, BLOCK_NOT_AVAILABLE, NODE_UNHEALTHY, RpcError, SolanaRpc, lamports
from .settings import CHAIN, SolanaSettings
from .txstore import TxStore

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway




def slots_behind(data: Any) -> int | None:
    """``numSlotsBehind`` of getHealth's -32005 error data ("Node is behind by N slots"); None when absent."""
    count = data.get("numSlotsBehind") if isinstance(data, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None


class SolanaAdapter(NodeQuorum, ChainAdapter, SolanaPayouts):
    name = CHAIN
    network = "mainnet"  # the solana family derives the same addresses on every cluster

    def __init__(self, gateway: "Gateway", settings: SolanaSettings, coin: str, rpc: SolanaRpc | None = None) -> None:
        self.gateway = gateway
        self.settings = settings
        self.native = coin
        self.coins = (coin,)
        self.commitment = settings.commitment
        self.scan_seconds = settings.scan_seconds
        self.start_height = settings.start_height
        self.max_blocks_per_scan = settings.max_blocks_per_scan
        self.drop_after_seconds = settings.drop_after_seconds
        self.payout_confirmations = settings.payout_confirmations
        self.max_history_addresses = settings.history_max_addresses
        self.node_geneses = settings.genesis_hashes
        self.max_tip_age_seconds = settings.max_tip_age_seconds
        # REMOTE_SIGNING: ``sign_payout`` runs in ``orbchain signer`` when one holds the keys; a dropped payout
        # is closed by its blockhash's expiry (no signature), and the sweep is a job that signs (``signs=True``).
        self.capabilities = frozenset({Capability.DEPOSITS, Capability.PAYOUTS, Capability.HISTORY,
                                       Capability.CUSTODY, Capability.REMOTE_SIGNING}
                                      | ({Capability.SWEEPS} if settings.sweep else set())
                                      | ({Capability.PUSH} if settings.ws_url else set()))
        self.nodes: NodeSet[SolanaRpc] = NodeSet(
            self.name, settings.rpc_url if rpc is None else getattr(rpc, "url", "http://node"),
            lambda url: rpc or SolanaRpc(url, headers=settings.headers, timeout=settings.timeout_seconds),
            quorum=settings.quorum if rpc is None else 1, lag_blocks=settings.node_lag_blocks,
            answer_seconds=settings.timeout_seconds)
        self.rpc = self.nodes.client()
        self.txs = TxStore(gateway, self.rpc, settings.commitment, settings.priority_fee)
        self.history = AddressHistory(self.rpc, settings.commitment, coin, pages=settings.history_pages,
                                      page_size=settings.history_page_size)

    async def custody_holdings(self, cold_addresses: Sequence[str]) -> Sequence[Holding]:
        """Hot wallet, credited deposit addresses and cold addresses as the node sees them (``custody.py``)."""
        return await solana_holdings(self, cold_addresses)

    # -- the deposit-watching role ----------------------------------------------------------

    async def _first_available(self) -> int:
        return lamports(await self.rpc.call("getFirstAvailableBlock"))

    async def _get_block(self, slot: int, details: str) -> Mapping[str, Any] | None:
        """``getBlock`` at our commitment; None for a skipped slot, ``BlocksPruned`` for one the node deleted.

        -32007/-32009 mean "skipped, or missing": below the node's first
        available block the slot is missing (pruned, or a restart from a
        snapshot), at or above it genuinely skipped.
        """
        try:
            raw = await self.rpc.call("getBlock", slot, {
                "commitment": self.commitment, "encoding": "json", "transactionDetails": details,
                "rewards": False, "maxSupportedTransactionVersion": 0})
        except RpcError as exc:
            if exc.code == BLOCK_CLEANED_UP or exc.skipped_slot:
                first = await self._first_available()
                if exc.code == BLOCK_CLEANED_UP or slot < first:
                    raise BlocksPruned(slot, max(first, slot + 1)) from None
                return None
            if exc.code == BLOCK_NOT_AVAILABLE:
                raise ChainUnavailable(f"{self.name}: slot {slot} not available yet") from None
            raise ChainUnavailable(f"{self.name}: getBlock {slot} failed: {exc.message}") from None
        if not isinstance(raw, dict):
            raise ChainUnavailable(f"{self.name}: no block at slot {slot}")
        return raw

    async def _skipped(self, slot: int) -> Block:
        """A skipped slot, named after the real block the next block was built on."""
        following = await self.rpc.call("getBlocksWithLimit", slot + 1, 1, {"commitment": self.commitment})
        if not isinstance(following, list) or not following:
            raise ChainUnavailable(f"{self.name}: no block after skipped slot {slot} yet")
        nxt = await self._get_block(lamports(following[0]), "none")
        if nxt is None or lamports(nxt["parentSlot"]) >= slot:
            raise ChainUnavailable(f"{self.name}: slot {slot} changed while it was read")
        return blocks.skipped_block(slot, lamports(nxt["parentSlot"]), nxt["previousBlockhash"])

    async def node_tip(self) -> BlockRef:
        slot = lamports(await self.rpc.call("getSlot", {"commitment": self.commitment}))
        return BlockRef(slot, await self.node_block_hash(slot))

    async def node_identity(self) -> NodeIdentity:
        """getGenesisHash; getHealth's -32005 (its ``numSlotsBehind`` as how far its peers are ahead, judged
        against ``node_lag_blocks``; without a number, as syncing); the newest block's blockTime (None if skipped)."""
        genesis = await self.rpc.call("getGenesisHash")
        syncing, behind = False, None
        try:
            await self.rpc.call("getHealth")
            behind = 0
        except RpcError as exc:  # a provider without getHealth is judged by its tip's age alone
            behind = slots_behind(exc.data) if exc.code == NODE_UNHEALTHY else None
            syncing = exc.code == NODE_UNHEALTHY and behind is None
        slot = lamports(await self.rpc.call("getSlot", {"commitment": self.commitment}))
        raw = await self._get_block(slot, "none")
        tip_time = raw.get("blockTime") if raw is not None else None
        return NodeIdentity(None, str(genesis), syncing, int(tip_time) if tip_time is not None else None, behind)

    async def node_block_hash(self, height: int) -> str:
        raw = await self._get_block(height, "none")
        return raw["blockhash"] if raw is not None else (await self._skipped(height)).hash

    async def node_block(self, height: int) -> Block:
        raw = await self._get_block(height, "full")
        if raw is None:
            return await self._skipped(height)
        return blocks.real_block(height, raw, self.native)

    async def address_history(self, addresses: Sequence[str], start: int, end: int) -> Sequence[PastTransfer]:
        return await self.history.transfers(addresses, start, end)

    async def push(self, heard: Callable[[str], None]) -> None:
        """Wake the scan on every processed slot until the PubSub socket is lost (``ChainUnavailable``)."""
        assert self.settings.ws_url, "PUSH is declared only with ws_url"

        def notice(result: Any) -> None:
            if slot_of(result) is not None:
                heard("block")

        await follow(self.settings.ws_url, replace(SLOTS, headers=self.settings.headers), notice,
                     what=f"{self.name} node", timeout=self.settings.timeout_seconds)

    async def close(self) -> None:
        await self.nodes.close()
