"""SQLite's file cannot be written (issue 33): a full disk, a read-only file. 503 named, nothing corrupted.

The disk is a real one: a 6 MB tmpfs mounted for the test (the suite runs as
root, as CI's container does), filled up by a file beside the database; the
read-only file is ``chattr +i`` on an ext4 /tmp (root ignores mode bits, not
the immutable flag). Writes answer 503 in the spec's envelope with
Retry-After and the cause, reads keep working, the log names the database
once, ``/metrics`` counts the errors; once space or write access is back the
same process writes again, ``PRAGMA integrity_check`` is ok and the ledger
check clean.
"""

from __future__ import annotations

import logging
import sqlite3
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from orbchain.core.infra import db_faults
from orbchain.core.infra.config import load_config
from orbchain.core.ledger.check import check_ledger
from orbchain.web.app import create_app
from orbchain.web.keys import GATEWAY

from .support import api, signup

TOKEN = "db-faults-metrics-token-0123"
OUTAGE_LOG = "orbchain.core.infra.db_faults"


@pytest.fixture(autouse=True)
def outage_ends_at_once(monkeypatch):
    """The first answer after the fault ends the outage (no second of quiet to wait for in a test)."""
    monkeypatch.setattr(db_faults, "QUIET_SECONDS", 0)


def _run(*command: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(command)} failed ({done.stderr.strip()}): these tests need root, as make test has")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 6 MB tmpfs: enough for the migrated database, filled up by the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    _run("mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount))
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


async def _shop(aiohttp_client: Any, tmp_path: Path, db_file: Path) -> tuple[Any, Any, Any]:
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(tmp_path / "var"), "environment": "development"},
        database={"url": f"sqlite+aiosqlite:///{db_file}"}, scheduler={"enabled": False},
        metrics={"token": TOKEN})
    client = await aiohttp_client(create_app(config))
    merchant = await signup(client, "disk@example.com")
    return client, merchant, client.app[GATEWAY]


async def create(client: Any, merchant: Any) -> tuple[int, Any, Any]:
    response = await client.post("/v1/payment/white-label", headers=merchant.merchant_key,
                                 json={"currency": "BTC", "amount": "0.001"})
    return response.status, await response.json(), response.headers


def assert_unavailable(status: int, body: Any, headers: Any, cause: str) -> None:
    assert status == 503, body
    assert body["data"] is None and body["status"] == 503 and body["version"]
    assert body["error"]["type"] == "unavailable" and body["error"]["code"] == "database_unavailable"
    assert body["error"]["detail"] == {"component": "database", "cause": cause}
    assert int(headers["Retry-After"]) > 0


async def errors_counted(client: Any, cause: str) -> float:
    text = await (await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})).text()
    line = next((row for row in text.splitlines() if row.startswith(f'orbchain_database_errors_total{{cause="{cause}"}}')),
                None)
    return float(line.rsplit(" ", 1)[1]) if line else 0.0


def outage_lines(caplog: pytest.LogCaptureFixture, words: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == OUTAGE_LOG and words in r.getMessage()]


async def assert_intact(gateway: Any, db_file: Path, created: list[str]) -> None:
    for track_id in created:
        assert await gateway.db.fetch_val("SELECT 1 FROM payments WHERE track_id = :t", {"t": track_id}) == 1
    report = await check_ledger(gateway.db)
    assert report.ok, report.lines()
    with sqlite3.connect(db_file) as check:
        assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def fill(disk: Path) -> Path:
    """Write a file until the disk refuses (ENOSPC); the file, to free the space again."""
    filler = disk / "filler"
    with open(filler, "wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError:
            pass
    return filler


async def test_full_disk_answers_503_then_writes_again(aiohttp_client, tmp_path, small_disk, caplog):
    caplog.set_level(logging.INFO)
    db_file = small_disk / "orbchain.db"
    client, merchant, gateway = await _shop(aiohttp_client, tmp_path, db_file)
    status, body, _ = await create(client, merchant)
    assert status == 200, body
    created = [body["data"]["track_id"]]
    filler = fill(small_disk)
    refused = []
    for _ in range(20):  # pages cached or free inside the file may take a few writes yet
        status, body, headers = await create(client, merchant)
        if status == 200:
            created.append(body["data"]["track_id"])
            continue
        assert_unavailable(status, body, headers, "disk full")
        refused.append(body)
    assert len(refused) >= 10, "the full disk was never met"
    # Reads need no space: the merchant still sees what was created.
    status, body = await api(client, "GET", f"/v1/payment/{created[0]}", merchant.merchant_key)
    assert status == 200, body
    assert await errors_counted(client, "disk full") >= len(refused)
    assert len(outage_lines(caplog, "unavailable (disk full)")) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and r.name != OUTAGE_LOG]

    filler.unlink()
    status, body, _ = await create(client, merchant)
    assert status == 200, body  # the same process, no restart, no repair
    created.append(body["data"]["track_id"])
    assert len(outage_lines(caplog, "available again")) == 1
    await assert_intact(gateway, db_file, created)


async def test_read_only_file_answers_503_then_writes_again(aiohttp_client, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    db_file = tmp_path / "orbchain.db"
    client, merchant, gateway = await _shop(aiohttp_client, tmp_path, db_file)
    status, body, _ = await create(client, merchant)
    assert status == 200, body
    created = [body["data"]["track_id"]]
    await gateway.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    files = [str(p) for p in (db_file, Path(f"{db_file}-wal"), Path(f"{db_file}-shm")) if p.exists()]
    _run("chattr", "+i", *files)
    try:
        causes = set()
        for _ in range(3):
            status, body, headers = await create(client, merchant)
            assert status == 503, body
            causes.add(body["error"]["detail"]["cause"])
            assert_unavailable(status, body, headers, body["error"]["detail"]["cause"])
        # The open connection's write fails as an I/O error, a new one's as a read-only file: both name the file.
        assert causes <= {"read-only database file", "disk I/O error"}, causes
        status, body = await api(client, "GET", f"/v1/payment/{created[0]}", merchant.merchant_key)
        assert status == 200, body
        assert len([r for r in caplog.records if r.name == OUTAGE_LOG and "unavailable (" in r.getMessage()]) == 1
    finally:
        _run("chattr", "-i", *files)
    status, body, _ = await create(client, merchant)
    assert status == 200, body
    created.append(body["data"]["track_id"])
    await assert_intact(gateway, db_file, created)
