"""View-only XMR payment detection: monerod for the chain, monero-wallet-rpc for what is ours.

Why this split: Monero outputs cannot be matched to addresses without the
view key, so the scanner cannot look addresses up in transactions as on
other chains. The wallet (view-only is enough; a full wallet works the same)
finds the outputs to our subaddresses; the node gives block heights and
hashes, so the core's scanner follows the best chain, counts confirmations
from the node's tip and handles reorgs exactly as for every other chain.

Each block's transfers are the wallet's incoming transfers at that height,
read between two reads of the node's block header: a header that changed in
between (a reorg under us) is ``ChainUnavailable`` and the scan retries. The
wallet is refreshed at every ``tip`` (so it has followed the node's reorgs
before the scanner asks for blocks) and again when it is behind the height
asked. One transfer is one (transaction, subaddress) pair; its output index
is the subaddress's minor index, unique within a transaction. Time-locked
transfers (``unlock_time`` set) are never reported: a payer cannot pay with
money the merchant could not use for years.

Several ``daemon_url`` monerods: calls fail over and ``tip``/``block`` are
what ``quorum`` of them agree on (``NodeQuorum``); the wallet stays one
(it follows its own daemon, docs/monero.md).

With ``zmq_pub_url`` set the adapter declares ``Capability.PUSH``:
monerod's ZMQ publisher wakes the scan for each new block and each
transaction entering the pool (``publisher.py``).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, Sequence

from ...api import (
    Block, BlockRef, Capability, ChainAdapter, ChainUnavailable, NodeIdentity, NodeQuorum, NodeSet, Transfer,
)
from . import publisher
from .rpc import MoneroRpc, MoneroRpcError, piconero
from .settings import NETTYPES, MoneroSettings

log = logging.getLogger(__name__)

CHAIN = "monero"
SYMBOL = "XMR"


class MoneroAdapter(NodeQuorum, ChainAdapter):
    name = CHAIN
    coins = (SYMBOL,)
    capabilities = frozenset({Capability.DEPOSITS, Capability.MEMPOOL})

    def __init__(self, settings: MoneroSettings) -> None:
        self.settings = settings
        if settings.zmq_pub_url:
            self.capabilities = self.capabilities | {Capability.PUSH}
        self.network = settings.network
        self.scan_seconds = settings.scan_seconds
        self.start_height = settings.start_height
        self.drop_after_seconds = settings.drop_after_seconds
        self.account_index = settings.account_index
        self.node_networks = NETTYPES[settings.network]
        self.max_tip_age_seconds = settings.max_tip_age_seconds
        self.nodes: NodeSet[MoneroRpc] = NodeSet(
            CHAIN, settings.daemon_url,
            lambda url: MoneroRpc(url, user=settings.daemon_user, password=settings.daemon_password,
                                  timeout=settings.rpc_timeout_seconds, what="monerod"),
            quorum=settings.quorum, lag_blocks=settings.node_lag_blocks, answer_seconds=settings.rpc_timeout_seconds)
        self.daemon = self.nodes.client()
        self.wallet = MoneroRpc(settings.wallet_rpc_url, user=settings.wallet_rpc_user,
                                password=settings.wallet_rpc_password, timeout=settings.rpc_timeout_seconds,
                                what="monero-wallet-rpc")

    # -- the chain, from the node --------------------------------------------------------

    async def _daemon(self, method: str, params: dict[str, Any] | None = None) -> Any:
        try:
            return await self.daemon.call(method, params)
        except MoneroRpcError as exc:
            raise ChainUnavailable(str(exc)) from None

    async def _wallet(self, method: str, params: dict[str, Any] | None = None) -> Any:
        try:
            return await self.wallet.call(method, params)
        except MoneroRpcError as exc:
            raise ChainUnavailable(str(exc)) from None

    async def _header(self, height: int) -> Mapping[str, Any]:
        return (await self._daemon("get_block_header_by_height", {"height": height}))["block_header"]

    async def tip(self) -> BlockRef:
        await self._wallet("refresh")
        return await super().tip()

    async def node_tip(self) -> BlockRef:
        header = (await self._daemon("get_last_block_header"))["block_header"]
        return BlockRef(int(header["height"]), header["hash"])

    async def node_identity(self) -> NodeIdentity:
        info = await self._daemon("get_info")
        header = (await self._daemon("get_last_block_header"))["block_header"]
        nettype = str(info.get("nettype"))
        # An offline regtest monerod has no peers to be synchronized with: its own chain is the chain.
        syncing = not info.get("synchronized", False) and nettype != "fakechain"
        return NodeIdentity(nettype, None, syncing, int(header["timestamp"]))

    async def node_block_hash(self, height: int) -> str:
        return str((await self._header(height))["hash"])

    async def node_block(self, height: int) -> Block:
        header = await self._header(height)
        transfers = await self._incoming_at(height) if height > 0 else ()
        if (await self._header(height))["hash"] != header["hash"]:
            raise ChainUnavailable(f"monero block {height} changed while it was read")
        return Block(height, header["hash"], header["prev_hash"], tuple(transfers), int(header["timestamp"]))

    # -- what is ours, from the wallet -------------------------------------------------------

    async def _wallet_height(self) -> int:
        return int((await self._wallet("get_height"))["height"])

    async def _incoming_at(self, height: int) -> list[Transfer]:
        if await self._wallet_height() <= height:
            await self._wallet("refresh")
            if await self._wallet_height() <= height:
                raise ChainUnavailable(f"monero wallet has not reached block {height} yet")
        # min_height is exclusive, max_height inclusive (wallet2::get_payments).
        answer = await self._wallet("get_transfers", {
            "in": True, "account_index": self.account_index, "filter_by_height": True,
            "min_height": height - 1, "max_height": height})
        return self._transfers([e for e in answer.get("in", ()) if int(e.get("height", -1)) == height])

    async def mempool(self) -> Sequence[Transfer]:
        answer = await self._wallet("get_transfers", {"pool": True, "account_index": self.account_index})
        return self._transfers(answer.get("pool", ()))

    def _transfers(self, entries: Sequence[Mapping[str, Any]]) -> list[Transfer]:
        found = []
        for entry in entries:
            index = entry.get("subaddr_index") or {}
            if int(index.get("major", -1)) != self.account_index:
                continue
            if int(entry.get("unlock_time", 0)) != 0:
                log.warning("monero: ignoring time-locked transfer %s to %s", entry.get("txid"), entry.get("address"))
                continue
            found.append(Transfer(str(entry["txid"]), int(index["minor"]), str(entry["address"]), SYMBOL,
                                  piconero(entry["amount"])))
        return found

    async def push(self, heard: Callable[[str], None]) -> None:
        """Wake the scan on monerod's ZMQ announcements until the publisher is lost (``ChainUnavailable``)."""
        assert self.settings.zmq_pub_url, "PUSH is declared only with zmq_pub_url"
        await publisher.follow(self.settings.zmq_pub_url, heard, timeout=min(self.settings.rpc_timeout_seconds, 10.0))

    async def create_subaddress(self, label: str) -> tuple[str, int]:
        """A new subaddress of our account for one payment: (address, minor index)."""
        answer = await self._wallet("create_address", {"account_index": self.account_index, "label": label})
        return str(answer["address"]), int(answer["address_index"])

    async def close(self) -> None:
        for client in (self.nodes, self.wallet):
            try:
                await client.close()
            except Exception:  # shutdown must not raise
                log.exception("closing a monero RPC client failed")
