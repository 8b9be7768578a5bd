"""``make test``'s PostgreSQL fallback: a throwaway initdb cluster when no server answers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "run_tests.py"


def _load():
    spec = importlib.util.spec_from_file_location("run_tests", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_throwaway_cluster_starts_answers_and_is_removed():
    run_tests = _load()
    cluster = run_tests._throwaway_cluster()
    assert cluster is not None, "PostgreSQL binaries (initdb, pg_ctl) are needed for make test's fallback"
    dsn, stop = cluster
    try:
        assert dsn.startswith("postgresql://postgres@127.0.0.1:")
        assert await run_tests._answers(dsn)
    finally:
        stop()
    assert not await run_tests._answers(dsn)
