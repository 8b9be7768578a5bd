"""When each periodic job last started a tick, on PostgreSQL (scheduler/runner.py).

Every ``orbchain serve`` process ticks every job on its own timer. The
advisory lock keeps two runs of a job from overlapping, but runs are short,
so N processes each won the free lock in turn and a job meant to run every
``seconds`` ran N times as often (four devnet blocks a second with two
hosts of two workers, ``block_seconds = 1``). A tick now first claims the
job's row: it runs only when the last tick, in any process, started at
least most of an interval ago, by the database's clock (one clock for all
hosts; a timestamp with time zone, not the epoch seconds of
``{ts}``, for sub-second intervals). SQLite is one process; the table stays
empty there.
"""


def up(dialect: str) -> list[str]:
    return ["CREATE TABLE job_ticks (name TEXT PRIMARY KEY, started_at TIMESTAMPTZ NOT NULL)"]
