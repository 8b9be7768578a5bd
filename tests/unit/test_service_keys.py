"""``gateway.services`` under typed keys (issue 44 item 4): a key and its name reach one entry; the project names
none by string.

Third-party plugins may still use string keys (deprecated, docs/plugins.md "Keeping state"), so a key must find
what a string stored and the other way round, in ``Services`` and in a plain dict (a test's stand-in gateway).
The core, the web layer, the test kit and the built-in plugins and chains use keys only: an AST scan of their
folders for a string literal used as a ``services`` key (tests/third_party/, a plugin written before keys, may).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from orbchain.api import HTTP_SESSION, PRICES, ServiceKey, Services

ROOT = Path(__file__).resolve().parents[2]
ACCESSORS = {"get", "setdefault", "pop"}


class Widget:
    pass


WIDGET = ServiceKey("test.widget", Widget)
SEEN = ServiceKey[set[str]]("test.seen")


def test_a_key_and_its_name_reach_the_same_entry():
    services = Services()
    widget = services[WIDGET] = Widget()
    assert services["test.widget"] is widget and services.get(WIDGET) is widget
    assert WIDGET in services and "test.widget" in services and list(services) == ["test.widget"]
    services["test.seen"] = {"a"}  # a plugin written before keys
    assert services.setdefault(SEEN, set()) == {"a"}
    assert services.pop(SEEN) == {"a"} and SEEN not in services


def test_a_missing_entry_reads_as_a_dict_does():
    services = Services()
    assert services.get(WIDGET) is None and services.get(WIDGET, 7) == 7 and services.pop(WIDGET, None) is None
    with pytest.raises(KeyError):
        services[WIDGET]
    with pytest.raises(KeyError):
        services.pop(WIDGET)


def test_a_key_finds_its_entry_in_a_plain_dict_too():
    assert {"test.widget": 1}.get(WIDGET) == 1 and {WIDGET: 2}.get("test.widget") == 2
    assert WIDGET == ServiceKey("test.widget", Widget) and hash(WIDGET) == hash("test.widget")
    assert WIDGET != "test.other" and WIDGET != SEEN


def test_a_key_names_its_type():
    assert (WIDGET.name, WIDGET.value_type, str(WIDGET)) == ("test.widget", Widget, "test.widget")
    assert repr(WIDGET) == "<ServiceKey('test.widget', type=Widget)>"
    assert (PRICES.name, HTTP_SESSION.name) == ("prices", "http")  # the names plugins written before keys use


def string_keys(source: str) -> list[int]:
    """Lines where a string literal is a ``services`` key: ``services["x"]`` or ``services.get("x")``."""
    def is_services(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "services") or (
            isinstance(node, ast.Name) and node.id == "services")

    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and is_services(node.value):
            key: ast.AST | None = node.slice
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ACCESSORS
              and is_services(node.func.value) and node.args):
            key = node.args[0]
        else:
            continue
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            lines.append(node.lineno)
    return lines


def test_the_project_names_every_service_by_its_key():
    report = [f"{path.relative_to(ROOT)}:{line}" for folder in ("core", "web", "orbchain", "plugins", "chains")
              for path in sorted((ROOT / folder).rglob("*.py"))
              for line in string_keys(path.read_text(encoding="utf-8"))]
    assert report == [], "string keys of gateway.services (declare a ServiceKey):\n" + "\n".join(report)


def test_the_scan_sees_each_way_to_name_an_entry():
    source = ('gateway.services["a"] = 1\nservices.get("b")\nx.services.setdefault("c", 1)\n'
              'gateway.services.pop("d", None)\ngateway.services[KEY]\nother.get("e")\n')
    assert string_keys(source) == [1, 2, 3, 4]
