"""The soak's verdict on its answers: every error explained by the fault that caused it, never by a clock.

Why its own module: what the soak (bench/soak.py, tests/test_soak.py) counts
as a failure must be testable without three minutes of load
(tests/unit/test_soak_verdict.py). The rules (issue 43, items 2 and 4):

* a 500, or any 5xx but 503, fails the run wherever it falls, inside a fault
  or not: the database being away is answered 503, never 500;
* a 503 needs ``Retry-After`` and a cause a fault of the run explains: the
  database's (``database_unavailable``, in the JSON envelope or on the HTML
  page) only after a database kill began. Any other 503 (``busy``, too many
  streams) is no fault's effect and fails;
* no answer (a refused or reset connection, a timeout) only on the host a
  worker kill took down, from the kill until that host answered again after
  its restart.

Time serves only to order cause and effect (a fault began before the error
it explains; a host was back after its restart): a database 503 from a
pooled session the kill closed, met long after, is still that kill's. How
long errors lasted after a fault is a bench figure (bench/soak.py's
``errors_after_grace``), not pass or fail on a loaded machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Protocol, Sequence

DATABASE = "database_unavailable"
DATABASE_PAGE = "database unavailable, retry shortly"  # the HTML page names the service (web/middlewares.py)


class AnswerLike(Protocol):
    at: float  # when sent (time.monotonic())
    seconds: float
    host: str
    method: str
    route: str
    status: int | str
    body: Any
    retry_after: str | None


@dataclass(frozen=True)
class Fault:
    """One injected fault: its kind, when it began and ended; for a worker kill, the host and when it was back."""

    kind: str  # db_kill, node_outage, receiver_outage, worker_kill
    start: float
    end: float
    host: str | None = None
    back: float | None = None  # the host's restart answered (None: not before the run ended)


def cause(answer: AnswerLike) -> str:
    """The cause a 503 names: the envelope's ``error.code``; on an HTML page, the database's sentence."""
    body = answer.body
    if isinstance(body, dict):
        error = body.get("error")
        return str(error.get("code")) if isinstance(error, dict) else "no envelope"
    if isinstance(body, str) and DATABASE_PAGE in body.lower():
        return DATABASE
    return "unnamed"


def problem(answer: AnswerLike, faults: Sequence[Fault]) -> str | None:
    """Why ``answer`` fails the run, or None when it is a success, a refusal (4xx) or a fault's explained effect."""
    status, answered = answer.status, answer.at + answer.seconds
    if status == "no answer":
        if any(f.kind == "worker_kill" and f.host == answer.host and answered >= f.start
               and (f.back is None or answer.at <= f.back) for f in faults):
            return None
        return "no answer, and no worker kill had taken its host down"
    if not isinstance(status, int) or status < 500:
        return None
    if status != 503:
        return f"{status}: only 503 with Retry-After may answer a fault"
    if not (answer.retry_after or "").isdigit() or int(answer.retry_after or 0) <= 0:
        return "503 without a positive Retry-After"
    named = cause(answer)
    if named == DATABASE and any(f.kind == "db_kill" and answered >= f.start for f in faults):
        return None
    return f"503 {named}: no fault of the run causes it"


def judge(answers: Iterable[AnswerLike], faults: Sequence[Fault], origin: float = 0.0) -> list[str]:
    """Every answer that fails the run, described with its route, host and time (seconds after ``origin``)."""
    return [f"{x.method} {x.route} on {x.host} at {x.at - origin:.1f} s: {why}"
            for x in answers if (why := problem(x, faults)) is not None]
