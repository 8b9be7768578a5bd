"""``ZedNode``: the ZED chain itself, in the process: accounts, a mempool, blocks, reorgs and pruning.

What a real node would be for another chain. Balances follow the best
chain (a reorganised-away transfer no longer counts); a transfer the sender
cannot afford is refused when submitted and left out of a block if a reorg
made it unaffordable since. ``FAUCET`` pays without a balance (the test
network's faucet). Pruning forgets old blocks for ``block`` while the
address index still answers (``history``), as an indexer beside a pruned
node does.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from typing import Callable

FAUCET = "faucet"


class InsufficientFunds(RuntimeError):
    pass


@dataclass(frozen=True)
class ZedTx:
    hash: str
    sender: str
    to: str
    amount: int
    fee: int = 0

    @classmethod
    def of(cls, raw: str) -> "ZedTx":
        """The transaction a raw text describes (its hash is the text's); ``ValueError`` when malformed."""
        body = json.loads(raw)
        if not isinstance(body, dict) or not all(isinstance(body.get(k), str) for k in ("from", "to")):
            raise ValueError("not a zed transaction")
        amount, fee = body.get("amount"), body.get("fee", 0)
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (amount, fee)) or not amount:
            raise ValueError("zed amounts are positive integers")
        return cls(digest(raw), body["from"], body["to"], amount, fee)


@dataclass(frozen=True)
class ZedBlock:
    height: int
    hash: str
    parent: str
    txs: tuple[ZedTx, ...]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def raw_transfer(sender: str, to: str, amount: int, fee: int = 0, nonce: str = "") -> str:
    """A transaction's raw text (deterministic: the same order signs to the same bytes)."""
    return json.dumps({"from": sender, "to": to, "amount": amount, "fee": fee, "nonce": nonce},
                      sort_keys=True, separators=(",", ":"))


class ZedNode:
    def __init__(self) -> None:
        self.blocks = [ZedBlock(0, digest("zed genesis"), "0" * 64, ())]
        self.mempool: dict[str, ZedTx] = {}
        self.first_available = 0
        self._branches = itertools.count(1)
        self._branch = 0
        self._nonces = itertools.count(1)
        self.subscribers: list[Callable[[str], None]] = []  # notified "tx" / "block", like a node's ZMQ

    def _announce(self, kind: str) -> None:
        for subscriber in list(self.subscribers):
            subscriber(kind)

    # -- reading -----------------------------------------------------------------------------------

    @property
    def tip(self) -> ZedBlock:
        return self.blocks[-1]

    def block(self, height: int) -> ZedBlock:
        if not 0 <= height <= self.tip.height:
            raise ValueError(f"no zed block {height}: the tip is {self.tip.height}")
        return self.blocks[height]

    def balance(self, address: str, *, pending: bool = False) -> int:
        """Confirmed balance on the best chain; with ``pending``, less what the mempool already spends."""
        total = 0
        for block in self.blocks:
            for tx in block.txs:
                total += (tx.amount if tx.to == address else 0) - (tx.amount + tx.fee if tx.sender == address else 0)
        if pending:
            total -= sum(tx.amount + tx.fee for tx in self.mempool.values() if tx.sender == address)
        return total

    def status(self, tx_hash: str) -> tuple[str, int | None] | None:
        """``("mempool", None)``, ``("mined", height)`` on the best chain, or None when unknown."""
        if tx_hash in self.mempool:
            return "mempool", None
        for block in self.blocks:
            if any(tx.hash == tx_hash for tx in block.txs):
                return "mined", block.height
        return None

    def history(self, addresses: set[str], start: int, end: int) -> list[tuple[ZedBlock, ZedTx]]:
        """Transfers to ``addresses`` in blocks ``start``..``end``, pruned or not (the address index)."""
        return [(block, tx) for block in self.blocks[start:end + 1] for tx in block.txs if tx.to in addresses]

    # -- writing -----------------------------------------------------------------------------------

    def submit(self, raw: str) -> ZedTx:
        """Take a raw transaction into the mempool; a repeat is harmless, an unaffordable one refused."""
        tx = ZedTx.of(raw)
        if self.status(tx.hash) is not None:
            return tx
        if tx.sender != FAUCET and self.balance(tx.sender, pending=True) < tx.amount + tx.fee:
            raise InsufficientFunds(f"{tx.sender} cannot pay {tx.amount} + fee {tx.fee}")
        self.mempool[tx.hash] = tx
        self._announce("tx")
        return tx

    def faucet(self, to: str, amount: int) -> str:
        """Pay ``amount`` from the faucet (left in the mempool); the transaction hash."""
        return self.submit(raw_transfer(FAUCET, to, amount, nonce=str(next(self._nonces)))).hash

    def mine(self, blocks: int, *, take_mempool: bool = True) -> None:
        for _ in range(blocks):
            taken: list[ZedTx] = []
            if take_mempool:
                for tx in list(self.mempool.values()):
                    del self.mempool[tx.hash]
                    if tx.sender == FAUCET or self.balance(tx.sender) - self._spent(taken, tx.sender) >= tx.amount + tx.fee:
                        taken.append(tx)
            parent = self.tip
            height = parent.height + 1
            block_hash = digest(f"{parent.hash}|{height}|{self._branch}|{','.join(tx.hash for tx in taken)}")
            self.blocks.append(ZedBlock(height, block_hash, parent.hash, tuple(taken)))
            self._announce("block")

    @staticmethod
    def _spent(taken: list[ZedTx], sender: str) -> int:
        return sum(tx.amount + tx.fee for tx in taken if tx.sender == sender)

    def reorg(self, depth: int) -> None:
        """Replace the newest ``depth`` blocks by ``depth + 1`` empty ones; their transactions wait again."""
        if not 0 < depth <= self.tip.height - self.first_available:
            raise ValueError(f"cannot reorganise {depth} blocks")
        dropped = self.blocks[-depth:]
        del self.blocks[-depth:]
        waiting = {tx.hash: tx for block in dropped for tx in block.txs}
        self.mempool = {**waiting, **self.mempool}
        self._branch = next(self._branches)
        self.mine(depth + 1, take_mempool=False)

    def prune(self, keep: int = 2) -> int:
        """Forget every block but the newest ``keep`` for ``block``; the first height still kept."""
        self.first_available = max(self.first_available, self.tip.height - keep + 1)
        return self.first_available
