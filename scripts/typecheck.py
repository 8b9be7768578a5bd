"""Run mypy on the installed package name ``orbchain``; used by ``make lint``.

Why a script: setup.cfg's ``package_dir`` installs ``core/`` as
``orbchain.core``, ``web/`` as ``orbchain.web`` and so on, and the code's
relative imports (``from ...core import auth``) only resolve under those names.
mypy cannot follow the editable install (it is an import hook, not a path) and
has no ``package_dir`` of its own; run on ``core/`` directly it names the
module ``core`` and stops at the first ``from ..web``. So this script lays a
tree of symlinks, ``build/typecheck/orbchain/core -> core/`` ..., made from
setup.cfg's own mapping, and mypy checks ``-p orbchain`` there (pyproject.toml
sets ``mypy_path`` and ``packages``). Paths in mypy's report are turned back
into source paths (``core/ledger.py``), so editors can jump to them.

Extra arguments are passed to mypy. Exit status is mypy's.
"""

from __future__ import annotations

import configparser
import os
import sys
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent
SHADOW = Path("build", "typecheck")


def _package_dirs() -> dict[str, str]:
    """setup.cfg's ``package_dir`` as {"orbchain.core": "core", ...}."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    mapping = {}
    for line in cfg["options"]["package_dir"].strip().splitlines():
        name, _, folder = line.partition("=")
        mapping[name.strip()] = folder.strip()
    return mapping


def _lay_shadow_tree() -> dict[str, str]:
    """Symlink each mapped folder under build/typecheck; return {shadow prefix: source prefix}."""
    mapping = _package_dirs()
    top = mapping.pop("orbchain")
    pkg = ROOT / SHADOW / "orbchain"
    pkg.mkdir(parents=True, exist_ok=True)
    wanted = {f.name: f for f in (ROOT / top).glob("*.py")}
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


def main(argv: list[str]) -> int:
    os.chdir(ROOT)
    prefixes = _lay_shadow_tree()
    stdout, stderr, status = api.run(argv)
    for shadow, source in prefixes.items():  # longest first: the package's own folder is last
        stdout = stdout.replace(shadow, source)
        stderr = stderr.replace(shadow, source)
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
