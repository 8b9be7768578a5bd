"""The soak's verdict (tests/soak_verdict.py) on synthetic answers: what fails a run, what a fault explains.

Before (issue 43, item 4) any 5xx inside a fault window or the 15 s after it
passed, so a 500 while the database was killed was invisible to ``make
test``'s soak; and an error just past the grace failed a run on a loaded
machine although its fault explained it. Now causes are correlated, not
clocks: a 500 fails anywhere, a 503 needs Retry-After and a fault of its
cause, no answer needs a worker kill of its host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.soak_verdict import Fault, judge, problem

DB_KILL = Fault("db_kill", start=50.0, end=56.0)
WORKER_KILL = Fault("worker_kill", start=125.0, end=131.0, host="b", back=140.0)
FAULTS = [DB_KILL, Fault("node_outage", 75.0, 81.0), Fault("receiver_outage", 100.0, 106.0), WORKER_KILL]
ENVELOPE = {"status": 503, "data": None,
            "error": {"type": "unavailable", "code": "database_unavailable", "message": "database unavailable, "
                      "retry shortly", "detail": {"component": "database", "cause": "connection lost"}}}
PAGE = "<h1>Temporarily unavailable</h1><p>This service is briefly unavailable. Database unavailable, retry shortly.</p>"


@dataclass
class Answer:
    at: float
    status: int | str
    body: Any = None
    retry_after: str | None = None
    host: str = "a"
    seconds: float = 0.05
    method: str = "POST"
    route: str = "/v1/payment/invoice"


def test_a_500_inside_a_database_kill_fails_the_run():
    """The defect the old verdict hid: 500 instead of 503 while the database is killed."""
    internal = Answer(52.0, 500, {"status": 500, "error": {"type": "internal", "code": "internal_error"}})
    assert problem(internal, FAULTS) == "500: only 503 with Retry-After may answer a fault"
    assert judge([internal], FAULTS, origin=2.0) == [
        "POST /v1/payment/invoice on a at 50.0 s: 500: only 503 with Retry-After may answer a fault"]


def test_any_5xx_but_503_fails_wherever_it_falls():
    for at in (10.0, 52.0, 127.0, 500.0):
        for status in (500, 502, 504):
            assert problem(Answer(at, status), FAULTS) is not None, (at, status)


def test_the_database_503_with_retry_after_is_the_kills_effect_even_long_after():
    """A pooled session the kill closed may be met much later: still that kill's, not a clock's."""
    for at in (49.99, 50.0, 53.0, 60.0, 200.0):
        assert problem(Answer(at, 503, ENVELOPE, "5"), FAULTS) is None, at
    assert problem(Answer(100.0, 503, PAGE, "5", route="/pay/{id}"), FAULTS) is None  # the payer's page


def test_a_database_503_before_any_database_kill_fails():
    assert problem(Answer(40.0, 503, ENVELOPE, "5", seconds=1.0), FAULTS) == \
        "503 database_unavailable: no fault of the run causes it"
    assert problem(Answer(60.0, 503, ENVELOPE, "5"), [f for f in FAULTS if f.kind != "db_kill"]) is not None


def test_a_503_without_retry_after_fails():
    for retry_after in (None, "", "0", "soon"):
        assert problem(Answer(52.0, 503, ENVELOPE, retry_after), FAULTS) == "503 without a positive Retry-After"


def test_a_503_no_fault_causes_fails():
    busy = {"status": 503, "error": {"type": "unavailable", "code": "busy"}}
    assert problem(Answer(52.0, 503, busy, "1"), FAULTS) == "503 busy: no fault of the run causes it"
    assert problem(Answer(52.0, 503, "<h1>Temporarily unavailable</h1>", "5"), FAULTS) is not None
    assert problem(Answer(52.0, 503, None, "5"), FAULTS) is not None


def test_no_answer_is_explained_on_the_killed_host_until_it_is_back():
    assert problem(Answer(124.9, "no answer", host="b", seconds=0.2), FAULTS) is None  # in flight at the kill
    assert problem(Answer(135.0, "no answer", host="b"), FAULTS) is None  # after the window, before it was back
    assert problem(Answer(140.0, "no answer", host="b"), FAULTS) is None
    assert problem(Answer(140.5, "no answer", host="b"), FAULTS) == \
        "no answer, and no worker kill had taken its host down"
    assert problem(Answer(127.0, "no answer", host="a"), FAULTS) is not None  # the other host never went
    assert problem(Answer(120.0, "no answer", host="b"), FAULTS) is not None  # before the kill


def test_a_host_not_back_by_the_end_explains_its_no_answers():
    assert problem(Answer(900.0, "no answer", host="b"), [Fault("worker_kill", 125.0, 131.0, host="b")]) is None


def test_successes_and_refusals_are_not_problems():
    for status in (200, 201, 303, 400, 401, 404, 409, 429):
        assert problem(Answer(10.0, status), FAULTS) is None
