"""``BitcoinAdapter``: one Bitcoin Core-compatible node seen through the chain contract.

One instance per configured coin (BTC -> "bitcoin", LTC -> "litecoin",
DOGE -> "dogecoin"). Deposits: ``block(height)`` is ``getblockhash`` plus
``getblock <hash> 2`` and every output paying an address is reported; the
core scanner matches, confirms and handles reorganisations. Payouts are the
``BitcoinPayouts`` role (``sender.py``); what the node says the wallet holds,
for the custody check, is ``custody.py``.

Several ``rpc_url`` nodes: ``self.rpc`` fails over between them, and the
contract's ``tip``/``block_hash``/``block`` are what ``quorum`` of them agree
on (``NodeQuorum``); this class implements the single-node reads.

``push(heard)`` (``Capability.PUSH``, declared only when ``p2p`` or a ZMQ
endpoint is configured) follows the node's announcements: ``notifications.py``.

``mempool()`` decodes each new mempool transaction once (batched
``getrawtransaction <txid> true``, at most ``MEMPOOL_BATCH`` new ones per
scan) and keeps only the outputs paying our addresses, so a full mainnet
mempool costs one address look-up per transaction, not one per scan.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Sequence

from ...api import (
    Block, BlockRef, Capability, ChainAdapter, ChainUnavailable, Holding, NodeIdentity, NodeQuorum, NodeSet, Transfer,
    addresses,
)
from . import fees, notifications
from .custody import bitcoin_holdings
from .blocks import parse_block, transaction_transfers
from .networks import CHAIN_NAMES, GENESIS
from .rpc import NodeRpc, RpcError
from .sender import BitcoinPayouts
from .settings import CoinSettings

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

log = logging.getLogger(__name__)

# JSON-RPC answers of a node whose getblock takes a boolean: -1 (runtime
# error: expected bool) and -3 (RPC_TYPE_ERROR).
LEGACY_GETBLOCK_ERRORS = (-1, -3)

MEMPOOL_BATCH = 2_000  # new mempool transactions decoded per scan


class BitcoinAdapter(NodeQuorum, ChainAdapter, BitcoinPayouts):
    capabilities = frozenset({Capability.DEPOSITS, Capability.MEMPOOL, Capability.PAYOUTS, Capability.CUSTODY,
                              Capability.REMOTE_SIGNING,  # signing, bumps and closing run in the signer
                              Capability.BATCH_PAYOUTS})  # a batch request's items: one transaction (sign_batch)

    def __init__(self, gateway: "Gateway", settings: CoinSettings, rpc: NodeRpc | None = None) -> None:
        self.gateway = gateway
        self.settings = settings
        spec = settings.spec
        self.name = spec.chain
        self.coins = (spec.symbol,)
        self.network = settings.network
        self.scan_seconds = settings.scan_seconds
        self.start_height = settings.start_height
        self.drop_after_seconds = settings.drop_after_seconds
        self.payout_confirmations = settings.payout_confirmations
        self.batch_window_seconds = settings.batch_window_seconds
        self.node_networks = CHAIN_NAMES[settings.network]
        self.node_geneses = GENESIS.get((spec.symbol, settings.network), frozenset())
        self.max_tip_age_seconds = settings.max_tip_age_seconds
        if settings.push:
            self.capabilities = self.capabilities | {Capability.PUSH}
        label = f"{spec.node} ({spec.symbol})"
        self.nodes: NodeSet[NodeRpc] = NodeSet(
            self.name, settings.rpc_urls if rpc is None else (getattr(rpc, "url", "http://node"),),
            lambda url: rpc or NodeRpc(url, user=settings.rpc_user, password=settings.rpc_password,
                                       cookie_file=settings.rpc_cookie_file, timeout=settings.rpc_timeout_seconds,
                                       label=label),
            quorum=settings.quorum if rpc is None else 1, lag_blocks=settings.node_lag_blocks,
            answer_seconds=settings.rpc_timeout_seconds)
        self.rpc = self.nodes.client()
        self.fee_estimator: fees.FeeEstimator = fees.NodeFeeEstimator(self.rpc, settings.fee_target_blocks, self.name)
        # txid -> our transfers in it (often none); only txids still in the mempool are kept.
        self._mempool: dict[str, tuple[Transfer, ...]] = {}

    @property
    def coin(self) -> str:
        return self.settings.spec.symbol

    async def custody_holdings(self, cold_addresses: Sequence[str]) -> Sequence[Holding]:
        """The node's word on every output the books say we hold (``custody.py``)."""
        return await bitcoin_holdings(self, cold_addresses)

    async def node_tip(self) -> BlockRef:
        info = await self.rpc.call("getblockchaininfo")
        return BlockRef(int(info["blocks"]), info["bestblockhash"])

    async def node_identity(self) -> NodeIdentity:
        info = await self.rpc.call("getblockchaininfo")
        genesis = await self.rpc.call("getblockhash", 0)
        header = await self.rpc.call("getblockheader", info["bestblockhash"])
        chain = str(info.get("chain"))
        # A regtest node stays in "initial block download" until someone mines a block: not a sync to wait for.
        syncing = bool(info.get("initialblockdownload")) and chain != "regtest"
        # Headers it has validated (proof of work checked) beyond the blocks it has: the network is that far
        # ahead. Not getpeerinfo's startingheight, which is any peer's unproven claim.
        ahead = max(0, int(info["headers"]) - int(info["blocks"])) if "headers" in info else None
        return NodeIdentity(chain, str(genesis), syncing, int(header["time"]), ahead)

    async def node_block_hash(self, height: int) -> str:
        try:
            return await self.rpc.call("getblockhash", height)
        except RpcError as exc:  # above the tip: the chain shrank under us (a reorg in progress)
            raise ChainUnavailable(str(exc)) from None

    async def node_block(self, height: int) -> Block:
        block_hash = await self.node_block_hash(height)
        data = await self._block_with_transactions(block_hash)
        return parse_block(data, self.coin)

    async def _block_with_transactions(self, block_hash: str) -> dict:
        """``getblock <hash> 2``; nodes without verbosity 2 (Dogecoin Core 1.14)
        get ``getblock <hash> true`` plus one batched ``getrawtransaction``
        (which those nodes answer only with ``-txindex=1``)."""
        if not self._legacy_getblock:
            try:
                data = await self.rpc.call("getblock", block_hash, 2)
            except RpcError as exc:
                if exc.code not in LEGACY_GETBLOCK_ERRORS:
                    raise ChainUnavailable(f"{self.name}: getblock {block_hash} failed: {exc.message}") from None
                self._legacy_getblock = True
            else:
                if all(isinstance(tx, dict) for tx in data.get("tx", ())):
                    return data
                self._legacy_getblock = True  # it read 2 as "verbose": txids only
        try:
            data = await self.rpc.call("getblock", block_hash, True)
        except RpcError as exc:
            raise ChainUnavailable(f"{self.name}: getblock {block_hash} failed: {exc.message}") from None
        txids = [tx if isinstance(tx, str) else tx["txid"] for tx in data.get("tx", ())]
        decoded = await self.rpc.batch("getrawtransaction", [[txid, 1] for txid in txids])
        failed = next((d for d in decoded if isinstance(d, RpcError)), None)
        if failed is not None:
            raise ChainUnavailable(f"{self.name}: getrawtransaction failed ({failed.message}); this node needs"
                                   " -txindex=1 because its getblock has no verbosity 2") from None
        return {**data, "tx": decoded}

    _legacy_getblock = False

    async def mempool(self) -> Sequence[Transfer]:
        txids = await self.rpc.call("getrawmempool")
        current = set(txids)
        for gone in [t for t in self._mempool if t not in current]:
            del self._mempool[gone]
        new = [t for t in txids if t not in self._mempool][:MEMPOOL_BATCH]
        if new:
            decoded = await self.rpc.batch("getrawtransaction", [[t, True] for t in new])
            seen: dict[str, list[Transfer]] = {}
            for txid, tx in zip(new, decoded):
                if isinstance(tx, RpcError) or tx is None:
                    continue  # left the mempool between the two calls
                seen[txid] = transaction_transfers(tx, self.coin)
            outputs = [t.address for ts in seen.values() for t in ts]
            ours = await addresses.lookup(self.gateway, outputs) if outputs else {}
            for txid, transfers in seen.items():
                self._mempool[txid] = tuple(t for t in transfers if t.address in ours)
        return [t for transfers in self._mempool.values() for t in transfers]

    async def conflicted(self, transfers: Sequence[Transfer]) -> frozenset[str]:
        """Deposits whose transaction is gone while an input of it is spent: replaced or double-spent.

        ``gettxout <txid> <n> true`` sees the mempool and the UTXO set: our
        output still there means the transaction lives (pool or chain; pending
        deposits are never spent by us), and an input no longer there means
        another transaction spent it. An input whose unconfirmed parent left
        the pool too looks the same; should the transaction come back in a
        block, the deposit engine revives it.
        """
        checked = [t for t in transfers if t.spends]
        if not checked:
            return frozenset()
        own = await self.rpc.batch("gettxout", [[t.tx_hash, t.output_index, True] for t in checked])
        gone = [t for t, answer in zip(checked, own) if answer is None]
        outpoints = sorted({o for t in gone for o in t.spends})
        if not outpoints:
            return frozenset()
        answers = await self.rpc.batch("gettxout", [[o.split(":")[0], int(o.split(":")[1]), True] for o in outpoints])
        if any(isinstance(a, RpcError) for a in [*own, *answers]):
            raise ChainUnavailable(f"{self.name}: gettxout failed while checking deposits for conflicts")
        spent = {o for o, answer in zip(outpoints, answers) if answer is None}
        return frozenset(t.tx_hash for t in gone if spent.intersection(t.spends))

    async def push(self, heard: Callable[[str], None]) -> None:
        await notifications.follow(self.settings, heard, self.name)

    async def close(self) -> None:
        await self.nodes.close()
