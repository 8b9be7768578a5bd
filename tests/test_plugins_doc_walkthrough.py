"""docs/plugins.md's conformance walkthrough names only what ``orbchain.testing`` really offers.

A third-party author copies that walkthrough; a renamed fixture, helper or
driver method would break their package while our own tests stay green.
So the names it uses are read from the document and checked against the
package: the imports, the ``ChainDriver`` methods and attributes of the
example driver (which must cover every abstract method, or the example
cannot be instantiated), the ``chain_driver`` fixture the suite asks for,
and the fixtures and helpers the closing paragraph lists.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import orbchain.testing
from orbchain.core.infra.config import Config
from orbchain.testing import AdapterConformance, ChainDriver

DOCS = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"
HEADING = "## From an empty package to a passing conformance run"


def walkthrough() -> str:
    text = DOCS.read_text(encoding="utf-8")
    assert HEADING in text, "docs/plugins.md lost its conformance walkthrough"
    return text.split(HEADING, 1)[1].split("\n## ", 1)[0]


def python_blocks(section: str) -> list[ast.Module]:
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert blocks, "the walkthrough has no python example"
    return [ast.parse(block) for block in blocks]


def example_driver(section: str) -> ast.ClassDef:
    for module in python_blocks(section):
        for node in ast.walk(module):
            if isinstance(node, ast.ClassDef) and any(getattr(b, "id", None) == "ChainDriver" for b in node.bases):
                return node
    raise AssertionError("the walkthrough shows no ChainDriver subclass")


def test_every_name_imported_from_orbchain_testing_exists():
    imported = [alias.name for module in python_blocks(walkthrough()) for node in ast.walk(module)
                if isinstance(node, ast.ImportFrom) and node.module == "orbchain.testing" for alias in node.names]
    assert imported, "the walkthrough imports nothing from orbchain.testing"
    missing = [name for name in imported if not hasattr(orbchain.testing, name)]
    assert not missing, f"docs/plugins.md imports names orbchain.testing lacks: {missing}"


def test_the_example_driver_overrides_real_members_and_every_abstract_method():
    driver = example_driver(walkthrough())
    methods = {n.name for n in driver.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))} - {"__init__"}
    attributes = {t.id for n in driver.body if isinstance(n, ast.Assign) for t in ast.walk(n)
                  if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    unknown = sorted(name for name in methods | attributes if not hasattr(ChainDriver, name))
    assert not unknown, f"the example driver defines members ChainDriver does not have: {unknown}"
    not_shown = sorted(ChainDriver.__abstractmethods__ - methods)
    assert not not_shown, f"the example driver misses abstract methods: {not_shown}"
    for node in driver.body:  # async in the doc exactly where the suite awaits it
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in methods:
            real = inspect.iscoroutinefunction(getattr(ChainDriver, node.name))
            assert isinstance(node, ast.AsyncFunctionDef) == real, f"{node.name}: async in the doc must match"


def test_the_suite_asks_for_the_fixture_the_walkthrough_provides():
    assert "def chain_driver(" in walkthrough()
    assert "chain_driver" in vars(AdapterConformance), "AdapterConformance no longer names a chain_driver fixture"


def test_listed_fixtures_helpers_and_hooks_exist():
    section = walkthrough()
    listed = re.search(r"other tests (.*?)\.\s*$", section, flags=re.DOTALL)
    assert listed, "the closing paragraph listing the fixtures is gone"
    names = re.findall(r"`(?:orbchain\.testing\.)?(\w+)`", listed.group(1))
    assert {"make_config", "gateway", "client"} <= set(names)
    missing = [name for name in names if not hasattr(orbchain.testing, name)]
    assert not missing, f"docs/plugins.md lists fixtures or helpers orbchain.testing lacks: {missing}"
    assert "plugin_config" in section and callable(getattr(Config, "plugin_config", None))
    driver_hooks = re.findall(r"`(\w+)\(\w*\)` is called", section) + re.findall(r"and\s+`(\w+)\(\)` before", section)
    assert driver_hooks, "the paragraph on the optional driver methods is gone"
    for method in driver_hooks:
        assert hasattr(ChainDriver, method), f"docs/plugins.md names ChainDriver.{method}, which does not exist"


TESTING = "## Testing your plugin"


def test_the_testing_section_names_what_orbchain_testing_offers():
    """A feature author copies "Testing your plugin": its imports exist and the signature it shows is the real one."""
    text = DOCS.read_text(encoding="utf-8")
    assert TESTING in text, "docs/plugins.md lost its 'Testing your plugin' section"
    section = text.split(TESTING, 1)[1].split("\n## ", 1)[0]
    imported = [alias.name for module in python_blocks(section) for node in ast.walk(module)
                if isinstance(node, ast.ImportFrom) and node.module == "orbchain.testing" for alias in node.names]
    assert "pay_on_devnet" in imported
    missing = [name for name in imported if not hasattr(orbchain.testing, name)]
    assert not missing, f"docs/plugins.md imports names orbchain.testing lacks: {missing}"
    shown = re.search(r"`await pay_on_devnet(\(.*?\))`", section)
    assert shown, "the section no longer shows pay_on_devnet's signature"
    real = inspect.signature(orbchain.testing.pay_on_devnet)
    bare = real.replace(parameters=[p.replace(annotation=inspect.Parameter.empty) for p in real.parameters.values()],
                        return_annotation=inspect.Signature.empty)
    assert shown.group(1) == str(bare), f"documented {shown.group(1)}, real {real}"
