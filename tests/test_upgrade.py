"""Upgrading old databases to the current schema, with data in them (issue 22).

The repository has no release tags yet, so the baseline is the first schema
ever committed: ``migrations/m0001_core.py`` of a439af7 (``git log
--diff-filter=A -- migrations/``), kept verbatim in ``tests/upgrade_baselines``
so the test does not need the git history (it checks the copy against git
when the history is there). A database is created with that schema only,
filled through plain SQL the way that version stored things (a merchant,
its three legacy keys, counters, a balanced ledger), then upgraded with
every current migration, core and plugins. The upgraded database must pass
``ledger check``, serve the old merchant (password sign-in, the old key
reads the balance), and have exactly the schema a fresh install has.

A second baseline is the schema just before ``m0010_auth_notify`` was edited
in place (ea12f46): on PostgreSQL such a database had ``rate_limit_nodes``
and would never get ``gateway_nodes``; ``m0015_gateway_nodes_repair`` fixes
it, and the schema comparison proves it.
"""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from orbchain.core.accounts import auth
from orbchain.core.infra.db import Database
from orbchain.core.gateway import collect_migrations
from orbchain.core.ledger.check import check_ledger
from orbchain.core.ledger.accounts import merchant_available, world
from orbchain.core.infra.migrate import Migration, migrate
from orbchain.core.contract.plugins import get_plugin_manager
from orbchain.testing.api import api

BASELINES = Path(__file__).parent / "upgrade_baselines"
REPO = Path(__file__).resolve().parents[1]
FIRST_SCHEMA = ("a439af7", "m0001_core")
BEFORE_M0010_EDIT = ("ea12f46", "m0010_auth_notify")
PASSWORD = "old-schema-passw0rd"


def baseline_migration(commit: str, module: str) -> Migration:
    """The migration module as it was at ``commit`` (the verbatim copy), as a core migration."""
    source = (BASELINES / f"{commit}_{module}.py.txt").read_text()
    namespace: dict = {}
    exec(compile(source, f"{commit}:{module}", "exec"), namespace)
    return Migration("core", int(module[1:5]), module[6:], namespace["up"])


def current_core(up_to: int) -> list[Migration]:
    return [m for m in collect_migrations(get_plugin_manager()) if m.namespace == "core" and m.version <= up_to]


@pytest.mark.parametrize("commit, module", [FIRST_SCHEMA, BEFORE_M0010_EDIT])
def test_baseline_copies_match_git_history(commit, module):
    shown = subprocess.run(["git", "show", f"{commit}:migrations/{module}.py"], cwd=REPO, capture_output=True,
                           text=True)
    if shown.returncode != 0:  # an exported tree without history: the copies are the record
        assert "fatal" in shown.stderr
        return
    assert shown.stdout == (BASELINES / f"{commit}_{module}.py.txt").read_text()


async def fill_first_schema(db: Database) -> dict[str, str]:
    """Rows as the first schema held them: one merchant, legacy keys, counters, a balanced ledger."""
    now = 1_760_000_000
    keys = {kind: auth.generate_api_key(kind) for kind in auth.LEGACY_KINDS}
    await db.execute(
        "INSERT INTO merchants (id, account_id, email, password_hash, key_account, fee_percent, accepted_coins,"
        " confirmations, created_at, updated_at) VALUES ('m_old1', 'acct_old1', 'old@example.com', :pw, 1, '1',"
        " '[\"BTC\"]', '{}', :now, :now)", {"pw": auth.hash_password(PASSWORD), "now": now})
    for kind, issued in keys.items():
        await db.execute(
            "INSERT INTO api_keys (id, merchant_id, kind, prefix, key_hash, is_legacy, created_at)"
            " VALUES (:id, 'm_old1', :kind, :prefix, :hash, TRUE, :now)",
            {"id": f"k_old_{kind}", "kind": kind, "prefix": issued.prefix, "hash": issued.key_hash, "now": now})
    await db.execute("INSERT INTO counters (name, value) VALUES ('key_account', 1)")
    # Two deposits in and one out, in base units; 10**20 does not fit 64 bits.
    movements = [("t1", "BTC", 1_000_000), ("t2", "ETH", 10**20), ("t3", "BTC", -250_000)]
    for txn, coin, amount in movements:
        await db.execute("INSERT INTO ledger_transactions (id, kind, reference, merchant_id, created_at)"
                         " VALUES (:id, 'test', :ref, 'm_old1', :now)", {"id": txn, "ref": f"ref-{txn}", "now": now})
        for account, value in ((merchant_available("m_old1"), amount), (world("devnet"), -amount)):
            await db.execute("INSERT INTO ledger_postings (transaction_id, account, coin, amount, created_at)"
                             " VALUES (:t, :a, :c, :v, :now)",
                             {"t": txn, "a": account, "c": coin, "v": db.amount_param(value), "now": now})
    balances = {(merchant_available("m_old1"), "BTC"): 750_000, (world("devnet"), "BTC"): -750_000,
                (merchant_available("m_old1"), "ETH"): 10**20, (world("devnet"), "ETH"): -(10**20)}
    for (account, coin), value in balances.items():
        await db.execute("INSERT INTO ledger_balances (account, coin, balance, updated_at) VALUES (:a, :c, :v, :now)",
                         {"a": account, "c": coin, "v": db.amount_param(value), "now": now})
    return {kind: issued.plaintext for kind, issued in keys.items()}


async def schema_of(db: Database) -> dict[str, set[str]]:
    """Table -> column names, bookkeeping of the test harness excluded."""
    if db.is_sqlite:
        tables = [r["name"] for r in await db.fetch_all(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        return {t: {r["name"] for r in await db.fetch_all(f'PRAGMA table_info("{t}")')} for t in tables}
    rows = await db.fetch_all("SELECT table_name, column_name FROM information_schema.columns"
                              " WHERE table_schema = current_schema()")
    schema: dict[str, set[str]] = {}
    for r in rows:
        schema.setdefault(r["table_name"], set()).add(r["column_name"])
    return schema


async def fresh_schema(db_url: str, tmp_path: Path) -> dict[str, set[str]]:
    """The schema a new install gets, in a database beside the test's own."""
    if db_url.startswith("sqlite"):
        url = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    else:
        schema = f"fresh_{secrets.token_hex(5)}"
        current = parse_qs(urlsplit(db_url).query)["schema"][0]
        url = db_url.replace(f"schema={current}", f"schema={schema}")
        admin = Database(db_url)
        await admin.connect()
        await admin.execute(f'CREATE SCHEMA "{schema}"')
        await admin.disconnect()
    fresh = Database(url)
    await fresh.connect()
    try:
        await migrate(fresh, collect_migrations(get_plugin_manager()))
        return await schema_of(fresh)
    finally:
        if not fresh.is_sqlite:
            await fresh.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await fresh.disconnect()


async def test_first_schema_upgrades_with_its_data(db_url, tmp_path, make_config, make_client):
    db = Database(db_url)
    await db.connect()
    try:
        assert await migrate(db, [baseline_migration(*FIRST_SCHEMA)])
        keys = await fill_first_schema(db)
        ran = await migrate(db, collect_migrations(get_plugin_manager()))
        assert {(m.namespace, m.version) for m in ran} >= {("core", 2), ("core", 16)}
        report = await check_ledger(db)
        assert report.ok, report.lines()
        assert report.balances_checked == 4 and report.transactions_checked == 3
        upgraded = await schema_of(db)
    finally:
        await db.disconnect()
    assert upgraded == await fresh_schema(db_url, tmp_path)

    # The old merchant still works through today's API: sign-in and the old general key.
    client = await make_client(make_config(scheduler={"enabled": False}))
    status, body = await api(client, "POST", "/dashboard/auth/login", {},
                             json={"email": "old@example.com", "password": PASSWORD})
    assert status == 200, body
    status, body = await api(client, "GET", "/v1/general/account/balance", {"general_api_key": keys["general"]})
    assert status == 200, body
    amounts = {b["coin"]: b["amount"] for b in body["data"]["balances"]}
    assert amounts["BTC"] == "0.0075" and amounts["ETH"] == "100"


async def test_schema_from_before_the_m0010_edit_is_repaired(db_url, tmp_path):
    db = Database(db_url)
    await db.connect()
    try:
        old = [*current_core(9), baseline_migration(*BEFORE_M0010_EDIT)]
        await migrate(db, old)
        before = await schema_of(db)
        if db.is_postgres:
            assert "rate_limit_nodes" in before and "gateway_nodes" not in before
        await migrate(db, collect_migrations(get_plugin_manager()))
        assert (await check_ledger(db)).ok
        upgraded = await schema_of(db)
    finally:
        await db.disconnect()
    assert upgraded == await fresh_schema(db_url, tmp_path)


def test_migrate_check_for_deploy_scripts(tmp_path, monkeypatch, capsys):
    """``orbchain migrate --check``: exit 1 listing what is pending, changing nothing; 0 once migrated."""
    from orbchain.cli import main

    for name in ("ORBCHAIN_CONFIG", "ORBCHAIN_DATABASE_URL", "ORBCHAIN_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "orbchain.toml"
    path.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\nenvironment = "development"\n')
    (tmp_path / "var").mkdir()
    assert main(["--config", str(path), "migrate", "--check"]) == 1
    out = capsys.readouterr().out
    assert "pending core:0001_core" in out and "pending core:0016_ledger_checks" in out
    assert "run `orbchain migrate`" in out
    assert main(["--config", str(path), "migrate", "--check"]) == 1  # --check applied nothing
    capsys.readouterr()
    assert main(["--config", str(path), "migrate"]) == 0
    assert main(["--config", str(path), "migrate", "--check"]) == 0
    assert capsys.readouterr().out.strip().endswith("database is up to date")
