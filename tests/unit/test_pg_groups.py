"""Group commit of concurrent atomic writes (core/infra/pg_groups.py): shared round trips, separate outcomes."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

import asyncpg
import pytest

from orbchain.core.infra.pg_groups import Groups, WriteGroups, _write_group


class FakeConnection:
    """Records what a group sends; a write whose first argument is in ``refused`` fails on the "server"."""

    def __init__(self, refused=(), gate: asyncio.Event | None = None) -> None:
        self.refused = set(refused)
        self.gate = gate
        self.calls: list[tuple[str, list]] = []
        self.committed: list[list] = []

    def is_closed(self) -> bool:
        return False

    def _check(self, args: list) -> None:
        if args[0] in self.refused:
            raise asyncpg.UniqueViolationError("duplicate key value violates unique constraint")

    async def executemany(self, sql: str, rows: list[list]) -> None:
        self.calls.append(("executemany", rows))
        if self.gate is not None:
            await self.gate.wait()
        for args in rows:
            self._check(args)
        self.committed.extend(rows)

    async def fetchval(self, sql: str, *args) -> None:
        self.calls.append(("fetchval", [list(args)]))
        if self.gate is not None:
            await self.gate.wait()
        self._check(list(args))
        self.committed.append(list(args))

    @asynccontextmanager
    async def transaction(self):
        yield


async def _started(task_count: int) -> None:
    for _ in range(task_count + 2):
        await asyncio.sleep(0)


async def _one_in_flight_then(groups: WriteGroups, conn: FakeConnection, names: str) -> list[asyncio.Future]:
    """Writer "a" leads (its write held at the connection's gate), then one writer per name waits."""
    first = asyncio.ensure_future(groups.write(conn, "INSERT", ["a"]))
    await _started(1)
    rest = [asyncio.ensure_future(groups.write(conn, "INSERT", [name])) for name in names]
    await _started(len(names))
    return [first, *rest]


async def test_writers_arriving_during_a_write_go_together_in_one_executemany():
    gate = asyncio.Event()
    conn, groups = FakeConnection(gate=gate), WriteGroups()
    writers = await _one_in_flight_then(groups, conn, "bcdef")
    gate.set()
    await asyncio.gather(*writers)
    assert conn.calls == [("fetchval", [["a"]]), ("executemany", [["b"], ["c"], ["d"], ["e"], ["f"]])]
    assert sorted(conn.committed) == [[c] for c in "abcdef"]


async def test_a_refused_write_fails_only_its_own_caller():
    gate = asyncio.Event()
    conn, groups = FakeConnection(refused={"c"}, gate=gate), WriteGroups()
    writers = await _one_in_flight_then(groups, conn, "bcd")
    gate.set()
    results = await asyncio.gather(*writers, return_exceptions=True)
    assert [type(r) for r in results] == [type(None), type(None), asyncpg.UniqueViolationError, type(None)]
    # The group failed as a whole (nothing committed by it), then each went alone.
    assert sorted(conn.committed) == [["a"], ["b"], ["d"]]


async def test_a_cancelled_waiter_neither_writes_nor_blocks_the_others():
    gate = asyncio.Event()
    conn, groups = FakeConnection(gate=gate), WriteGroups()
    first, doomed, later = await _one_in_flight_then(groups, conn, "bc")
    doomed.cancel()
    gate.set()
    await asyncio.wait_for(asyncio.gather(first, later), 5)
    with pytest.raises(asyncio.CancelledError):
        await doomed
    assert sorted(conn.committed) == [["a"], ["c"]]


async def test_a_waiter_cancelled_just_as_it_was_handed_the_lead_passes_it_on():
    gate = asyncio.Event()
    doomed: list[asyncio.Future] = []

    class CancelOnHandOver(Groups):
        def _hand_over(self) -> None:
            super()._hand_over()
            while doomed:  # the task handed the lead is cancelled before it runs again
                doomed.pop().cancel()

    conn, groups = FakeConnection(gate=gate), WriteGroups()
    groups._groups = CancelOnHandOver(_write_group)
    first, handed, later = await _one_in_flight_then(groups, conn, "bc")
    doomed.append(handed)
    gate.set()
    await asyncio.wait_for(asyncio.gather(first, later), 5)
    with pytest.raises(asyncio.CancelledError):
        await handed
    assert conn.committed == [["a"], ["c"]]


async def test_concurrent_atomic_writes_of_pinned_requests_keep_their_own_outcomes(gateway):
    """On both databases: 40 requests' atomic writes at once, one a duplicate; only that one fails."""
    db = gateway.db
    await db.execute("CREATE TABLE t_group_a (k TEXT PRIMARY KEY)")
    await db.execute("CREATE TABLE t_group_b (k TEXT PRIMARY KEY)")
    await db.execute("INSERT INTO t_group_b (k) VALUES ('k7')")

    async def request(i: int) -> None:
        async with db.connection():  # as the edge middleware pins one per request
            await db.execute_atomic([("INSERT INTO t_group_a (k) VALUES (:k)", {"k": f"k{i}"}),
                                     ("INSERT INTO t_group_b (k) VALUES (:k)", {"k": f"k{i}"})])

    results = await asyncio.gather(*(request(i) for i in range(40)), return_exceptions=True)
    failed = [i for i, r in enumerate(results) if r is not None]
    assert failed == [7]
    a = {r["k"] for r in await db.fetch_all("SELECT k FROM t_group_a")}
    b = {r["k"] for r in await db.fetch_all("SELECT k FROM t_group_b")}
    assert a == {f"k{i}" for i in range(40)} - {"k7"}  # the failed write left nothing behind
    assert b == {f"k{i}" for i in range(40)}


async def test_a_stalled_group_holds_up_only_its_own_callers():
    """Groups with two in flight: while the first round trip hangs, the second serves every later caller."""
    stalled, runs = asyncio.Event(), []

    async def run(conn, payloads):
        runs.append(list(payloads))
        if "a" in payloads:
            await stalled.wait()
        await asyncio.sleep(0)
        return [p.upper() for p in payloads]

    groups = Groups(run, max_in_flight=2)
    first = asyncio.ensure_future(groups.submit(None, "a"))
    await _started(1)
    others = [asyncio.ensure_future(groups.submit(None, name)) for name in "bcdef"]
    assert await asyncio.wait_for(asyncio.gather(*others), 5) == list("BCDEF")
    assert not first.done() and runs[0] == ["a"] and sorted(sum(runs[1:], [])) == list("bcdef")
    stalled.set()
    assert await first == "A"
