"""The third-party examples reach Orbchain only the way a third party can: ``orbchain.api`` and ``orbchain.testing``.

Every module under tests/third_party/ (the zed chain, the loyalty feature,
the tally package and their tests), the chain packages
test_third_party_chain.py and test_scanner.py install from a string,
tests/test_testing_pay_on_devnet.py (an example to copy) and every Python
example in docs/ are parsed: an import of any
other part of ``orbchain`` (the core, the web layer, a built-in plugin), or
of Orbchain's own test helpers (``tests.*``, a relative import climbing out
of tests/third_party/), fails with the file and line. import-linter keeps
the same rule for plugins/ and chains/ (tests/test_import_contracts.py).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
THIRD_PARTY = ROOT / "tests" / "third_party"
ALLOWED = ("orbchain.api", "orbchain.testing")


def allowed(module: str) -> bool:
    return module.split(".")[0] not in ("orbchain", "tests") or any(
        module == name or module.startswith(name + ".") for name in ALLOWED)


def forbidden_imports(source: str, depth: int | None = None) -> list[str]:
    """``line: module`` of each import a third party could not make; ``depth`` is how many packages
    a relative import may climb and stay inside tests/third_party/ (None: no relative imports expected)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: {alias.name}" for alias in node.names if not allowed(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            if node.level and (depth is None or node.level > depth):
                found.append(f"{node.lineno}: {'.' * node.level}{node.module or ''} (outside tests/third_party)")
            elif not node.level and not allowed(node.module or ""):
                found.append(f"{node.lineno}: {node.module}")
    return found


def modules() -> list[Path]:
    return sorted(THIRD_PARTY.rglob("*.py"))


def test_the_examples_are_there():
    names = {path.relative_to(THIRD_PARTY).as_posix() for path in modules()}
    assert {"tally_plugin.py", "zed/plugin.py", "zed/adapter.py", "zed/test_zed.py", "loyalty/plugin.py",
            "loyalty/test_loyalty.py"} <= names


@pytest.mark.parametrize("path", modules(), ids=lambda path: path.relative_to(THIRD_PARTY).as_posix())
def test_a_third_party_module_imports_orbchain_only_through_the_api(path):
    depth = len(path.relative_to(THIRD_PARTY).parts) - 1  # zed/adapter.py may say `from .node`, not `from ..`
    assert forbidden_imports(path.read_text(encoding="utf-8"), depth) == [], path.name


def test_the_installed_inline_chain_packages_import_only_the_api():
    """Two tests install a chain package written in a string (``zeta_orbchain``, ``acme_orbchain``): parse it."""
    import tests.test_scanner as scanner_test
    import tests.test_third_party_chain as chain_test

    assert forbidden_imports(chain_test.ZETA_MODULE) == []
    assert forbidden_imports(scanner_test.THIRD_PARTY_MODULE) == []


def test_the_copyable_plugin_test_imports_only_the_api():
    """docs/plugins.md sends a feature author to tests/test_testing_pay_on_devnet.py to copy as it stands."""
    path = ROOT / "tests" / "test_testing_pay_on_devnet.py"
    assert forbidden_imports(path.read_text(encoding="utf-8")) == []


def python_examples() -> list[tuple[str, str]]:
    examples = []
    for path in sorted((ROOT / "docs").glob("*.md")):
        for number, block in enumerate(re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"),
                                                  flags=re.DOTALL)):
            if re.search(r"^\s*(from|import)\s+orbchain\b", block, flags=re.MULTILINE):
                examples.append((f"{path.name}#{number}", block))
    return examples


@pytest.mark.parametrize(("name", "block"), python_examples(), ids=[name for name, _ in python_examples()])
def test_a_documented_example_imports_orbchain_only_through_the_api(name, block):
    imports = "\n".join(line.strip() for line in block.splitlines() if re.match(r"\s*(from|import)\s", line))
    assert forbidden_imports(imports, depth=1) == [], name  # an example may import its own package (`from .x`)


def test_the_check_catches_what_it_must():
    source = ("from orbchain.core.ledger.book import balance\nimport orbchain.web.auth\nfrom tests.support import api\n"
              "from ...support import Devnet\nfrom orbchain.api.ledger import post\nfrom orbchain.testing import api\n"
              "import aiohttp\nfrom .node import ZedNode\n")
    assert forbidden_imports(source, depth=1) == [
        "1: orbchain.core.ledger.book", "2: orbchain.web.auth", "3: tests.support", "4: ...support (outside tests/third_party)"]
