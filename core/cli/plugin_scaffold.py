"""``orbchain plugin new NAME``: a chain or feature plugin package whose tests pass at once.

The role datasette's cookiecutter template plays, without a template engine:
the package's files are plain files under ``plugin_templates/`` (``common/``
for both kinds, then ``chain/`` or ``feature/``), installed as package data,
with a handful of ``{{token}}`` placeholders replaced by plain text
substitution (docs/decisions.md, "orbchain plugin new: package-data
templates, no cookiecutter"). ``package/`` becomes ``orbchain_NAME/``.
Nothing is ever overwritten: an existing non-empty target is refused.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import keyword
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ... import __version__
from ..contract.plugins import ENTRY_POINT_GROUP

TEMPLATES = Path(__file__).parent / "plugin_templates"
KINDS = ("feature", "chain")
SUFFIX = ".tmpl"
_NAME = re.compile(r"^[a-z][a-z0-9_]{1,29}$")
_TOKEN = re.compile(r"\{\{[A-Za-z_]+\}\}")


class ScaffoldError(ValueError):
    """A name or target the scaffold refuses; the command prints it and exits 2."""


@dataclass(frozen=True)
class Scaffold:
    """What ``plugin new`` wrote: the package folder and its files (relative paths)."""

    root: Path
    files: tuple[str, ...]


def check_name(name: str) -> str:
    """The plugin name, or ``ScaffoldError`` saying what a name must be.

    It becomes the entry-point name, the chain or scope name and part of the
    module ``orbchain_NAME``, so it is a lower-case identifier that no
    installed plugin uses (a second plugin of one name would be skipped).
    """
    if not _NAME.match(name) or "__" in name or name.endswith("_") or keyword.iskeyword(name):
        raise ScaffoldError(f"plugin name {name!r}: use 2 to 30 lower-case letters, digits and single"
                            " underscores, starting with a letter (e.g. loyalty, my_chain)")
    taken = {entry.name for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    if name in taken:
        raise ScaffoldError(f"plugin name {name!r} is taken by an installed plugin; choose another")
    return name


def supported_range(version: str = __version__) -> str:
    """The PEP 440 range a new plugin declares: this release's series (0.x moves by minor, later by major)."""
    major, minor = (int(part) for part in re.findall(r"\d+", version)[:2])
    upper = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"
    return f">={major}.{minor},<{upper}"


def tokens(name: str, kind: str) -> dict[str, str]:
    return {
        "{{name}}": name,
        "{{Name}}": "".join(part.capitalize() for part in name.split("_")),
        "{{SYMBOL}}": name.replace("_", "").upper()[:10],
        "{{kind}}": kind,
        "{{requires}}": supported_range(),
        # The packages the generated code imports itself: a feature's routes are aiohttp's.
        "{{dependencies}}": ", ".join(f'"{d}"' for d in (f"orbchain{supported_range()}",
                                                         *(("aiohttp",) if kind == "feature" else ()))),
        "{{version}}": __version__,
    }


def _render(text: str, values: dict[str, str], source: Path) -> str:
    for token, value in values.items():
        text = text.replace(token, value)
    left = _TOKEN.search(text)
    if left:  # a template naming a token nobody fills is a bug in the templates, not the user's
        raise RuntimeError(f"{source}: unknown placeholder {left.group()}")
    return text


def _templates(kind: str) -> list[tuple[Path, Path]]:
    """(template file, relative target path before substitution), common files first."""
    found = []
    for base in (TEMPLATES / "common", TEMPLATES / kind):
        for source in sorted(base.rglob(f"*{SUFFIX}")):
            found.append((source, source.relative_to(base).with_name(source.name[:-len(SUFFIX)])))
    return found


def scaffold(name: str, kind: str = "feature", parent: Path | str = ".") -> Scaffold:
    """Write ``orbchain-NAME/`` under ``parent``; ``ScaffoldError`` for a bad name, kind or taken target."""
    if kind not in KINDS:
        raise ScaffoldError(f"plugin kind {kind!r}: use one of {', '.join(KINDS)}")
    check_name(name)
    root = Path(parent) / f"orbchain-{name}"
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ScaffoldError(f"{root} exists and is not empty; nothing was written")
    values = tokens(name, kind)
    written = []
    for source, relative in _templates(kind):
        parts = [f"orbchain_{name}" if part == "package" else _render(part, values, source)
                 for part in relative.parts]
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_render(source.read_text(encoding="utf-8"), values, source), encoding="utf-8")
        written.append(str(target.relative_to(root)))
    return Scaffold(root, tuple(written))


def cmd_plugin_new(args: argparse.Namespace) -> int:
    try:
        made = scaffold(args.name, args.kind, args.dir)
    except ScaffoldError as exc:
        print(f"orbchain: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {made.root}/ ({args.kind} plugin {args.name}):")
    for path in made.files:
        print(f"  {path}")
    print(f"next: cd {made.root} && pip install -e '.[test]' && ORBCHAIN_TEST_SQLITE_ONLY=1 pytest")
    return 0


def add_plugin_command(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """``orbchain plugin new NAME [--kind feature|chain] [--dir PATH]``."""
    plugin = sub.add_parser("plugin", help="plugin authoring tools")
    plugin_sub = plugin.add_subparsers(dest="plugin_command", required=True)
    new = plugin_sub.add_parser("new", help="scaffold a chain or feature plugin package whose tests pass at once")
    new.add_argument("name", help="the plugin's name: lower case, e.g. loyalty (package orbchain_NAME)")
    new.add_argument("--kind", choices=KINDS, default="feature", help="a feature plugin (default) or a chain plugin")
    new.add_argument("--dir", default=".", help="where to create orbchain-NAME/ (default: the current folder)")
    new.set_defaults(func=cmd_plugin_new)
