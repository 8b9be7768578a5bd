"""The installed package ``orbchain`` as a tree of symlinks, for tools that read source by module name.

setup.cfg's ``package_dir`` installs ``core/`` as ``orbchain.core``, ``web/``
as ``orbchain.web`` and so on, and the code's relative imports (``from
...core import auth``) only resolve under those names. The editable install
is an import hook, not a path, so tools that walk a package's folder (mypy,
import-linter's grimp) cannot see it. ``lay_shadow_tree`` makes
``build/typecheck/orbchain/`` with one symlink per module or package of the
top folder (``orbchain/cli.py``, ``orbchain/api/`` ...) and one per mapped
folder (``core -> core/`` ...), from setup.cfg's own mapping; put
``build/typecheck`` first on the tool's path.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHADOW = Path("build", "typecheck")


def package_dirs(root: Path = ROOT) -> dict[str, str]:
    """setup.cfg's ``package_dir`` as {"orbchain.core": "core", ...} (also read by scripts/refactor/)."""
    cfg = configparser.ConfigParser()
    cfg.read(root / "setup.cfg")
    mapping = {}
    for line in cfg["options"]["package_dir"].strip().splitlines():
        name, _, folder = line.partition("=")
        mapping[name.strip()] = folder.strip()
    return mapping


def lay_shadow_tree() -> dict[str, str]:
    """Symlink each mapped folder under build/typecheck; return {shadow prefix: source prefix}, longest first."""
    mapping = package_dirs()
    top = mapping.pop("orbchain")
    pkg = ROOT / SHADOW / "orbchain"
    pkg.mkdir(parents=True, exist_ok=True)
    wanted = {f.name: f for f in (ROOT / top).glob("*.py")}
    wanted.update({d.name: d for d in (ROOT / top).iterdir() if (d / "__init__.py").is_file()})
    wanted.update({name.split(".", 1)[1]: ROOT / folder for name, folder in mapping.items()})
    for link in pkg.iterdir():
        if link.name not in wanted:
            link.unlink()
    for name, target in wanted.items():
        link = pkg / name
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target)
    prefixes = {f"{SHADOW}/orbchain/{name.split('.', 1)[1]}/": f"{folder}/" for name, folder in mapping.items()}
    prefixes[f"{SHADOW}/orbchain/"] = f"{top}/"
    return prefixes


def source_paths(text: str, prefixes: dict[str, str]) -> str:
    """``text`` with shadow paths turned back into source paths (``core/ledger/book.py``), for editors."""
    for shadow, source in prefixes.items():  # longest first: the package's own folder is last
        text = text.replace(shadow, source)
    return text
