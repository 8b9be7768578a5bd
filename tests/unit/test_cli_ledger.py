"""``orbchain ledger check`` against a file config and a migrated SQLite database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.cli import main
from orbchain.core.infra.db import Database


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    for name in ("ORBCHAIN_CONFIG", "ORBCHAIN_DATABASE_URL", "ORBCHAIN_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    url = f"sqlite+aiosqlite:///{tmp_path / 'var' / 'orbchain.db'}"
    path = tmp_path / "orbchain.toml"
    path.write_text(
        f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "development"\n\n[database]\nurl = "{url}"\n'
    )
    assert main(["--config", str(path), "migrate"]) == 0
    return str(path), url


def run_sql(url: str, work) -> None:
    async def go() -> None:
        db = Database(url)
        await db.connect()
        try:
            await work(db)
        finally:
            await db.disconnect()

    asyncio.run(go())


def seed(url: str) -> None:
    async def work(db: Database) -> None:
        await ledger.credit_deposit(db, merchant_id="m1", coin="ETH", chain="ethereum", amount=5 * 10**18 + 2**64,
                                    fee=10**16, reference="dep:1")

    run_sql(url, work)


def test_ledger_check_passes_on_a_consistent_ledger(config_file, capsys):
    path, url = config_file
    seed(url)
    capsys.readouterr()
    assert main(["--config", path, "ledger", "check"]) == 0
    assert capsys.readouterr().out.strip() == "ledger OK: 3 balances, 1 transactions checked"


def test_ledger_check_fails_and_names_a_corrupted_balance(config_file, capsys):
    path, url = config_file
    seed(url)

    async def corrupt(db: Database) -> None:
        await db.execute("UPDATE ledger_balances SET balance = :b WHERE account = :a",
                         {"b": db.amount_param(10**20), "a": ledger.merchant_available("m1")})

    run_sql(url, corrupt)
    capsys.readouterr()
    assert main(["--config", path, "ledger", "check"]) == 1
    out = capsys.readouterr().out
    assert "balance_mismatch: merchant:m1:available ETH: cached 100000000000000000000" in out
    assert "ledger MISMATCH: 1 problem(s)" in out
