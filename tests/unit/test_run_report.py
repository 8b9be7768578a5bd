"""The closing "orbchain databases" line counts per backend also where the controller never collected
(pytest-xdist: workers collect, the controller only sees reports)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from orbchain.testing.run_report import _tally, backend_in_id


@pytest.mark.parametrize("nodeid,backend", [
    ("tests/test_x.py::test_a[sqlite]", "sqlite"),
    ("tests/test_x.py::test_a[postgresql-after_sign]", "postgresql"),
    ("tests/test_x.py::test_a[after_sign-sqlite]", "sqlite"),
    ("tests/test_x.py::test_a[btc-1sqlite]", None),
    ("tests/test_x.py::test_plain", None),
], ids=["first", "among-others", "last", "lookalike", "unparametrized"])  # ids of their own: not counted as a backend
def test_backend_in_id(nodeid: str, backend: str | None) -> None:
    assert backend_in_id(nodeid) == backend


def test_tally_without_collection_reads_ids_and_a_teardown_error_wins() -> None:
    def report(nodeid: str) -> SimpleNamespace:
        return SimpleNamespace(nodeid=nodeid)

    stats = {"passed": [report("t::a[sqlite]"), report("t::b[postgresql]"), report("t::c")],
             "error": [report("t::b[postgresql]")]}
    counts = _tally(SimpleNamespace(stats=stats), {})
    assert dict(counts["sqlite"]) == {"passed": 1}
    assert dict(counts["postgresql"]) == {"error": 1}
