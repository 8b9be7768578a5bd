"""No plugin reaches the gateway's machinery (issue 44 item 4): ``gateway.pm`` and ``gateway.db_outage``.

With the plugin manager a plugin could register, unregister or call any plugin's hooks; with the outage
tracker it could end an outage the core is riding out. What the built-ins needed from them is in
``orbchain.api`` (``plugin_loaded``, ``database_away``). An AST scan of plugins/ for the two attributes;
chains/ are held to the same rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INTERNALS = {"pm": "plugin_loaded(gateway, name)", "db_outage": "database_away(gateway, exc, where)"}


def offences(source: str) -> list[tuple[int, str]]:
    return [(node.lineno, f".{node.attr}: use {INTERNALS[node.attr]}") for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr in INTERNALS]


def test_no_plugin_or_chain_reaches_the_plugin_manager_or_the_outage_tracker():
    report = [f"{path.relative_to(ROOT)}:{line}: {what}" for folder in ("plugins", "chains")
              for path in sorted((ROOT / folder).rglob("*.py"))
              for line, what in offences(path.read_text(encoding="utf-8"))]
    assert report == [], "\n".join(report)


def test_the_scan_sees_both_ways_in():
    found = offences("gateway.pm.get_plugin('swaps')\nif not gateway.db_outage.absorb(exc, 'x'):\n    pass\n")
    assert [line for line, _ in found] == [1, 2]
