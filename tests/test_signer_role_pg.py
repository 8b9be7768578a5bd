"""The signer's own least-privilege PostgreSQL role (issue 45 items 2 and 6, docs/operations.md "Custody: a
signer on its own host", step 7).

``orbchain custody signer-role`` grants it; granting twice (and after a privilege added by hand) leaves exactly
the same privileges; the role is refused a payout's amount or destination, a ledger posting, a payout's deletion,
the members' credentials and a table of its own. The signer signing as it is every signer test on PostgreSQL
(``start_signer`` in tests/test_signer_process.py connects it as the run's role, checks it did, and fails on any
"permission denied" it logged): no signer process of its own here.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from orbchain.cli import main
from orbchain.core.cli.ops import Finding, signer_role_finding
from orbchain.core.custody.signer_role import (RoleRefused, check_signer_role, grant_signer_role,
                                               unrestricted_warning)
from orbchain.core.infra.db import Database
from orbchain.web.keys import GATEWAY

from .test_payouts import BTC_DEST, create, fund, payout_env, payout_row
from .test_signer_process import as_role

PRIVILEGES = """
SELECT table_name, privilege_type, NULL AS column_name FROM information_schema.role_table_grants
 WHERE grantee = $1 AND table_schema = $2
UNION ALL
SELECT table_name, privilege_type, column_name FROM information_schema.column_privileges
 WHERE grantee = $1 AND table_schema = $2
ORDER BY 1, 2, 3
"""
REFUSED = ("UPDATE payouts SET amount = amount * 10", f"UPDATE payouts SET destination = '{BTC_DEST}'",
           "INSERT INTO ledger_postings (transaction_id, account, coin, amount, created_at)"
           " VALUES ('t', 'merchant:m:available', 'BTC', 1, 0)",
           "DELETE FROM payouts", "SELECT * FROM api_key_secrets", "CREATE TABLE planted (x int)")


def plain(url: str) -> tuple[str, str]:
    """asyncpg's DSN and the schema of a ``postgresql+asyncpg://...?schema=`` URL."""
    parts = urlsplit(url.replace("postgresql+asyncpg://", "postgresql://", 1))
    return urlunsplit(parts._replace(query="")), parts.query.partition("schema=")[2]


async def as_owner(db_url: str, statement: str, *args) -> list[tuple]:
    conn = await asyncpg.connect(plain(db_url)[0])
    try:
        return [tuple(r) for r in await conn.fetch(statement, *args)]
    finally:
        await conn.close()


@pytest.fixture
async def signer_role(db_url):
    """A role of this test's own (roles are the cluster's), dropped with what it was granted."""
    role = f"{plain(db_url)[1]}_signer"
    yield role
    await as_owner(db_url, f'DROP OWNED BY "{role}"')
    await as_owner(db_url, f'DROP ROLE IF EXISTS "{role}"')


@pytest.mark.postgresql_only("a database role is PostgreSQL's; on SQLite the signer runs inside serve")
async def test_the_signer_role_is_granted_idempotently_and_cannot_rewrite_a_payout_or_the_ledger(
        tmp_path, db_url, signer_role, make_config, make_client, capsys, monkeypatch):
    client, merchant, devnet = await payout_env(make_client, make_config)
    gw = client.app[GATEWAY]
    await fund(client, merchant, devnet)
    track_id = (await create(client, merchant, "0.004"))[1]["data"]["track_id"]
    before = await payout_row(gw, track_id)

    # The operator's command, with the owner's config.
    for name in ("ORBCHAIN_CONFIG", "ORBCHAIN_DATABASE_URL", "ORBCHAIN_DATA_DIR", "ORBCHAIN_ENVIRONMENT"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "owner.toml"
    config.write_text(f'[server]\ndata_dir = "{tmp_path / "owner"}"\n[database]\nurl = "{db_url}"\n')
    code = await asyncio.to_thread(main, ["--config", str(config), "custody", "signer-role", signer_role])
    said = capsys.readouterr()
    assert code == 0 and f"role {signer_role} created" in said.out and "ledger_postings" not in said.out, said
    schema = plain(db_url)[1]
    granted = await as_owner(db_url, PRIVILEGES, signer_role, schema)
    assert ("payouts", "UPDATE", "stage") in granted and ("payouts", "UPDATE", "amount") not in granted

    # Again, after a privilege added by hand: exactly the list, the extra gone.
    await as_owner(db_url, f'GRANT DELETE ON "{schema}".payouts, "{schema}".ledger_postings TO "{signer_role}"')
    again = await grant_signer_role(gw.db, signer_role)
    assert not again.created and await as_owner(db_url, PRIVILEGES, signer_role, schema) == granted
    # --sweeps once added ledger writes; serve books the sweeps now: a warned no-op, the same one list.
    code = await asyncio.to_thread(main, ["--config", str(config), "custody", "signer-role", signer_role, "--sweeps"])
    said = capsys.readouterr()
    assert code == 0 and "--sweeps is ignored" in said.err and "ledger_postings" not in said.out, said
    assert await as_owner(db_url, PRIVILEGES, signer_role, schema) == granted
    assert not {(table, what) for table, what, _ in granted if table.startswith("ledger_") and what != "SELECT"}

    role_url = as_role(db_url, signer_role)
    conn = await asyncpg.connect(plain(role_url)[0], server_settings={"search_path": schema})
    try:
        assert await conn.fetchval("SELECT amount FROM payouts WHERE track_id = $1", track_id) is not None
        await conn.execute("UPDATE payouts SET last_error = 'x' WHERE track_id = $1", track_id)  # a signing column
        for statement in REFUSED:
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute(statement)
    finally:
        await conn.close()
    after = await payout_row(gw, track_id)
    assert (after["amount"], after["destination"]) == (before["amount"], before["destination"])

    # A member of another role is refused (SET ROLE would bring that role's privileges back), nothing changed.
    member = f"{signer_role}_m"
    await as_owner(db_url, f'CREATE ROLE "{member}"')
    try:
        await as_owner(db_url, f'GRANT "{signer_role}" TO "{member}"')
        with pytest.raises(RoleRefused, match=f"member of {signer_role}"):
            await grant_signer_role(gw.db, member)
        assert await as_owner(db_url, PRIVILEGES, member, schema) == []
    finally:
        await as_owner(db_url, f'DROP ROLE "{member}"')

    # The signer's start warns when its role could rewrite what it judges: the owner, not this role.
    assert "can rewrite a payout's amount" in (await unrestricted_warning(gw.db) or "")
    restricted = Database(role_url)
    await restricted.connect()
    try:
        assert await unrestricted_warning(restricted) is None
    finally:
        await restricted.disconnect()


@pytest.mark.postgresql_only("a database role is PostgreSQL's; on SQLite doctor has no signer role to check")
async def test_doctor_names_what_the_signer_role_misses_or_holds_beyond_its_list(
        tmp_path, db_url, signer_role, gateway, capsys, monkeypatch):
    role_url = as_role(db_url, signer_role)
    checked = SimpleNamespace(config=gateway.config.with_overrides(signer={"database_url": role_url}), db=gateway.db)
    assert await signer_role_finding(SimpleNamespace(config=gateway.config, db=gateway.db)) is None  # not configured
    missing = await signer_role_finding(checked)
    assert missing is not None and (missing.level, missing.detail) == (
        "FAIL", f"does not exist: run `orbchain custody signer-role {signer_role}`")

    owner = await check_signer_role(gateway.db, await gateway.db.fetch_val("SELECT current_user"))
    assert not owner.current and "restrict" in owner.detail()  # a superuser, or the owner: no grant restricts it

    await grant_signer_role(gateway.db, signer_role)
    assert await signer_role_finding(checked) == Finding("OK", f"signer role {signer_role}",
                                                         "holds exactly the signer's list")

    # A migration adds a table after the grant, and someone widens the role by hand.
    schema = plain(db_url)[1]
    await as_owner(db_url, f'CREATE TABLE "{schema}".zz_new_signing_state (id int)')
    await as_owner(db_url, f'GRANT DELETE, UPDATE (amount) ON "{schema}".payouts TO "{signer_role}"')
    for name in ("ORBCHAIN_CONFIG", "ORBCHAIN_DATABASE_URL", "ORBCHAIN_DATA_DIR", "ORBCHAIN_ENVIRONMENT"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "owner.toml"
    config.write_text(f'[server]\ndata_dir = "{tmp_path / "var"}"\n[database]\nurl = "{db_url}"\n'
                      f'[signer]\ndatabase_url = "{role_url}"\n')
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["--config", str(config), "doctor"]) == 1
    said = capsys.readouterr().out
    assert (f"FAIL signer role {signer_role}: missing SELECT on zz_new_signing_state; extra DELETE on payouts,"
            f" UPDATE (amount) on payouts: run `orbchain custody signer-role {signer_role}`\n") in said, said

    # The operator runs the command again: exactly the list, the new table readable.
    await grant_signer_role(gateway.db, signer_role)
    assert (await signer_role_finding(checked)).level == "OK"

    # A role granted with the old --sweeps still writes the ledger: doctor names that as extra.
    await as_owner(db_url, f'GRANT INSERT ON "{schema}".ledger_postings TO "{signer_role}"')
    assert (await signer_role_finding(checked)).detail == (
        f"extra INSERT on ledger_postings: run `orbchain custody signer-role {signer_role}`")
