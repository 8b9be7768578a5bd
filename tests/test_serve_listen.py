"""``orbchain serve`` and its port (issue 32), as an operator runs it: a real process.

Before, "serving on" was printed before the port was bound, and a taken port
ended in a raw ``OSError`` traceback after the whole start-up had run. Now the
port is bound first: a taken one is one line naming the address and what to
do, with a non-zero exit (one process on SQLite, the supervisor of
``--workers 2`` on PostgreSQL); "serving on" comes once connections are
accepted.
"""

from __future__ import annotations

import queue
import signal
import socket
import threading

import pytest

from orbchain.web.listen import ListenError, listen

from .support import free_port, kill_group, serve_process, wait_exit

HANG = 60  # an upper bound that only catches a hang (start-up, migrations); nothing is timed


def _lines(process) -> "queue.Queue[str]":
    """The process's output, line by line, read beside the test."""
    lines: "queue.Queue[str]" = queue.Queue()

    def pump() -> None:
        for raw in process.stdout:
            lines.put(raw.decode("utf-8", "replace"))
        lines.put("")  # end of output

    threading.Thread(target=pump, daemon=True).start()
    return lines


async def test_a_taken_port_is_one_line_and_serving_is_announced_once_bound(db_url, tmp_path):
    workers = 2 if db_url.startswith("postgres") else 1
    port = free_port()
    holder = socket.create_server(("127.0.0.1", port))
    try:
        process = serve_process(db_url, tmp_path, port, workers)
        try:
            status = await wait_exit(process, HANG)
            output = process.stdout.read().decode()
        finally:
            kill_group(process)
    finally:
        holder.close()
    assert status != 0, output
    assert "Traceback" not in output and "OSError" not in output, output
    assert f"cannot listen on 127.0.0.1:{port}: address already in use" in output, output
    assert "--port" in output and "serving on" not in output, output

    process = serve_process(db_url, tmp_path, port, workers)
    try:
        lines = _lines(process)
        seen = []
        while not any("serving on" in line for line in seen):
            try:
                line = lines.get(timeout=HANG)
            except queue.Empty:
                raise AssertionError(f"no 'serving on' within {HANG} s: {''.join(seen)}") from None
            assert line, f"exited before serving: {''.join(seen)}"
            seen.append(line)
        # Announced only once bound: a connection made right after the line is accepted.
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        process.send_signal(signal.SIGTERM)
        status = await wait_exit(process, HANG)
        rest = []  # what was printed so far (a forked child may still hold the pipe open: no wait for its end)
        while not lines.empty():
            rest.append(lines.get_nowait())
        assert status == 0, "".join(seen + rest)
    finally:
        kill_group(process)


def test_a_taken_metrics_listen_address_is_one_line_naming_its_key():
    """The operator listener binds through listen() too (a Listener, issue 42): its refusal names
    ``metrics.listen``, not the main port's flags."""
    with socket.create_server(("127.0.0.1", 0)) as holder:
        port = holder.getsockname()[1]
        with pytest.raises(ListenError) as refused:
            listen("127.0.0.1", port, reuse_port=True, setting="metrics.listen")
    assert str(refused.value) == (f"cannot listen on 127.0.0.1:{port} (metrics.listen): Address already in use:"
                                  " choose another address in metrics.listen")
