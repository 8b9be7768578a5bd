"""``orbchain serve --workers N`` (issue 11): one port, N processes, one signal stops them all.

PostgreSQL runs two real worker processes and checks that both answer
(``X-Worker``, development only) and that SIGTERM to the supervisor ends
them all; SQLite must refuse more than one worker with a clear message.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import aiohttp

from orbchain.web.keys import GATEWAY  # noqa: F401 - the app must import cleanly in the parent

from .support import free_port, serve_process

SERVE_TIMEOUT = 60


def _children(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


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
        workers = _children(proc.pid)
        assert {int(w) for w in seen} == workers
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=SERVE_TIMEOUT) == 0
        assert not _children(proc.pid) and not any(_running(pid) for pid in workers)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


async def test_a_first_worker_that_cannot_start_stops_the_set(db_url, tmp_path):
    if not db_url.startswith("postgres"):
        return  # SQLite never forks (above)
    unreachable = "postgresql://postgres@127.0.0.1:1/none"
    proc = serve_process(unreachable, tmp_path, free_port(), 2)
    out, _ = proc.communicate(timeout=SERVE_TIMEOUT)
    assert proc.returncode == 1 and b"the first worker failed to start" in out
