"""A local Solana JSON-RPC node for tests: LiteSVM (the real runtime) with slots, blocks, commitment and forks.

There is no Solana validator here, so this stand-in keeps a real judge
inside: every transaction is decoded, signature-checked, fee-charged and
executed by ``solders.litesvm`` (Agave's runtime), which shares no code with
the gateway's own encoder (``chains/solana/wire.py``). Around it the node
adds what LiteSVM lacks, by the rules Solana's RPC documents:

* slots and blocks: ``produce`` makes one block per slot from the pending
  transactions; ``skip`` leaves slots without a block (``getBlock`` answers
  -32007 "skipped"); block heights count blocks only.
* commitment: ``processed``/``confirmed`` see the newest block,
  ``finalized`` the newest block at least ``FINALITY`` slots older; a block
  above a commitment is "not available" (-32004) at it. Balances are always
  the newest state.
* recent blockhashes: valid for ``VALID_BLOCKS`` blocks after their own
  (``lastValidBlockHeight``); preflight refuses an expired one
  (``BlockhashNotFound``) and a block never includes it.
* preflight: ``sendTransaction`` simulates in the runtime and answers -32002
  with the runtime's error, unless ``skipPreflight``; an executed failing
  transaction is included with ``meta.err`` and its fee charged, as on
  Solana. ``AlreadyProcessed`` for a signature already in a block.
* pruned history: ``prune(slot, code)`` makes the node forget the blocks
  below ``slot`` (``getFirstAvailableBlock`` reports it): ``getBlock``
  answers with the real "missing" errors (-32007 after a restart from a
  snapshot, -32009 from long-term storage, -32001 cleaned up), which the
  first two share with genuinely skipped slots. Address history stays
  (``getSignaturesForAddress``, newest first with ``before``/``until``/
  ``limit``/``minContextSlot``, and ``getTransaction``, from the runtime's
  executed transactions), as on a provider with long-term storage.
* PubSub: a WebSocket on the same port (GET ``/``, ``ws_url``) answers
  ``slotSubscribe`` with a subscription id and sends a ``slotNotification``
  (``{parent, root, slot}``, root being the finalized slot) for every
  produced block; ``slotUnsubscribe`` answers true, or -32602 for an
  unknown id; ``drop_streams`` closes every socket (a node restart, as the
  client sees it). Every PubSub message is serialised by solders' RPC
  types (Agave's), not written here; tests/unit/test_solana_pubsub.py holds
  the gateway's parser to solders and Solana's published examples. Solana's
  own validator serves PubSub on the RPC port + 1.
* fees: ``getFeeForMessage`` quotes the signature fee plus the priority fee
  (the unit limit x the unit price the message's Compute Budget
  instructions ask, decoded by solders, rounded up), which the runtime
  charges on its own; ``getRecentPrioritizationFees`` answers, for each of
  the newest 150 blocks, the least unit price its transactions paid (0 for
  none), raised to the least paid by those writing one of the accounts
  asked about, as Agave's prioritization fee cache does.
  ``pay(unit_price=...)`` sends a stranger's transfer paying one, ``market``
  fills every recent block with them.
* forks: ``reorg(depth)`` drops the newest blocks (never finalized ones),
  rebuilds the runtime by replaying the surviving blocks, and produces a
  longer branch at the same slots with new hashes; dropped transactions are
  gone.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import base58
from aiohttp import web
from solders import compute_budget
from solders.hash import Hash
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.rpc.errors import InvalidParamsMessage, MethodNotFoundMessage
from solders.rpc.responses import SlotInfo, SlotNotification, SubscriptionError, SubscriptionResult, UnsubscribeResult
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction, VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata

from orbchain.chains.solana.keys import hot_wallet_address
from orbchain.testing import ChainDriver, open_chain_shop

FIRST_SLOT = 5000
FINALITY = 32
VALID_BLOCKS = 150
MAX_SIGNATURES = 1000  # getSignaturesForAddress's largest limit
SIGNATURE_FEE = 5000  # lamports per signature
MICRO_LAMPORTS = 1_000_000  # a unit price's micro-lamports per lamport
DEFAULT_UNITS, MAX_UNITS = 200_000, 1_400_000  # per instruction without a unit limit; the most a transaction has
RECENT_FEE_SLOTS, MAX_FEE_ACCOUNTS = 150, 128  # getRecentPrioritizationFees: blocks kept, accounts asked at most
HEALTH_CHECK_SLOT_DISTANCE = 128  # Agave's default --health-check-slot-distance
MARKET_UNITS = 450  # the unit limit a stranger's priced transfer asks (two Compute Budget instructions, a transfer)
MISSING = {  # how a node says a slot below its first available block is gone (agave custom_error.rs)
    "snapshot": (-32007, "Slot {slot} was skipped, or missing due to ledger jump to recent snapshot"),
    "long_term": (-32009, "Slot {slot} was skipped, or missing in long-term storage"),
    "cleaned": (-32001, "Block {slot} cleaned up, does not exist on node. First available block: {first}"),
}


def slot_notification(info: SlotInfo, subscription: int) -> str:
    """A ``slotNotification`` whose params solders serialises (its ``to_json`` leaves out JSON-RPC's envelope)."""
    params = json.loads(SlotNotification(info, subscription).to_json())
    return json.dumps({"jsonrpc": "2.0", "method": "slotNotification", "params": params})


class RpcFailure(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def error_json(error: Any) -> Any:
    """A runtime TransactionError as Solana's RPC writes it: "Name" or {"Name": fields}."""
    name = type(error).__name__
    if name == "TransactionErrorFieldless":
        return str(error).rsplit(".", 1)[-1]
    return {name.removeprefix("TransactionError"): json.loads(error.to_json())}


def compute_budget_of(message: Message) -> tuple[int, int]:
    """(unit limit, unit price) ``message`` asks for, by the Compute Budget program's documented rules."""
    limit, price, others = None, 0, 0
    for ix in message.instructions:
        data = bytes(ix.data)
        if message.account_keys[ix.program_id_index] != compute_budget.ID:
            others += 1
        elif data[0] == 2:  # SetComputeUnitLimit(u32)
            limit = int.from_bytes(data[1:5], "little")
        elif data[0] == 3:  # SetComputeUnitPrice(u64)
            price = int.from_bytes(data[1:9], "little")
    return min(DEFAULT_UNITS * others if limit is None else limit, MAX_UNITS), price


def fee_of(message: Message) -> int:
    """The fee the runtime charges: per signature, plus the unit limit x the unit price, rounded up."""
    limit, price = compute_budget_of(message)
    return SIGNATURE_FEE * message.header.num_required_signatures + -(-limit * price // MICRO_LAMPORTS)


def written(message: Message) -> set[Pubkey]:
    """The accounts a legacy message write-locks, from its header."""
    header, keys = message.header, list(message.account_keys)
    signers = header.num_required_signatures
    return ({k for i, k in enumerate(keys[:signers]) if i < signers - header.num_readonly_signed_accounts}
            | set(keys[signers:len(keys) - header.num_readonly_unsigned_accounts]))


MAINNET_GENESIS_HASH = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"  # mainnet-beta's getGenesisHash
DEVNET_GENESIS_HASH = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"


@dataclass
class BlockRecord:
    slot: int
    blockhash: str
    parent_slot: int
    previous_blockhash: str
    height: int
    airdrops: list[tuple[Pubkey, int]] = field(default_factory=list)
    txs: list[tuple[VersionedTransaction, dict[str, Any]]] = field(default_factory=list)


class SolanaNode:
    def __init__(self, *, required_headers: dict[str, str] | None = None,
                 genesis_hash: str = MAINNET_GENESIS_HASH) -> None:
        self.required_headers = required_headers or {}
        self.genesis_hash = genesis_hash  # getGenesisHash: the cluster this node says it is on
        # The newest slot the rest of the cluster has reached (what its peers show it), None: this node's own tip.
        # getHealth answers as Agave does past its health-check slot distance: -32005 "Node is behind by N slots".
        self.cluster_slot: int | None = None
        self.svm = self._runtime()
        genesis = BlockRecord(FIRST_SLOT, self._new_hash(), FIRST_SLOT - 1, self._new_hash(), 0)
        self.blocks: list[BlockRecord] = [genesis]
        self.next_slot = FIRST_SLOT + 1
        self.mempool: list[VersionedTransaction] = []
        self.first_available, self.missing = FIRST_SLOT, MISSING["snapshot"]
        self.calls: list[tuple[str, list[Any]]] = []  # (method, params) as received
        self.pending_airdrops: list[tuple[Pubkey, int]] = []
        self.payer = Keypair()
        self.airdrop(self.payer.pubkey(), 10_000 * 10**9)
        self.url = ""
        self._runner: web.AppRunner | None = None
        self.ws_calls: list[str] = []  # PubSub methods as received
        self.slot_subscribers: dict[int, asyncio.Queue] = {}  # subscription id -> its socket's outbox
        self._sockets: set[web.WebSocketResponse] = set()
        self._next_subscription = 0

    @staticmethod
    def _runtime() -> LiteSVM:
        # Blockhash age is the node's rule (kept here per block); everything else is the runtime's.
        return LiteSVM().with_blockhash_check(False)

    @staticmethod
    def _new_hash() -> str:
        return base58.b58encode(os.urandom(32)).decode()

    # -- chain moves (also used directly by test drivers) -------------------------------------

    @property
    def tip(self) -> BlockRecord:
        return self.blocks[-1]

    def airdrop(self, pubkey: Pubkey | str, lamports: int) -> None:
        key = Pubkey.from_string(pubkey) if isinstance(pubkey, str) else pubkey
        self.svm.airdrop(key, lamports)
        self.pending_airdrops.append((key, lamports))

    def balance(self, address: str) -> int:
        return self.svm.get_balance(Pubkey.from_string(address)) or 0

    def skip(self, slots: int = 1) -> None:
        self.next_slot += slots

    def prune(self, below: int, code: str = "snapshot") -> None:
        """Forget the blocks below slot ``below`` (never the finalized one); ``code`` picks the error."""
        assert below <= self.finalized().slot, "a node keeps what is not rooted yet"
        self.first_available, self.missing = below, MISSING[code]

    def _blockhash_block(self, blockhash: str) -> BlockRecord | None:
        return next((b for b in self.blocks if b.blockhash == blockhash), None)

    def _blockhash_valid(self, blockhash: str, height: int) -> bool:
        """Whether a transaction on ``blockhash`` may enter a block of ``height``."""
        origin = self._blockhash_block(blockhash)
        return origin is not None and height <= origin.height + VALID_BLOCKS

    def _landed(self, signature: str) -> tuple[BlockRecord, dict[str, Any]] | None:
        for block in self.blocks:
            for tx, meta in block.txs:
                if str(tx.signatures[0]) == signature:
                    return block, meta
        return None

    def _execute(self, tx: VersionedTransaction) -> dict[str, Any] | None:
        """Run ``tx`` in the runtime; its status meta when the runtime committed it (fee charged)."""
        keys = list(tx.message.account_keys)
        pre = [self.svm.get_balance(k) or 0 for k in keys]
        result = self.svm.send_transaction(tx)
        if self.svm.get_transaction(tx.signatures[0]) is None:
            return None  # refused before execution (bad signature, duplicate, no fee payer): no block entry
        failed = isinstance(result, FailedTransactionMetadata)
        meta = result.meta() if failed else result
        err = error_json(result.err()) if failed else None
        return {"err": err, "status": {"Err": err} if failed else {"Ok": None}, "fee": meta.fee(),
                "preBalances": pre, "postBalances": [self.svm.get_balance(k) or 0 for k in keys],
                "logMessages": list(meta.logs()), "loadedAddresses": {"writable": [], "readonly": []}}

    def produce(self, count: int = 1) -> None:
        for _ in range(count):
            parent = self.tip
            block = BlockRecord(self.next_slot, self._new_hash(), parent.slot, parent.blockhash, parent.height + 1,
                                airdrops=self.pending_airdrops)
            self.pending_airdrops, pending, self.mempool = [], self.mempool, []
            for tx in pending:
                if not self._blockhash_valid(str(tx.message.recent_blockhash), block.height):
                    continue  # expired while waiting: dropped, as a leader would
                meta = self._execute(tx)
                if meta is not None:
                    block.txs.append((tx, meta))
            self.blocks.append(block)
            self.next_slot += 1
            self._notify_slot(block)

    def _notify_slot(self, block: BlockRecord) -> None:
        info = SlotInfo(slot=block.slot, parent=block.parent_slot, root=self.finalized().slot)
        for subscription, outbox in self.slot_subscribers.items():
            outbox.put_nowait(slot_notification(info, subscription))

    def finalized(self) -> BlockRecord:
        limit = self.tip.slot - FINALITY
        candidates = [b for b in self.blocks if b.slot <= limit]
        return candidates[-1] if candidates else self.blocks[0]

    def reorg(self, depth: int) -> None:
        """Replace the newest ``depth`` blocks by ``depth + 1`` empty ones at the same slots."""
        dropped, self.blocks = self.blocks[-depth:], self.blocks[:-depth]
        assert self.blocks and dropped[0].slot > self.finalized().slot, "finalized blocks never fork away"
        self.svm, pending = self._runtime(), self.pending_airdrops
        self.mempool, self.pending_airdrops = [], []
        for block in self.blocks:
            for key, lamports in block.airdrops:
                self.svm.airdrop(key, lamports)
            for tx, _ in block.txs:
                assert self._execute(tx) is not None, "a replayed transaction must execute as before"
        for block in dropped:  # funding is the test's, not the fork's: keep it
            pending = block.airdrops + pending
        for key, lamports in pending:
            self.airdrop(key, lamports)
        self.next_slot = dropped[0].slot
        self.produce(depth + 1)

    def pay(self, address: str, lamports: int, *, payer: Keypair | None = None, skip_preflight: bool = False,
            blockhash: str | None = None, unit_price: int | None = None) -> str:
        """A system transfer built and signed by solders (independent of the gateway's encoder); ``unit_price``:
        with a priority fee of that many micro-lamports a compute unit."""
        payer = payer or self.payer
        recent = Hash.from_string(blockhash or self.tip.blockhash)
        ixs = [] if unit_price is None else [compute_budget.set_compute_unit_limit(MARKET_UNITS),
                                             compute_budget.set_compute_unit_price(unit_price)]
        ixs.append(transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Pubkey.from_string(address),
                                           lamports=lamports)))
        tx = Transaction([payer], Message.new_with_blockhash(ixs, payer.pubkey(), recent), recent)
        return self.send(base64.b64encode(bytes(tx)).decode(), {"skipPreflight": skip_preflight})

    def market(self, written: str, unit_price: int) -> None:
        """Every recent block lands a stranger's transfer to ``written`` paying ``unit_price``, and one paying none:
        ``getRecentPrioritizationFees`` then answers ``unit_price`` for ``written`` in every slot, 0 for others."""
        for _ in range(RECENT_FEE_SLOTS):
            self.pay(written, 1_000_000, unit_price=unit_price)
            self.pay(str(Keypair().pubkey()), 1_000_000)
            self.produce(1)

    # -- RPC ---------------------------------------------------------------------------------

    def _at(self, options: Any) -> BlockRecord:
        commitment = (options or {}).get("commitment", "finalized") if isinstance(options, dict) else "finalized"
        return self.finalized() if commitment == "finalized" else self.tip

    @staticmethod
    def _options(params: list[Any], index: int) -> dict[str, Any]:
        return params[index] if len(params) > index and isinstance(params[index], dict) else {}

    def send(self, raw: str, options: dict[str, Any]) -> str:
        try:
            tx = VersionedTransaction.from_bytes(base64.b64decode(raw))
        except Exception as exc:  # noqa: BLE001 - any decoding failure is the client's
            raise RpcFailure(-32602, f"failed to deserialize transaction: {exc}") from None
        signature = str(tx.signatures[0])
        if not options.get("skipPreflight"):
            if self._landed(signature) is not None:
                raise RpcFailure(-32002, "Transaction simulation failed: This transaction has already been processed",
                                 {"err": "AlreadyProcessed", "logs": []})
            if not self._blockhash_valid(str(tx.message.recent_blockhash), self.tip.height + 1):
                raise RpcFailure(-32002, "Transaction simulation failed: Blockhash not found",
                                 {"err": "BlockhashNotFound", "logs": []})
            simulated = self.svm.simulate_transaction(tx)
            if isinstance(simulated, FailedTransactionMetadata):
                err = error_json(simulated.err())
                raise RpcFailure(-32002, f"Transaction simulation failed: {err}",
                                 {"err": err, "logs": list(simulated.meta().logs())})
        if all(str(t.signatures[0]) != signature for t in self.mempool):
            self.mempool.append(tx)
        return signature

    def _block_json(self, block: BlockRecord, details: str) -> dict[str, Any]:
        body: dict[str, Any] = {"blockhash": block.blockhash, "previousBlockhash": block.previous_blockhash,
                                "parentSlot": block.parent_slot, "blockHeight": block.height, "blockTime": None}
        if details == "full":
            body["transactions"] = [{"transaction": self._tx_json(tx), "meta": meta, "version": "legacy"}
                                    for tx, meta in block.txs]
        elif details == "signatures":
            body["signatures"] = [str(tx.signatures[0]) for tx, _ in block.txs]
        return body

    @staticmethod
    def _tx_json(tx: VersionedTransaction) -> dict[str, Any]:
        message = tx.message
        return {"signatures": [str(s) for s in tx.signatures],
                "message": {"accountKeys": [str(k) for k in message.account_keys],
                            "recentBlockhash": str(message.recent_blockhash),
                            "header": json.loads(message.header.to_json())}}

    def handle(self, method: str, params: list[Any]) -> Any:
        context = {"slot": self.tip.slot}
        if method == "getGenesisHash":
            return self.genesis_hash
        if method == "getHealth":
            behind = 0 if self.cluster_slot is None else self.cluster_slot - self.tip.slot
            if behind > HEALTH_CHECK_SLOT_DISTANCE:
                raise RpcFailure(-32005, f"Node is behind by {behind} slots", {"numSlotsBehind": behind})
            return "ok"
        if method == "getSlot":
            return self._at(self._options(params, 0)).slot
        if method == "getBlockHeight":
            return self._at(self._options(params, 0)).height
        if method == "getBlock":
            slot, options = params[0], self._options(params, 1)
            limit = self._at(options)
            if options.get("commitment") == "processed":
                raise RpcFailure(-32602, "Method does not support commitment below `confirmed`")
            block = next((b for b in self.blocks if b.slot == slot), None)
            if slot > limit.slot:
                raise RpcFailure(-32004, f"Block not available for slot {slot}")
            if slot < self.first_available:
                code, message = self.missing
                raise RpcFailure(code, message.format(slot=slot, first=self.first_available))
            if block is None:
                raise RpcFailure(-32007, f"Slot {slot} was skipped, or missing due to ledger jump to recent snapshot")
            return self._block_json(block, options.get("transactionDetails", "full"))
        if method == "getBlocksWithLimit":
            start, limit = params[0], params[1]
            top = self._at(self._options(params, 2)).slot
            return [b.slot for b in self.blocks if max(start, self.first_available) <= b.slot <= top][:limit]
        if method == "getFirstAvailableBlock":
            return min(b.slot for b in self.blocks if b.slot >= self.first_available)
        if method == "getSignaturesForAddress":
            return self._signatures(params[0], self._options(params, 1))
        if method == "getLatestBlockhash":
            block = self._at(self._options(params, 0))
            return {"context": context, "value": {"blockhash": block.blockhash,
                                                  "lastValidBlockHeight": block.height + VALID_BLOCKS}}
        if method == "isBlockhashValid":
            return {"context": context, "value": self._blockhash_valid(params[0], self.tip.height + 1)}
        if method == "getFeeForMessage":
            message = Message.from_bytes(base64.b64decode(params[0]))
            valid = self._blockhash_valid(str(message.recent_blockhash), self.tip.height + 1)
            return {"context": context, "value": fee_of(message) if valid else None}
        if method == "getRecentPrioritizationFees":
            return self._recent_fees(params[0] if params else [])
        if method == "getBalance":
            return {"context": context, "value": self.balance(params[0])}
        if method == "getMinimumBalanceForRentExemption":
            return self.svm.minimum_balance_for_rent_exemption(params[0])
        if method == "sendTransaction":
            options = self._options(params, 1)
            if options.get("encoding") != "base64":
                raise RpcFailure(-32602, "this node takes base64 transactions only")
            return self.send(params[0], options)
        if method == "getSignatureStatuses":
            final = self.finalized()
            statuses = []
            for signature in params[0]:
                landed = self._landed(signature)
                if landed is None:
                    statuses.append(None)
                    continue
                block, meta = landed
                done = block.slot <= final.slot
                statuses.append({"slot": block.slot, "err": meta["err"], "status": meta["status"],
                                 "confirmations": None if done else self.tip.height - block.height,
                                 "confirmationStatus": "finalized" if done else "confirmed"})
            return {"context": context, "value": statuses}
        if method == "getTransaction":
            landed = self._landed(params[0])
            if landed is None or landed[0].slot > self._at(self._options(params, 1)).slot:
                return None
            block, meta = landed
            tx = next(t for t, _ in block.txs if str(t.signatures[0]) == params[0])
            return {"slot": block.slot, "blockTime": None, "meta": meta, "transaction": self._tx_json(tx)}
        raise RpcFailure(-32601, "Method not found")

    def _recent_fees(self, addresses: list[str]) -> list[dict[str, int]]:
        if len(addresses) > MAX_FEE_ACCOUNTS:
            raise RpcFailure(-32602, f"Too many inputs provided; max {MAX_FEE_ACCOUNTS}")
        asked = {Pubkey.from_string(a) for a in addresses}
        answer = []
        for block in self.blocks[-RECENT_FEE_SLOTS:]:
            paid = [(compute_budget_of(tx.message)[1], written(tx.message)) for tx, _ in block.txs]
            least = min((price for price, _ in paid), default=0)
            by_account = [min((price for price, keys in paid if key in keys), default=0) for key in asked]
            answer.append({"slot": block.slot, "prioritizationFee": max([least, *by_account])})
        return answer

    def _signatures(self, address: str, options: dict[str, Any]) -> list[dict[str, Any]]:
        """Newest first; ``before``/``until`` exclusive, as the RPC documents."""
        top = self._at(options)
        if top.slot < options.get("minContextSlot", 0):
            raise RpcFailure(-32016, "Minimum context slot has not been reached", {"contextSlot": top.slot})
        limit = options.get("limit", MAX_SIGNATURES)
        if not 1 <= limit <= MAX_SIGNATURES:
            raise RpcFailure(-32602, f"Invalid limit; max {MAX_SIGNATURES}")
        key = Pubkey.from_string(address)
        final = self.finalized().slot
        newest_first = [(block, tx, meta) for block in reversed(self.blocks) if block.slot <= top.slot
                        for tx, meta in reversed(block.txs) if key in tx.message.account_keys]
        found: list[dict[str, Any]] = []
        started = "before" not in options
        for block, tx, meta in newest_first:
            signature = str(tx.signatures[0])
            if not started:
                started = signature == options["before"]
                continue
            if signature == options.get("until") or len(found) == limit:
                break
            found.append({"signature": signature, "slot": block.slot, "err": meta["err"], "memo": None,
                          "blockTime": None,
                          "confirmationStatus": "finalized" if block.slot <= final else "confirmed"})
        return found

    async def _http(self, request: web.Request) -> web.Response:
        for name, value in self.required_headers.items():
            if request.headers.get(name) != value:
                return web.Response(status=401, text="unauthorized")
        body = await request.json()
        self.calls.append((body["method"], body.get("params") or []))
        try:
            result = self.handle(body["method"], body.get("params") or [])
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": body.get("id"), "result": result}
        except RpcFailure as exc:
            error: dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            answer = {"jsonrpc": "2.0", "id": body.get("id"), "error": error}
        return web.json_response(answer)

    async def _ws(self, request: web.Request) -> web.StreamResponse:
        for name, value in self.required_headers.items():
            if request.headers.get(name) != value:
                return web.Response(status=401, text="unauthorized")
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        outbox: asyncio.Queue = asyncio.Queue()
        mine: set[int] = set()
        sender = asyncio.create_task(self._send(ws, outbox))
        self._sockets.add(ws)
        try:
            async for message in ws:
                if message.type == web.WSMsgType.TEXT:
                    outbox.put_nowait(self._pubsub(json.loads(message.data), outbox, mine))
        finally:
            self._sockets.discard(ws)
            for subscription in mine:
                self.slot_subscribers.pop(subscription, None)
            sender.cancel()
        return ws

    def _pubsub(self, body: dict[str, Any], outbox: asyncio.Queue, mine: set[int]) -> str:
        """The answer to one PubSub request, serialised by solders (Agave's RPC types), not written here."""
        method, params, request = body.get("method"), body.get("params") or [], body.get("id")
        self.ws_calls.append(method)
        if method == "slotSubscribe":
            subscription, self._next_subscription = self._next_subscription, self._next_subscription + 1
            self.slot_subscribers[subscription] = outbox
            mine.add(subscription)
            return SubscriptionResult(id=request, result=subscription).to_json()
        if method == "slotUnsubscribe" and params and params[0] in mine:
            mine.discard(params[0])
            del self.slot_subscribers[params[0]]
            return UnsubscribeResult(id=request, result=True).to_json()
        if method == "slotUnsubscribe":
            return SubscriptionError(request, InvalidParamsMessage("Invalid subscription id.")).to_json()
        return SubscriptionError(request, MethodNotFoundMessage("Method not found")).to_json()

    @staticmethod
    async def _send(ws: web.WebSocketResponse, outbox: asyncio.Queue) -> None:
        while True:
            await ws.send_str(await outbox.get())

    async def drop_streams(self) -> None:
        """Close every PubSub socket, as a restarting node does."""
        for ws in list(self._sockets):
            await ws.close()

    @property
    def ws_url(self) -> str:
        return "ws" + self.url[len("http"):]

    async def start(self) -> "SolanaNode":
        app = web.Application()
        app.router.add_post("/", self._http)
        app.router.add_get("/", self._ws)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/"
        return self

    async def stop(self) -> None:
        await self.drop_streams()
        if self._runner is not None:
            await self._runner.cleanup()


class SolanaDriver(ChainDriver):
    """The conformance suite's view of the node; extra keyword arguments go into ``[plugin.solana]``."""

    chain = "solana"
    coin = "SOL"
    deposit_amount = "1"
    payout_amount = "0.3"
    blocked_plugins = ("devnet",)

    def __init__(self, node: SolanaNode, **settings: Any) -> None:
        self.node, self.settings = node, settings

    def config_sections(self) -> dict[str, dict[str, Any]]:
        return {"plugin": {"solana": {"rpc_url": self.node.url, "start_height": self.node.tip.slot + 1,
                                      "scan_seconds": 1, **self.settings}}}

    async def send(self, address: str, amount: int) -> str:
        return self.node.pay(address, amount)

    async def mine(self, blocks: int) -> None:
        self.node.produce(blocks)

    async def reorg(self, depth: int) -> None:
        self.node.reorg(depth)

    async def height(self) -> int:
        return self.node.tip.slot

    def external_address(self) -> str:
        return str(Keypair().pubkey())

    async def received(self, address: str) -> int:
        return self.node.balance(address)

    async def prune(self) -> int:
        self.node.prune(self.node.finalized().slot)
        return self.node.first_available

    async def fund_hot_wallet(self, gateway: Any, amount: int) -> None:
        self.node.airdrop(hot_wallet_address(gateway), amount + 10**9)  # plus fees and rent



async def open_solana_shop(node: SolanaNode, make_config: Any, make_client: Any, **settings: Any) -> Any:
    """A gateway watching ``node`` (extra keyword arguments go into ``[plugin.solana]``) and a merchant."""
    return await open_chain_shop(SolanaDriver(node, **settings), make_config, make_client)


@contextlib.asynccontextmanager
async def running_node(**options: Any) -> AsyncIterator[SolanaNode]:
    """A fresh node on a free loopback port, one block past genesis (each test module's fixture uses it)."""
    node = await SolanaNode(**options).start()
    node.produce(1)
    try:
        yield node
    finally:
        await node.stop()
