"""The plugin contract stays documented: every hook has a docstring and a doc section."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from orbchain.core import hookspecs

TESTS = Path(__file__).resolve().parent
DOCS = TESTS.parent / "docs" / "plugins.md"


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


def test_every_hook_is_exercised_by_some_test():
    """datasette's ``test_plugin_hooks_have_tests``: a hook no test names is a hook nobody checked."""
    texts = [p.read_text(encoding="utf-8") for p in TESTS.rglob("*.py") if p.name != Path(__file__).name]
    untested = [name for name in _hook_names() if not any(re.search(rf"\b{name}\b", t) for t in texts)]
    assert not untested, f"hooks no test mentions: {untested}"
