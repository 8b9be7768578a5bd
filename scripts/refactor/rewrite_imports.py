"""Group core/ into rooms (sub-packages) and rewrite every reference to the moved modules (issue 30).

Why a tool and not a hand-made move: other branches change core/ at the same time, so the move is
run once on main after they merged, from a map (scripts/refactor/moves.toml) that says where each
module goes. The tool

* places every core/ module by the map ([modules], then [patterns]) and refuses to start while a
  module is placed by nothing ("unplaced": add it to the map);
* ``git mv``s the modules (and the data files of [data]) into their rooms and writes each new room's
  ``__init__.py`` (a docstring naming the room's job);
* rewrites imports in every Python file of the tree with libcst: absolute (``from orbchain.core.x``),
  relative (``from .x``, ``from ..core.x``, ``from . import x``, moved files' own relative imports),
  keeping each local name (``from . import ledger`` becomes ``from .ledger import book as ledger``);
* rewrites dotted names and paths in text: strings (``mock.patch("orbchain.core.x.f")``, logger
  names), comments, docstrings, docs/*.md, setup.cfg and pyproject.toml (``orbchain.core.x`` and
  ``core.x`` to the new dotted name, ``core/x.py`` to ``core/room/x.py``); setup.cfg's ``packages``
  gains the rooms and ``package_data`` follows the data files.

* moves values split out of a module by hand ([names]: ``"payments.service.new_track_id" =
  "types.ids.new_track_id"``, both in the new layout): a ``from`` import of one in core/ (but not in
  the rooms of [names_keep]) imports it from its new module under the same local name; web/,
  orbchain.api and tests keep the old names, which stay importable where they were.

Idempotent: references already in the new layout are left alone, so a second run (or ``--check``)
finds nothing to do. A room may share its name with a module that moves into it (ledger.py becomes
ledger/book.py); then ``orbchain.core.ledger.<name>`` is rewritten only when ``<name>`` is not a
module of the room, and a bare ``orbchain.core.ledger`` only while ledger.py is still being moved.

Usage (from the repository root)::

    python scripts/refactor/rewrite_imports.py --check   # report, change nothing; exit 1 if work is left
    python scripts/refactor/rewrite_imports.py           # move and rewrite
    python scripts/refactor/rewrite_imports.py --no-git  # rename without git (a copy of the tree)

Exit status: 0 done or nothing to do, 1 (--check) work left, 2 unplaced modules, a bad map or a Python
file that does not parse (nothing is changed then).
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import re
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from shadow_tree import package_dirs  # a sibling script (scripts/ is no package)

ROOT = Path(__file__).resolve().parents[2]
MAP = Path(__file__).resolve().parent / "moves.toml"
CORE_PKG = "orbchain.core"
# Where references to core modules may live; everything else (the venv, build/, baselines) is left alone.
SCANNED_DIRS = ("core", "web", "plugins", "chains", "scheduler", "migrations", "orbchain", "tests", "bench",
                "scripts", "docs", "deploy")
SCANNED_TOP = ("README.md", "setup.cfg", "pyproject.toml", "Makefile")
SUFFIXES = (".py", ".md", ".toml", ".cfg")
# The tool, its map and its tests name old modules on purpose.
SKIPPED = ("scripts/refactor/", "tests/test_refactor_rooms.py", "tests/unit/test_refactor_floors.py",
           "tests/upgrade_baselines/")


class MapError(Exception):
    """The map cannot be applied as written (an unplaced module, a room clashing with a module's names)."""


@dataclass
class Plan:
    """What one run does: the name map, the files to move, the rooms to create."""

    root: Path
    rooms: dict[str, str]
    names: dict[str, str] = field(default_factory=dict)  # old leaf under core -> new dotted tail ("ledger.book")
    packages: set[str] = field(default_factory=set)  # old leaves that are packages (prefix-mapped)
    moving: set[str] = field(default_factory=set)  # old leaves whose file is moved by this run
    moves: list[tuple[Path, Path]] = field(default_factory=list)  # relative paths, old -> new
    new_rooms: list[str] = field(default_factory=list)
    data_rooms: dict[str, str] = field(default_factory=dict)  # data entry -> room
    unplaced: list[str] = field(default_factory=list)
    # Values split out of a module by hand ([names]): "room.module.Name" -> "room.module.NewName", and the
    # rooms where an import of one stays as written ([names_keep]: the composition root builds the dataclass).
    values: dict[str, str] = field(default_factory=dict)
    values_keep: dict[str, set[str]] = field(default_factory=dict)
    _children: dict[str, set[str]] = field(default_factory=dict)

    def children(self, room: str) -> set[str]:
        """Module names of ``room`` once moved: from the map and from what is already in its folder."""
        if room not in self._children:
            self._children[room] = self._find_children(room)
        return self._children[room]

    def _find_children(self, room: str) -> set[str]:
        found = {tail.split(".")[1] for tail in self.names.values() if tail.startswith(room + ".")}
        folder = self.root / "core" / room
        if folder.is_dir():
            found |= {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if p.is_dir()}
        return found

    def collides(self, leaf: str) -> bool:
        """True when a moved module's old name is the name of the room it went into (ledger -> ledger.book)."""
        return self.names.get(leaf, "").startswith(leaf + ".")


def load_map(path: Path = MAP) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def place(leaf: str, table: dict) -> str | None:
    """The target ("room" or "room/new_name") of ``leaf``, "" to stay at core/, None when unplaced."""
    if leaf in table.get("root", {}).get("stay", []):
        return ""
    if leaf in table.get("modules", {}):
        return table["modules"][leaf]
    for pattern, room in table.get("patterns", {}).items():
        if fnmatch.fnmatchcase(leaf, pattern):
            return room
    return None


def make_plan(root: Path, table: dict) -> Plan:
    rooms = dict(table["rooms"])
    plan = Plan(root=root, rooms=rooms, data_rooms=dict(table.get("data", {})),
                values=dict(table.get("names", {})),
                values_keep={key: set(rooms_kept) for key, rooms_kept in table.get("names_keep", {}).items()})
    for key, target in plan.values.items():
        if "." not in key or "." not in target:
            raise MapError(f"[names] {key} = {target}: write both as room.module.Name")
    core = root / "core"
    # Every module the map names, present or not: references to them are rewritten even after the move.
    for leaf, target in table.get("modules", {}).items():
        room, _, new = target.partition("/")
        if room not in rooms:
            raise MapError(f"{leaf}: room {room!r} is not in [rooms]")
        if room != leaf or new:
            plan.names[leaf] = f"{room}.{new or leaf.rpartition('.')[2]}"
    for entry in sorted(core.iterdir()):
        leaf = entry.stem if entry.suffix == ".py" else entry.name
        if entry.name == "__pycache__" or (entry.is_dir() and leaf in rooms):
            continue
        is_package = entry.is_dir() and (entry / "__init__.py").is_file()
        if entry.suffix != ".py" and not is_package:
            if leaf not in plan.data_rooms:
                plan.unplaced.append(f"core/{entry.name} (data: add it to [data])")
            elif plan.data_rooms[leaf]:
                plan.moves.append((entry.relative_to(root), Path("core", plan.data_rooms[leaf], entry.name)))
            continue
        target = place(leaf, table)
        if target is None:
            plan.unplaced.append(f"core/{entry.name}")
            continue
        if not target:
            continue
        room, _, new = target.partition("/")
        if room not in rooms:
            raise MapError(f"{leaf}: room {room!r} is not in [rooms]")
        new = new or leaf
        plan.names[leaf] = f"{room}.{new}"
        if is_package:
            plan.packages.add(leaf)
        plan.moving.add(leaf)
        destination = Path("core", room, new + ("" if is_package else ".py"))
        plan.moves.append((entry.relative_to(root), destination))
    _place_room_modules(plan, table)
    plan.new_rooms = sorted({new.parts[1] for _, new in plan.moves
                             if not (root / "core" / new.parts[1] / "__init__.py").is_file()})
    _check_collisions(plan)
    return plan


def _place_room_modules(plan: Plan, table: dict) -> None:
    """[modules] keys naming a module inside a room (``"infra.secrets" = "keys"``, issue 44's floors): moved
    from room to room. A room's modules the map does not name stay; a key whose file is gone has moved."""
    for key, target in table.get("modules", {}).items():
        old_room, dot, module = key.partition(".")
        if not dot:
            continue
        if "." in module:
            raise MapError(f"{key}: name a room's module as room.module")
        source = plan.root / "core" / old_room / module
        is_package = (source / "__init__.py").is_file()
        if not is_package:
            source = source.with_suffix(".py")
            if not source.is_file():
                continue
        room, _, new = target.partition("/")
        plan.moving.add(key)
        if is_package:
            plan.packages.add(key)
        destination = Path("core", room, (new or module) + ("" if is_package else ".py"))
        plan.moves.append((source.relative_to(plan.root), destination))


def _check_collisions(plan: Plan) -> None:
    """A module moving into the room of its own name must not define a name that is also a module of the room."""
    for leaf in sorted(plan.moving):
        if not plan.collides(leaf) or leaf in plan.packages:
            continue
        tree = ast.parse((plan.root / "core" / f"{leaf}.py").read_text(encoding="utf-8"))
        defined = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                defined |= {t.id for t in targets if isinstance(t, ast.Name)}
        clash = defined & plan.children(leaf)
        if clash:
            raise MapError(f"core/{leaf}.py defines {sorted(clash)}, also module names of room {leaf!r}: rename one")


# ---------------------------------------------------------------------------------------------- text


def _dotted_pattern(plan: Plan) -> re.Pattern[str] | None:
    if not plan.names:
        return None
    names = "|".join(sorted(map(re.escape, plan.names), key=len, reverse=True))
    attr = r"(?P<rest>\.(?P<attr>[A-Za-z_]\w*))?"
    return re.compile(rf"(?<![\w.])(?P<pre>(?:orbchain\.)?core)\.(?P<name>{names})\b{attr}")


def _path_pattern(plan: Plan) -> re.Pattern[str] | None:
    if not plan.names:
        return None
    paths = (name.replace(".", "/") for name in plan.names)  # a room's module: core/infra/secrets.py
    names = "|".join(sorted(map(re.escape, paths), key=len, reverse=True))
    return re.compile(rf"(?<![\w.-])core/(?P<name>{names})(?P<tail>\.py\b|/)")


def rewrite_text(text: str, plan: Plan) -> str:
    """Dotted names (``orbchain.core.x.f``, ``core.x``) and paths (``core/x.py``) of moved modules, in any text."""
    dotted, path = _dotted_pattern(plan), _path_pattern(plan)
    if dotted is None or path is None:
        return text

    def dotted_repl(match: re.Match[str]) -> str:
        name, attr = match["name"], match["attr"]
        if plan.collides(name):
            if attr is not None and attr in plan.children(name):
                return match[0]  # already the new layout: orbchain.core.ledger.book
            if attr is None and name not in plan.moving:
                return match[0]  # a bare room name after the move means the room
        return f"{match['pre']}.{plan.names[name]}{match['rest'] or ''}"

    def path_repl(match: re.Match[str]) -> str:
        name, tail = match["name"].replace("/", "."), match["tail"]
        is_package = name in plan.packages
        if is_package != (tail == "/"):
            return match[0]
        return "core/" + plan.names[name].replace(".", "/") + tail

    return path.sub(path_repl, dotted.sub(dotted_repl, text))


# ---------------------------------------------------------------------------------------------- imports


def _dotted(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    if isinstance(node, cst.Name):
        return node.value
    assert isinstance(node, cst.Attribute)
    return f"{_dotted(node.value)}.{node.attr.value}"


def _expr(dotted: str) -> cst.Attribute | cst.Name:
    parts = dotted.split(".")
    node: cst.Attribute | cst.Name = cst.Name(parts[0])
    for part in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


def new_name(plan: Plan, dotted: str) -> str | None:
    """The new dotted name of module ``dotted`` when the map moves it, else None."""
    prefix = CORE_PKG + "."
    if not dotted.startswith(prefix):
        return None
    parts = dotted[len(prefix):].split(".")
    for size in (2, 1):  # a room's module ("infra.secrets") before a module of core/ itself
        leaf, rest = ".".join(parts[:size]), ".".join(parts[size:])
        if len(parts) < size or leaf not in plan.names:
            continue
        if rest and leaf not in plan.packages:
            return None  # a module has no sub-module: orbchain.core.ledger.book is already new
        return ".".join(filter(None, (CORE_PKG, plan.names[leaf], rest)))
    return None


def resolve(package: str | None, level: int, module: str) -> str | None:
    """The absolute module a ``from`` import names, or None for a relative import outside the package."""
    if not level:
        return module
    if package is None:
        return None  # a relative import outside the package (tests/): not ours
    base = package.split(".")
    base = base[: len(base) - level + 1]
    return ".".join([*base, module] if module else base)


def moves_alias(plan: Plan, absolute: str, name: str) -> bool:
    """Whether ``from <absolute> import <name>`` names a moved module or an attribute of one."""
    if new_name(plan, f"{absolute}.{name}") is not None:
        return True
    leaf = absolute.rpartition(".")[2]
    return new_name(plan, absolute) is not None and not (plan.collides(leaf) and name in plan.children(leaf))


def value_target(plan: Plan, module: str, name: str, room: str | None) -> tuple[str, str] | None:
    """(new module, new name) when ``from <module> import <name>`` names a value [names] split out, else None.

    ``module`` is absolute and already in the new layout; ``room`` is the core room of the importing file,
    None outside core/ (web/, orbchain.api and tests keep the old names, which stay importable)."""
    prefix = CORE_PKG + "."
    if room is None or not module.startswith(prefix):
        return None
    key = f"{module[len(prefix):]}.{name}"
    target = plan.values.get(key)
    if target is None or room in plan.values_keep.get(key, set()):
        return None
    new_module, _, new_value = target.rpartition(".")
    return f"{prefix}{new_module}", new_value


def core_room(module: str | None) -> str | None:
    """The room (or root module: ``startup``) of core an importing module stands in; None outside core/."""
    prefix = CORE_PKG + "."
    if module is None or not module.startswith(prefix):
        return None
    return module[len(prefix):].split(".")[0]


def needs_cst(text: str, plan: Plan, old_package: str | None, moved: bool, room: str | None = None) -> bool:
    """A fast pass with ``ast``: does any ``from`` import of this file change? (libcst is the slow part.)"""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False  # a template, not a module: its text is rewritten, it has no imports to resolve
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if moved and node.level:
            return True
        absolute = resolve(old_package, node.level, node.module or "")
        if absolute is None:
            continue
        names = [a.name for a in node.names if a.name != "*"]
        if any(moves_alias(plan, absolute, name) for name in names):
            return True
        if any(value_target(plan, absolute, name, room) for name in names):
            return True
    return False


LINE_LIMIT = 120  # pyproject.toml's ruff line-length
_EMPTY = cst.Module(body=[])


class _Imports(cst.CSTTransformer):
    """Rewrites ``from ... import ...`` statements naming moved modules; see ``rewrite_python``."""

    def __init__(self, plan: Plan, old_package: str | None, new_package: str | None,
                 room: str | None = None) -> None:
        self.plan = plan
        self.room = room  # the core room the file stands in, for [names] (None outside core/)
        self.old_package = old_package  # the package the file's relative imports were written against
        self.new_package = new_package  # the package it is in after the move
        self.moved = old_package != new_package
        self.changed = False
        self.depth = 0  # indented blocks around the statement: a function-local import is 4 columns further in

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:  # libcst's visitor name
        self.depth += 1
        return True

    def leave_IndentedBlock(  # libcst's visitor name
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        self.depth -= 1
        return updated

    def fit(self, line: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        """A ``from`` import longer than the line limit, one name a line in parentheses (the code's style)."""
        node = line.body[0]
        assert isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar)
        if node.lpar is not None or 4 * self.depth + len(_EMPTY.code_for_node(node)) <= LINE_LIMIT:
            return line
        newline = cst.ParenthesizedWhitespace(indent=True, last_line=cst.SimpleWhitespace("    "))
        names = [a.with_changes(comma=cst.Comma(whitespace_after=newline)) for a in node.names]
        last = cst.ParenthesizedWhitespace(indent=True, last_line=cst.SimpleWhitespace(""))
        names[-1] = names[-1].with_changes(comma=cst.Comma(whitespace_after=last))
        node = node.with_changes(names=names, lpar=cst.LeftParen(whitespace_after=newline), rpar=cst.RightParen())
        return line.with_changes(body=[node])

    def new_name(self, dotted: str) -> str | None:
        return new_name(self.plan, dotted)

    def resolve(self, node: cst.ImportFrom) -> str | None:
        return resolve(self.old_package, len(node.relative), _dotted(node.module))

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:  # libcst's visitor name
        return False  # the import is handled whole on leaving; its expressions need no visit (speed)

    def emit_module(self, target: str, relative: bool) -> tuple[list[cst.Dot], cst.Attribute | cst.Name | None]:
        if not relative:
            return [], _expr(target)
        assert self.new_package is not None
        pkg, tgt = self.new_package.split("."), target.split(".")
        common = 0
        while common < min(len(pkg), len(tgt)) and pkg[common] == tgt[common]:
            common += 1
        rest = tgt[common:]
        return [cst.Dot()] * (len(pkg) - common + 1), (_expr(".".join(rest)) if rest else None)

    def leave_SimpleStatementLine(  # libcst's visitor name
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.ImportFrom):
            return updated
        node = updated.body[0]
        if isinstance(node.names, cst.ImportStar):
            return updated
        absolute = self.resolve(node)
        if absolute is None:
            return updated
        relative = bool(node.relative)
        groups: dict[str, list[cst.ImportAlias]] = {}
        kept: set[str] = set()
        for alias in node.names:
            name = _dotted(alias.name)
            whole = self.new_name(f"{absolute}.{name}")
            if whole is not None:  # the alias is a moved module: import its new leaf under the old local name
                parent, _, leaf = whole.rpartition(".")
                local = alias.asname.name.value if alias.asname else name  # type: ignore[attr-defined]
                asname = cst.AsName(name=cst.Name(local)) if local != leaf else None
                groups.setdefault(parent, []).append(cst.ImportAlias(name=cst.Name(leaf), asname=asname))
                continue
            target = absolute
            moved = self.new_name(absolute)
            leaf = absolute.rpartition(".")[2]
            if moved is not None and not (self.plan.collides(leaf) and name in self.plan.children(leaf)):
                target = moved
            value = value_target(self.plan, target, name, self.room)
            if value is not None:  # a value split out by hand: import it from its new module, same local name
                value_module, value_name = value
                local = alias.asname.name.value if alias.asname else name  # type: ignore[attr-defined]
                asname = cst.AsName(name=cst.Name(local)) if local != value_name else None
                groups.setdefault(value_module, []).append(cst.ImportAlias(name=cst.Name(value_name), asname=asname))
                continue
            groups.setdefault(target, []).append(alias)
            kept.add(target)
        if list(groups) == [absolute] and not (relative and self.moved):
            return updated
        self.changed = True
        statements: list[cst.BaseStatement] = []
        for index, (target, aliases) in enumerate(groups.items()):
            dots, module = self.emit_module(target, relative)
            if target in kept:
                names = list(aliases)
                if node.lpar is None:
                    names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                new_node = node.with_changes(relative=dots, module=module, names=names)
            else:
                fresh = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in aliases]
                new_node = cst.ImportFrom(module=module, names=fresh, relative=dots)
            line = self.fit(updated.with_changes(body=[new_node]))
            if index:
                line = line.with_changes(leading_lines=[])
            statements.append(line)
        return statements[0] if len(statements) == 1 else cst.FlattenSentinel(statements)


def rewrite_python(source: str, plan: Plan, old_module: str | None, new_module: str | None,
                   is_package: bool = False) -> str:
    """Text rewrite, then the ``from ... import`` rewrite, of one Python file's source."""
    text = rewrite_text(source, plan)
    old_package = old_module if is_package or old_module is None else old_module.rpartition(".")[0]
    new_package = new_module if is_package or new_module is None else new_module.rpartition(".")[0]
    room = core_room(new_module)
    if not needs_cst(text, plan, old_package, old_package != new_package, room):
        return text
    transformer = _Imports(plan, old_package, new_package, room)
    tree = cst.parse_module(text).visit(transformer)
    return tree.code if transformer.changed else text


# ---------------------------------------------------------------------------------------------- setup.cfg


def rewrite_setup_cfg(text: str, plan: Plan, rooms_present: list[str]) -> str:
    """Rooms join ``packages`` (after ``orbchain.core``); ``package_data`` of core follows the data files."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    listed = {line.strip() for line in lines}
    for line in lines:
        if line.startswith(f"{CORE_PKG} ="):  # package_data (package_dir's lines are indented)
            key, _, value = line.partition("=")
            by_room: dict[str, list[str]] = {}
            for pattern in (p.strip() for p in value.split(",")):
                head = pattern.split("/")[0]
                by_room.setdefault(plan.data_rooms.get(head, ""), []).append(pattern)
            if "" in by_room:
                out.append(f"{key}= {', '.join(by_room.pop(''))}\n")
            out.extend(f"{CORE_PKG}.{room} = {', '.join(patterns)}\n" for room, patterns in sorted(by_room.items()))
            continue
        out.append(line)
        if line.rstrip("\n") == f"    {CORE_PKG}":
            out.extend(f"    {CORE_PKG}.{room}\n" for room in rooms_present if f"{CORE_PKG}.{room}" not in listed)
    return "".join(out)


# ---------------------------------------------------------------------------------------------- run


def scanned_files(root: Path) -> list[Path]:
    files = [root / name for name in SCANNED_TOP if (root / name).is_file()]
    for folder in SCANNED_DIRS:
        if (root / folder).is_dir():
            files += [p for p in sorted((root / folder).rglob("*")) if p.is_file() and p.suffix in SUFFIXES]
    return [p for p in files if not any(p.relative_to(root).as_posix().startswith(s) for s in SKIPPED)
            and "__pycache__" not in p.parts]


def module_of(relative: Path, folders: dict[str, str]) -> str | None:
    """The installed dotted name of a source file (``core/ledger.py`` -> ``orbchain.core.ledger``), or None."""
    parts = list(relative.with_suffix("").parts)
    for length in range(len(parts), 0, -1):
        folder = "/".join(parts[:length])
        if folder in folders:
            rest = parts[length:]
            if rest and rest[-1] == "__init__":
                rest.pop()
            return ".".join([folders[folder], *rest])
    return None


def unparsable(root: Path) -> list[Path]:
    """Python files of the scanned tree that do not parse: their imports cannot be rewritten."""
    broken = []
    for path in scanned_files(root):
        if path.suffix == ".py":
            try:
                ast.parse(path.read_text(encoding="utf-8"))
            except SyntaxError:
                broken.append(path.relative_to(root))
    return broken


def compute(root: Path, plan: Plan) -> dict[Path, tuple[Path, str]]:
    """{old relative path: (new relative path, new text)} of every file whose place or text changes."""
    folders = {folder: name for name, folder in package_dirs(root).items()}
    moved = {old: new for old, new in plan.moves}
    results: dict[Path, tuple[Path, str]] = {}
    for path in scanned_files(root):
        relative = path.relative_to(root)
        new_relative = relative
        for old, new in moved.items():
            if relative == old or old in relative.parents:
                new_relative = new / relative.relative_to(old) if relative != old else new
        source = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            text = rewrite_python(source, plan, module_of(relative, folders), module_of(new_relative, folders),
                                  is_package=path.name == "__init__.py")
        else:
            text = rewrite_text(source, plan)
        if relative.as_posix() == "setup.cfg":
            text = rewrite_setup_cfg(text, plan, sorted(set(plan.rooms) & _rooms_after(root, plan)))
        if text != source or new_relative != relative:
            results[relative] = (new_relative, text)
    return results


def _rooms_after(root: Path, plan: Plan) -> set[str]:
    present = {p.name for p in (root / "core").iterdir() if p.is_dir() and p.name in plan.rooms}
    return present | {new.parts[1] for _, new in plan.moves}


def apply(root: Path, plan: Plan, changes: dict[Path, tuple[Path, str]], use_git: bool) -> None:
    for room in plan.new_rooms:
        folder = root / "core" / room
        folder.mkdir(exist_ok=True)  # a folder left with only __pycache__ by an earlier checkout
        (folder / "__init__.py").write_text(f'"""{plan.rooms[room]}"""\n', encoding="utf-8")
        if use_git:
            subprocess.run(["git", "add", str(folder / "__init__.py")], cwd=root, check=True)
    for old, new in plan.moves:
        if use_git:
            subprocess.run(["git", "mv", str(old), str(new)], cwd=root, check=True)
        else:
            (root / old).rename(root / new)
    for _, (new, text) in changes.items():
        (root / new).write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="report what a run would do; change nothing")
    parser.add_argument("--no-git", action="store_true", help="rename files without git mv")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: this checkout)")
    parser.add_argument("--map", type=Path, default=MAP, help="the map (default: scripts/refactor/moves.toml)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        plan = make_plan(args.root, load_map(args.map))
    except MapError as error:
        print(f"map error: {error}", file=sys.stderr)
        return 2
    if plan.unplaced:
        print("unplaced (add to scripts/refactor/moves.toml [modules], [patterns] or [data]):", file=sys.stderr)
        for entry in plan.unplaced:
            print(f"  {entry}", file=sys.stderr)
        return 2
    broken = unparsable(args.root)
    if broken:  # its imports could not be read, so they would be left in the old layout without a word
        print("unparsable (a merge left conflict markers? fix them first):", file=sys.stderr)
        for path in broken:
            print(f"  {path}", file=sys.stderr)
        return 2
    changes = compute(args.root, plan)
    for old, new in plan.moves:
        print(f"move    {old} -> {new}")
    for room in plan.new_rooms:
        print(f"room    core/{room}/__init__.py")
    for new, _ in sorted(changes.values()):
        print(f"rewrite {new}")
    if args.check:
        print(f"{len(plan.moves)} moves, {len(changes)} files to change ({time.monotonic() - started:.1f} s)")
        return 1 if plan.moves or changes else 0
    apply(args.root, plan, changes, use_git=not args.no_git)
    print(f"done: {len(plan.moves)} moves, {len(changes)} files changed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
