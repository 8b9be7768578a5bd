"""The simulated chain: blocks and transfers kept in the gateway's database.

Why in the database: the server (mining job, pay form) and the CLI in
another process must see one chain. ``devnet_blocks`` is the current best
chain only; a reorganisation deletes the replaced blocks and appends new
ones with fresh hashes, exactly what a scanner sees on a real node.

Every write runs in ``db.transaction()`` and first locks the genesis row
(``FOR UPDATE`` on PostgreSQL; SQLite transactions are serialised by the
database layer already), so concurrent ``mine``/``reorg`` calls from any
process take turns. Should two writers still collide on a height, the
primary key refuses the second block and that writer retries on the new tip.

Like a node's notifications, ``follow(heard)`` hears ``"tx"`` after each
committed ``pay``/``submit`` and ``"block"`` after each ``mine``/``reorg``
made by this process (the adapter's ``push``); a write from another process
(``orbchain devnet`` in a shell) is found by the periodic scan.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import sqlite3
import time
from typing import Any, Awaitable, Callable, Collection, Iterable, Sequence, TypeVar

import asyncpg

from ...api import (
    AddressError, AddressFamilyRegistry, Block, BlockRef, ChainUnavailable, Coin, Database, Transfer,
    UnknownFamilyError,
)

log = logging.getLogger(__name__)

NETWORK = "mainnet"
GENESIS_PARENT = "0" * 64
MAX_BLOCKS_PER_CALL = 1000
_CONFLICT_RETRIES = 5
_READ_RETRIES = 3

T = TypeVar("T")


class DevnetError(ValueError):
    """A devnet request that cannot be carried out; the message says why."""


class UnservedCoin(DevnetError):
    """The coin is unknown or not simulated by this devnet."""


class InvalidAddress(DevnetError):
    """The address is not valid for the coin's address family on mainnet."""


class InvalidAmount(DevnetError):
    """The amount is not a positive integer of base units."""


class InvalidReorg(DevnetError):
    """The reorganisation depth or the transactions to drop do not fit the chain."""


class UnknownBlock(LookupError):
    """No block at that height: the caller asked above the tip."""


def _new_hash(*parts: str) -> str:
    # A random nonce keeps a replacement block at the same height distinct.
    material = "|".join((*parts, secrets.token_hex(16)))
    return hashlib.sha256(material.encode()).hexdigest()


def _is_unique_violation(exc: BaseException) -> bool:
    return isinstance(exc, (sqlite3.IntegrityError, asyncpg.exceptions.UniqueViolationError))


def _ref(row: Any) -> BlockRef:
    return BlockRef(int(row["height"]), row["hash"])


def _in_list(prefix: str, items: Iterable[str]) -> tuple[str, dict[str, str]]:
    """``:p0, :p1, ...`` and their values, for an ``IN (...)`` clause."""
    values = {f"{prefix}{i}": item for i, item in enumerate(items)}
    return ", ".join(f":{name}" for name in values), values


class DevnetChain:
    """The devnet's chain state and the operations a tester drives.

    ``coins`` limits which coin symbols ``pay`` accepts (None: any coin whose
    address family validates). ``families`` is the gateway's address-family
    registry ``pay`` validates destinations with. ``clock`` returns Unix seconds.
    """

    def __init__(
        self,
        db: Database,
        coins: Collection[str] | None = None,
        clock: Callable[[], float] = time.time,
        families: AddressFamilyRegistry | None = None,
    ) -> None:
        self.db = db
        self.coins = None if coins is None else frozenset(coins)
        self._clock = clock
        self.families = families if families is not None else AddressFamilyRegistry()
        self._listeners: list[Callable[[str], None]] = []

    def serves(self, symbol: str) -> bool:
        return self.coins is None or symbol in self.coins

    def _now(self) -> int:
        return int(self._clock())

    # -- writes ------------------------------------------------------------------

    async def pay(self, coin: Coin, address: str, amount_units: int) -> str:
        """Put one transfer of ``amount_units`` to ``address`` in the mempool.

        The address is validated for the coin's family on mainnet and stored
        in its normalised form (the form the gateway derives). Returns the
        new transaction hash (64 hex characters; the transfer is output 0).
        """
        if not self.serves(coin.symbol):
            raise UnservedCoin(f"the devnet does not simulate {coin.symbol}")
        if not isinstance(amount_units, int) or isinstance(amount_units, bool) or amount_units <= 0:
            raise InvalidAmount("amount must be greater than 0")
        try:
            normalized = self.families.validate(coin.address_family, address, NETWORK)
        except AddressError as exc:
            raise InvalidAddress(f"not a valid {coin.symbol} address ({exc.detail})") from None
        except UnknownFamilyError:
            raise UnservedCoin(f"the devnet has no address family for {coin.symbol}") from None
        tx_hash = _new_hash(coin.symbol, normalized, str(amount_units))
        async with self.db.transaction():
            await self.db.execute(
                "INSERT INTO devnet_txs (tx_hash, output_index, coin, address, amount, block_height, status,"
                " created_at) VALUES (:tx, 0, :coin, :address, :amount, NULL, 'mempool', :t)",
                {"tx": tx_hash, "coin": coin.symbol, "address": normalized,
                 "amount": self.db.amount_param(amount_units), "t": self._now()},
            )
        self._announce("tx")
        return tx_hash

    async def submit(self, tx_hash: str, coin: str, address: str, amount_units: int,
                     payout_id: str | None = None) -> bool:
        """Accept a signed payout transaction into the mempool under its own hash.

        Idempotent like a node's ``sendrawtransaction``: a hash it already
        knows (waiting, mined or dropped) is ignored and False is returned.
        """
        if not self.serves(coin):
            raise UnservedCoin(f"the devnet does not simulate {coin}")
        if not isinstance(amount_units, int) or isinstance(amount_units, bool) or amount_units <= 0:
            raise InvalidAmount("amount must be greater than 0")
        async with self.db.transaction():
            inserted = await self.db.fetch_val(
                "INSERT INTO devnet_txs (tx_hash, output_index, coin, address, amount, block_height, status,"
                " created_at, payout_id) VALUES (:tx, 0, :coin, :address, :amount, NULL, 'mempool', :t, :p)"
                " ON CONFLICT DO NOTHING RETURNING tx_hash",
                {"tx": tx_hash.lower(), "coin": coin, "address": address,
                 "amount": self.db.amount_param(amount_units), "t": self._now(), "p": payout_id},
            )
        if inserted is not None:
            self._announce("tx")
        return inserted is not None

    async def mine(self, n: int = 1) -> list[BlockRef]:
        """Append ``n`` blocks in one transaction; the first takes every mempool transfer."""
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_BLOCKS_PER_CALL:
            raise DevnetError(f"the number of blocks must be between 1 and {MAX_BLOCKS_PER_CALL}")

        async def work() -> list[BlockRef]:
            async with self.db.transaction():
                tip = await self._lock_chain()
                mined = []
                for _ in range(n):
                    tip = await self._append_block(tip, take_mempool=True)
                    mined.append(tip)
                return mined

        mined = await self._retry_on_conflict(work)
        self._announce("block")
        return mined

    async def reorg(self, depth: int, drop: Sequence[str] = ()) -> None:
        """Replace the newest ``depth`` blocks by ``depth + 1`` new ones.

        In one transaction: the blocks above height ``tip - depth`` are
        deleted; the transfers they held go back to the mempool, except the
        transactions named in ``drop`` (which may also name mempool
        transactions), which become ``dropped`` and never confirm. Then
        ``depth + 1`` empty blocks with new hashes are appended, so the new
        chain is one block longer than the old. The returned transfers stay
        in the mempool until the next ``mine``. Genesis cannot be replaced.
        """
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
            raise InvalidReorg("depth must be at least 1")
        to_drop = {tx.strip().lower() for tx in drop if tx.strip()}

        async def work() -> None:
            async with self.db.transaction():
                tip = await self._lock_chain()
                if depth > tip.height:
                    raise InvalidReorg(
                        f"depth {depth} would replace the genesis block (the tip is at height {tip.height})")
                fork = tip.height - depth
                if to_drop:
                    await self._check_droppable(to_drop, fork)
                await self.db.execute(
                    "UPDATE devnet_txs SET status = 'mempool', block_height = NULL"
                    " WHERE status = 'mined' AND block_height > :fork",
                    {"fork": fork},
                )
                if to_drop:
                    clause, values = _in_list("d", sorted(to_drop))
                    await self.db.execute(
                        f"UPDATE devnet_txs SET status = 'dropped' WHERE status = 'mempool' AND tx_hash IN ({clause})",
                        values,
                    )
                await self.db.execute("DELETE FROM devnet_blocks WHERE height > :fork", {"fork": fork})
                parent = _ref(await self.db.fetch_one(
                    "SELECT height, hash FROM devnet_blocks WHERE height = :h", {"h": fork}))
                for _ in range(depth + 1):
                    parent = await self._append_block(parent, take_mempool=False)

        await self._retry_on_conflict(work)
        self._announce("block")

    async def _check_droppable(self, to_drop: set[str], fork: int) -> None:
        clause, values = _in_list("d", sorted(to_drop))
        rows = await self.db.fetch_all(
            f"SELECT DISTINCT tx_hash FROM devnet_txs WHERE tx_hash IN ({clause})"
            " AND (status = 'mempool' OR (status = 'mined' AND block_height > :fork))",
            {**values, "fork": fork},
        )
        unknown = sorted(to_drop - {row["tx_hash"] for row in rows})
        if unknown:
            raise InvalidReorg(f"cannot drop {unknown[0]}: it is neither in the replaced blocks nor in the mempool")

    async def _lock_chain(self) -> BlockRef:
        """Inside a write transaction: make sure genesis exists, lock it, return the tip."""
        await self._create_genesis()
        await self.db.fetch_one("SELECT hash FROM devnet_blocks WHERE height = 0" + self.db.for_update)
        row = await self.db.fetch_one("SELECT height, hash FROM devnet_blocks ORDER BY height DESC LIMIT 1")
        return _ref(row)

    async def _create_genesis(self) -> None:
        # ON CONFLICT: two processes starting at once agree on the first genesis.
        await self.db.execute(
            "INSERT INTO devnet_blocks (height, hash, parent_hash, created_at)"
            " VALUES (0, :hash, :parent, :t) ON CONFLICT DO NOTHING",
            {"hash": _new_hash(GENESIS_PARENT, "0"), "parent": GENESIS_PARENT, "t": self._now()},
        )

    async def _append_block(self, parent: BlockRef, *, take_mempool: bool) -> BlockRef:
        height = parent.height + 1
        block_hash = _new_hash(parent.hash, str(height))
        # The block first: a concurrent writer at this height fails here, before touching txs.
        await self.db.execute(
            "INSERT INTO devnet_blocks (height, hash, parent_hash, created_at) VALUES (:h, :hash, :parent, :t)",
            {"h": height, "hash": block_hash, "parent": parent.hash, "t": self._now()},
        )
        if take_mempool:
            await self.db.execute(
                "UPDATE devnet_txs SET status = 'mined', block_height = :h WHERE status = 'mempool'", {"h": height}
            )
        return BlockRef(height, block_hash)

    async def _retry_on_conflict(self, work: Callable[[], Awaitable[T]]) -> T:
        for attempt in range(_CONFLICT_RETRIES):
            try:
                return await work()
            except Exception as exc:  # only unique violations are retried
                if not _is_unique_violation(exc) or attempt == _CONFLICT_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    # -- notifications ---------------------------------------------------------------------------

    async def follow(self, heard: Callable[[str], None]) -> None:
        """Call ``heard`` for every transaction and block this process makes, until cancelled."""
        self._listeners.append(heard)
        try:
            await asyncio.Event().wait()  # an in-process stream never drops
        finally:
            self._listeners.remove(heard)

    def _announce(self, kind: str) -> None:
        for heard in list(self._listeners):
            try:
                heard(kind)
            except Exception:  # a listener's failure is not the write's: it committed
                log.exception("devnet %s listener failed", kind)

    # -- reads -------------------------------------------------------------------

    async def set_outage(self, down: bool) -> None:
        """Take the simulated node away from the gateway (``down``) or give it back; the chain itself goes on."""
        if down:
            await self.db.execute(
                "INSERT INTO devnet_outage (one, since) VALUES (1, :now) ON CONFLICT (one) DO NOTHING",
                {"now": self._now()})
        else:
            await self.db.execute("DELETE FROM devnet_outage")

    async def in_outage(self) -> bool:
        return await self.db.fetch_one("SELECT one FROM devnet_outage") is not None

    async def tip(self) -> BlockRef:
        """The newest block of the best chain; creates genesis on first use."""
        row = await self.db.fetch_one("SELECT height, hash FROM devnet_blocks ORDER BY height DESC LIMIT 1")
        if row is None:
            async with self.db.transaction():
                await self._create_genesis()
            row = await self.db.fetch_one("SELECT height, hash FROM devnet_blocks ORDER BY height DESC LIMIT 1")
        return _ref(row)

    async def block(self, height: int) -> Block:
        """The best chain's block at ``height`` with its mined transfers."""
        for _ in range(_READ_RETRIES):
            row = await self.db.fetch_one(
                "SELECT height, hash, parent_hash, created_at FROM devnet_blocks WHERE height = :h", {"h": height}
            )
            if row is None:
                raise UnknownBlock(f"no devnet block at height {height}")
            rows = await self.db.fetch_all(
                "SELECT tx_hash, output_index, address, coin, amount FROM devnet_txs"
                " WHERE block_height = :h AND status = 'mined' ORDER BY created_at, tx_hash, output_index",
                {"h": height},
            )
            # The two reads are separate statements: a reorg in between would mix two blocks.
            again = await self.db.fetch_val("SELECT hash FROM devnet_blocks WHERE height = :h", {"h": height})
            if again == row["hash"]:
                return Block(
                    height=int(row["height"]),
                    hash=row["hash"],
                    parent_hash=row["parent_hash"],
                    transfers=tuple(self._transfer(r) for r in rows),
                    timestamp=int(row["created_at"]),
                )
        raise ChainUnavailable(f"the devnet kept reorganising while block {height} was read")

    async def mempool(self) -> tuple[Transfer, ...]:
        """Transfers waiting for a block, oldest first."""
        rows = await self.db.fetch_all(
            "SELECT tx_hash, output_index, address, coin, amount FROM devnet_txs"
            " WHERE status = 'mempool' ORDER BY created_at, tx_hash, output_index"
        )
        return tuple(self._transfer(r) for r in rows)

    async def tx_status(self, tx_hash: str) -> tuple[str, int | None] | None:
        """``(status, block_height)`` of a transaction, None when unknown."""
        row = await self.db.fetch_one(
            "SELECT status, block_height FROM devnet_txs WHERE tx_hash = :tx ORDER BY output_index LIMIT 1",
            {"tx": tx_hash.lower()},
        )
        if row is None:
            return None
        height = row["block_height"]
        return row["status"], None if height is None else int(height)

    async def payout_of(self, tx_hash: str) -> str | None:
        """The payout a transaction was submitted for (``submit``'s ``payout_id``); None: a payer's, or unknown."""
        return await self.db.fetch_val("SELECT payout_id FROM devnet_txs WHERE tx_hash = :tx ORDER BY output_index"
                                       " LIMIT 1", {"tx": tx_hash.lower()})

    def _transfer(self, row: Any) -> Transfer:
        return Transfer(row["tx_hash"], int(row["output_index"]), row["address"], row["coin"],
                        Database.to_int(row["amount"]))
