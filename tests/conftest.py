"""Shared fixtures: Orbchain's own tests use the kit plugin authors use (``orbchain.testing``).

Every database-backed test runs on SQLite and on PostgreSQL, the server
``ORBCHAIN_TEST_PG_DSN`` names (``make test`` sets it); see
``orbchain/testing/databases.py``. Without it a run with database tests
fails unless ``ORBCHAIN_TEST_SQLITE_ONLY=1`` asks for SQLite alone, and
under CI even that is refused: CI always runs both.
"""

from __future__ import annotations

import os

import pytest

# tests.telegram_support: the telegram tests' ``standin`` fixture (the Bot API stand-in), shared by three modules.
# tests.pg_cluster: ``private_pg``, a PostgreSQL cluster of the run's own that fault tests restart and kill.
# tests.litecoind, tests.monerod, tests.tron_support: ``replacing_node``, ``monero_regtest`` and ``tron_protos``
# once per test process. A session fixture is shared only when registered here: pytest makes one imported into a
# test module that module's own (each importing module started, and kept to the end, a node of its own).
# ``litecoind_node`` and ``faucet`` are still imported by each module, so one node per module: shared, later
# modules' blocks were refused (a mempool transaction "bad-txns-vin-empty"; docs/decisions.md "Suite time").
pytest_plugins = ["orbchain.testing", "tests.telegram_support", "tests.pg_cluster", "tests.litecoind", "tests.monerod",
                  "tests.tron_support"]


PG_ENV = "ORBCHAIN_TEST_PG_DSN"  # orbchain.testing.PG_ENV; not imported here, so the plugin's asserts are rewritten
SQLITE_ONLY_ENV = "ORBCHAIN_TEST_SQLITE_ONLY"  # orbchain.testing.SQLITE_ONLY_ENV


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CI") and (not os.environ.get(PG_ENV) or os.environ.get(SQLITE_ONLY_ENV, "").strip() == "1"):
        raise pytest.UsageError(f"CI run without {PG_ENV} or with {SQLITE_ONLY_ENV}=1: PostgreSQL tests would not run"
                                " (use `make test`)")
