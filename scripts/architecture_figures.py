"""Issue 44's figures, read from the source with ``ast``: run before the floors move and after each step.

What it counts (docs/decisions.md, "The house in floors: figures before", says what each figure shows):

* imports that run back up a floor: every import (module level, inside a function, under ``if
  TYPE_CHECKING``) from a room to a room on a higher floor, or to another room on its own floor, with
  the floors of scripts/refactor/floors_moves.toml; once with each module in today's room, once with
  each module where that map puts it (what the moves alone leave to code changes);
* room pairs that import each other (today's rooms);
* import cycles: strongly connected components of the module graph under core/, web/, plugins/ and
  chains/, with module-level imports only, then with function-level ones, then with TYPE_CHECKING ones;
* files with an ``if TYPE_CHECKING`` block;
* the names ``orbchain.api`` and its sub-modules export, and how many the built-in plugins and chains
  use: at all, from one package only, not at all;
* files that touch ``Gateway`` (import it or use ``gateway.<field>``), uses of ``gateway.db`` and of
  ``gateway.services``;
* hook calls by name string (``call_first`` and its siblings, ``gateway.emit``) and direct ``pm.hook.X``;
* hook implementations with an unannotated parameter, per hook;
* pairs of places sharing six or more similar lines, from the ``duplicates`` tool when it is on PATH.

Crediting reads per deposit need a running gateway: bench/bench_crediting_reads.py counts them.

    .venv/bin/python scripts/architecture_figures.py [--root DIR] [--map TOML] [--no-duplicates] [--details]
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent / "refactor")]
from rewrite_imports import module_of  # noqa: E402 - sibling scripts (scripts/ is no package)
from shadow_tree import package_dirs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "scripts" / "refactor" / "floors_moves.toml"
CORE = "orbchain.core"
CYCLE_SCOPE = ("orbchain.core", "orbchain.web", "orbchain.plugins", "orbchain.chains")
BUILT_INS = ("orbchain.plugins", "orbchain.chains")
SKIPPED_PARTS = {"__pycache__", "migrations", "plugin_templates", "templates", "static", "locale"}
# The core's dispatchers that take a hook's name as a string (core/contract/plugins.py), and Gateway.emit.
STRING_CALLERS = {"call_first", "call_first_answer", "call_collect", "call_collect_answers", "call_event",
                  "call_event_impls", "call_filter", "emit"}
MODULE, FUNCTION, TYPE_CHECKING = "module", "function", "type_checking"


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (the longest known prefix of what the statement names)
    line: int
    kind: str  # MODULE, FUNCTION or TYPE_CHECKING


@dataclass
class Source:
    name: str
    path: Path
    tree: ast.Module
    type_checking: bool = False  # has an ``if TYPE_CHECKING`` block


@dataclass
class Tree:
    root: Path
    modules: dict[str, Source] = field(default_factory=dict)
    imports: list[Import] = field(default_factory=list)


# ----------------------------------------------------------------------------------------- reading


def _inside(tree: ast.AST, test: Callable[[ast.AST], bool]) -> set[int]:
    """ids of every node inside a statement body of a node passing ``test``."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if test(node):
            for statement in getattr(node, "body", []):
                found.update(id(n) for n in ast.walk(statement))
    return found


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def read_tree(root: Path) -> Tree:
    folders = {folder: name for name, folder in package_dirs(root).items()}
    tree = Tree(root)
    for folder in folders:
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            relative = path.relative_to(root)
            if SKIPPED_PARTS & set(relative.parts) or (folder == "orbchain" and relative.parts[1] in folders.values()):
                continue
            name = module_of(relative, folders)
            if name is None or name in tree.modules:
                continue
            parsed = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            tree.modules[name] = Source(name, path, parsed, any(_is_type_checking(n) for n in ast.walk(parsed)))
    for source in tree.modules.values():
        tree.imports += list(_imports_of(source, tree.modules))
    return tree


def _known(name: str, modules: dict[str, Source]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports_of(source: Source, modules: dict[str, Source]) -> Iterator[Import]:
    checking = _inside(source.tree, _is_type_checking)
    local = _inside(source.tree, lambda n: isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    package = source.name if source.path.name == "__init__.py" else source.name.rpartition(".")[0]
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Import):
            named = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            named = [f"{base}.{alias.name}" for alias in node.names] or [base]
        else:
            continue
        kind = TYPE_CHECKING if id(node) in checking else FUNCTION if id(node) in local else MODULE
        for target in {_known(name, modules) for name in named}:
            if target and target != source.name:
                yield Import(source.name, target, node.lineno, kind)


# ----------------------------------------------------------------------------------------- floors


@dataclass(frozen=True)
class Floors:
    """The target floors and where each core module stands, today or after the map's moves."""

    order: list[list[str]]
    moves: dict[str, str]  # "room.module" or root "module" -> target room
    today: dict[str, str]  # root module -> its room before any move

    @classmethod
    def load(cls, path: Path) -> "Floors":
        table = tomllib.loads(path.read_text(encoding="utf-8"))
        floors = table["floors"]
        moves = {key: target.partition("/")[0] for key, target in table.get("modules", {}).items()}
        return cls([list(rooms) for rooms in floors["order"]], moves, dict(floors.get("today", {})))

    def floor_of(self, room: str) -> int | None:
        for index, rooms in enumerate(self.order):
            if room in rooms:
                return index
        return None

    def room_today(self, module: str) -> str | None:
        if not module.startswith(CORE + "."):
            return None
        first = module[len(CORE) + 1:].split(".")[0]
        return self.today.get(first, first)

    def room_moved(self, module: str) -> str | None:
        if not module.startswith(CORE + "."):
            return None
        key = module[len(CORE) + 1:]
        parts = key.split(".")
        for length in range(len(parts), 0, -1):
            moved = self.moves.get(".".join(parts[:length]))
            if moved is not None:
                return moved
        return self.room_today(module)


@dataclass(frozen=True)
class Breach:
    source_room: str
    target_room: str
    imp: Import


def breaches(tree: Tree, floors: Floors, room_of: Callable[[str], str | None]) -> tuple[list[Breach], set[str]]:
    """Imports from a room to a higher floor or a sibling on its floor; and the rooms no floor names."""
    found, unplaced = [], set()
    for imp in tree.imports:
        source, target = room_of(imp.source), room_of(imp.target)
        if source is None or target is None or source == target:
            continue
        low, high = floors.floor_of(source), floors.floor_of(target)
        if low is None or high is None:
            unplaced |= {room for room, f in ((source, low), (target, high)) if f is None}
            continue
        if high >= low:
            found.append(Breach(source, target, imp))
    return found, unplaced


def mutual_pairs(tree: Tree, room_of: Callable[[str], str | None]) -> list[tuple[str, str]]:
    edges = {(room_of(i.source), room_of(i.target)) for i in tree.imports}
    edges = {(a, b) for a, b in edges if a and b and a != b}
    return sorted((a, b) for a, b in edges if (b, a) in edges and a < b)  # type: ignore[operator]


# ----------------------------------------------------------------------------------------- cycles


def cycles(tree: Tree, kinds: Iterable[str]) -> list[list[str]]:
    """Strongly connected components of two or more modules (Tarjan), over imports of ``kinds``."""
    wanted = set(kinds)
    graph: dict[str, set[str]] = defaultdict(set)
    for imp in tree.imports:
        if imp.kind in wanted and imp.source.startswith(CYCLE_SCOPE) and imp.target.startswith(CYCLE_SCOPE):
            graph[imp.source].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


# ----------------------------------------------------------------------------------------- the public face


def api_names(tree: Tree) -> dict[str, set[str]]:
    """{api module: names in its ``__all__``} for orbchain.api and its sub-modules."""
    faces = {}
    for name, source in tree.modules.items():
        if name != "orbchain.api" and not name.startswith("orbchain.api."):
            continue
        names: set[str] = set()
        for node in source.tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                    for t in node.targets):
                names = {elt.value for elt in getattr(node.value, "elts", []) if isinstance(elt, ast.Constant)}
        faces[name] = names
    return faces


def package_of(module: str) -> str:
    """``orbchain.plugins.links.routes`` -> ``plugins.links``; a single-module plugin is its own package."""
    return ".".join(module.split(".")[1:3])


def api_use(tree: Tree) -> dict[tuple[str, str], set[str]]:
    """{(api module, name): built-in packages importing it}."""
    faces = api_names(tree)
    used: dict[tuple[str, str], set[str]] = defaultdict(set)
    for source in tree.modules.values():
        if not source.name.startswith(BUILT_INS):
            continue
        package = source.name if source.path.name == "__init__.py" else source.name.rpartition(".")[0]
        for node in ast.walk(source.tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                parts = package.split(".")
                module = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                if module in faces and alias.name in faces[module]:
                    used[(module, alias.name)].add(package_of(source.name))
                elif f"{module}.{alias.name}" in faces:  # ``from orbchain.api import merchant``
                    used[(f"{module}.{alias.name}", "*")].add(package_of(source.name))
    return used


# ----------------------------------------------------------------------------------------- the gateway and hooks


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _is_gateway(node: ast.AST) -> bool:
    return _dotted(node).split(".")[-1] == "gateway"


@dataclass
class Counts:
    counters: Counter[str] = field(default_factory=Counter)
    files: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    untyped: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))  # hook -> [all, untyped]


def count_uses(tree: Tree) -> Counts:
    counts = Counts()
    for name, source in tree.modules.items():
        if source.type_checking:
            counts.files["type_checking"].add(name)
        for node in ast.walk(source.tree):
            if isinstance(node, ast.ImportFrom) and any(a.name == "Gateway" for a in node.names):
                counts.files["gateway"].add(name)
            elif isinstance(node, ast.Attribute) and _is_gateway(node.value):
                counts.files["gateway"].add(name)
                counts.counters[f"gateway.{node.attr}"] += 1
            elif isinstance(node, ast.Call):
                _count_call(node, name, counts)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _count_hookimpl(node, counts)
    return counts


def _count_call(node: ast.Call, module: str, counts: Counts) -> None:
    callee = _dotted(node.func).split(".")
    if callee[-1] in STRING_CALLERS and not module.endswith("contract.plugins"):
        if callee[-1] != "emit" or any(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args):
            counts.counters["string hook calls"] += 1
            counts.files["string hook calls"].add(module)
    if len(callee) >= 3 and callee[-3:-1] == ["pm", "hook"] or len(callee) >= 4 and callee[-4:-2] == ["pm", "hook"]:
        counts.counters["pm.hook calls"] += 1
        counts.files["pm.hook calls"].add(module)


def _hook_decorator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _dotted(target).split(".")[-1] == "hookimpl":
            return decorator
    return None


def _count_hookimpl(node: ast.FunctionDef | ast.AsyncFunctionDef, counts: Counts) -> None:
    decorator = _hook_decorator(node)
    if decorator is None:
        return
    spec = node.name
    if isinstance(decorator, ast.Call):
        for keyword in decorator.keywords:
            if keyword.arg == "specname" and isinstance(keyword.value, ast.Constant):
                spec = str(keyword.value.value)
            if keyword.arg in ("wrapper", "hookwrapper"):
                return  # a wrapper takes pluggy's form, not the spec's
    parameters = [a for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs if a.arg != "self"]
    counts.untyped[spec][0] += 1
    if any(a.annotation is None for a in parameters) or node.returns is None:
        counts.untyped[spec][1] += 1


# ----------------------------------------------------------------------------------------- duplicates


def duplicates_line(root: Path) -> str:
    tool = shutil.which("duplicates")
    if tool is None:
        return "duplicates: not on PATH (the figure comes from that tool)"
    done = subprocess.run([tool, "--most", "200", "--seconds", "300"], cwd=root, capture_output=True, text=True,
                          check=False, timeout=900)
    return next((line for line in done.stdout.splitlines() if line.strip()), "duplicates: no output")


# ----------------------------------------------------------------------------------------- the report


def _where(imp: Import) -> str:
    return f"{imp.source.removeprefix(CORE + '.')}:{imp.line}{'*' if imp.kind == TYPE_CHECKING else ''}"


def _breach_lines(found: list[Breach], details: bool) -> list[str]:
    runtime = [b for b in found if b.imp.kind != TYPE_CHECKING]
    pairs = Counter((b.source_room, b.target_room) for b in runtime)
    all_pairs = Counter((b.source_room, b.target_room) for b in found)
    out = [f"  runtime imports (module level and in functions): {len(runtime)} lines, {len(pairs)} room pairs",
           f"  with TYPE_CHECKING imports too:                 {len(found)} lines, {len(all_pairs)} room pairs"]
    if details:
        for (source, target), n in sorted(all_pairs.items()):
            lines = sorted({_where(b.imp) for b in found if (b.source_room, b.target_room) == (source, target)})
            out.append(f"    {source} -> {target} ({n}): {', '.join(lines)}")
    return out


def report(root: Path = ROOT, floors_map: Path = MAP, *, duplicates: bool = True, details: bool = False) -> str:
    tree = read_tree(root)
    floors = Floors.load(floors_map)
    out = [f"Issue 44 figures for {root.name} ({len(tree.modules)} modules read)", ""]
    before, unplaced = breaches(tree, floors, floors.room_today)
    after, unplaced_after = breaches(tree, floors, floors.room_moved)
    out.append("Imports that run back up a floor (floors of the map; * = under TYPE_CHECKING)")
    out.append(" today's rooms:")
    out += _breach_lines(before, details)
    out.append(" after the map's moves, before any code change:")
    out += _breach_lines(after, details)
    if unplaced | unplaced_after:
        out.append(f"  rooms on no floor: {', '.join(sorted(unplaced | unplaced_after))}")
    mutual = mutual_pairs(tree, floors.room_today)
    out.append(f"Room pairs that import each other (today): {len(mutual)}"
               + (f": {', '.join(f'{a}<->{b}' for a, b in mutual)}" if details else ""))
    out += ["", "Import cycles under core/, web/, plugins/, chains/ (components of 2+ modules)"]
    for label, kinds in (("module-level imports", (MODULE,)), ("+ function-level", (MODULE, FUNCTION)),
                         ("+ TYPE_CHECKING", (MODULE, FUNCTION, TYPE_CHECKING))):
        found = cycles(tree, kinds)
        sizes = ", ".join(str(len(c)) for c in found[:8])
        out.append(f"  {label:22} {len(found)} cycles, {sum(map(len, found))} modules (largest: {sizes or '-'})")
        if details and found and kinds == (MODULE,):
            out.append(f"    largest: {', '.join(m.removeprefix('orbchain.') for m in found[0])}")
    counts = count_uses(tree)
    product = len(tree.modules)
    out += ["", f"Files with an `if TYPE_CHECKING` block: {len(counts.files['type_checking'])} of {product}"]
    faces = api_names(tree)
    used = api_use(tree)
    out.append("")
    out.append("orbchain.api names (__all__) and their use by the built-in plugins and chains")
    total = by_one = by_none = 0
    for face in sorted(faces):
        names = faces[face]
        users = {name: used.get((face, name), set()) for name in names}
        one, none = sum(len(u) == 1 for u in users.values()), sum(not u for u in users.values())
        total, by_one, by_none = total + len(names), by_one + one, by_none + none
        out.append(f"  {face:24} {len(names):4} names: used {len(names) - none:4}, by one package {one:4},"
                   f" by none {none:4}")
    out.append(f"  {'all':24} {total:4} names: used {total - by_none:4}, by one package {by_one:4},"
               f" by none {by_none:4}")
    touching = len(counts.files["gateway"])
    out += ["", f"Files that touch Gateway (import it or use gateway.<field>): {touching} of {product}",
            f"  gateway.db: {counts.counters['gateway.db']}, gateway.services: {counts.counters['gateway.services']},"
            f" gateway.pm: {counts.counters['gateway.pm']}, gateway.secrets: {counts.counters['gateway.secrets']}",
            f"Hook calls by name string: {counts.counters['string hook calls']}"
            f" (in {len(counts.files['string hook calls'])} files); direct pm.hook.X calls:"
            f" {counts.counters['pm.hook calls']} (in {len(counts.files['pm.hook calls'])} files)"]
    impls = sum(a for a, _ in counts.untyped.values())
    untyped = sum(u for _, u in counts.untyped.values())
    out.append(f"Hook implementations with an unannotated parameter or answer: {untyped} of {impls}"
               f" ({sum(1 for _, u in counts.untyped.values() if u)} of {len(counts.untyped)} hooks)")
    if details:
        out += [f"    {hook}: {u} of {a}" for hook, (a, u) in sorted(counts.untyped.items()) if u]
    if duplicates:
        out += ["", f"Pairs sharing six or more similar lines: {duplicates_line(root)}"]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to read (default: this one)")
    parser.add_argument("--map", type=Path, default=MAP, help="the floors (default: refactor/floors_moves.toml)")
    parser.add_argument("--no-duplicates", action="store_true", help="do not run the duplicates tool")
    parser.add_argument("--details", action="store_true", help="list each breach, cycle and untyped hook")
    args = parser.parse_args(argv)
    print(report(args.root, args.map, duplicates=not args.no_duplicates, details=args.details))
    return 0


if __name__ == "__main__":
    sys.exit(main())
