"""Which databases a run really used: the guard before it starts and the line after it ends.

``backends()`` decides what runs; this module refuses a run whose database
tests would silently skip PostgreSQL (``missing_database_choice``) and, at
the end, counts the outcomes per backend from the reports, so the closing
lines say e.g. ``orbchain databases: sqlite 812 passed; postgresql 790
passed, 3 failed`` or that PostgreSQL did not run.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest

from .databases import PG_ENV, SQLITE_ONLY_ENV, backends, missing_database_choice, sqlite_only_requested

_BACKEND_OF = pytest.StashKey[dict[str, str]]()
_OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def backend_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("db_backend") if callspec is not None else None


def check_collection(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Remember each database test's backend; refuse the run if PostgreSQL would be dropped unasked."""
    by_node = {item.nodeid: backend for item in items if (backend := backend_of(item))}
    config.stash[_BACKEND_OF] = by_node
    problem = missing_database_choice()
    if by_node and problem:
        raise pytest.UsageError(problem)


def backend_in_id(nodeid: str) -> str | None:
    """The backend named in a test id's parameters (``test_x[postgresql-after_sign]``), for runs whose
    controller never collected the items: under pytest-xdist the workers collect, the controller reports."""
    if not nodeid.endswith("]") or "[" not in nodeid:
        return None
    params = nodeid[nodeid.rindex("[") + 1:-1].split("-")
    return next((p for p in params if p in ("sqlite", "postgresql")), None)


def _tally(terminalreporter: Any, by_node: dict[str, str]) -> dict[str, Counter]:
    def backend_of_id(nodeid: str) -> str | None:
        return by_node.get(nodeid) if by_node else backend_in_id(nodeid)

    outcome_of: dict[str, tuple[str, str]] = {}  # nodeid -> (backend, outcome)
    for outcome in _OUTCOMES:
        for report in terminalreporter.stats.get(outcome, ()):
            nodeid = getattr(report, "nodeid", None)
            if not isinstance(nodeid, str):
                continue
            backend = backend_of_id(nodeid)
            if backend and outcome_of.get(nodeid, ("", ""))[1] not in ("failed", "error"):
                outcome_of[nodeid] = (backend, outcome)  # a teardown error after a pass counts as the error
    counts: dict[str, Counter] = defaultdict(Counter)
    for backend, outcome in outcome_of.values():
        counts[backend][outcome] += 1
    return counts


def summary_lines(config: pytest.Config, terminalreporter: Any) -> list[str]:
    by_node = config.stash.get(_BACKEND_OF, {})
    counts = _tally(terminalreporter, by_node)
    parts = []
    for backend in ("sqlite", "postgresql"):
        tally = counts.get(backend)
        if tally:
            parts.append(f"{backend} " + ", ".join(f"{n} {o}" for o, n in sorted(tally.items())))
    lines = [f"orbchain databases: {'; '.join(parts) or 'no database test ran'}"]
    if "postgresql" not in backends():
        why = f"{SQLITE_ONLY_ENV}=1 asked for SQLite alone" if sqlite_only_requested() else f"{PG_ENV} unset"
        lines.append(f"orbchain databases: PostgreSQL did NOT run ({why})")
    return lines
