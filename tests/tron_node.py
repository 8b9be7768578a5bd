"""A Tron full-node stand-in for the tests: java-tron's HTTP API over an in-memory chain that judges.

Nothing here shares code with ``orbchain.chains.tron``. What we broadcast is
decoded with protobuf classes generated (by grpcio-tools' protoc, at test
time) from Tron's message definitions (``tron_protos/tron_subset.proto``);
the bytes must be protobuf's canonical encoding, the JSON ``raw_data`` beside
them must say the same thing, the txID must be SHA-256 of the raw bytes, and
the signature must recover (eth-keys' pure-Python backend, not coincurve) to
the owner address. Then the transaction is validated and executed like
java-tron does: TaPoS reference and expiration, the owner account exists,
bandwidth (free 600 bytes a day per account, regenerating linearly over
24 h as java-tron's ResourceProcessor does, else burned at 1000 sun a byte), account creation (1 TRX + 0.1 TRX), energy of TRC-20 calls burned at
420 sun a unit within ``min(fee_limit, balance)``, reverts and out-of-energy
failures that burn their fee and move nothing.

Test controls: ``mine``, ``idle`` (time passes without blocks: the next
block comes that much later, as after missed slots), ``reorg`` (drops the
newest blocks with their transactions and mines a longer branch),
``drop_pending``, ``revert_calls_to`` (contract calls to a contract fail)
and a payer account with TRX and tokens.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import math
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import base58
from aiohttp import web
from eth_keys import KeyAPI
from eth_keys.backends import NativeECCBackend
from eth_utils import keccak

PROTOS = Path(__file__).resolve().parent / "tron_protos"
TRANSFER_TOPIC = keccak(text="Transfer(address,address,uint256)").hex()
TRANSFER_SELECTOR = keccak(text="transfer(address,uint256)")[:4]
BALANCE_OF_SELECTOR = keccak(text="balanceOf(address)")[:4]
PARAMETERS = {"getTransactionFee": 1000, "getEnergyFee": 420, "getCreateAccountFee": 100_000,
              "getCreateNewAccountFeeInSystemContract": 1_000_000, "getFreeNetLimit": 600,
              "getMaxFeeLimit": 15_000_000_000}
ENERGY_NEW_HOLDER, ENERGY_HOLDER, ENERGY_REVERT = 29_650, 14_650, 1_200
RESULT_BYTES = 64
SLOT_MS = 3000  # one block slot; resource time is counted in slots since genesis
WINDOW_SLOTS = 86_400_000 // SLOT_MS  # used bandwidth is forgotten linearly over 24 h
USAGE_PRECISION = 1_000_000
_KEYS = KeyAPI(NativeECCBackend)
# Block 0's id on Tron's mainnet and on Nile, answered for wallet/getblockbynum {"num": 0}: the network a node is on.
MAINNET_GENESIS_ID = "00000000000000001ebf88508a03865c71d452e25f4d51194196a1d22b6653dc"
NILE_GENESIS_ID = "0000000000000000d698d4192c56cb6be724a558448e2684802de4d6cd8690dc"


def compile_protos(out: Path) -> Any:
    """Generate the Python classes from the .proto with grpcio-tools' protoc; returns the module."""
    import grpc_tools

    include = Path(grpc_tools.__file__).resolve().parent / "_proto"
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTOS}", f"-I{include}",
                    f"--python_out={out}", "tron_subset.proto"], check=True)
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    return importlib.import_module("tron_subset_pb2")


def address_of(key: bytes) -> bytes:
    """The 21-byte account id of a private key (0x41 + keccak of the public key's last 20 bytes)."""
    return b"\x41" + keccak(_KEYS.PrivateKey(key).public_key.to_bytes())[-20:]


def t_address(account: bytes) -> str:
    return base58.b58encode_check(account).decode()


def account_id(address: str) -> bytes:
    return base58.b58decode_check(address)


def window_usage(last_usage: int, usage: int, last_slot: int, now: int) -> int:
    """Bytes counted as used at slot ``now``: ``last_usage`` (as of ``last_slot``) fading linearly to
    nothing over ``WINDOW_SLOTS``, plus ``usage`` just spent. java-tron's rule in its integer steps
    (ResourceProcessor.increase): per-slot averages rounded up, the decayed one rounded half up."""
    faded = -(-last_usage * USAGE_PRECISION // WINDOW_SLOTS)
    added = -(-usage * USAGE_PRECISION // WINDOW_SLOTS)
    if now != last_slot:
        elapsed = now - last_slot
        faded = math.floor(faded * ((WINDOW_SLOTS - elapsed) / WINDOW_SLOTS) + 0.5) if elapsed < WINDOW_SLOTS else 0
    return (faded + added) * WINDOW_SLOTS // USAGE_PRECISION


def free_net_used(state: "State", owner: bytes, now: int) -> int:
    used, at = state.free_used.get(owner, (0, now))
    return window_usage(used, 0, at, now)


class Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


@dataclass
class State:
    trx: dict[bytes, int] = field(default_factory=dict)  # existing accounts only
    free_used: dict[bytes, tuple[int, int]] = field(default_factory=dict)  # owner -> (bytes used, at slot)
    tokens: dict[bytes, dict[bytes, int]] = field(default_factory=dict)  # contract -> owner -> balance


@dataclass
class Mined:
    tx_id: str
    json_tx: dict[str, Any]
    info: dict[str, Any]


@dataclass
class NodeBlock:
    number: int
    block_id: str
    parent: str
    timestamp: int
    txs: list[Mined]
    state: State


class TronNode:
    def __init__(self, pb: Any, *, api_key: str | None = None, genesis_id: str = MAINNET_GENESIS_ID) -> None:
        self.pb = pb
        self.api_key = api_key
        self.genesis_id = genesis_id
        self.payer_key = secrets.token_bytes(32)
        self.payer = address_of(self.payer_key)
        self.contracts: dict[str, bytes] = {}
        genesis = State(trx={self.payer: 10**15})
        self.blocks = [NodeBlock(7_000_000, self._block_id(7_000_000, "00" * 32, 1), "00" * 32,
                                 time.time_ns() // 1_000_000 // SLOT_MS * SLOT_MS, [], genesis)]  # a live tip
        self.pending: list[tuple[Any, dict[str, Any]]] = []
        self.reverting: set[bytes] = set()
        self.broadcasts: list[dict[str, Any]] = []  # every body we were sent, for tests to inspect
        self.refusals: list[Refused] = []
        self._branch = 0
        self._idle_ms = 0
        # getnodeinfo's peers: each one's head, in blocks ahead of this node's (0: in step with it).
        self.peers_ahead: list[int] = [0]

    # -- chain -----------------------------------------------------------------------------

    @property
    def head(self) -> NodeBlock:
        return self.blocks[-1]

    @property
    def state(self) -> State:
        return self.head.state

    def _block_id(self, number: int, parent: str, salt: int) -> str:
        digest = hashlib.sha256(f"{number}:{parent}:{salt}:{secrets.token_hex(4)}".encode()).digest()
        return (number.to_bytes(8, "big") + digest[8:]).hex()

    def deploy_token(self, name: str, supply: int, *, first_byte: int | None = None) -> str:
        """A TRC-20 contract (as an account id) with ``supply`` held by the payer; returns its T address.

        ``first_byte`` fixes the first byte of the contract's 20 (0x41 makes its log address look 41-prefixed).
        """
        body = keccak(text=f"{name}:{secrets.token_hex(8)}")[-20:]
        contract = b"\x41" + (body if first_byte is None else bytes([first_byte]) + body[1:])
        self.state.tokens[contract] = {self.payer: supply}
        for block in self.blocks:
            block.state.tokens.setdefault(contract, {self.payer: supply})
        self.contracts[name] = contract
        return t_address(contract)

    def mine(self, count: int = 1) -> None:
        for _ in range(count):
            state = copy.deepcopy(self.state)
            number, timestamp = self.head.number + 1, self.head.timestamp + SLOT_MS + self._idle_ms
            self._idle_ms = 0
            mined = []
            for tx, json_tx in self.pending:
                trial = copy.deepcopy(state)
                try:
                    info, ret = self._execute(trial, tx, self.head)
                except Refused as exc:
                    self.refusals.append(exc)
                    continue
                state = trial
                info.update({"blockNumber": number, "blockTimeStamp": timestamp})
                mined.append(Mined(json_tx["txID"], {**json_tx, "ret": [{"contractRet": ret}]}, info))
            self.pending = []
            self._branch += 1
            self.blocks.append(NodeBlock(number, self._block_id(number, self.head.block_id, self._branch),
                                         self.head.block_id, timestamp, mined, state))

    def idle(self, seconds: int) -> None:
        """Let ``seconds`` pass before the next block (whole slots): resources recover meanwhile."""
        self._idle_ms += seconds * 1000 // SLOT_MS * SLOT_MS

    def slot(self, block: NodeBlock) -> int:
        return (block.timestamp - self.blocks[0].timestamp) // SLOT_MS

    def reorg(self, depth: int) -> None:
        del self.blocks[-depth:]
        self.mine(depth + 1)

    def drop_pending(self) -> None:
        self.pending = []

    def revert_calls_to(self, contract: str) -> None:
        self.reverting.add(account_id(contract))

    def find_mined(self, tx_id: str) -> Mined | None:
        return next((m for b in self.blocks for m in b.txs if m.tx_id == tx_id), None)

    def balance(self, address: str) -> int:
        return self.state.trx.get(account_id(address), 0)

    def exists(self, address: str) -> bool:
        return account_id(address) in self.state.trx

    def token_balance(self, contract: str, address: str) -> int:
        return self.state.tokens[account_id(contract)].get(account_id(address), 0)

    # -- the payer (test transactions, built with the generated classes) ---------------------

    def payer_tx(self, contract_type: int, message: Any, fee_limit: int = 0) -> dict[str, Any]:
        pb = self.pb
        tx = pb.Transaction()
        raw = tx.raw_data
        ref = self.head
        raw.ref_block_bytes = ref.number.to_bytes(8, "big")[6:8]
        raw.ref_block_hash = bytes.fromhex(ref.block_id)[8:16]
        raw.expiration = ref.timestamp + 60_000
        raw.timestamp = ref.timestamp + 1
        if fee_limit:
            raw.fee_limit = fee_limit
        contract = raw.contract.add()
        contract.type = contract_type
        contract.parameter.Pack(message)
        raw_bytes = raw.SerializeToString(deterministic=True)
        tx_id = hashlib.sha256(raw_bytes).digest()
        signature = _KEYS.PrivateKey(self.payer_key).sign_msg_hash(tx_id)
        return {"txID": tx_id.hex(), "raw_data": self._json_raw(raw), "raw_data_hex": raw_bytes.hex(),
                "signature": [signature.to_bytes().hex()], "visible": False}

    def pay_trx(self, to: str, amount: int) -> str:
        message = self.pb.TransferContract(owner_address=self.payer, to_address=account_id(to), amount=amount)
        return self._submit(self.payer_tx(self.pb.Transaction.Contract.TransferContract, message))

    def pay_token(self, contract: str, to: str, amount: int) -> str:
        data = TRANSFER_SELECTOR + account_id(to)[1:].rjust(32, b"\0") + amount.to_bytes(32, "big")
        message = self.pb.TriggerSmartContract(owner_address=self.payer, contract_address=account_id(contract),
                                               data=data)
        return self._submit(self.payer_tx(self.pb.Transaction.Contract.TriggerSmartContract, message,
                                           fee_limit=100_000_000))

    def _submit(self, body: dict[str, Any]) -> str:
        answer = self.broadcast(body, record=False)
        assert answer.get("result") is True, answer
        return body["txID"]

    # -- judging a broadcast -----------------------------------------------------------------

    def _decode(self, body: dict[str, Any]) -> Any:
        pb = self.pb
        try:
            raw_bytes = bytes.fromhex(body["raw_data_hex"])
            raw = pb.Transaction.raw.FromString(raw_bytes)
        except Exception as exc:  # noqa: BLE001 - anything undecodable is a refusal
            raise Refused("OTHER_ERROR", f"raw_data_hex does not decode: {exc}") from None
        if raw.SerializeToString(deterministic=True) != raw_bytes:
            raise Refused("SIGERROR", "raw_data is not the canonical encoding of its fields")
        if hashlib.sha256(raw_bytes).hexdigest() != body.get("txID"):
            raise Refused("SIGERROR", "txID is not SHA-256 of raw_data")
        if len(raw.contract) != 1:
            raise Refused("CONTRACT_VALIDATE_ERROR", "exactly one contract per transaction")
        if self._json_raw(raw) != body.get("raw_data"):
            raise Refused("SIGERROR", "raw_data JSON and raw_data_hex differ")
        tx = pb.Transaction(raw_data=raw)
        for sig in body.get("signature") or []:
            tx.signature.append(bytes.fromhex(sig))
        return tx

    def _parameter(self, contract: Any) -> Any:
        pb = self.pb
        kinds = {pb.Transaction.Contract.TransferContract: pb.TransferContract,
                 pb.Transaction.Contract.TriggerSmartContract: pb.TriggerSmartContract}
        cls = kinds.get(contract.type)
        if cls is None:
            raise Refused("CONTRACT_VALIDATE_ERROR", f"contract type {contract.type} not supported here")
        message = cls()
        if not contract.parameter.Is(cls.DESCRIPTOR) or not contract.parameter.Unpack(message):
            raise Refused("CONTRACT_VALIDATE_ERROR", f"parameter is not a {cls.DESCRIPTOR.name}")
        if message.SerializeToString(deterministic=True) != contract.parameter.value:
            raise Refused("CONTRACT_VALIDATE_ERROR", "contract parameter is not canonical")
        return message

    def _json_raw(self, raw: Any) -> dict[str, Any]:
        """java-tron's JSON of ``raw`` (visible false: hex bytes), from the decoded message."""
        contract = raw.contract[0]
        message = self._parameter(contract)
        value: dict[str, Any] = {}
        for descriptor, field_value in message.ListFields():
            value[descriptor.name] = field_value.hex() if isinstance(field_value, bytes) else field_value
        name = self.pb.Transaction.Contract.ContractType.Name(contract.type)
        out: dict[str, Any] = {
            "contract": [{"parameter": {"value": value, "type_url": contract.parameter.type_url}, "type": name}],
            "ref_block_bytes": raw.ref_block_bytes.hex(), "ref_block_hash": raw.ref_block_hash.hex(),
            "expiration": raw.expiration, "timestamp": raw.timestamp,
        }
        if raw.fee_limit:
            out["fee_limit"] = raw.fee_limit
        return out

    def _signer(self, tx: Any) -> bytes:
        if len(tx.signature) != 1 or len(tx.signature[0]) != 65:
            raise Refused("SIGERROR", "one 65-byte signature expected")
        sig = tx.signature[0]
        v = sig[64] - 27 if sig[64] >= 27 else sig[64]
        if v not in (0, 1):
            raise Refused("SIGERROR", "bad recovery id")
        digest = hashlib.sha256(tx.raw_data.SerializeToString(deterministic=True)).digest()
        try:
            signature = _KEYS.Signature(vrs=(v, int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:64], "big")))
            public = signature.recover_public_key_from_msg_hash(digest)
        except Exception:  # noqa: BLE001
            raise Refused("SIGERROR", "signature does not recover") from None
        return b"\x41" + keccak(public.to_bytes())[-20:]

    def broadcast(self, body: dict[str, Any], *, record: bool = True) -> dict[str, Any]:
        if record:
            self.broadcasts.append(body)
        tx_id = str(body.get("txID", ""))
        try:
            tx = self._decode(body)
            owner = self._parameter(tx.raw_data.contract[0]).owner_address
            if self._signer(tx) != owner:
                raise Refused("SIGERROR", "the signature is not the owner's")
            if self.find_mined(tx_id) or any(j["txID"] == tx_id for _, j in self.pending):
                raise Refused("DUP_TRANSACTION_ERROR", "dup transaction")
            self._execute(copy.deepcopy(self.state), tx, self.head)  # would it run now?
        except Refused as exc:
            self.refusals.append(exc)
            return {"result": False, "code": exc.code, "txid": tx_id, "message": exc.message.encode().hex()}
        json_tx = {k: body[k] for k in ("txID", "raw_data", "raw_data_hex", "signature")}
        self.pending.append((tx, json_tx))
        return {"result": True, "txid": tx_id}

    # -- execution ---------------------------------------------------------------------------

    def _check_tapos(self, raw: Any, head: NodeBlock) -> None:
        if not head.timestamp < raw.expiration <= head.timestamp + 86_400_000:
            raise Refused("TRANSACTION_EXPIRATION_ERROR", "transaction expired or expiration too far")
        for block in self.blocks[-65536:]:
            if (block.number.to_bytes(8, "big")[6:8] == raw.ref_block_bytes
                    and bytes.fromhex(block.block_id)[8:16] == raw.ref_block_hash):
                return
        raise Refused("TAPOS_ERROR", "reference block not on this chain")

    @staticmethod
    def _bandwidth(tx: Any) -> int:
        return len(tx.SerializeToString(deterministic=True)) + RESULT_BYTES

    def _pay_bandwidth(self, state: State, owner: bytes, size: int, now: int) -> dict[str, int]:
        """Free bandwidth when what is left of it at slot ``now`` covers ``size``, else burn; refuses when
        neither is possible."""
        used = free_net_used(state, owner, now)
        if PARAMETERS["getFreeNetLimit"] - used >= size:
            state.free_used[owner] = (window_usage(used, size, now, now), now)
            return {"net_usage": size}
        fee = size * PARAMETERS["getTransactionFee"]
        if state.trx[owner] < fee:
            raise Refused("BANDWIDTH_ERROR", "account has insufficient balance to pay bandwidth")
        state.trx[owner] -= fee
        return {"net_fee": fee}

    def _execute(self, state: State, tx: Any, head: NodeBlock) -> tuple[dict[str, Any], str]:
        """Apply ``tx`` to ``state``; its transaction info (without block fields) and contract result."""
        raw = tx.raw_data
        self._check_tapos(raw, head)
        contract = raw.contract[0]
        message = self._parameter(contract)
        owner = message.owner_address
        if owner not in state.trx:
            raise Refused("CONTRACT_VALIDATE_ERROR", "Validate contract error, no OwnerAccount.")
        tx_id = hashlib.sha256(raw.SerializeToString(deterministic=True)).hexdigest()
        if contract.type == self.pb.Transaction.Contract.TransferContract:
            return self._transfer(state, tx, message, tx_id, self.slot(head))
        return self._trigger(state, tx, message, tx_id, self.slot(head))

    def _transfer(self, state: State, tx: Any, message: Any, tx_id: str, now: int) -> tuple[dict[str, Any], str]:
        owner, to, amount = message.owner_address, message.to_address, message.amount
        if amount <= 0 or len(to) != 21 or to[0] != 0x41 or to == owner:
            raise Refused("CONTRACT_VALIDATE_ERROR", "bad transfer")
        if to in state.trx:
            receipt = self._pay_bandwidth(state, owner, self._bandwidth(tx), now)
            fee = receipt.get("net_fee", 0)
        else:  # creating the account: system fee, and the creation fee instead of bandwidth
            fee = PARAMETERS["getCreateNewAccountFeeInSystemContract"] + PARAMETERS["getCreateAccountFee"]
            receipt = {"net_fee": PARAMETERS["getCreateAccountFee"]}
            if state.trx[owner] < fee:
                raise Refused("CONTRACT_VALIDATE_ERROR", "balance is not sufficient to create the account")
            state.trx[owner] -= fee
        if state.trx[owner] < amount:
            raise Refused("CONTRACT_VALIDATE_ERROR", "balance is not sufficient.")
        state.trx[owner] -= amount
        state.trx[to] = state.trx.get(to, 0) + amount
        info: dict[str, Any] = {"id": tx_id, "receipt": receipt}
        if fee:
            info["fee"] = fee
        return info, "SUCCESS"

    def _trigger(self, state: State, tx: Any, message: Any, tx_id: str, now: int) -> tuple[dict[str, Any], str]:
        owner, contract, fee_limit = message.owner_address, message.contract_address, tx.raw_data.fee_limit
        if contract not in state.tokens:
            raise Refused("CONTRACT_VALIDATE_ERROR", "No contract or not a smart contract")
        if message.call_value or message.call_token_value:
            raise Refused("CONTRACT_VALIDATE_ERROR", "this token takes no call value")
        if not 0 <= fee_limit <= PARAMETERS["getMaxFeeLimit"]:
            raise Refused("CONTRACT_VALIDATE_ERROR", "fee limit must be >= 0 and <= the max fee limit")
        receipt: dict[str, Any] = self._pay_bandwidth(state, owner, self._bandwidth(tx), now)
        energy_limit = min(fee_limit, state.trx[owner]) // PARAMETERS["getEnergyFee"]
        result, used, logs = self._run_token(state, owner, contract, message.data, energy_limit)
        energy_fee = used * PARAMETERS["getEnergyFee"]
        state.trx[owner] -= energy_fee
        receipt.update({"energy_usage_total": used, "energy_fee": energy_fee, "result": result})
        fee = receipt.get("net_fee", 0) + energy_fee
        info: dict[str, Any] = {"id": tx_id, "fee": fee, "contract_address": contract.hex(), "receipt": receipt,
                                "contractResult": [""], "log": logs}
        if result != "SUCCESS":
            info.update({"result": "FAILED", "resMessage": result.encode().hex(), "log": []})
        return info, result

    def _run_token(self, state: State, owner: bytes, contract: bytes, data: bytes,
                   energy_limit: int) -> tuple[str, int, list[dict[str, Any]]]:
        balances = state.tokens[contract]
        if contract in self.reverting or data[:4] != TRANSFER_SELECTOR or len(data) != 68:
            return "REVERT", min(ENERGY_REVERT, energy_limit), []
        to = b"\x41" + data[16:36]
        amount = int.from_bytes(data[36:68], "big")
        needed = ENERGY_HOLDER if balances.get(to, 0) > 0 else ENERGY_NEW_HOLDER
        if needed > energy_limit:
            return "OUT_OF_ENERGY", energy_limit, []
        if balances.get(owner, 0) < amount or data[4:16] != bytes(12):
            return "REVERT", min(ENERGY_REVERT, energy_limit), []
        balances[owner] -= amount
        balances[to] = balances.get(to, 0) + amount
        log = {"address": contract[1:].hex(), "data": amount.to_bytes(32, "big").hex(),
               "topics": [TRANSFER_TOPIC, owner[1:].rjust(32, b"\0").hex(), to[1:].rjust(32, b"\0").hex()]}
        return "SUCCESS", needed, [log]

    # -- HTTP --------------------------------------------------------------------------------

    def _block_json(self, block: NodeBlock) -> dict[str, Any]:
        out: dict[str, Any] = {"blockID": block.block_id, "block_header": {"raw_data": {
            "number": block.number, "txTrieRoot": "00" * 32, "witness_address": "41" + "11" * 20,
            "parentHash": block.parent, "version": 30, "timestamp": block.timestamp}, "witness_signature": "00"}}
        if block.txs:
            out["transactions"] = [m.json_tx for m in block.txs]
        return out

    def _by_number(self, number: Any) -> NodeBlock | None:
        return next((b for b in self.blocks if b.number == number), None)

    def app(self) -> web.Application:
        routes = web.RouteTableDef()

        @web.middleware
        async def api_key(request: web.Request, handler: Any) -> web.StreamResponse:
            if self.api_key and request.headers.get("TRON-PRO-API-KEY") != self.api_key:
                return web.json_response({"Error": "ApiKey not exists"}, status=401)
            return await handler(request)

        @routes.post("/wallet/{method}")
        async def wallet(request: web.Request) -> web.Response:
            body = json.loads(await request.text() or "{}")
            handler = getattr(self, "http_" + request.match_info["method"], None)
            if handler is None:
                return web.json_response({"Error": "no such endpoint here"}, status=404)
            return web.json_response(handler(body))

        application = web.Application(middlewares=[api_key])
        application.add_routes(routes)
        return application

    def http_getnowblock(self, body: dict[str, Any]) -> Any:
        return self._block_json(self.head)

    def http_getnodeinfo(self, body: dict[str, Any]) -> Any:
        """java-tron's NodeInfo entity as its HTTP API serialises it (the fields a sync check reads)."""
        head = f"Num:{self.head.number},ID:{self.head.block_id}"
        peers = [{"host": f"10.0.0.{i + 1}", "port": 18888, "nodeId": f"{i + 1:0128x}", "syncFlag": True,
                  "needSyncFromPeer": ahead > 0, "needSyncFromUs": False, "remainNum": ahead,
                  "syncToFetchSize": 0, "headBlockWeBothHave": head, "lastSyncBlock": head}
                 for i, ahead in enumerate(self.peers_ahead)]
        return {"beginSyncNum": self.head.number, "block": head, "solidityBlock": head,
                "currentConnectCount": len(peers), "activeConnectCount": len(peers), "passiveConnectCount": 0,
                "totalFlow": 0, "peerList": peers, "cheatWitnessInfoMap": {}}

    def http_getblockbynum(self, body: dict[str, Any]) -> Any:
        if body.get("num") == 0:  # as java-tron answers its genesis: no number or timestamp in raw_data
            return {"blockID": self.genesis_id, "block_header": {"raw_data": {"parentHash": "00" * 32}}}
        block = self._by_number(body.get("num"))
        return self._block_json(block) if block else {}

    def http_gettransactioninfobyblocknum(self, body: dict[str, Any]) -> Any:
        block = self._by_number(body.get("num"))
        return [m.info for m in block.txs] if block else []

    def http_gettransactioninfobyid(self, body: dict[str, Any]) -> Any:
        mined = self.find_mined(str(body.get("value")))
        return mined.info if mined else {}

    def http_gettransactionfrompending(self, body: dict[str, Any]) -> Any:
        return next((j for _, j in self.pending if j["txID"] == body.get("value")), {})

    def http_broadcasttransaction(self, body: dict[str, Any]) -> Any:
        return self.broadcast(body)

    def http_getchainparameters(self, body: dict[str, Any]) -> Any:
        return {"chainParameter": [{"key": k, "value": v} for k, v in PARAMETERS.items()]}

    def http_getaccount(self, body: dict[str, Any]) -> Any:
        account = bytes.fromhex(str(body.get("address")))
        if account not in self.state.trx:
            return {}
        balance = self.state.trx[account]
        return {"address": account.hex(), "create_time": 1, **({"balance": balance} if balance else {})}

    def http_getaccountresource(self, body: dict[str, Any]) -> Any:
        used = free_net_used(self.state, bytes.fromhex(str(body.get("address"))), self.slot(self.head))
        return {"freeNetLimit": PARAMETERS["getFreeNetLimit"], **({"freeNetUsed": used} if used else {})}

    def http_triggerconstantcontract(self, body: dict[str, Any]) -> Any:
        contract = bytes.fromhex(str(body.get("contract_address")))
        owner = bytes.fromhex(str(body.get("owner_address")))
        selector = keccak(text=str(body.get("function_selector")))[:4]
        data = selector + bytes.fromhex(str(body.get("parameter", "")))
        if contract not in self.state.tokens:
            return {"result": {"code": "CONTRACT_VALIDATE_ERROR", "message": "No contract"}}
        if selector == BALANCE_OF_SELECTOR:
            holder = b"\x41" + data[16:36]
            value = self.state.tokens[contract].get(holder, 0)
            return {"result": {"result": True}, "energy_used": 500,
                    "constant_result": [value.to_bytes(32, "big").hex()]}
        state = copy.deepcopy(self.state)
        result, used, _ = self._run_token(state, owner, contract, data, 10**9)
        answer: dict[str, Any] = {"result": {"result": True}, "energy_used": used, "constant_result": [""]}
        if result != "SUCCESS":
            answer["transaction"] = {"ret": [{"ret": "FAILED"}]}
        return answer
