"""``TronAdapter``: Tron seen through the chain contract, over a full node's HTTP API.

Per block (``wallet/getblockbynum``, ``visible: false``), two kinds of deposit:

* TRX: every ``TransferContract`` whose result is SUCCESS, output index 0.
  The block already says whether a transfer succeeded, so nothing here asks
  the address table: the core scanner matches all of the block's transfers,
  TRX and token alike, in its one batched look-up per block, and the cost
  grows with the block's transactions, never with the watched addresses.
  (The EVM adapter looks its native candidates up first only because each
  one of ours then costs a receipt call.)
* TRC-20: when the block holds any ``TriggerSmartContract``, one
  ``wallet/gettransactioninfobyblocknum`` gives every call's receipt and
  logs. A ``Transfer(address,address,uint256)`` log counts only when it was
  emitted by a pinned contract and its transaction's receipt says SUCCESS
  (a reverted or out-of-energy call never credits, SPEC 2.7); logs of any
  other contract are ignored. The log's position in its transaction is the
  output index (a TransferContract has no logs, so index 0 never collides).
  Reading logs rather than call data also sees tokens moved by another
  contract (an exchange's withdrawal), which call data would miss.

``parent_hash`` is the block header's ``parentHash``, so the core scanner
detects and rewinds reorganisations. Several ``url`` nodes: ``self.http``
fails over, ``tip``/``block`` are what ``quorum`` agree on (``NodeQuorum``).
There is no mempool watch: a deposit
shows from its first block (every 3 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ...api import (
    Block, BlockRef, Capability, ChainAdapter, ChainUnavailable, Holding, NodeIdentity, NodeQuorum, NodeSet, Transfer,
)
from ..evm.tokens import TRANSFER_TOPIC
from .address import address_bytes, from_hex
from .custody import tron_holdings
from .http import NodeError, TronHttp, integer
from .payouts import TronPayouts
from .settings import CHAIN, TronSettings
from .signer import TxStore

if TYPE_CHECKING:  # pragma: no cover
    from ...api import Gateway

_TOPIC = TRANSFER_TOPIC[2:]
_WORD = 64




class TronAdapter(NodeQuorum, ChainAdapter, TronPayouts):
    name = CHAIN

    def __init__(self, gateway: "Gateway", settings: TronSettings, native: str, tokens: Mapping[str, str],
                 http: TronHttp | None = None) -> None:
        """``native``: TRX; ``tokens``: pinned contract (T address) -> coin symbol."""
        assert settings.url is not None, "an adapter needs the node's url"
        self.gateway = gateway
        self.settings = settings
        self.network = settings.network
        self.native = native
        self.contracts = {address_bytes(contract)[1:].hex(): symbol for contract, symbol in tokens.items()}
        self.token_contracts = {symbol: contract for contract, symbol in tokens.items()}
        self.coins = (native, *sorted(self.token_contracts))
        self.scan_seconds = settings.scan_seconds
        self.start_height = settings.start_height
        self.max_blocks_per_scan = settings.max_blocks_per_scan
        self.drop_after_seconds = settings.drop_after_seconds
        self.payout_confirmations = settings.payout_confirmations
        self.node_geneses = settings.genesis_block_ids
        self.max_tip_age_seconds = settings.max_tip_age_seconds
        # REMOTE_SIGNING: ``sign_payout`` (TRX and TRC-20) runs in ``orbchain signer`` when one holds the keys;
        # nothing else the worker runs signs (a dropped transfer expires by protocol, closed at once: no
        # signature), and the deposit sweep with its top-ups is a job that signs (``signs=True``).
        self.capabilities = frozenset({Capability.DEPOSITS, Capability.PAYOUTS, Capability.CUSTODY,
                                       Capability.REMOTE_SIGNING}
                                      | ({Capability.SWEEPS} if settings.sweep else set()))
        self.nodes: NodeSet[TronHttp] = NodeSet(
            CHAIN, settings.url if http is None else getattr(http, "url", "http://node"),
            lambda url: http or TronHttp(url, api_key=settings.api_key, timeout=settings.timeout_seconds),
            quorum=settings.quorum if http is None else 1, lag_blocks=settings.node_lag_blocks,
            answer_seconds=settings.timeout_seconds)
        self.http = self.nodes.client()
        self.txs = TxStore(gateway, self.http, expiration_seconds=settings.expiration_seconds)

    def token_contract(self, coin: str) -> str | None:
        return self.token_contracts.get(coin)

    async def custody_holdings(self, cold_addresses: Sequence[str]) -> Sequence[Holding]:
        """Hot wallet, credited deposit addresses and cold addresses as the node sees them (``custody.py``)."""
        return await tron_holdings(self, cold_addresses)

    # -- the deposit-watching role ----------------------------------------------------------

    @staticmethod
    def _ref(block: Mapping[str, Any]) -> BlockRef:
        if not block or "blockID" not in block:
            raise ChainUnavailable("tron: the node answered no block")
        return BlockRef(integer(block["block_header"]["raw_data"].get("number")), str(block["blockID"]))

    async def _block(self, height: int) -> Mapping[str, Any]:
        block = await self.http.call("wallet/getblockbynum", {"num": height, "visible": False})
        if not block or "blockID" not in block:
            raise ChainUnavailable(f"tron: no block {height}")
        return block

    async def node_tip(self) -> BlockRef:
        return self._ref(await self.http.call("wallet/getnowblock"))

    async def node_block_hash(self, height: int) -> str:
        return self._ref(await self._block(height)).hash

    async def node_identity(self) -> NodeIdentity:
        """Block 0's id (java-tron has no network name over HTTP), the head block's time (ms) and how far its
        peers are ahead (``getnodeinfo``)."""
        genesis = await self.http.call("wallet/getblockbynum", {"num": 0, "visible": False})
        head = await self.http.call("wallet/getnowblock")
        if not head or "blockID" not in head:
            raise ChainUnavailable("tron: the node answered no block")
        try:
            info = await self.http.call("wallet/getnodeinfo")
        except (ChainUnavailable, NodeError):  # a provider that does not serve it: judged by its tip's age alone
            info = None
        return NodeIdentity(None, str(genesis.get("blockID")) if genesis else None, False,
                            integer(head["block_header"]["raw_data"].get("timestamp")) // 1000, peers_ahead(info))

    async def node_block(self, height: int) -> Block:
        raw = await self._block(height)
        header = raw["block_header"]["raw_data"]
        if integer(header.get("number")) != height:
            raise ChainUnavailable(f"tron: asked for block {height}, got {header.get('number')}")
        transactions = raw.get("transactions") or []
        transfers = [*self._trx_transfers(transactions), *await self._token_transfers(height, transactions)]
        timestamp = integer(header.get("timestamp")) // 1000 or None
        return Block(height, str(raw["blockID"]), str(header.get("parentHash", "")), tuple(transfers), timestamp)

    def _trx_transfers(self, transactions: Iterable[Mapping[str, Any]]) -> list[Transfer]:
        found = []
        for tx in transactions:
            contracts = tx.get("raw_data", {}).get("contract") or []
            if len(contracts) != 1 or contracts[0].get("type") != "TransferContract":
                continue
            if (tx.get("ret") or [{}])[0].get("contractRet", "SUCCESS") != "SUCCESS":
                continue
            value = contracts[0].get("parameter", {}).get("value", {})
            amount = integer(value.get("amount"))
            if amount > 0 and value.get("to_address"):
                found.append(Transfer(str(tx["txID"]).lower(), 0, from_hex(str(value["to_address"])),
                                      self.native, amount))
        return found

    async def _token_transfers(self, height: int, transactions: Iterable[Mapping[str, Any]]) -> list[Transfer]:
        if not self.contracts or not any(
                c.get("type") == "TriggerSmartContract"
                for tx in transactions for c in tx.get("raw_data", {}).get("contract") or []):
            return []
        infos = await self.http.call("wallet/gettransactioninfobyblocknum", {"num": height})
        if not isinstance(infos, list):
            infos = [] if not infos else [infos]
        found = []
        for info in infos:
            if integer(info.get("blockNumber"), height) != height:
                raise ChainUnavailable(f"tron: transaction info of block {height} names another block")
            receipt = info.get("receipt") or {}
            if info.get("result") == "FAILED" or receipt.get("result", "SUCCESS") != "SUCCESS":
                continue  # a failed call's logs (if a node kept any) moved nothing
            for index, log in enumerate(info.get("log") or []):
                transfer = self._decode_log(str(info.get("id", "")).lower(), index, log)
                if transfer is not None:
                    found.append(transfer)
        return found

    def _decode_log(self, tx_id: str, index: int, log: Mapping[str, Any]) -> Transfer | None:
        symbol = self.contracts.get(log_contract(log.get("address")))
        topics = [str(t).lower().removeprefix("0x") for t in log.get("topics") or []]
        data = str(log.get("data", "")).lower().removeprefix("0x")
        if symbol is None or len(topics) != 3 or topics[0] != _TOPIC or len(data) != _WORD:
            return None
        if len(topics[2]) != _WORD or topics[2][:24] != "0" * 24:
            return None
        amount = int(data, 16)
        if amount <= 0:
            return None
        return Transfer(tx_id, index, from_hex(topics[2][24:]), symbol, amount)

    async def close(self) -> None:
        await self.nodes.close()


def peers_ahead(info: Any) -> int | None:
    """Blocks java-tron still has to fetch from its furthest peer: a peer's ``remainNum`` (blocks beyond the
    inventory it sent) plus ``syncToFetchSize`` (that inventory's blocks not yet fetched), the most of any peer.

    None without a peer list (a provider such as TronGrid may hide it). ``peerList`` is java-tron's HTTP field
    (its NodeInfo entity); ``peerInfoList`` the protobuf's name, which some providers answer with.
    """
    peers = info.get("peerList", info.get("peerInfoList")) if isinstance(info, dict) else None
    if not isinstance(peers, list) or not peers:
        return None
    return max((integer(p.get("remainNum")) + integer(p.get("syncToFetchSize")) for p in peers if isinstance(p, dict)),
               default=None)


def log_contract(value: object) -> str:
    """A log's contract as its 40 hex digits: java-tron writes the bare 20 bytes, some nodes ``41`` + 20.

    Only a 42-digit value loses its ``41``: the bare form of a contract whose
    own first byte is 0x41 (one in 256) keeps it, or its token would be unseen.
    """
    text = str(value or "").lower().removeprefix("0x")
    return text[2:] if len(text) == 42 and text.startswith("41") else text
