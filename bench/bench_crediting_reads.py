"""Crediting reads per deposit (issue 44): the statements one devnet deposit's credit runs, counted at the drivers.

A crediting run (the scan that takes a deposit over its confirmation threshold: credit the ledger, mark the
deposit, recompute the payment's status, enqueue the webhooks) reads the payment row and its deposits more
than once today; issue 44 item 3 loads that state once and passes it on. This prints, per database, the
statements of that scan, of its crediting transaction (the BEGIN to COMMIT around the deposit's ``UPDATE
deposits SET status``), and in that transaction the SELECTs of the payment's row (``FROM payments``, row locks
and one-column reads included) and of its deposits (``FROM deposits WHERE track_id``). Counted with
orbchain.testing's ``StatementLog``: every statement at the drivers, nothing filtered, the process kept quiet
so nothing on a timer runs inside the count. ``--details`` lists the scan's statements.

A scratch database: SQLite in a temporary folder, and PostgreSQL when ``ORBCHAIN_TEST_PG_DSN`` (or the local
server bench_hotpath.py finds) answers. No figure fails the run; the count is the same on every run.

    .venv/bin/python bench/bench_crediting_reads.py [--databases sqlite,postgresql] [--details]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bench_hotpath import default_pg_dsn, pg_reachable, postgres_target, sqlite_target
from orbchain.core.infra.config import load_config
from orbchain.testing import pay_on_devnet
from orbchain.testing.devnet import crediting_scan
from orbchain.testing.api import create_payment, signup
from orbchain.testing.statements import StatementLog, Window, quiet_process
from orbchain.web.app import create_app
from orbchain.web.keys import GATEWAY

CREDITING = "UPDATE deposits SET status"  # the statement that marks the crediting transaction


@dataclass
class Credit:
    """The crediting scan's statements; the figures are read inside its crediting transaction."""

    database: str
    window: Window

    def transaction(self) -> list[str]:
        """From the BEGIN before the deposit's ``UPDATE deposits SET status`` to the COMMIT after it."""
        return [" ".join(s.sql.split()) for s in self.window.transaction_around(CREDITING).statements]

    def payment_reads(self) -> int:
        return sum(1 for sql in self.transaction() if sql.startswith("SELECT") and " FROM payments " in sql + " ")

    def deposit_list_reads(self) -> int:
        return sum(1 for sql in self.transaction()
                   if sql.startswith("SELECT") and " FROM deposits WHERE track_id" in sql)


async def credit_one_deposit(url: str, data_dir: Path, log: StatementLog) -> Window:
    """A merchant, a BTC payment paid on the devnet, then one block at a time until its deposit is credited:
    the statements of the scan that credited it."""
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(data_dir), "environment": "development"}, database={"url": url},
        scheduler={"enabled": False})
    client = TestClient(TestServer(create_app(config)))
    await client.start_server()
    try:
        gateway = client.app[GATEWAY]
        merchant = await signup(client, "bench@example.com")
        payment = await create_payment(client, merchant, "BTC", "0.001")
        await pay_on_devnet(client, payment, confirm=False)  # seen in the mempool: Paying
        return await crediting_scan(gateway, payment["address"], log)
    finally:
        await client.close()


def run(url: str, data_dir: Path, database: str) -> Credit:
    log = StatementLog()
    patch = pytest.MonkeyPatch()
    quiet_process(patch)
    log.install()
    try:
        return Credit(database, asyncio.run(credit_one_deposit(url, data_dir, log)))
    finally:
        log.uninstall()
        patch.undo()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--details", action="store_true", help="list the crediting scan's statements")
    args = parser.parse_args(argv)
    wanted = [d.strip() for d in args.databases.split(",") if d.strip()]
    credits = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        if "sqlite" in wanted:
            target = sqlite_target(root)
            credits.append(run(target.url, target.data_dir, "SQLite"))
        dsn = os.environ.get("ORBCHAIN_TEST_PG_DSN") or default_pg_dsn()
        if "postgresql" in wanted and pg_reachable(dsn):
            with postgres_target(dsn, root) as target:
                credits.append(run(target.url, target.data_dir, "PostgreSQL"))
        elif "postgresql" in wanted:
            print(f"PostgreSQL: not reachable at {dsn}: skipped")
    print(f"{'database':12} {'scan':>5} {'crediting transaction':>22} {'payment row reads':>18}"
          f" {'deposit list reads':>19}")
    for credit in credits:
        print(f"{credit.database:12} {len(credit.window):5} {len(credit.transaction()):22}"
              f" {credit.payment_reads():18} {credit.deposit_list_reads():19}")
        if args.details:
            print(credit.window.listing())
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
