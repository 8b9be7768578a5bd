"""The database wrapper on both dialects: exact amounts, serialised SQLite writers."""

from __future__ import annotations

import asyncio

import pytest


async def _table(db):
    await db.execute(f"CREATE TABLE t_amounts (id INTEGER PRIMARY KEY, amount {'NUMERIC(78,0)' if db.is_postgres else 'TEXT'})")


async def test_78_digit_amounts_round_trip_exactly(gateway):
    db = gateway.db
    await _table(db)
    values = [0, 1, 2**64 + 1, 10**77 + 12345, -(10**30) - 7]
    for i, value in enumerate(values):
        await db.execute("INSERT INTO t_amounts (id, amount) VALUES (:i, :a)", {"i": i, "a": db.amount_param(value)})
    rows = await db.fetch_all("SELECT id, amount FROM t_amounts ORDER BY id")
    assert [db.to_int(r["amount"]) for r in rows] == values


def test_amount_param_refuses_non_integers(tmp_path):
    from decimal import Decimal

    from orbchain.core.db import Database

    db = Database(f"sqlite+aiosqlite:///{tmp_path}/x.db")
    for bad in (1.5, Decimal("1"), "1", True):
        with pytest.raises(TypeError):
            db.amount_param(bad)


async def test_concurrent_writers_never_see_database_locked(gateway):
    db = gateway.db
    await db.execute("CREATE TABLE t_counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
    await db.execute("INSERT INTO t_counter (id, n) VALUES (1, 0)")

    async def bump():
        async with db.transaction():
            n = await db.fetch_val(f"SELECT n FROM t_counter WHERE id = 1{db.for_update}")
            await asyncio.sleep(0)  # yield inside the transaction: a lost update would show
            await db.execute("UPDATE t_counter SET n = :n WHERE id = 1", {"n": n + 1})

    await asyncio.gather(*(bump() for _ in range(60)))
    assert await db.fetch_val("SELECT n FROM t_counter WHERE id = 1") == 60


async def test_nested_transaction_rolls_back_to_savepoint(gateway):
    db = gateway.db
    await db.execute("CREATE TABLE t_nest (id INTEGER PRIMARY KEY)")
    async with db.transaction():
        await db.execute("INSERT INTO t_nest (id) VALUES (1)")
        with pytest.raises(RuntimeError):
            async with db.transaction():
                await db.execute("INSERT INTO t_nest (id) VALUES (2)")
                raise RuntimeError("inner fails")
    assert [r["id"] for r in await db.fetch_all("SELECT id FROM t_nest")] == [1]


async def test_outer_failure_rolls_back_everything(gateway):
    db = gateway.db
    await db.execute("CREATE TABLE t_all (id INTEGER PRIMARY KEY)")
    with pytest.raises(RuntimeError):
        async with db.transaction():
            await db.execute("INSERT INTO t_all (id) VALUES (1)")
            raise RuntimeError("outer fails")
    assert await db.fetch_all("SELECT id FROM t_all") == []


async def test_task_spawned_inside_a_transaction_still_waits_for_the_writer_lock(gateway):
    db = gateway.db
    await db.execute("CREATE TABLE t_spawn (id INTEGER PRIMARY KEY)")
    async with db.transaction():
        await db.execute("INSERT INTO t_spawn (id) VALUES (1)")
        child = asyncio.create_task(db.execute("INSERT INTO t_spawn (id) VALUES (2)"))
        await asyncio.sleep(0.05)
        if db.is_sqlite:
            assert not child.done()  # blocked behind our transaction, not racing it
    await child
    assert sorted(r["id"] for r in await db.fetch_all("SELECT id FROM t_spawn")) == [1, 2]


async def test_advisory_lock_elects_one_holder(gateway):
    db = gateway.db
    results = []

    async def contender():
        async with db.advisory_lock("job:x") as held:
            results.append(held)
            await asyncio.sleep(0.1)

    await asyncio.gather(contender(), contender())
    if db.is_postgres:
        assert sorted(results) == [False, True]
    else:
        assert results == [True, True]  # SQLite deployments are single-process


async def test_execute_atomic_writes_all_or_none(gateway):
    db = gateway.db
    await db.execute("CREATE TABLE t_a (id INTEGER PRIMARY KEY, v TEXT)")
    await db.execute("CREATE TABLE t_b (id INTEGER PRIMARY KEY, v TEXT)")
    # The same parameter names in both statements, and a colon inside a string literal.
    await db.execute_atomic([("INSERT INTO t_a (id, v) VALUES (:id, :v)", {"id": 1, "v": "a"}),
                             ("INSERT INTO t_b (id, v) VALUES (:id, ':v')", {"id": 2})])
    assert await db.fetch_all("SELECT id, v FROM t_a") == [{"id": 1, "v": "a"}]
    assert await db.fetch_all("SELECT id, v FROM t_b") == [{"id": 2, "v": ":v"}]
    with pytest.raises(Exception, match="(?i)unique|duplicate"):
        await db.execute_atomic([("INSERT INTO t_a (id, v) VALUES (:id, :v)", {"id": 3, "v": "new"}),
                                 ("INSERT INTO t_b (id, v) VALUES (:id, :v)", {"id": 2, "v": "taken"})])
    assert await db.fetch_val("SELECT COUNT(*) FROM t_a") == 1  # the first insert went with the failed second


async def test_concurrent_atomic_writes_commit_together_and_fail_alone(gateway, monkeypatch):
    """SQLite commits concurrent execute_atomic calls as one group (one fsync); a failing call
    rolls back only its own statements and raises to its own caller."""
    import asyncio

    from orbchain.core import db as db_module

    db = gateway.db
    await db.execute("CREATE TABLE t_g (id INTEGER PRIMARY KEY, v TEXT)")
    await db.execute("CREATE TABLE t_h (id INTEGER PRIMARY KEY, v TEXT)")
    await db.execute("INSERT INTO t_h (id, v) VALUES (:id, :v)", {"id": 7, "v": "taken"})
    groups: list[int] = []
    if db.is_sqlite:
        real = db_module._sqlite_group
        monkeypatch.setattr(db_module, "_sqlite_group", lambda conn, batches: groups.append(len(batches))
                            or real(conn, batches))

    def write(i: int):
        return db.execute_atomic([("INSERT INTO t_g (id, v) VALUES (:id, :v)", {"id": i, "v": "g"}),
                                  ("INSERT INTO t_h (id, v) VALUES (:id, :v)", {"id": i, "v": "h"})])

    results = await asyncio.gather(*(write(i) for i in range(1, 21)), return_exceptions=True)
    failed = [i for i, r in zip(range(1, 21), results) if isinstance(r, Exception)]
    assert failed == [7]  # t_h already has 7: that call alone failed
    assert await db.fetch_val("SELECT COUNT(*) FROM t_g") == 19
    assert await db.fetch_val("SELECT COUNT(*) FROM t_g WHERE id = 7") == 0  # its first insert rolled back
    assert await db.fetch_val("SELECT COUNT(*) FROM t_h") == 20
    if db.is_sqlite:
        assert sum(groups) == 20 and len(groups) < 20  # some calls shared a commit


async def test_rows_are_mappings_with_driver_types(gateway):
    """Callers index, ``.get`` and ``dict()`` rows; NUMERIC amounts are Decimal on PostgreSQL, text on SQLite."""
    from decimal import Decimal

    db = gateway.db
    await _table(db)
    await db.execute("INSERT INTO t_amounts (id, amount) VALUES (:i, :a)", {"i": 1, "a": db.amount_param(10**30)})
    row = await db.fetch_one("SELECT id, amount FROM t_amounts WHERE id = :i", {"i": 1})
    assert row["id"] == 1 and row.get("missing") is None and "amount" in row and list(row.keys()) == ["id", "amount"]
    assert type(row["amount"]) is (Decimal if db.is_postgres else str)
    assert await db.fetch_one("SELECT id FROM t_amounts WHERE id = :i", {"i": 2}) is None
    assert await db.fetch_val("SELECT amount FROM t_amounts WHERE id = :i AND id = :i", {"i": 1}) == row["amount"]


async def test_more_tasks_than_connections_share_them_and_survive_cancellation(gateway):
    """PostgreSQL hands connections from task to task past asyncpg's pool: never more than max_size
    out, waiters served in turn, a cancelled waiter or a dirty connection costs nobody theirs."""
    from orbchain.core.db import Database

    url = gateway.db.url
    if gateway.db.is_postgres:
        url += ("&" if "?" in url else "?") + "max_size=2"
    db = Database(url)
    await db.connect()
    try:
        async def query(n: int) -> int:
            async with db.connection():
                await asyncio.sleep(0)
                return await db.fetch_val("SELECT :n + 1", {"n": n})

        async def broken() -> None:
            with pytest.raises(RuntimeError):
                async with db.transaction():
                    await db.fetch_val("SELECT 1")
                    raise RuntimeError("rolled back, then the connection is reused")

        tasks = [asyncio.ensure_future(query(n)) for n in range(40)]
        doomed = [asyncio.ensure_future(query(-1)) for _ in range(5)]
        await asyncio.sleep(0)
        for task in doomed:
            task.cancel()
        await broken()
        assert await asyncio.gather(*tasks) == [n + 1 for n in range(40)]
        assert all(task.cancelled() or task.done() for task in doomed)
        assert await query(41) == 42
        if db.is_postgres:
            assert db._taken <= 2
            assert not db._waiters
    finally:
        await db.disconnect()
