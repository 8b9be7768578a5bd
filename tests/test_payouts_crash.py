"""Crash safety: ``orbchain payouts work --once`` SIGKILLed mid-payout, then run again.

The worker runs in a separate process on the test's database (SQLite file
or PostgreSQL schema) with the ``ORBCHAIN_FAULT`` test hook, which kills it
right after claiming a payout (before signing), right after the signed
transaction was stored or right after it was broadcast (before the broadcast
was recorded). The restarted worker must re-broadcast the stored bytes,
never sign again, and the payout must end with one devnet transaction, one
final state and one ledger settlement; a payout held by the approval policy
and approved just before the crash likewise (issue 36).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pyotp
import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.payouts import worker

from .approvals_support import add_member, approve, member_totp, set_policy
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


async def lease_runs_out(gw, payout_id: str) -> None:
    """A dead worker's claim holds until its lease runs out (LEASE_SECONDS in production): let that time pass."""
    await gw.db.execute("UPDATE payouts SET claimed_until = claimed_until - :lease WHERE id = :id",
                        {"lease": worker.LEASE_SECONDS, "id": payout_id})


async def assert_paid_once(client, merchant, devnet, config: Path, track_id: str, tx_hash: str) -> None:
    """Mined and worked to the end: one devnet transaction, one final state, one settlement, a clean ledger."""
    gw = devnet.gateway
    await devnet.mine(1)
    await work(gw, 5)
    assert (await run_worker(config))[0] == 0  # a further run finds nothing to do
    final = await payout_row(gw, track_id)
    assert final["status"] == "Confirmed" and final["tx_hash"] == tx_hash
    sent = await gw.db.fetch_all("SELECT tx_hash FROM devnet_txs WHERE address = :a", {"a": BTC_DEST})
    assert [r["tx_hash"] for r in sent] == [tx_hash]  # exactly one transaction on chain
    settlements = await gw.db.fetch_all(
        "SELECT kind FROM ledger_transactions WHERE reference LIKE :r ORDER BY created_at, kind",
        {"r": f"payout:{final['id']}:%"})
    assert sorted(r["kind"] for r in settlements) == ["payout_confirm", "payout_reserve"]
    assert len(await outbox(gw, "payout.confirmed")) == 1 and await outbox(gw, "payout.failed") == []
    assert await in_flight(gw) == 0 and await balance(client, merchant) == {"BTC": "0.0059"}
    assert (await ledger.check_ledger(gw.db)).ok


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

    await lease_runs_out(gw, crashed["id"])  # ... until its lease runs out
    code, output = await run_worker(config)
    assert code == 0 and "processed 1 payout(s)" in output, output
    resumed = await payout_row(gw, track_id)
    assert resumed["stage"] == "broadcast"
    assert (resumed["tx_hash"], resumed["raw_tx"]) == (crashed["tx_hash"], crashed["raw_tx"])  # never re-signed
    await assert_paid_once(client, merchant, devnet, config, track_id, crashed["tx_hash"])


async def approved_held_payout(client, merchant, gw) -> str:
    """A payout past the approval policy's threshold, held, then approved by a member with their own code; its
    track id. The member's 2FA is set up one time step back, so the approval's code is the real clock's and
    the worker process (on the real clock) finds the payout due at once."""
    await set_policy(gw, merchant.merchant_id, threshold_BTC="100")
    status, body = await create(client, merchant, "0.004")  # $240 at the dev price
    assert status == 200 and body["data"]["awaiting_approval"] is True, body
    track_id = body["data"]["track_id"]
    admin = await add_member(client, gw, merchant.merchant_id, "admin@example.com")
    real_clock, step_back = gw.clock, gw.now() - 30
    gw.clock = lambda: step_back
    secret = await member_totp(gw, merchant.merchant_id, "admin@example.com")
    gw.clock = real_clock
    status, answer = await approve(client, admin, track_id, pyotp.TOTP(secret).at(gw.now()))
    assert status == 200 and answer["data"]["state"] == "approved", answer
    return track_id


@pytest.mark.parametrize("fault", ["before_sign", "after_sign", "after_broadcast"])
async def test_an_approved_payout_killed_on_its_way_is_sent_once(make_client, make_config, tmp_path, db_url,
                                                                 fault):
    """Approval commits stage ``queued`` with the hold's record; the process sending it dies before signing,
    after signing or after broadcasting. Restarted, it is signed at most once and sent once, and stays
    approved (never held again, never released)."""
    client, merchant, devnet = await payout_env(make_client, make_config)
    gw = devnet.gateway
    config = write_config(tmp_path, db_url)
    await fund(client, merchant, devnet)
    track_id = await approved_held_payout(client, merchant, gw)

    code, output = await run_worker(config, fault)
    assert code == -signal.SIGKILL, output
    crashed = await payout_row(gw, track_id)
    assert crashed["stage"] == ("queued" if fault == "before_sign" else "signed")
    assert crashed["claimed_until"] > gw.now()
    await lease_runs_out(gw, crashed["id"])
    code, output = await run_worker(config)
    assert code == 0 and "processed 1 payout(s)" in output, output
    resumed = await payout_row(gw, track_id)
    assert resumed["stage"] == "broadcast"
    if fault != "before_sign":
        assert (resumed["tx_hash"], resumed["raw_tx"]) == (crashed["tx_hash"], crashed["raw_tx"])
    await assert_paid_once(client, merchant, devnet, config, track_id, resumed["tx_hash"])
    assert await gw.db.fetch_val("SELECT state FROM approval_holds WHERE ref = :r", {"r": track_id}) == "approved"


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
