"""``EvmAdapter``: one EVM chain (ethereum, bsc, polygon) seen through the chain contract.

Per block, two kinds of deposit:

* native (ETH, BNB, POL): every transaction of ``eth_getBlockByNumber(h,
  true)`` with a ``to`` and a value above zero, output index 0, kept only if
  its receipt says it succeeded. Receipts are fetched only for candidates
  whose ``to`` is in our address table (one batched look-up), so the calls
  per block are bounded by our own deposits, not by the block's size.
  Value moved by contract calls (internal transactions) is not seen: that
  needs trace APIs few providers offer (docs/evm.md).
* tokens: ``eth_getLogs`` for that block hash, the Transfer topic and the
  pinned contracts only; a log's index is its output index. Logs of
  reverted transactions never exist; tokens of any other contract are
  ignored (SPEC 2.7).

``parent_hash`` comes from the node, so the core's reorg detection works.
What the node says the gateway holds, for the custody check: ``custody.py``.
Several ``rpc_url`` nodes: ``self.rpc`` fails over, and ``tip``/``block`` are
what ``quorum`` of them agree on (``NodeQuorum``, docs/evm.md).
``mempool()`` returns nothing: a deposit shows from its first block
(docs/evm.md).

With ``ws_url`` set the adapter declares ``Capability.PUSH``: ``push``
follows ``eth_subscribe("newHeads")`` and wakes the scan for each new head,
so a deposit is seen as soon as its block is, not up to ``scan_seconds``
later. No pending-transaction subscription: without a mempool watch there
is nothing a new transaction could show.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from eth_utils import to_checksum_address

from ...api import (
    Block, BlockRef, Capability, ChainAdapter, ChainUnavailable, Holding, NodeIdentity, NodeQuorum, NodeSet, Transfer,
    addresses,
)
from ..subscription import Subscription, follow
from .custody import evm_holdings
from .payouts import EvmPayouts
from .rpc import JsonRpc, RpcError, hex_quantity, quantity
from .settings import ChainSettings
from .signer import GWEI, TxStore
from .tokens import TRANSFER_TOPIC, decode_transfer

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway


def sync_gap(syncing: Any) -> int | None:
    """``eth_syncing``'s ``highestBlock - currentBlock`` (how far its peers are ahead); None when not syncing."""
    if not isinstance(syncing, dict) or "highestBlock" not in syncing or "currentBlock" not in syncing:
        return None
    return max(0, quantity(syncing["highestBlock"]) - quantity(syncing["currentBlock"]))


NEW_HEADS = Subscription("eth_subscribe", "eth_subscription", "eth_unsubscribe", ("newHeads",))




class EvmAdapter(NodeQuorum, ChainAdapter, EvmPayouts):
    network = "mainnet"  # EVM addresses are the same on every network and testnet

    def __init__(self, gateway: "Gateway", settings: ChainSettings, native: str, tokens: Mapping[str, str],
                 rpc: JsonRpc | None = None) -> None:
        """``native``: the chain's own coin; ``tokens``: pinned contract (any case) -> coin symbol."""
        self.gateway = gateway
        self.settings = settings
        self.name = settings.chain
        self.native = native
        self.contracts = {contract.lower(): symbol for contract, symbol in tokens.items()}
        self.coins = (native, *sorted(self.contracts.values()))
        self.scan_seconds = settings.scan_seconds
        self.start_height = settings.start_height
        self.max_blocks_per_scan = settings.max_blocks_per_scan
        self.drop_after_seconds = settings.drop_after_seconds
        self.payout_confirmations = settings.payout_confirmations
        self.node_networks = frozenset({str(settings.chain_id)})  # eth_chainId, in decimal
        self.max_tip_age_seconds = settings.max_tip_age_seconds
        # No mempool watch: an EVM deposit shows once mined. Sweeping is this plugin's own job (a signing job:
        # run by `orbchain signer` when one holds the keys). REMOTE_SIGNING: the payout and the transaction closing
        # a dropped one are signed by the signer (nonces allocated in the shared database as ever); broadcast,
        # status and releasing a failed payout's nonce need no key.
        self.capabilities = frozenset({Capability.DEPOSITS, Capability.PAYOUTS, Capability.CUSTODY,
                                       Capability.REMOTE_SIGNING}
                                      | ({Capability.SWEEPS} if settings.sweep else set())
                                      | ({Capability.PUSH} if settings.ws_url else set())
                                      | ({Capability.FINALITY} if settings.credit_at_finalized else set()))
        self.nodes: NodeSet[JsonRpc] = NodeSet(
            self.name, settings.rpc_url if rpc is None else getattr(rpc, "url", "http://node"),
            lambda url: rpc or JsonRpc(url, timeout=settings.timeout_seconds),
            quorum=settings.quorum if rpc is None else 1, lag_blocks=settings.node_lag_blocks,
            answer_seconds=settings.timeout_seconds)
        self.rpc = self.nodes.client()
        ceiling = settings.fee_ceiling_gwei
        self.txs = TxStore(gateway, settings.chain, settings.chain_id, self.rpc,
                           gas_margin_percent=settings.gas_margin_percent, priority_fee_wei=settings.priority_fee_wei,
                           fee_ceiling_wei=None if ceiling is None else ceiling * GWEI)

    def token_contract(self, coin: str) -> str | None:
        for contract, symbol in self.contracts.items():
            if symbol == coin:
                return to_checksum_address(contract)
        return None

    async def custody_holdings(self, cold_addresses: Sequence[str]) -> Sequence[Holding]:
        """Hot wallet, credited deposit addresses and cold addresses as the node sees them (``custody.py``)."""
        return await evm_holdings(self, cold_addresses)

    # -- the deposit-watching role ----------------------------------------------------------

    async def _header(self, tag: str) -> Mapping[str, Any]:
        header = await self.rpc.call("eth_getBlockByNumber", tag, False)
        if not isinstance(header, dict):
            raise ChainUnavailable(f"{self.name}: no block {tag}")
        return header

    async def node_tip(self) -> BlockRef:
        header = await self._header("latest")
        return BlockRef(quantity(header["number"]), header["hash"])

    async def finalized_height(self) -> int | None:
        """The ``finalized`` block's height (``credit_at_finalized``); None from a node that has no such tag."""
        try:
            header = await self.rpc.call("eth_getBlockByNumber", "finalized", False)
        except RpcError as exc:  # a pre-merge node or chain: the confirmation count alone decides
            log.info("%s: no finalized block from the node (%s); crediting by confirmations", self.name, exc)
            return None
        return quantity(header["number"]) if isinstance(header, dict) and header.get("number") else None

    async def node_identity(self) -> NodeIdentity:
        chain_id = quantity(await self.rpc.call("eth_chainId"))
        syncing = await self.rpc.call("eth_syncing")  # False, or the progress object while it catches up
        header = await self._header("latest")
        return NodeIdentity(str(chain_id), None, syncing is not False, quantity(header["timestamp"]),
                            sync_gap(syncing))

    async def node_block_hash(self, height: int) -> str:
        return (await self._header(hex_quantity(height)))["hash"]

    async def node_block(self, height: int) -> Block:
        raw = await self.rpc.call("eth_getBlockByNumber", hex_quantity(height), True)
        if not isinstance(raw, dict):
            raise ChainUnavailable(f"{self.name}: no block {height}")
        block_hash = raw["hash"]
        transfers = [*await self._native_transfers(raw.get("transactions") or []),
                     *await self._token_transfers(block_hash)]
        return Block(quantity(raw["number"]), block_hash, raw["parentHash"], tuple(transfers),
                     quantity(raw["timestamp"]) if raw.get("timestamp") else None)

    async def _native_transfers(self, transactions: Iterable[Mapping[str, Any]]) -> list[Transfer]:
        candidates = []
        for tx in transactions:
            to = tx.get("to")
            if to and quantity(tx.get("value", "0x0")) > 0:
                candidates.append((tx["hash"].lower(), to_checksum_address(to), quantity(tx["value"])))
        if not candidates:
            return []
        ours = await addresses.lookup(self.gateway, [address for _, address, _ in candidates])
        mine = [c for c in candidates if c[1] in ours]
        if not mine:
            return []
        receipts = await self.rpc.batch([("eth_getTransactionReceipt", [tx_hash]) for tx_hash, _, _ in mine])
        found = []
        for (tx_hash, address, value), receipt in zip(mine, receipts):
            if not isinstance(receipt, dict):
                raise ChainUnavailable(f"{self.name}: no receipt for mined transaction {tx_hash}")
            if quantity(receipt["status"]) == 1:  # a reverted transaction moved nothing
                found.append(Transfer(tx_hash, 0, address, self.native, value))
        return found

    async def _token_transfers(self, block_hash: str) -> list[Transfer]:
        if not self.contracts:
            return []
        try:
            logs = await self.rpc.call("eth_getLogs", {"blockHash": block_hash, "address": sorted(self.contracts),
                                                       "topics": [TRANSFER_TOPIC]})
        except RpcError as exc:  # e.g. the block was just reorganised away: scan again later
            raise ChainUnavailable(f"{self.name}: eth_getLogs failed: {exc.message}") from None
        found = []
        for log in logs or []:
            decoded = decode_transfer(log)
            if decoded is None or decoded.value <= 0 or decoded.contract not in self.contracts:
                continue
            found.append(Transfer(decoded.tx_hash, decoded.log_index, decoded.recipient,
                                  self.contracts[decoded.contract], decoded.value))
        return found

    async def push(self, heard: Callable[[str], None]) -> None:
        """Wake the scan on every new head until the WebSocket is lost (``ChainUnavailable``)."""
        assert self.settings.ws_url, "PUSH is declared only with ws_url"
        await follow(self.settings.ws_url, NEW_HEADS, lambda _head: heard("block"), what=f"{self.name} node",
                     timeout=self.settings.timeout_seconds)

    async def close(self) -> None:
        await self.nodes.close()
