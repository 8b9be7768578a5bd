"""Check the import contracts in pyproject.toml with import-linter; used by ``make lint``.

The contracts (docs/decisions.md, "One public plugin API, kept by
import-linter") name modules as installed: ``orbchain.plugins``,
``orbchain.core`` ... import-linter's graph builder (grimp) finds a package
by walking its folder, which the editable install does not have (setup.cfg's
``package_dir`` maps ``core/`` to ``orbchain.core`` through an import hook).
So, like scripts/typecheck.py, this lints the symlink tree
``build/typecheck/orbchain`` (scripts/shadow_tree.py). import-linter puts
the working directory first on ``sys.path``, so it runs from the folder that
holds the tree, where ``orbchain`` is the tree and not the source folder.

``--tree DIR`` lints another folder holding an ``orbchain`` package
(tests/test_import_contracts.py breaks each contract on purpose in a copy).
Exit status is import-linter's: 0 when every contract is kept.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from importlinter.cli import lint_imports

from shadow_tree import ROOT, SHADOW, lay_shadow_tree

CACHE = ROOT / "build" / "import_linter_cache"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="folder holding the orbchain package (default: the shadow tree)")
    args = parser.parse_args(argv)
    if args.tree is None:
        lay_shadow_tree()
        tree = ROOT / SHADOW
    else:
        tree = args.tree.resolve()
    os.chdir(tree)
    return lint_imports(config_filename=str(ROOT / "pyproject.toml"), cache_dir=str(CACHE),
                        no_cache=args.tree is not None, no_logo=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
