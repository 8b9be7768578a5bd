"""``orbchain serve --workers N`` (issue 11): one port, N processes, one signal stops them all.

PostgreSQL runs two real worker processes and checks that both answer
(``X-Worker``, development only) and that SIGTERM to the supervisor ends
them all; SQLite must refuse more than one worker with a clear message.
"""

from __future__ import annotations

import asyncio
import signal
import time

import aiohttp

from orbchain.web.keys import GATEWAY  # noqa: F401 - the app must import cleanly in the parent

from .support import children_of, free_port, kill_group, running, serve_process

SERVE_TIMEOUT = 60


async def test_two_workers_answer_on_one_port_and_stop_together(db_url, tmp_path):
    port = free_port()
    if not db_url.startswith("postgres"):
        proc = serve_process(db_url, tmp_path, port, 2)
        out, _ = proc.communicate(timeout=SERVE_TIMEOUT)
        assert proc.returncode == 2 and b"needs PostgreSQL" in out
        return
    proc = serve_process(db_url, tmp_path, port, 2)
    try:
        seen: set[str] = set()
        deadline = time.monotonic() + SERVE_TIMEOUT
        async with aiohttp.ClientSession() as session:
            while len(seen) < 2 and time.monotonic() < deadline:
                try:
                    # A fresh connection each time: the kernel picks a worker per connection.
                    async with session.get(f"http://127.0.0.1:{port}/health",
                                           headers={"Connection": "close"}) as response:
                        assert response.status == 200 and (await response.json())["ok"] is True
                        seen.add(response.headers["X-Worker"])
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.2)  # still starting
        assert len(seen) == 2, proc.stdout.read().decode()[-3000:] if proc.poll() is not None else seen
        workers = children_of(proc.pid)
        assert {int(w) for w in seen} == workers
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=SERVE_TIMEOUT) == 0
        assert not children_of(proc.pid) and not any(running(pid) for pid in workers)
    finally:
        kill_group(proc)


async def test_a_first_worker_that_cannot_start_stops_the_set(db_url, tmp_path):
    if not db_url.startswith("postgres"):
        return  # SQLite never forks (above)
    unreachable = "postgresql://postgres@127.0.0.1:1/none"
    proc = serve_process(unreachable, tmp_path, free_port(), 2)
    out, _ = proc.communicate(timeout=SERVE_TIMEOUT)
    assert proc.returncode == 1 and b"the first worker failed to start" in out
