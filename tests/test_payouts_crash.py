"""Crash safety: ``orbchain payouts work --once`` SIGKILLed mid-payout, then run again.

The worker runs in a separate process on the test's database (SQLite file
or PostgreSQL schema) with the ``ORBCHAIN_FAULT`` test hook, which kills it
right after the signed transaction was stored or right after it was
broadcast (before the broadcast was recorded). The restarted worker must
re-broadcast the stored bytes, never sign again, and the payout must end
with one devnet transaction, one final state and one ledger settlement.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.payouts import worker

from .test_payouts import BTC_DEST, balance, create, devnet_txs, fund, in_flight, outbox, payout_env, payout_row, work


def write_config(tmp_path: Path, db_url: str) -> Path:
    path = tmp_path / "worker.toml"
    path.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "development"\n'
                    f'[database]\nurl = "{db_url}"\n', encoding="utf-8")
    return path


async def run_worker(config: Path, fault: str | None = None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != worker.FAULT_ENV}
    if fault:
        env[worker.FAULT_ENV] = fault
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "orbchain", "--config", str(config), "payouts", "work", "--once",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode, out.decode()


@pytest.mark.parametrize("fault", ["after_sign", "after_broadcast"])
async def test_killed_worker_resumes_without_signing_or_paying_twice(make_client, make_config, tmp_path, db_url,
                                                                     fault):
    client, merchant, devnet = await payout_env(make_client, make_config)
    gw = devnet.gateway
    config = write_config(tmp_path, db_url)
    await fund(client, merchant, devnet)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]

    code, output = await run_worker(config, fault)
    assert code == -signal.SIGKILL, output
    crashed = await payout_row(gw, track_id)
    assert crashed["stage"] == "signed" and crashed["tx_hash"] and crashed["raw_tx"]
    assert len(await devnet_txs(gw, crashed["tx_hash"])) == (1 if fault == "after_broadcast" else 0)
    assert crashed["claimed_until"] > gw.now()  # the dead worker's claim still holds ...

    # ... until its lease runs out (LEASE_SECONDS in production): let that time pass.
    await gw.db.execute("UPDATE payouts SET claimed_until = claimed_until - :lease WHERE id = :id",
                        {"lease": worker.LEASE_SECONDS, "id": crashed["id"]})
    code, output = await run_worker(config)
    assert code == 0 and "processed 1 payout(s)" in output, output
    resumed = await payout_row(gw, track_id)
    assert resumed["stage"] == "broadcast"
    assert (resumed["tx_hash"], resumed["raw_tx"]) == (crashed["tx_hash"], crashed["raw_tx"])  # never re-signed

    await devnet.mine(1)
    await work(gw, 5)
    assert (await run_worker(config))[0] == 0  # a further run finds nothing to do
    final = await payout_row(gw, track_id)
    assert final["status"] == "Confirmed" and final["tx_hash"] == crashed["tx_hash"]
    sent = await gw.db.fetch_all("SELECT tx_hash FROM devnet_txs WHERE address = :a", {"a": BTC_DEST})
    assert [r["tx_hash"] for r in sent] == [crashed["tx_hash"]]  # exactly one transaction on chain
    settlements = await gw.db.fetch_all(
        "SELECT kind FROM ledger_transactions WHERE reference LIKE :r ORDER BY created_at, kind",
        {"r": f"payout:{final['id']}:%"})
    assert sorted(r["kind"] for r in settlements) == ["payout_confirm", "payout_reserve"]
    assert len(await outbox(gw, "payout.confirmed")) == 1 and await outbox(gw, "payout.failed") == []
    assert await in_flight(gw) == 0 and await balance(client, merchant) == {"BTC": "0.0059"}
    assert (await ledger.check_ledger(gw.db)).ok


async def test_fault_hook_is_inert_without_the_variable(monkeypatch):
    """The kill is recorded instead of sent: only the named point kills, and then with SIGKILL.

    Breaks caught: a fault point that fires without the variable or on another
    name (the old test asserted nothing), or one that no longer kills at all.
    """
    kills: list[tuple[int, int]] = []
    monkeypatch.setattr(worker.os, "kill", lambda pid, sig: kills.append((pid, sig)))
    monkeypatch.delenv(worker.FAULT_ENV, raising=False)
    worker._fault("after_sign")
    monkeypatch.setenv(worker.FAULT_ENV, "something_else")
    worker._fault("after_sign")
    assert kills == []
    monkeypatch.setenv(worker.FAULT_ENV, "after_sign")
    worker._fault("after_sign")
    assert kills == [(os.getpid(), signal.SIGKILL)]
