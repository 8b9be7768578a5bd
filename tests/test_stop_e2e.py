"""Stopping a running gateway (issue 34): every stop ends, in bounded time, cleanly, and loses nothing.

Real processes, started the way an operator starts them (their own session)
and signalled with ``os.killpg``/``os.kill``. Each exit is awaited with an
upper bound of the drain deadline plus ten seconds, which only catches a
hang (no timing is asserted). On both databases:

* ``test_stop_with_work_in_flight_then_restart``: one ``orbchain serve``
  holds, at the SIGTERM, a chain scan waiting on a node that never answers
  (Litecoin Core behind ``NodeGate``, every call held), a webhook delivery to
  a receiver that never answers, a payout held at ``sendrawtransaction``, a
  ``/ready`` request and a stream of requests. It exits 0, the request in
  flight gets its answer, no request gets a 5xx, the log names the jobs it
  cancelled, and the claims are given back. ``orbchain payouts work`` is
  then stopped while it broadcasts the same payout. After a restart with node
  and receiver answering, the payout goes out once, with the bytes signed
  before the stop, and confirms; every webhook event is delivered exactly
  once by event id; ``orbchain ledger check`` is clean; and a stop delivered
  twice (the group, then the process 10 ms later, as ``make`` passes it on)
  still exits 0.
* ``test_make_run_stops_every_time``: the issue's reproducer, several times.
* ``test_a_second_signal_exits_at_once``.
* ``serve --workers 2`` (PostgreSQL; SQLite refuses workers,
  tests/test_serve_workers.py): the supervisor passes the stop on and every
  process exits, a request running past the deadline is cancelled; and a
  second signal ends the supervisor and its workers at once.

Against the code before issue 34 the first test fails (the request in
flight was cancelled, the held claims stayed claimed, the restart waited for
their leases), the double signal and the make reproducer hung or died by the
signal, and nothing was logged about the stop.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import aiohttp
import pytest

from orbchain.core.infra.db import Database
from orbchain.core.infra.stopping import REPEAT_SECONDS
from orbchain.testing.api import api, create_payment, signup, view_payment

from .hostile_support import ledger_check, write_config
from .litecoind import NodeGate, external_address, faucet, litecoind_node  # noqa: F401 - fixtures
from .support import (
    WebhookReceiver, children_of, free_port, kill_group, orbchain_env, orbchain_process, running, serve_process,
    start_session, wait_exit, wait_healthy,
)

DRAIN = 3
HANG = DRAIN + 10  # an upper bound that only catches a hang
WAIT = 90  # for what the gateway does while it runs (a scan, a payout tick, a delivery)
SIGTERM_STATUS = 128 + signal.SIGTERM
LTC = 100_000_000
WORKERS = pytest.mark.postgresql_only("serve --workers needs PostgreSQL (tests/test_serve_workers.py: SQLite refuses)")


def gateway_config(tmp_path: Path, db_url: str, node_url: str, *, drain: int = DRAIN, start_height: int = 0,
                   **sections: Any) -> Path:
    """A development gateway on ``db_url`` watching LTC through ``node_url`` from ``start_height``, no devnet."""
    config = {
        "server": {"data_dir": str(tmp_path / "var"), "environment": "development", "drain_seconds": drain},
        "database": {"url": db_url},
        "webhooks": {"allow_private_urls": True, "timeout_seconds": 60, "tick_seconds": 1},
        "rate_limits": {"enabled": False},
        "plugins": {"blocked": ["devnet"]},
        "plugin.bitcoin.LTC": {"rpc_url": node_url, "rpc_user": "orbchain", "rpc_password": "-", "network": "regtest",
                               "fee_fallback_sat_per_vbyte": 10, "payout_confirmations": 1, "scan_seconds": 1,
                               "rpc_timeout_seconds": 60, "start_height": start_height},
    }
    for name, values in sections.items():
        config[name] = {**config.get(name, {}), **values}
    return write_config(tmp_path / "orbchain.toml", config)


async def until(check: Callable[[], Any], what: str, seconds: float = WAIT) -> Any:
    """Poll ``check`` (plain or async) until it returns something true; fails naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        assert time.monotonic() < deadline, f"{what}: not within {seconds} s"
        await asyncio.sleep(0.2)


async def log_says(log: Path, text: str, seconds: float = WAIT) -> None:
    await until(lambda: log.exists() and text in log.read_text(errors="replace"), f"log line {text!r}", seconds)


async def request_stream(base: str, paths: list[tuple[str, dict[str, str]]], statuses: Counter,
                         done: asyncio.Event) -> None:
    """Requests one after another until ``done``; answers counted by status, failures as "no answer"."""
    async with aiohttp.ClientSession(base_url=base) as session:
        while not done.is_set():
            for path, headers in paths:
                try:
                    async with session.get(path, headers=headers) as response:
                        await response.read()
                        statuses[response.status] += 1
                except (TimeoutError, aiohttp.ClientError):
                    statuses["no answer"] += 1
                    await asyncio.sleep(0.01)


def payments_to(node: Any, address: str, after_height: int) -> list[str]:
    """Transactions paying ``address`` in the blocks above ``after_height`` and in the mempool."""
    found = []
    for height in range(after_height + 1, node.height() + 1):
        for tx in node.call("getblock", node.call("getblockhash", height), 2)["tx"]:
            found += [tx["txid"] for out in tx["vout"] if address in _addresses(out)]
    for txid in node.call("getrawmempool"):
        tx = node.call("getrawtransaction", txid, True)
        found += [txid for out in tx["vout"] if address in _addresses(out)]
    return found


def _addresses(output: dict) -> list[str]:
    script = output["scriptPubKey"]
    return [script["address"]] if "address" in script else script.get("addresses", [])


async def read_db(db_url: str, query: str, values: dict | None = None) -> list[dict]:
    db = Database(db_url)
    await db.connect()
    try:
        return [dict(row) for row in await db.fetch_all(query, values)]
    finally:
        await db.disconnect()


async def test_stop_with_work_in_flight_then_restart(db_url, tmp_path, litecoind_node, faucet):  # noqa: F811
    node = litecoind_node
    gate, receiver = NodeGate(node.url), WebhookReceiver()
    node_url, hook_url = await gate.start(), await receiver.start()
    receiver.hold = True  # every delivery hangs until the restart
    first_height = node.height()
    config = gateway_config(tmp_path, db_url, node_url, start_height=first_height,
                            readiness={"node_timeout_seconds": 1})
    port, destination = free_port(), external_address(40)
    base = f"http://127.0.0.1:{port}"
    logs = [tmp_path / f"{name}.log" for name in ("serve1", "work", "serve2")]
    proc = serve_process(db_url, tmp_path, port, 1, log=logs[0], ORBCHAIN_CONFIG=str(config))
    try:
        await wait_healthy(port, proc, log=logs[0])
        async with aiohttp.ClientSession(base_url=base) as session:
            merchant = await signup(session, "stop@example.com")
            status, body = await api(session, "PUT", "/dashboard/settings/webhook", merchant.jwt,
                                     json={"webhook_url": hook_url})
            assert status == 200, body
            secret = body["data"]["webhook_secret"]
            payment = await create_payment(session, merchant, "LTC", "1")
            faucet.pay(payment["address"], LTC)
            faucet.mine(6)

            async def paid() -> bool:
                return (await view_payment(session, merchant, payment["track_id"]))["status"] == "Paid"

            await until(paid, "the deposit credited")
            gate.hanging.add("sendrawtransaction")
            status, body = await api(session, "POST", "/v1/payout", merchant.payout_key,
                                     json={"currency": "LTC", "address": destination, "amount": "0.3"})
            assert status == 200, body
            track_id = body["data"]["track_id"]

            raw_tx = (await until(lambda: gate.held_calls("sendrawtransaction"), "the payout broadcast"))[0][0]
            await until(lambda: receiver.held, "a webhook delivery")
            gate.hanging.add("*")
            await until(lambda: any(method != "sendrawtransaction" for method, _ in gate.held),
                        "a scan waiting on the node")

            # Load: streams of requests; and one /ready, which waits on the silent node (1 s) when SIGTERM comes.
            statuses: Counter = Counter()
            done = asyncio.Event()
            paths = [("/health", {}), ("/v1/common/currencies", {}),
                     (f"/v1/payment/{payment['track_id']}", merchant.merchant_key)]
            streams = [asyncio.create_task(request_stream(base, paths, statuses, done)) for _ in range(8)]
            await until(lambda: sum(statuses.values()) > 50, "requests answered")
            held = len(gate.held)
            ready = asyncio.create_task(session.get("/ready"))
            await until(lambda: len(gate.held) > held, "/ready asking the node")
            os.killpg(proc.pid, signal.SIGTERM)
            assert await wait_exit(proc, HANG, logs[0]) == 0
            done.set()
            await asyncio.gather(*streams)
            answer = await ready
            assert answer.status == 503 and (await answer.json())["ready"] is False  # finished, not cut off
        assert statuses[200] > 50 and not [s for s in statuses if isinstance(s, int) and s >= 500], statuses
        text = logs[0].read_text()
        assert "orbchain serve: stop began (SIGTERM)" in text and "Traceback" not in text, text[-3000:]
        for job in ("chain.litecoin.scan", "webhooks.deliver", "payouts.process"):
            assert f"job {job}" in text.split("cancelled at the 3 s deadline:")[1], text[-3000:]
        assert "every job is idempotent and resumable" in text
        payout = (await read_db(db_url, "SELECT * FROM payouts WHERE track_id = :t", {"t": track_id}))[0]
        assert (payout["stage"], payout["claim_token"], payout["raw_tx"]) == ("signed", None, raw_tx)
        events = await read_db(db_url, "SELECT * FROM webhook_events WHERE merchant_id = :m",
                               {"m": merchant.merchant_id})
        assert events and all((e["status"], e["attempts"], e["claim_token"]) == ("pending", 0, None) for e in events)

        # `orbchain payouts work` stopped while it sends the same payout again (never signed again).
        sent_before = len(gate.held_calls("sendrawtransaction"))
        gate.hanging = {"sendrawtransaction"}
        proc = orbchain_process(db_url, tmp_path, "--config", str(config), "payouts", "work", log=logs[1])
        await until(lambda: len(gate.held_calls("sendrawtransaction")) > sent_before, "payouts work broadcasting")
        assert gate.held_calls("sendrawtransaction")[-1][0] == raw_tx
        os.killpg(proc.pid, signal.SIGTERM)
        assert await wait_exit(proc, HANG, logs[1]) == 0
        text = logs[1].read_text()
        assert "cancelled at the 3 s deadline: orbchain payouts work" in text and "claims were given back" in text
        payout = (await read_db(db_url, "SELECT * FROM payouts WHERE track_id = :t", {"t": track_id}))[0]
        assert (payout["stage"], payout["claim_token"]) == ("signed", None)

        # Restart with the node and the receiver answering: nothing lost, nothing twice.
        gate.release()
        receiver.release()
        proc = serve_process(db_url, tmp_path, port, 1, log=logs[2], ORBCHAIN_CONFIG=str(config))
        await wait_healthy(port, proc, log=logs[2])

        await until(lambda: payout["tx_hash"] in node.call("getrawmempool"), "the payout broadcast after the restart")
        faucet.mine(1)
        async with aiohttp.ClientSession(base_url=base) as session:
            async def confirmed() -> bool:
                status, body = await api(session, "GET", f"/v1/payout/{track_id}", merchant.payout_key)
                return body["data"]["status"] == "Confirmed"

            await until(confirmed, "the payout confirmed")

            async def all_delivered() -> bool:
                rows = await read_db(db_url, "SELECT status FROM webhook_events WHERE merchant_id = :m",
                                     {"m": merchant.merchant_id})
                return all(row["status"] == "delivered" for row in rows)

            await until(all_delivered, "every webhook delivered")
            status, body = await api(session, "GET", "/v1/general/account/balance", merchant.general_key)
            assert {b["coin"]: b["amount"] for b in body["data"]["balances"]} == {"LTC": "0.69"}
        assert payments_to(node, destination, first_height) == [payout["tx_hash"]]
        event_ids = {row["event_id"] for row in await read_db(
            db_url, "SELECT event_id FROM webhook_events WHERE merchant_id = :m", {"m": merchant.merchant_id})}
        delivered = Counter(request["headers"]["X-Event-Id"] for request in receiver.requests)
        assert set(delivered) == event_ids and set(delivered.values()) == {1}, delivered
        assert {"payment.paid", "deposit.credited", "payout.confirmed"} <= {
            body["event_type"] for body in receiver.verified(secret)}

        os.killpg(proc.pid, signal.SIGTERM)  # the stop, and the same stop again: what make does to its child
        await asyncio.sleep(0.01)
        os.kill(proc.pid, signal.SIGTERM)
        assert await wait_exit(proc, HANG, logs[2]) == 0
        assert "stop ended" in logs[2].read_text()
        check = ledger_check(config)
        assert check.returncode == 0 and "ledger OK" in check.stdout, check.stdout + check.stderr
    finally:
        kill_group(proc)
        await receiver.close()
        await gate.close()


async def test_make_run_stops_every_time(db_url, tmp_path):
    """The issue's reproducer (hung 2 times in 5): ``make run``, /health, ``curl -sL /app`` twice, SIGTERM to
    make's process group. make passes SIGTERM on to its child, which already has it: the gateway sees the
    stop twice within microseconds. Every time the whole group ends and the gateway logs the end of its stop."""
    port = free_port()
    makefile = tmp_path / "Makefile"  # `run` as in the project's Makefile; later rounds skip the migration
    makefile.write_text(f"run: migrate serve\nmigrate:\n\t{sys.executable} -m orbchain migrate\n"
                        f"serve:\n\t{sys.executable} -m orbchain serve --port {port}\n")
    env = orbchain_env(db_url, tmp_path, ORBCHAIN_SERVER__DRAIN_SECONDS=str(DRAIN))
    for attempt in range(3):
        log = tmp_path / f"make{attempt}.log"
        make = start_session(["make", "-f", str(makefile), "serve" if attempt else "run"], tmp_path, env, log)
        try:
            await wait_healthy(port, make, log=log)
            async with aiohttp.ClientSession() as session:
                for _ in range(2):
                    async with session.get(f"http://127.0.0.1:{port}/app") as response:  # redirects followed
                        assert response.status == 200
                        await response.read()
            os.killpg(make.pid, signal.SIGTERM)
            await wait_exit(make, HANG, log)  # make exits once its child did
            await until(lambda pgid=make.pid: not running(pgid, group=True), "the process group gone", HANG)
            text = log.read_text()
            assert "orbchain serve: stop ended" in text and "did not finish" not in text, text[-3000:]
        finally:
            kill_group(make)


async def test_a_stop_signal_repeated_as_the_process_exits_is_ignored(db_url, tmp_path):
    """make passes SIGTERM on a moment after the group got it; a gateway that stops fast (nothing in flight)
    is already exiting then, where the interpreter puts signal handlers back to the default action. That
    killed it (status -15 instead of 0) every time on an idle gateway; now the late repeat is ignored."""
    for attempt in range(3):
        port, log = free_port(), tmp_path / f"serve{attempt}.log"
        proc = serve_process(db_url, tmp_path, port, 1, log=log)
        try:
            await wait_healthy(port, proc, log=log)
            os.killpg(proc.pid, signal.SIGTERM)
            await asyncio.sleep(0.01)
            os.kill(proc.pid, signal.SIGTERM)
            assert await wait_exit(proc, HANG, log) == 0, log.read_text()[-3000:]
        finally:
            kill_group(proc)


async def second_signal_exits_at_once(proc: Any, log: Path) -> None:
    """A second SIGTERM, later than ``REPEAT_SECONDS`` after the first, while a 60 s drain is still waiting:
    the process is gone at once, with status 143 (128 + SIGTERM), and says so."""
    await asyncio.sleep(REPEAT_SECONDS + 0.5)
    assert proc.poll() is None  # still draining: the scan holds it up to the 60 s deadline
    os.kill(proc.pid, signal.SIGTERM)
    assert await wait_exit(proc, 10, log) == SIGTERM_STATUS  # far inside the 60 s drain: at once
    await log_says(log, f"exiting now with status {SIGTERM_STATUS}", 0)


async def test_a_second_signal_exits_at_once(db_url, tmp_path):
    """A stop waits for the scan on a silent node up to the deadline (60 s here); a second SIGTERM, more
    than ``REPEAT_SECONDS`` after the first, ends the process at once with status 143 (128 + SIGTERM)."""
    gate = NodeGate(None)  # no node behind it: every call is held
    config = gateway_config(tmp_path, db_url, await gate.start(), drain=60)
    port, log = free_port(), tmp_path / "serve.log"
    proc = serve_process(db_url, tmp_path, port, 1, log=log, ORBCHAIN_CONFIG=str(config))
    try:
        await wait_healthy(port, proc, log=log)
        await until(lambda: gate.held, "a scan waiting on the node")
        os.killpg(proc.pid, signal.SIGTERM)
        await log_says(log, "stop began (SIGTERM)")
        await second_signal_exits_at_once(proc, log)
    finally:
        kill_group(proc)
        await gate.close()


async def status_of(url: str) -> int | None:
    """GET ``url``: its status, or None when no answer came (cancelled, or the process killed)."""
    try:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return response.status
    except aiohttp.ClientError:
        return None


async def workers_waiting_on(gate: NodeGate, db_url: str, tmp_path: Path, port: int, drain: int,
                             log: Path) -> tuple[Any, set[int], asyncio.Task]:
    """``serve --workers 2`` with its scan and a ``/ready`` waiting on ``gate``'s silent node:
    (the supervisor, its workers, the ``/ready`` request)."""
    config = gateway_config(tmp_path, db_url, await gate.start(), drain=drain, readiness={"node_timeout_seconds": 60})
    proc = serve_process(db_url, tmp_path, port, 2, log=log, ORBCHAIN_CONFIG=str(config))
    await wait_healthy(port, proc, log=log)
    await until(lambda: len(children_of(proc.pid)) == 2, "the second worker started")  # after the first serves
    workers = children_of(proc.pid)
    await until(lambda: gate.held, "a scan waiting on the node")
    held = len(gate.held)
    ready = asyncio.create_task(status_of(f"http://127.0.0.1:{port}/ready"))
    await until(lambda: len(gate.held) > held, "/ready asking the node")
    return proc, workers, ready


@WORKERS
async def test_workers_stop_with_their_supervisor(db_url, tmp_path):
    """``serve --workers 2`` stopped the way systemd's default KillMode does it: SIGTERM to every process of
    the group (each worker gets it from there and again from the supervisor). The scan on a silent node and
    a ``/ready`` still waiting for it at the deadline are cancelled; every process exits, the supervisor 0."""
    gate, log = NodeGate(None), tmp_path / "workers.log"
    proc, workers, ready = await workers_waiting_on(gate, db_url, tmp_path, free_port(), DRAIN, log)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        assert await wait_exit(proc, DRAIN + HANG, log) == 0
        assert await ready is None  # cancelled at the deadline
        assert not any(running(pid) for pid in workers)
        text = log.read_text()
        assert text.count("stop ended") == 3 and "every worker exited" in text, text[-3000:]
        assert "job chain.litecoin.scan" in text and "1 request" in text, text[-3000:]
    finally:
        kill_group(proc)
        await gate.close()


@WORKERS
async def test_a_second_signal_ends_the_supervisor_and_its_workers_at_once(db_url, tmp_path):
    gate, log = NodeGate(None), tmp_path / "workers.log"
    proc, workers, ready = await workers_waiting_on(gate, db_url, tmp_path, free_port(), 60, log)
    try:
        os.kill(proc.pid, signal.SIGTERM)  # the supervisor only, as KillMode=mixed does
        await until(lambda: log.read_text().count("stop began (SIGTERM)") == 3, "the workers stopping")
        await second_signal_exits_at_once(proc, log)
        assert await ready is None
        await until(lambda: not any(running(pid) for pid in workers), "the workers killed", 10)
    finally:
        kill_group(proc)
        await gate.close()
