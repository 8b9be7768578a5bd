"""How many live streams one process may hold: the configured share, within its open-file limit.

Each open stream is an open connection, so an open file. Before issue 42 the
bound was ``[live] max_streams`` alone (2,000) while the shipped unit left
the process 1,024 open files: about 1,000 streams used them all and the
process could no longer accept ``/health``, a payer's page or a sign-in.
Now a process holds at most

    open-file limit - files open once it serves - ``[live] reserved_files``

streams (and never more than its ``max_streams`` share): the files open at
start (modules, logs, listening sockets, the database's first connections,
nodes' and metrics' files) are measured, and the reserve keeps room for
ordinary requests and for what opens files later (more database
connections up to the pool's size, node and webhook connections). One
payment page holds at most ``max_page_share_percent`` of the result, so a
single page cannot take the streams every other payer needs.

Connections of every kind (idle kept-alive ones, requests, streams) are
capped too, at the limit minus the files open at start minus half the
reserve (``connections``): the other half stays for the database, nodes and
webhooks, so a flood of connections can take neither their files nor the one
``accept()`` needs; past the cap a new connection is closed at once
(web/connection_guard.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.infra.config import Config
from ..core.infra.open_files import files_open, open_file_limit
from ..core.types.services import ServiceKey


@dataclass(frozen=True)
class StreamBudget:
    """The numbers a process's stream bounds come from (``streams``, ``per_page``), kept to say why."""

    configured: int  # this process's share of [live] max_streams
    file_limit: int
    open_at_start: int
    reserved: int
    page_share_percent: int

    @property
    def by_files(self) -> int:
        """Streams the open-file limit leaves room for, the reserve kept."""
        return max(0, self.file_limit - self.open_at_start - self.reserved)

    @property
    def connections(self) -> int:
        """Client connections of every kind this process may hold, one file kept for the accept that refuses
        the next; 0 when the limit is below the reserve: then nothing is capped (a cap of none would refuse
        everyone), and the files may run out as before (web/listen.py logs that once per episode)."""
        return max(0, self.file_limit - self.open_at_start - self.reserved // 2 - 1)

    @property
    def streams(self) -> int:
        return min(self.configured, self.by_files)

    @property
    def per_page(self) -> int:
        """Streams one payment may hold: its share of ``streams``, at least one while any is allowed."""
        return max(1, self.streams * self.page_share_percent // 100) if self.streams else 0

    @property
    def limited_by_files(self) -> bool:
        return self.by_files < self.configured

    def describe(self) -> str:
        why = (f"open-file limit {self.file_limit}, {self.open_at_start} open at start,"
               f" {self.reserved} reserved ([live] reserved_files); [live] max_streams gives {self.configured}")
        return f"live streams: at most {self.streams} in this process, {self.per_page} per payment ({why})"


STREAM_BUDGET = ServiceKey("stream_budget", StreamBudget)  # measured once the process serves (web/live.py)


def measure(config: Config) -> StreamBudget:
    """This process's budget now: its limit and the files it holds (call once it serves)."""
    live = config.live
    return StreamBudget(configured=live.max_streams, file_limit=open_file_limit(), open_at_start=files_open(),
                        reserved=live.reserved_files, page_share_percent=live.max_page_share_percent)
