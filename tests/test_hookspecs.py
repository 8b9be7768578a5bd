"""The plugin contract stays documented: every hook has a docstring and a doc section."""

from __future__ import annotations

import ast
import inspect
import re
from functools import cache
from pathlib import Path

from orbchain.core.contract import hookspecs

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DOCS = ROOT / "docs" / "plugins.md"
PRODUCT = ("core", "web", "scheduler", "chains", "plugins", "orbchain")  # where hooks are called
IMPLEMENTERS = ("plugins", "chains", "tests")  # where hooks are implemented


def _hook_names() -> list[str]:
    return [
        name
        for name, func in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(func, "orbchain_spec")
    ]


def test_there_are_hooks():
    assert {"register_coins", "register_chains", "register_routes", "register_jobs",
            "register_migrations", "payment_paid", "deposit_credited"} <= set(_hook_names())


def test_every_hook_is_documented_in_plugins_md():
    text = DOCS.read_text(encoding="utf-8")
    headings = set(re.findall(r"^#### `(\w+)\(", text, flags=re.MULTILINE))
    missing = [name for name in _hook_names() if name not in headings]
    assert not missing, f"hooks missing from docs/plugins.md: {missing}"


def test_documented_hooks_exist():
    text = DOCS.read_text(encoding="utf-8")
    headings = set(re.findall(r"^#### `(\w+)\(", text, flags=re.MULTILINE))
    assert headings <= set(_hook_names()), f"docs describe unknown hooks: {headings - set(_hook_names())}"


def test_every_hook_has_a_docstring_and_gateway_or_registry():
    for name in _hook_names():
        func = getattr(hookspecs, name)
        assert (func.__doc__ or "").strip(), f"{name} has no docstring"
        params = inspect.signature(func).parameters
        assert "gateway" in params or "registry" in params, name


def test_documented_signatures_match_the_specs():
    text = DOCS.read_text(encoding="utf-8")
    for name in _hook_names():
        params = ", ".join(inspect.signature(getattr(hookspecs, name)).parameters)
        assert f"#### `{name}({params})`" in text, f"docs/plugins.md signature of {name} differs: ({params})"


@cache
def _modules(folders: tuple[str, ...]) -> list[tuple[Path, list[ast.AST]]]:
    """Every node of every module under ``folders`` that mentions a hook at all (parsed once per run)."""
    names = _hook_names()
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if path.name != "hookspecs.py" and any(name in text for name in names):
                found.append((path, list(ast.walk(ast.parse(text)))))
    return found


def _is_hookimpl(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Name) and target.id == "hookimpl") or \
        (isinstance(target, ast.Attribute) and target.attr == "hookimpl")


def implementations(names: set[str]) -> dict[str, set[str]]:
    """Hook name -> files with a ``@hookimpl`` function of that name (plugins, chains, tests)."""
    found: dict[str, set[str]] = {}
    for path, nodes in _modules(IMPLEMENTERS):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names \
                    and any(_is_hookimpl(d) for d in node.decorator_list):
                found.setdefault(node.name, set()).add(str(path.relative_to(ROOT)))
    return found


def call_sites(names: set[str]) -> dict[str, set[str]]:
    """Hook name -> product files that call it: ``pm.hook.<name>`` or the name handed to a caller as a string."""
    found: dict[str, set[str]] = {}
    for path, nodes in _modules(PRODUCT):
        for node in nodes:
            if isinstance(node, ast.Attribute) and node.attr in names and \
                    isinstance(node.value, ast.Attribute) and node.value.attr == "hook":
                found.setdefault(node.attr, set()).add(str(path.relative_to(ROOT)))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                found.setdefault(node.value, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_hook_is_called_by_the_product_and_implemented_somewhere():
    """Each hook has a call site in the product and a ``@hookimpl`` in a plugin, a chain or a test plugin.

    Replaces "its name appears anywhere in tests/" (comments counted). Breaks
    caught (tried): the only call of ``decide_qr_payload`` removed from
    core/payments/receive.py; a hook added to hookspecs.py that nothing implements.
    """
    names = set(_hook_names())
    implemented, called = implementations(names), call_sites(names)
    assert not sorted(names - set(implemented)), f"hooks nobody implements: {sorted(names - set(implemented))}"
    assert not sorted(names - set(called)), f"hooks the product never calls: {sorted(names - set(called))}"


def test_the_hook_finders_see_what_they_claim():
    """The finders themselves: a known implementation and a known call are found, a comment is not."""
    implemented, called = implementations({"register_chains"}), call_sites({"register_chains", "payment_paid"})
    assert any(path.startswith("chains/") for path in implemented["register_chains"])
    assert "core/gateway.py" in called["register_chains"] or called["register_chains"]
    tree = ast.parse("# payment_paid\nx = 1\n")
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value == "payment_paid"]


KIND_PREFIXES = ("register_", "check_", "decide_", "filter_", "extra_")
IRREGULAR_PARTICIPLES = {"paid"}  # events whose past participle does not end in -ed


def test_every_hook_name_says_its_kind():
    """The naming rule of docs/plugins.md ("Hook reference"), so a new hook cannot drift from it.

    ``decide_*`` hooks are exactly the first-result ones; ``register_*`` hooks
    take a registry; any other name is an event: ``<subject>_<past participle>``
    after the fact, ``<subject>_<-ing>`` just before it.
    """
    for name in _hook_names():
        spec = getattr(hookspecs, name)
        firstresult = spec.orbchain_spec["firstresult"]
        assert firstresult == name.startswith("decide_"), f"{name}: first-result hooks, and only they, are decide_*"
        if name.startswith("register_"):
            assert "registry" in inspect.signature(spec).parameters, name
        if not name.startswith(KIND_PREFIXES):
            last = name.rsplit("_", 1)[-1]
            assert last.endswith(("ed", "ing")) or last in IRREGULAR_PARTICIPLES, \
                f"{name}: an event is named <subject>_<past participle> (or _<-ing> just before it happens)"


def test_the_renamed_hooks_table_lists_every_rename():
    from orbchain.core.contract.hook_aliases import RENAMED_HOOKS

    text = DOCS.read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `(\w+)` \| `(\w+)` \|", text, flags=re.MULTILINE))
    assert rows == set(RENAMED_HOOKS.items())
