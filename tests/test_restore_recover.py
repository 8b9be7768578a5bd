"""``orbchain restore recover`` after a real restore to an earlier point, on both databases.

SQLite: the backup is ``sqlite3``'s online backup, the restore copies that
older file back over the database. PostgreSQL: ``pg_dump`` of the test's
schema, then ``pg_restore`` over it. Between backup and restore the merchant
creates invoices and a static address (lost with the restore) and pays some
of them; the chain keeps everything (the devnet's tables, standing for the
node, are put back as they are now). After the recovery: no address handed
out before the restore (after the backup included) is handed out again, nor
the HD account of a merchant who signed up after the backup, the
money sent to lost addresses, before or after the restore, is credited once
as recovered (ledger memo, ``recovered_from`` in the webhook), the invoice
the backup knew is credited to its invoice, a second run changes nothing and
the ledger balances.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from orbchain.core.ledger import book as ledger
from orbchain.core.watching.recovery import recover

from .support import Devnet, api, signup

SKIP = 50
CHAIN_TABLES = ("devnet_blocks", "devnet_txs")


class Backup:
    """A backup of the test's database and its restore, the way an operator takes and restores one."""

    def __init__(self, backend: str, url: str, folder: Path) -> None:
        self.backend, self.url, self.file = backend, url, folder / "backup"

    def _pg(self) -> tuple[str, str]:
        parts = urlsplit(self.url)
        schema = parse_qs(parts.query)["schema"][0]
        return parts._replace(scheme="postgresql", query="").geturl(), schema

    def _run(self, *command: str) -> None:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{command[0]}: {done.stdout}{done.stderr}"

    def take(self) -> None:
        if self.backend == "sqlite":
            source, target = sqlite3.connect(self.url.split("///", 1)[1]), sqlite3.connect(self.file)
            source.backup(target)
            source.close(), target.close()
        else:
            dsn, schema = self._pg()
            self._run("pg_dump", "--format=custom", "--no-owner", f"--schema={schema}", f"--file={self.file}", dsn)

    def restore(self) -> None:
        """Put the backup back (every gateway on the database stopped)."""
        if self.backend == "sqlite":
            path = self.url.split("///", 1)[1]
            for leftover in (path + "-wal", path + "-shm"):
                Path(leftover).unlink(missing_ok=True)
            shutil.copyfile(self.file, path)
        else:
            dsn, schema = self._pg()
            self._run("psql", "-q", "-v", "ON_ERROR_STOP=1", "-c", f'DROP SCHEMA "{schema}" CASCADE', dsn)
            self._run("pg_restore", "--no-owner", f"--dbname={dsn}", str(self.file))


async def white_label(client, merchant, amount: str) -> dict:
    status, body = await api(client, "POST", "/v1/payment/white-label", merchant.merchant_key,
                             json={"currency": "BTC", "amount": amount})
    assert status == 200, body
    return body["data"]


async def snapshot(gateway) -> dict:
    """What a restore must not lose track of: counters and watched addresses."""
    return {"counters": {r["name"]: int(r["value"]) for r in await gateway.db.fetch_all("SELECT * FROM counters")},
            "addresses": int(await gateway.db.fetch_val("SELECT COUNT(*) FROM deposit_addresses"))}


async def test_recover_after_a_restore_reissues_nothing_and_credits_lost_addresses_once(
        make_client, make_config, db_backend, db_url, tmp_path):
    if db_backend == "postgresql" and not shutil.which("pg_dump"):
        pytest.fail("pg_dump is needed for the PostgreSQL restore (postgresql-client)")
    config = make_config(scheduler={"enabled": False}, plugin={"devnet": {"block_seconds": 1}})
    client = await make_client(config)
    merchant = await signup(client)
    devnet = Devnet(client)
    known = await white_label(client, merchant, "0.01")  # in the backup, paid after it
    backup = Backup(db_backend, db_url, tmp_path)
    backup.take()
    lost = [await white_label(client, merchant, "0.02") for _ in range(3)]
    status, body = await api(client, "POST", "/v1/payment/static-address", merchant.merchant_key,
                             json={"currency": "ETH"})
    assert status == 200, body
    static_eth = body["data"]["address"]
    await devnet.pay("BTC", lost[0]["address"], "0.02")  # paid and credited before the restore
    await devnet.mine(2)
    lost_merchant = await signup(client, "lost@example.com")  # signed up after the backup
    lost_account = await devnet.gateway.db.fetch_val("SELECT key_account FROM merchants WHERE id = :m",
                                                     {"m": lost_merchant.merchant_id})
    handed_out = {r["address"] for r in await devnet.gateway.db.fetch_all("SELECT address FROM deposit_addresses")}
    chain = {t: await devnet.gateway.db.fetch_all(f"SELECT * FROM {t}") for t in CHAIN_TABLES}
    await client.close()

    backup.restore()
    client = await make_client(config)
    devnet = Devnet(client)
    db = devnet.gateway.db
    for table, rows in chain.items():  # the node still has its chain
        await db.execute(f"DELETE FROM {table}")
        for row in rows:
            await db.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(':' + k for k in row)})",
                             dict(row))
    assert not await db.fetch_all("SELECT track_id FROM payments WHERE track_id = :t", {"t": lost[0]["track_id"]})

    done = await recover(devnet.gateway, "backup-1", SKIP)
    assert not done.already and done.addresses >= 2 * SKIP and done.counters >= 2
    after = await snapshot(devnet.gateway)
    again = await recover(devnet.gateway, "backup-1", SKIP)
    assert again.already and await snapshot(devnet.gateway) == after  # the second run changes nothing

    await devnet.pay("BTC", known["address"], "0.01")
    await devnet.pay("BTC", lost[1]["address"], "0.02")  # a lost invoice paid after the restore
    await devnet.pay("ETH", static_eth, "0.5")
    await devnet.mine(12)  # ETH's threshold
    credited = await db.fetch_all("SELECT address, track_id, credit_count FROM deposits WHERE credited")
    by_address = {r["address"]: r for r in credited}
    assert set(by_address) == {known["address"], lost[0]["address"], lost[1]["address"], static_eth}
    assert by_address[known["address"]]["track_id"] == known["track_id"]
    assert all(r["credit_count"] == 1 for r in credited) and len(credited) == 4
    memos = [r["memo"] for r in await db.fetch_all("SELECT memo FROM ledger_transactions WHERE kind = 'deposit'")]
    assert sum(bool(m and m.startswith("recovered deposit") and "backup-1" in m) for m in memos) == 3
    bodies = [r["body"] for r in await db.fetch_all(
        "SELECT body FROM webhook_events WHERE event_type = 'deposit.credited'")]
    assert sum(json.loads(b).get("recovered_from") == "backup-1" for b in bodies) == 3
    balances = (await api(client, "GET", "/v1/general/account/balance", merchant.general_key))[1]["data"]["balances"]
    assert {b["coin"]: b["amount"] for b in balances} == {"BTC": "0.0495", "ETH": "0.495"}  # less the 1 % fee

    # A rescan credits nothing twice; a new invoice and a new static address are never a handed-out address.
    await devnet.mine(1)
    assert int(await db.fetch_val("SELECT COUNT(*) FROM deposits WHERE credited")) == 4
    fresh = {(await white_label(client, merchant, "0.01"))["address"] for _ in range(25)}
    status, body = await api(client, "POST", "/v1/payment/static-address", merchant.merchant_key,
                             json={"currency": "ETH", "order_id": "after-restore"})
    assert status == 200, body
    assert not (fresh | {body["data"]["address"]}) & handed_out
    newcomer = await signup(client, "new@example.com")  # never the lost merchant's HD account (its addresses)
    assert await db.fetch_val("SELECT key_account FROM merchants WHERE id = :m",
                              {"m": newcomer.merchant_id}) > int(lost_account)
    assert (await ledger.check_ledger(db)).ok
