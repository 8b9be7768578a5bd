"""Run mypy on the installed package name ``orbchain``; used by ``make lint``.

Why a script: setup.cfg's ``package_dir`` installs ``core/`` as
``orbchain.core``, ``web/`` as ``orbchain.web`` and so on, and the code's
relative imports (``from ...core import auth``) only resolve under those names.
mypy cannot follow the editable install (it is an import hook, not a path) and
has no ``package_dir`` of its own; run on ``core/`` directly it names the
module ``core`` and stops at the first ``from ..web``. So this script lays a
tree of symlinks, ``build/typecheck/orbchain/core -> core/`` ... (scripts/shadow_tree.py,
made from setup.cfg's own mapping), and mypy checks ``-p orbchain`` there (pyproject.toml
sets ``mypy_path`` and ``packages``). Paths in mypy's report are turned back
into source paths (``core/ledger/book.py``), so editors can jump to them.

Extra arguments are passed to mypy. Exit status is mypy's.
"""

from __future__ import annotations

import os
import sys

from mypy import api

from shadow_tree import ROOT, lay_shadow_tree, source_paths


def main(argv: list[str]) -> int:
    os.chdir(ROOT)
    prefixes = lay_shadow_tree()
    stdout, stderr, status = api.run(argv)
    sys.stdout.write(source_paths(stdout, prefixes))
    sys.stderr.write(source_paths(stderr, prefixes))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
