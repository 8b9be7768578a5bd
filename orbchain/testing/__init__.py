"""``orbchain.testing``: the pytest kit for Orbchain plugins, and the adapter conformance suite.

Load it as a pytest plugin from your ``conftest.py``::

    pytest_plugins = ["orbchain.testing"]

It then gives every test module:

* fixtures: ``db_backend`` (each database test runs on SQLite and on the
  PostgreSQL server ``ORBCHAIN_TEST_PG_DSN`` names; without it a run with
  database tests fails unless ``ORBCHAIN_TEST_SQLITE_ONLY=1`` asks for
  SQLite alone; ``@pytest.mark.postgresql_only(reason)`` tests run on
  PostgreSQL only), ``db_url``,
  ``make_config``, ``config``, ``gateway`` (migrated, no HTTP),
  ``make_client``, ``client`` and ``merchant_shop`` (an app with a
  signed-up merchant, in one line);
* ``ChainDriver``, the class a chain author implements for their test node,
  and ``AdapterConformance``, the suite to subclass (``docs/plugins.md``,
  "From an empty package to a passing conformance run");
* ``pay_on_devnet(client_or_gateway, payment, amount=None)``: a payment paid
  on the devnet and mined to its confirmations through the core scanner, for
  a feature plugin's own tests (``docs/plugins.md``, "Testing your plugin");
* ``statement_log`` (a ``StatementLog``): every statement the gateway sends
  to its database, counted at the drivers, to hold a hot path to a stated
  number of statements (``docs/plugins.md``, "Counting a route's statements").

The HTTP fixtures need ``pytest-aiohttp`` (Orbchain's ``test`` extra).
"""

from __future__ import annotations

import pytest

from .api import Merchant, api, bearer, signup, signup_data
from . import capabilities
from .capabilities import CAPABILITIES, MARKER, requires, supports
from .conformance import AdapterConformance, SimulatedCrash
from .devnet import pay_on_devnet
from .databases import PG_ENV, POSTGRESQL_ONLY, SQLITE_ONLY_ENV, backend_params, backends, db_url, pg_run_database
from .run_report import check_collection, summary_lines
from .driver import ChainDriver
from .fixtures import Shop, client, config, gateway, make_client, make_config, merchant_shop, merge_sections, open_shop
from .harness import ChainShop, open_chain_shop
from . import migrated_schemas
from .statements import StatementLog, quiet_process, statement_label, statement_log

__all__ = [
    "AdapterConformance", "CAPABILITIES", "capabilities", "ChainDriver", "ChainShop", "Merchant", "PG_ENV",
    "POSTGRESQL_ONLY", "SQLITE_ONLY_ENV", "Shop",
    "SimulatedCrash", "StatementLog", "api", "backends", "bearer", "merge_sections", "open_chain_shop", "open_shop",
    "pay_on_devnet", "quiet_process", "requires",
    "signup", "signup_data", "statement_label", "supports",
    # fixtures, re-exported so that loading this module as a plugin registers them
    "client", "config", "db_url", "gateway", "make_client", "make_config", "merchant_shop", "pg_run_database",
    "statement_log",
]

def pytest_configure(config: pytest.Config) -> None:
    migrated_schemas.install()  # PostgreSQL schemas filled from a copy of the first migrated one (its docstring)
    config.addinivalue_line("markers", f"{MARKER}(*capabilities): the adapter capabilities a conformance test needs")
    config.addinivalue_line("markers", f"{POSTGRESQL_ONLY}(reason): runs on PostgreSQL alone (two processes, "
                                       "NOTIFY, advisory locks); skipped with the reason in a SQLite-only run")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "db_backend" in metafunc.fixturenames:
        metafunc.parametrize("db_backend", backend_params(metafunc.definition.get_closest_marker(POSTGRESQL_ONLY)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    check_collection(config, items)


def pytest_report_header(config: pytest.Config) -> str:
    return f"orbchain databases under test: {', '.join(backends())}"


def pytest_terminal_summary(terminalreporter: object, exitstatus: int, config: pytest.Config) -> None:
    for line in summary_lines(config, terminalreporter):
        terminalreporter.write_line(line)  # type: ignore[attr-defined]
