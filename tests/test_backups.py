"""Backups proven (issue 33): a ``pg_dump`` taken under load restores into a gateway that serves and balances.

docs/operations.md, "PostgreSQL: nightly logical dumps" and "After restoring
to an earlier point", step by step on real processes: a host (two workers)
takes invoice creates and devnet payments; ``pg_dump --format=custom`` runs
in the middle of it; more payments arrive and are credited after the dump.
The dump is restored into a new database with ``pg_restore --no-owner``;
``migrate --check`` and ``ledger check`` pass on it. The chain did not go
back in time: the devnet keeps its chain in the gateway's own database, so
the test puts the live chain (``devnet_blocks``, ``devnet_txs`` as they are
now) into the restored database, as a real node would still have it. A
gateway started on the restored database in maintenance mode (writes
refused, reads served), after ``orbchain restore recover`` (run twice: the
second changes nothing), re-scans from the height the dump remembers and
credits every payment that arrived after the dump, exactly once: to its
invoice when the dump knew it, as a recovered deposit when the invoice was
created after the dump. The merchant's balance equals the original
database's, no deposit is credited twice, and ``ledger check`` and
``doctor`` pass. PostgreSQL only (tests/test_restore_recover.py covers
SQLite and that no address is handed out twice).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest

from .cross_process import CROSS_PROCESS
from .gateway_hosts import (
    Client, Host, create_database, drop_database, fetch, gateway_config, orbchain_cli,
)

pytestmark = CROSS_PROCESS
CHAIN_TABLES = ("devnet_blocks", "devnet_txs")
BALANCE = "SELECT coalesce(sum(balance), 0) AS total FROM ledger_balances WHERE account LIKE 'merchant:' || $1 || ':%'"
CREDITED = "SELECT tx_hash, track_id FROM deposits WHERE credited"
UNCREDITED = """SELECT t.tx_hash FROM devnet_txs t JOIN deposit_addresses a ON a.address = t.address
    LEFT JOIN deposits d ON d.tx_hash = t.tx_hash AND d.output_index = t.output_index AND d.credited
    WHERE d.id IS NULL AND t.status = 'mined'"""


def libpq(dsn: str) -> str:
    return dsn.replace("postgresql+asyncpg://", "postgresql://", 1)


def run(*command: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{command[0]}: {done.stdout}{done.stderr}"


async def credited_all(dsn: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while rows := await fetch(dsn, UNCREDITED):
        assert time.monotonic() < deadline, f"not credited: {rows[:5]}"
        await asyncio.sleep(0.5)


@pytest.fixture
async def databases(db_backend):
    """The live database and the one the dump is restored into (both dropped afterwards)."""
    admin = os.environ["ORBCHAIN_TEST_PG_DSN"]
    live, restored = await create_database(admin, "orbchain_live"), await create_database(admin, "orbchain_restored")
    try:
        yield live, restored
    finally:
        await drop_database(admin, live)
        await drop_database(admin, restored)


async def test_a_dump_taken_under_load_restores_and_rescans_what_came_after(databases, tmp_path: Path):
    live, restored = databases
    config = gateway_config(tmp_path / "live.toml", live, tmp_path / "var")
    assert (await asyncio.to_thread(orbchain_cli, config, "migrate")).returncode == 0
    host = Host("live", config, tmp_path, 2)
    client = Client([host])
    try:
        await host.start()
        signup = await client.json("POST", "/dashboard/auth/signup", {},
                                   {"email": "dump@example.com", "password": "backup-pass-1"})
        merchant_id = signup.body["data"]["merchant_id"]
        key = {"merchant_api_key": signup.body["data"]["api_keys"]["merchant_api_key"]}
        stop = asyncio.Event()

        async def paying() -> None:
            while not stop.is_set():
                answer = await client.json("POST", "/v1/payment/invoice", key,
                                           {"currency": "BTC", "amount": "0.001", "pay_currency": "BTC"})
                assert answer.status == 200, answer.body
                paid = await client.request("POST", f"/pay/{answer.body['data']['track_id']}/devnet-pay",
                                            allow_redirects=False)
                assert paid.status == 303
                await asyncio.sleep(0.05)

        waiting = []  # invoices in the dump, paid after it
        for _ in range(10):
            answer = await client.json("POST", "/v1/payment/invoice", key,
                                       {"currency": "BTC", "amount": "0.002", "pay_currency": "BTC"})
            waiting.append(answer.body["data"]["track_id"])
        load = [asyncio.create_task(paying()) for _ in range(2)]
        await asyncio.sleep(4)
        dump = tmp_path / "orbchain.dump"
        await asyncio.to_thread(run, "pg_dump", "--format=custom", "--no-owner", f"--file={dump}", libpq(live))
        await asyncio.sleep(3)  # invoices created and paid after the dump: the restored database never hears of them
        stop.set()
        await asyncio.gather(*load)
        for track_id in waiting:
            assert (await client.request("POST", f"/pay/{track_id}/devnet-pay", allow_redirects=False)).status == 303
        await credited_all(live)
    finally:
        await client.close()
        await asyncio.to_thread(host.stop)
    live_credits = {(r["tx_hash"], r["track_id"]) for r in await fetch(live, CREDITED)}

    # Restore as docs/operations.md says, then check before serving.
    await asyncio.to_thread(run, "pg_restore", "--no-owner", f"--dbname={libpq(restored)}", str(dump))
    restored_config = gateway_config(tmp_path / "restored.toml", restored, tmp_path / "var")
    for command in (("migrate", "--check"), ("ledger", "check")):
        checked = await asyncio.to_thread(orbchain_cli, restored_config, *command)
        assert checked.returncode == 0, f"{command}: {checked.stdout}{checked.stderr}"
    in_dump = {r["track_id"] for r in await fetch(restored, "SELECT track_id FROM payments")}
    assert set(waiting) <= in_dump
    due = {(tx, track_id) for tx, track_id in live_credits if track_id in in_dump}
    assert {track_id for _, track_id in live_credits} - in_dump, "no invoice created after the dump"
    assert {(r["tx_hash"], r["track_id"]) for r in await fetch(restored, CREDITED)} < due  # the dump is older
    balance_at_dump = (await fetch(restored, BALANCE, merchant_id))[0]["total"]
    assert await fetch(restored, "SELECT height FROM chain_blocks")  # where the re-scan resumes

    # The chain is outside the database: it still has everything (the devnet's tables stand for the node).
    chain = tmp_path / "chain.sql"
    await asyncio.to_thread(run, "pg_dump", "--data-only", *[f"--table={t}" for t in CHAIN_TABLES],
                            f"--file={chain}", libpq(live))
    await fetch(restored, "TRUNCATE " + ", ".join(CHAIN_TABLES))
    await asyncio.to_thread(run, "psql", "-q", "-v", "ON_ERROR_STOP=1", f"--file={chain}", libpq(restored))
    assert await fetch(restored, UNCREDITED)  # arrived after the dump: not in the restored books yet

    # Before any process starts: skip the counters past what the dump missed and watch the skipped addresses.
    for said in ("recovered from orbchain.dump", "already recovered from orbchain.dump"):
        recovered = await asyncio.to_thread(orbchain_cli, restored_config, "restore", "recover", "orbchain.dump")
        assert recovered.returncode == 0 and said in recovered.stdout, f"{recovered.stdout}{recovered.stderr}"

    # Start in maintenance: writes refused, reads served, the scanner re-scans and credits.
    host = Host("restored", restored_config, tmp_path, 2, env={"ORBCHAIN_MAINTENANCE": "true"})
    client = Client([host])
    try:
        await host.start()
        refused = await client.json("POST", "/v1/payment/invoice", key, {"currency": "BTC", "amount": "0.001"})
        assert refused.status == 503, refused.body
        await credited_all(restored)
        read = await client.request("GET", "/v1/payment/accepted-currencies", headers=key)
        assert read.status == 200
    finally:
        await client.close()
        await asyncio.to_thread(host.stop)
    # Every payment is credited once: the dump's to their invoices, the lost invoices' as recovered deposits.
    restored_credits = {(r["tx_hash"], r["track_id"]) for r in await fetch(restored, CREDITED)}
    assert restored_credits == due | {(tx, None) for tx, track_id in live_credits if track_id not in in_dump}
    assert (await fetch(restored, BALANCE, merchant_id))[0]["total"] > balance_at_dump
    assert (await fetch(restored, BALANCE, merchant_id)) == await fetch(live, BALANCE, merchant_id)
    recovered_memos = await fetch(restored, "SELECT id FROM ledger_transactions WHERE memo LIKE 'recovered deposit%'")
    assert len(recovered_memos) == len(restored_credits - due)
    assert not await fetch(restored, "SELECT id FROM deposits WHERE credit_count <> 1")
    for command in (("ledger", "check"), ("doctor",)):
        checked = await asyncio.to_thread(orbchain_cli, restored_config, *command)
        assert checked.returncode == 0, f"{command}: {checked.stdout}{checked.stderr}"
