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

    from orbchain.core.infra.db import Database

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


@pytest.mark.postgresql_only("advisory locks are PostgreSQL's; SQLite (one process) grants every caller")
async def test_advisory_lock_elects_one_holder(gateway):
    """The holder keeps the lock until the other session has been refused: no sleep decides the overlap.

    Break caught: a lock granted to every session (both hold: the holder waits for a
    refusal that never comes, and the hang bound fails the test).
    """
    db = gateway.db
    results, refused = [], asyncio.Event()

    async def contender():
        async with db.advisory_lock("job:x") as held:
            results.append(held)
            if held:
                await asyncio.wait_for(refused.wait(), 30)
            else:
                refused.set()

    await asyncio.gather(contender(), contender())
    assert sorted(results) == [False, True]


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

    from orbchain.core.infra import db_group_commit as db_module

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


async def _pool_of(gateway, max_size: int):
    """A second connected Database on the test's database; on PostgreSQL at most ``max_size`` connections."""
    from orbchain.core.infra.db import Database

    url = gateway.db.url
    if gateway.db.is_postgres:
        url += ("&" if "?" in url else "?") + f"max_size={max_size}"
    db = Database(url)
    await db.connect()
    return db


async def test_more_tasks_than_connections_share_them_and_survive_cancellation(gateway):
    """PostgreSQL hands connections from task to task past asyncpg's pool: never more than max_size
    out, waiters served in turn, a cancelled waiter or a dirty connection costs nobody theirs."""
    db = await _pool_of(gateway, 2)
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


async def _keyed_table(db):
    await db.execute("CREATE TABLE t_keyed (k TEXT PRIMARY KEY, v INTEGER)")
    await db.execute_many("INSERT INTO t_keyed (k, v) VALUES (:k, :v)",
                          [{"k": f"key{i}", "v": i} for i in range(20)] + [{"k": "z", "v": -1}])


def _keyed(select: str):
    from orbchain.core.infra.db import KeyedRead

    return KeyedRead(one=select + " WHERE k = :key", many=select + " WHERE k = ANY(:keys)", column="k")


async def test_concurrent_keyed_reads_share_round_trips_and_keep_their_own_rows(gateway):
    """fetch_keyed: 60 pinned requests (twins, unknown keys) each get their own row; on PostgreSQL
    the reads arriving during one round trip go together in the next."""
    db = gateway.db
    await _keyed_table(db)
    read = _keyed("SELECT k, v FROM t_keyed")
    keys = [f"key{i % 25}" for i in range(60)]  # key20..key24 do not exist; every key asked more than once
    db.query_log = []

    async def request(key: str):
        async with db.connection():
            row = await db.fetch_keyed(read, key)
            if row is not None:
                row["v"] += 1000  # a caller's own copy: its twin must not see this
            return row

    rows = await asyncio.gather(*(request(k) for k in keys))
    assert [None if r is None else (r["k"], r["v"] - 1000) for r in rows] == [
        None if i % 25 >= 20 else (f"key{i % 25}", i % 25) for i in range(60)]
    batched = [q for q in db.query_log if "ANY" in q]
    if db.is_postgres:
        # How many reads meet in one round trip depends on the machine's load (xdist runs a second
        # worker beside this one); that some do, and that fewer statements than reads went, does not.
        assert batched and len(db.query_log) < len(keys)
    else:
        assert not batched and len(db.query_log) == 60
    db.query_log = None


async def test_keyed_reads_never_wait_on_a_leader_without_a_connection(gateway, monkeypatch):
    """One pooled connection, held by A, and one group in flight at most. B waits for the pool;
    A's read must not queue behind B (a leader with no connection yet) while holding the
    connection B waits for: under load that deadlocked the whole pool."""
    import orbchain.core.infra.db_keyed as db_module

    monkeypatch.setattr(db_module, "READ_GROUPS_IN_FLIGHT", 1)
    db = await _pool_of(gateway, 1)
    try:
        await _keyed_table(db)
        read = _keyed("SELECT k, v FROM t_keyed")
        holding, b_waits = asyncio.Event(), asyncio.Event()

        async def a():
            async with db.connection():
                await db.execute("UPDATE t_keyed SET v = v WHERE k = 'key0'")  # PostgreSQL: takes the connection
                holding.set()
                await b_waits.wait()
                return await db.fetch_keyed(read, "key1")

        async def b():
            await holding.wait()
            b_waits.set()
            async with db.connection():  # PostgreSQL: waits for A's connection
                return await db.fetch_keyed(read, "key2")

        rows = await asyncio.wait_for(asyncio.gather(a(), b()), 10)
        assert [r["v"] for r in rows] == [1, 2]
    finally:
        await db.disconnect()


async def test_a_keyed_read_in_a_transaction_sees_its_own_writes(gateway):
    db = gateway.db
    await _keyed_table(db)
    read = _keyed("SELECT k, v FROM t_keyed")
    async with db.connection():
        async with db.transaction():
            await db.execute("UPDATE t_keyed SET v = 99 WHERE k = 'key3'")
            assert (await db.fetch_keyed(read, "key3"))["v"] == 99
        assert (await db.fetch_keyed(read, "key3"))["v"] == 99


async def test_a_keyed_read_failing_for_one_key_fails_only_that_caller(gateway):
    """The batch fails as a whole on the server, then each key is read alone."""
    db = gateway.db
    await _keyed_table(db)
    read = _keyed("SELECT k, 10 / (length(k) - 1) AS x FROM t_keyed")  # "z": division by zero

    async def request(key: str):
        async with db.connection():
            return await db.fetch_keyed(read, key)

    results = await asyncio.gather(*(request(k) for k in ["key1", "z", "key2", "key1", "z", "key3"] * 3),
                                   return_exceptions=True)
    failed = [i for i, r in enumerate(results) if isinstance(r, Exception)]
    if db.is_postgres:
        assert failed == [i for i in range(18) if i % 6 in (1, 4)]
    else:  # SQLite divides by zero to NULL: no error to keep apart
        assert failed == [] and all(results[i]["x"] is None for i in range(18) if i % 6 in (1, 4))
    assert all(results[i]["x"] == 3 for i in range(18) if i % 6 not in (1, 4))


# -- SQLite reads on the event loop's thread (Database._read_inline) ---------------------------


async def _sqlite_db(tmp_path, monkeypatch, name: str = "inline.db", options: str = ""):
    """A connected SQLite Database with one table, and the list of statements that went to a thread."""
    from orbchain.core.infra.db import Database

    db = Database(f"sqlite+aiosqlite:///{tmp_path / name}{options}")
    await db.connect()
    await db.execute("CREATE TABLE t_in (id INTEGER PRIMARY KEY, v TEXT)")
    threaded: list[str] = []
    real_run = db._run

    async def run(conn, query, values):
        threaded.append(query)
        return await real_run(conn, query, values)

    monkeypatch.setattr(db, "_run", run)
    return db, threaded


def _ticking(interval: float) -> tuple[list[int], asyncio.Future]:
    """A task counting its turns on the loop (none while the loop is blocked), and the task."""
    ticks = [0]

    async def tick() -> None:
        while True:
            ticks[0] += 1
            await asyncio.sleep(interval)

    return ticks, asyncio.ensure_future(tick())


async def test_sqlite_reads_run_on_the_loop_and_see_each_commit_at_once(tmp_path, monkeypatch):
    db, threaded = await _sqlite_db(tmp_path, monkeypatch)
    try:
        assert db._reader is not None
        await db.execute("INSERT INTO t_in (id, v) VALUES (1, 'a')")
        assert await db.fetch_val("SELECT v FROM t_in WHERE id = 1") == "a"
        async with db.transaction():
            await db.execute("UPDATE t_in SET v = 'b' WHERE id = 1")
        assert await db.fetch_one("SELECT id, v FROM t_in WHERE id = :i", {"i": 1}) == {"id": 1, "v": "b"}
        await db.execute_atomic([("INSERT INTO t_in (id, v) VALUES (2, 'c')", {}),
                                 ("INSERT INTO t_in (id, v) VALUES (3, 'd')", {})])
        assert await db.fetch_all("SELECT id, v FROM t_in ORDER BY id") == [
            {"id": 1, "v": "b"}, {"id": 2, "v": "c"}, {"id": 3, "v": "d"}]
        assert await db.fetch_all("SELECT v FROM t_in WHERE id = 9") == []
        assert await db.fetch_one("SELECT v FROM t_in WHERE id = 9") is None
        assert not [q for q in threaded if q.startswith("SELECT")]  # every read stayed on the loop
        assert not db._reader.in_transaction  # no read transaction held between statements

        ticks, task = _ticking(0)
        await asyncio.sleep(0)
        before = ticks[0]
        for _ in range(100):
            await db.fetch_val("SELECT 1")
        task.cancel()
        assert ticks[0] > before  # a task reading in a loop still lets the others run
    finally:
        await db.disconnect()
    assert db._reader is None


async def test_sqlite_reads_in_a_transaction_see_its_own_writes_others_do_not_wait(tmp_path, monkeypatch):
    db, threaded = await _sqlite_db(tmp_path, monkeypatch)
    try:
        await db.execute("INSERT INTO t_in (id, v) VALUES (1, 'old')")
        inside = asyncio.Event()
        release = asyncio.Event()

        async def writer():
            async with db.transaction():
                await db.execute("UPDATE t_in SET v = 'new' WHERE id = 1")
                assert await db.fetch_val("SELECT v FROM t_in WHERE id = 1") == "new"  # uncommitted, its own
                inside.set()
                await release.wait()

        task = asyncio.ensure_future(writer())
        await inside.wait()
        assert "SELECT v FROM t_in WHERE id = 1" in threaded  # read on the transaction's connection
        threaded.clear()
        # Another task reads the last commit at once, while the write transaction is open.
        assert await asyncio.wait_for(db.fetch_val("SELECT v FROM t_in WHERE id = 1"), 1) == "old"
        assert not threaded
        release.set()
        await task
        assert await db.fetch_val("SELECT v FROM t_in WHERE id = 1") == "new"
        assert not threaded
    finally:
        await db.disconnect()


async def test_sqlite_long_read_stops_and_moves_to_a_thread(tmp_path, monkeypatch):
    """A statement past the step budget is stopped (nothing returned inline) and runs on a thread
    while the loop keeps turning; the same statement then goes straight there for a while.

    No stopwatch: "stopped" is the inline attempt returning None, and "the loop kept
    turning" is a ticker that yields every iteration advancing while the threaded run
    is awaited (an inline run of the whole statement would leave it unchanged)."""
    from orbchain.core.infra import db_sqlite_reader as db_module

    db, threaded = await _sqlite_db(tmp_path, monkeypatch)
    long = ("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < :top)"
            " SELECT COUNT(*) AS n FROM c")
    try:
        assert await db.fetch_val(long, {"top": 100}) == 100  # short enough: inline
        assert not threaded
        assert db._read_inline(long, {"top": 2_000_000}) is None  # stopped, nothing returned
        assert long in db._overran
        db._overran.clear()

        ticks, task = _ticking(0)
        during: list[int] = []
        threaded_run = db._run

        async def watched(conn, query, values):
            before = ticks[0]
            result = await threaded_run(conn, query, values)
            during.append(ticks[0] - before)
            return result

        monkeypatch.setattr(db, "_run", watched)
        assert await db.fetch_val(long, {"top": 2_000_000}) == 2_000_000
        task.cancel()
        monkeypatch.setattr(db, "_run", threaded_run)
        assert threaded == [long]
        assert during and during[0] >= 1  # the loop ran while the thread counted
        assert db._overran[long] == db_module.SQLITE_INLINE_PAUSE
        threaded.clear()
        assert await db.fetch_val(long, {"top": 10}) == 10  # paused: straight to a thread, not tried inline
        assert threaded == [long] and db._overran[long] == db_module.SQLITE_INLINE_PAUSE - 1
        threaded.clear()
        # SQLite counts a cached statement's steps over all its runs: short runs must never add up to a stop.
        short = long.replace("AS n", "AS m")
        for _ in range(200):
            assert await db.fetch_val(short, {"top": 300}) == 300
        assert not threaded and short not in db._overran
    finally:
        await db.disconnect()


async def test_sqlite_inline_errors_are_the_drivers(tmp_path, monkeypatch):
    """A bad read raises the same sqlite3 error on the loop as on a connection's thread, counted once."""
    import sqlite3

    db, threaded = await _sqlite_db(tmp_path, monkeypatch)
    bad = [("SELEC v FROM t_in", None), ("SELECT v FROM t_missing", None), ("SELECT v FROM t_in WHERE id = :i", {}),
           ("SELECT v FROM t_in WHERE id = :i", {"i": object()})]
    try:
        for query, values in bad:
            with pytest.raises(sqlite3.Error) as inline:
                await db.fetch_all(query, values)
            assert not threaded
            async with db.transaction():  # the same statement on the writer's connection, in its thread
                with pytest.raises(sqlite3.Error) as on_thread:
                    await db.fetch_all(query, values)
            assert type(inline.value) is type(on_thread.value) and str(inline.value) == str(on_thread.value)
            threaded.clear()
        db.query_count = 0
        with pytest.raises(sqlite3.OperationalError):
            await db.fetch_val("SELECT v FROM t_missing")
        assert db.query_count == 1
    finally:
        await db.disconnect()


async def test_sqlite_writes_and_waits_are_never_done_inline(tmp_path, monkeypatch):
    """The reader is read-only and never waits: a write through fetch_*, or a read that would wait for
    a lock, goes to a connection's thread as before; a BEGIN leaves the reader clean."""
    import sqlite3

    db, threaded = await _sqlite_db(tmp_path, monkeypatch)
    try:
        assert await db.fetch_val("INSERT INTO t_in (id, v) VALUES (5, 'w') RETURNING id") == 5
        assert threaded == ["INSERT INTO t_in (id, v) VALUES (5, 'w') RETURNING id"]
        assert await db.fetch_val("SELECT v FROM t_in WHERE id = 5") == "w"
        threaded.clear()
        async with db.connection():
            await db.fetch_val("BEGIN")
            assert threaded == ["BEGIN"]  # on the task's own connection, as before
            assert not db._reader.in_transaction
            await db.fetch_val("ROLLBACK")

        def busy(query, values):
            exc = sqlite3.OperationalError("database is locked")
            exc.sqlite_errorcode, exc.sqlite_errorname = 5, "SQLITE_BUSY"
            raise exc

        threaded.clear()
        monkeypatch.setattr(db._reader, "rows", busy)
        assert await db.fetch_val("SELECT v FROM t_in WHERE id = 5") == "w"
        assert threaded == ["SELECT v FROM t_in WHERE id = 5"]
        assert not db._overran  # a lock is no reason to keep the statement off the loop
    finally:
        await db.disconnect()


async def test_sqlite_in_memory_and_uri_databases(tmp_path, monkeypatch):
    """An in-memory database cannot be shared: no inline reader, reads as before. A ``file:`` URI
    with options gets one, opened read-only whatever its mode."""
    from orbchain.core.infra.db import Database

    memory = Database("sqlite+aiosqlite:///:memory:")
    await memory.connect()
    try:
        assert memory._reader is None
        assert await memory.fetch_val("SELECT 1 + 1") == 2
    finally:
        await memory.disconnect()
    db, threaded = await _sqlite_db(tmp_path, monkeypatch, "uri db.db", "?mode=rwc")
    try:
        assert db._sqlite_uri and db._reader is not None
        await db.execute("INSERT INTO t_in (id, v) VALUES (1, 'u')")
        assert await db.fetch_val("SELECT v FROM t_in") == "u"
        assert "SELECT v FROM t_in" not in threaded
    finally:
        await db.disconnect()


async def test_disconnect_closes_connections_still_in_use_and_opens_none_after(db_url):
    """Issue 34: a task still holding a connection when the database closes (a job the stop could not end)
    left it open. On SQLite its non-daemon thread then kept the stopped process waiting forever in
    ``threading._shutdown``, and a write after the close opened a new connection nobody closed; on
    PostgreSQL ``pool.close()`` waited for its release forever. Now disconnect closes it too, and a late
    task gets an error instead of a connection."""
    import threading

    from orbchain.core.infra.db import Database

    before = set(threading.enumerate())
    db = Database(db_url)
    await db.connect()
    holding = {write: asyncio.Event() for write in (False, True)}
    never = asyncio.Event()

    async def job(write: bool) -> None:
        async with db.transaction() if write else db.connection():
            if write:
                await db.execute("CREATE TABLE t_stop (id INTEGER PRIMARY KEY)")
            await db.fetch_val("SELECT 1")
            holding[write].set()
            await never.wait()

    jobs = [asyncio.create_task(job(write)) for write in (False, True)]
    # Both jobs hold their connection (the writer's transaction too) when the database closes: waited for, not
    # slept on, since a loaded machine may take longer than any sleep to run the CREATE TABLE in SQLite's thread.
    await asyncio.wait_for(asyncio.gather(*(event.wait() for event in holding.values())), 30)
    await asyncio.wait_for(db.disconnect(), 30)  # before: PostgreSQL waited here for ever
    threads = [t for t in threading.enumerate() if t not in before and "_connection_worker_thread" in t.name]
    for thread in threads:
        thread.join(10)
    assert not [t.name for t in threads if t.is_alive()]
    with pytest.raises(RuntimeError):
        await db.fetch_val("SELECT 1")
    for task in jobs:
        task.cancel()
    outcomes = await asyncio.gather(*jobs, return_exceptions=True)
    assert all(isinstance(outcome, asyncio.CancelledError) for outcome in outcomes), outcomes  # unwound cleanly
    with pytest.raises(RuntimeError):
        await db.execute("INSERT INTO t_stop (id) VALUES (1)")
    assert not [t for t in threading.enumerate() if t not in before and t.is_alive()
                and "_connection_worker_thread" in t.name]
