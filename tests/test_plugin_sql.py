"""Plugins keep SQL on their own tables; core data comes through ``orbchain.api`` (core/*_services.py).

The core's table names are read from the core migrations themselves (every
``CREATE TABLE`` their ``up()`` returns on either dialect), so a new core
table is covered without editing this test. Every string literal in
``chains/`` and ``plugins/`` that reads as SQL (an upper-case SELECT,
INSERT, UPDATE, DELETE, CREATE or ALTER) must not name one after FROM,
JOIN, INTO, UPDATE, TABLE or REFERENCES. ``web/`` route modules follow the
same rule (handlers call core service functions).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import orbchain.migrations

ROOT = Path(__file__).resolve().parent.parent
SQL_STATEMENT = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER)\b")
TABLE_REFERENCE = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE|REFERENCES)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?(\w+)",
                             re.IGNORECASE)


def core_tables() -> set[str]:
    names: set[str] = set()
    for info in pkgutil.iter_modules(orbchain.migrations.__path__):
        module = importlib.import_module(f"orbchain.migrations.{info.name}")
        for dialect in ("sqlite", "postgresql"):
            for statement in module.up(dialect):
                names.update(m.group(1).lower() for m in re.finditer(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)",
                                                                       statement, re.IGNORECASE))
    return names


def sql_strings(path: Path) -> list[tuple[int, str]]:
    """String literals that read as SQL, with their line; f-strings are read by their literal parts."""
    found = []
    tree = ast.parse(path.read_text(), filename=str(path))
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    for node in ast.walk(tree):
        if id(node) in parts:
            continue  # read as part of its f-string
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if SQL_STATEMENT.search(text):
            found.append((node.lineno, text))
    return found


# services' helpers for a plugin's own rows (core/contract/plugin_rows.py) take the table as a string argument.
ROW_HELPERS = {"merchant_row", "merchant_rows", "merchant_row_count", "update_row", "insert_statement"}


def helper_tables(path: Path) -> list[tuple[int, str]]:
    """String literals passed to a row helper, with their line: the tables a plugin reads or writes through it."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if name in ROW_HELPERS:
                found += [(arg.lineno, arg.value) for arg in node.args[:2]
                          if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    return found


def core_table_uses(paths: list[Path], tables: set[str], root: Path = ROOT) -> list[str]:
    in_sql = [
        (path, line, match.group(1))
        for path in paths
        for line, text in sql_strings(path)
        for match in TABLE_REFERENCE.finditer(text)
    ]
    through_helpers = [(path, line, table) for path in paths for line, table in helper_tables(path)]
    return [f"{path.relative_to(root)}:{line} uses core table {table}"
            for path, line, table in sorted(in_sql + through_helpers, key=lambda use: (str(use[0]), use[1]))
            if table.lower() in tables]


def test_the_core_table_list_comes_from_the_core_migrations():
    tables = core_tables()
    assert {"payments", "deposits", "deposit_addresses", "merchants", "payouts", "ledger_postings",
            "api_keys", "webhook_events"} <= tables
    assert not any(name.startswith(("devnet_", "evm_", "bitcoin_")) for name in tables)


def test_plugins_name_no_core_table_in_their_sql():
    paths = sorted([*(ROOT / "chains").rglob("*.py"), *(ROOT / "plugins").rglob("*.py")])
    assert paths
    assert core_table_uses(paths, core_tables()) == []


def test_web_routes_name_no_core_table_in_their_sql():
    assert core_table_uses(sorted((ROOT / "web" / "routes").rglob("*.py")), core_tables()) == []


def test_the_scan_catches_core_tables_and_lets_a_plugins_own_tables_pass(tmp_path):
    module = tmp_path / "plugin.py"
    module.write_text(
        'A = "SELECT 1 FROM my_plugin_marks m JOIN my_plugin_sweeps s ON s.id = m.id"\n'
        'B = ("SELECT d.address FROM my_plugin_marks m"\n     " LEFT JOIN deposits d ON d.address = m.address")\n'
        'C = f"UPDATE payouts SET status = {1}"\n'
        'D = "money moves from deposits to the hot wallet"  # prose, not SQL\n'
        'E = services.merchant_row(gateway, "payouts", merchant_id, row_id)\n'
        'F = services.merchant_rows(gateway, "my_plugin_marks", merchant_id)\n'
        'G = insert_statement("deposits", row)\n'
    )
    assert core_table_uses([module], {"deposits", "payouts"}, tmp_path) == [
        "plugin.py:2 uses core table deposits", "plugin.py:4 uses core table payouts",
        "plugin.py:6 uses core table payouts", "plugin.py:8 uses core table deposits"]
