"""The layers' import rules, read from the source (AST), so a function-local import cannot hide.

* The core never imports the web layer, not even for type checking: a
  plugin that uses only ``orbchain.core`` must not pull in aiohttp pages.
* The core's modules import each other without a cycle. Imports under
  ``if TYPE_CHECKING:`` are left out of the graph: they never run, and
  annotating with ``Gateway`` in a module the gateway imports is fine.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["orbchain", *parts])


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                inside.update(id(n) for n in ast.walk(statement))
    return inside


def imported_names(path: Path, *, with_type_checking: bool, root: Path = ROOT) -> set[str]:
    """Every module name an ``import`` anywhere in ``path`` names, made absolute.

    ``from .x import y`` yields both ``pkg.x`` and ``pkg.x.y`` (y may be a module).
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = set() if with_type_checking else _type_checking_nodes(tree)
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def import_graph(files: list[Path], root: Path = ROOT) -> dict[str, set[str]]:
    modules = {module_name(p, root): p for p in files}
    return {
        name: {dep for dep in imported_names(path, with_type_checking=False, root=root) if dep in modules and dep != name}
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path ``[a, b, ..., a]``, or None when the graph is acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state:
                cycle = visit(dep)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def test_the_core_never_imports_the_web_layer():
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in core_files()
        for name in sorted(imported_names(path, with_type_checking=True))
        if name == "orbchain.web" or name.startswith("orbchain.web.")
    ]
    assert offenders == []


def test_core_modules_import_each_other_without_a_cycle():
    assert find_cycle(import_graph(core_files())) is None


def test_the_scan_sees_function_local_relative_imports(tmp_path):
    """The checks above would pass vacuously if the scan missed the imports that used to hide the cycle."""
    package = tmp_path / "core"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from .b import thing\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import x\n"
                                  "def g():\n    from . import a\n    from ..web.app import create_app\n")
    (package / "c.py").write_text("from .a import f\n")
    files = sorted(package.rglob("*.py"))
    graph = import_graph(files, tmp_path)
    assert graph["orbchain.core.a"] == {"orbchain.core.b"}
    # ``from . import a`` runs the package first; the TYPE_CHECKING import of c is left out.
    assert graph["orbchain.core.b"] == {"orbchain.core", "orbchain.core.a"}
    assert find_cycle(graph) == ["orbchain.core.a", "orbchain.core.b", "orbchain.core.a"]
    assert "orbchain.web.app" in imported_names(package / "b.py", with_type_checking=True, root=tmp_path)


RECURSION_RAISERS = ("eth_account", "py_ecc")  # their import calls sys.setrecursionlimit(100000)
GUARDED_IMPORT = ROOT / "chains" / "evm" / "eth_account_import.py"


def test_eth_account_is_imported_only_through_the_recursion_limit_guard():
    """Any other import of eth-account or py_ecc would leave the server with py_ecc's raised limit."""
    offenders = []
    for folder in ("core", "web", "chains", "plugins", "orbchain", "scheduler", "migrations"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == GUARDED_IMPORT:
                continue
            names = imported_names(path, with_type_checking=False)
            if any(name == raiser or name.startswith(raiser + ".") for name in names for raiser in RECURSION_RAISERS):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_the_gateway_module_reaches_no_job_the_composition_root_wires():
    """core/startup.py adds the core's jobs; core/gateway.py (every hook's argument type) needs none of them,
    not even through another module."""
    graph = import_graph(core_files())
    reached, todo = set(), ["orbchain.core.gateway"]
    while todo:
        for dep in graph[todo.pop()] - reached:
            reached.add(dep)
            todo.append(dep)
    wired = {"orbchain.core.jobs", "orbchain.core.watching.scanner", "orbchain.core.payouts.worker", "orbchain.core.events.webhooks",
             "orbchain.core.startup"}
    assert not reached & wired, sorted(reached & wired)
    assert {"orbchain.core.gateway", "orbchain.core.jobs"} <= graph["orbchain.core.startup"]
