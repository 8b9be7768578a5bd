"""No coin of a specific chain is named in core/ or web/ (issue 12, item 5).

The symbols come from the registered coins of every built-in plugin, so a
coin added to a chain plugin is covered without editing this test. Every
string constant of every module is scanned (docstrings and f-string parts
included) for a symbol as a whole word, and comments too: chain knowledge
belongs to the chain plugins.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from orbchain.core.infra.config import load_config
from orbchain.core.startup import build_gateway

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("core", "web")


def _symbols(tmp_path: Path) -> set[str]:
    config = load_config(None, environ={}).with_overrides(server={"data_dir": str(tmp_path)})
    return set(build_gateway(config).coins.names())


def _strings(source: str) -> list[tuple[int, str]]:
    """Every string constant (with its line) and every comment of a module."""
    found = [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found.append((token.start[0], token.string))
    return found


def _offences(symbols: set[str], roots: tuple[str, ...]) -> list[str]:
    word = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(sorted(map(re.escape, symbols), key=len, reverse=True))
                      + r")(?![A-Za-z0-9_])")
    offences = []
    for root in roots:
        for path in sorted((ROOT / root).rglob("*.py")):
            for line, text in _strings(path.read_text(encoding="utf-8")):
                for match in word.finditer(text):
                    offences.append(f"{path.relative_to(ROOT)}:{line}: {match.group(1)!r} in {text[:60]!r}")
    return offences


def test_the_builtin_plugins_register_the_spec_coins(tmp_path):
    symbols = _symbols(tmp_path)
    assert {"BTC", "LTC", "DOGE", "ETH", "USDT_TRC20", "SOL", "XMR", "BTC_LN"} <= symbols and len(symbols) == 20


def test_core_and_web_name_no_coin(tmp_path):
    offences = _offences(_symbols(tmp_path), SCANNED)
    assert not offences, "coin symbols in core/ or web/:\n" + "\n".join(offences)


@pytest.mark.parametrize("snippet", ['X = "BTC"\n', 'X = f"{a} USDT_TRC20"\n', 'def f():\n    """Only XMR."""\n',
                                     "x = 1  # like SOL\n"])
def test_the_scan_finds_a_symbol(tmp_path, snippet):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(snippet, encoding="utf-8")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert _offences({"BTC", "USDT_TRC20", "XMR", "SOL"}, ("pkg",))
        assert not _offences({"ETH"}, ("pkg",))  # whole words only: not inside "METHOD"
    finally:
        ROOT = saved
