"""The import contracts ``make lint`` checks (pyproject.toml, ``[tool.importlinter]``) fail when broken.

Each case lays a copy of the installed package tree (symlinks to the real
source, as scripts/shadow_tree.py lays it) with one module added that breaks
one contract, runs scripts/lint_imports.py on it, and expects exactly that
contract reported broken, naming the offending import; the others stay kept,
which also shows the real tree keeps them all.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "lint_imports.py"


def _contracts() -> dict[str, dict]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        config = tomllib.load(file)["tool"]["importlinter"]
    return {contract["id"]: contract for contract in config["contracts"]}


def _shadow_tree() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("shadow_tree", ROOT / "scripts" / "shadow_tree.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _installed_tree() -> Path:
    shadow = _shadow_tree()
    shadow.lay_shadow_tree()
    return shadow.ROOT / shadow.SHADOW / "orbchain"


def _tree_with(tmp_path: Path, folder: str, source: str) -> Path:
    """A copy of the installed tree whose ``folder`` (``core`` or a room, ``core/infra``) also holds
    ``zz_violation.py`` with ``source``: the folders on the way are copied, everything else linked."""
    package = tmp_path / "orbchain"
    package.mkdir()
    real, copy, parts = _installed_tree(), package, folder.split("/")
    for part in parts:
        for entry in real.iterdir():
            if entry.name != part and entry.name != "__pycache__":
                (copy / entry.name).symlink_to(entry.resolve())
        real, copy = real / part, copy / part
        copy.mkdir()
    for child in real.resolve().iterdir():
        if child.name != "__pycache__":
            (copy / child.name).symlink_to(child)
    (copy / "zz_violation.py").write_text(source)
    return tmp_path


def _lint(tree: Path) -> tuple[int, str]:
    run = subprocess.run([sys.executable, str(SCRIPT), "--tree", str(tree)], capture_output=True, text=True,
                         timeout=300)
    return run.returncode, run.stdout + run.stderr


# A core-below-web case stands in the top room (cli): lower, its path up through web/ would break the floors too.
@pytest.mark.parametrize(("contract", "folder", "source", "reported"), [
    ("plugins-use-api", "plugins", "from ..core import ledger\n", "orbchain.plugins.zz_violation -> orbchain.core"),
    ("plugins-use-api", "chains", "from ..web.envelope import envelope\n",
     "orbchain.chains.zz_violation -> orbchain.web.envelope"),
    ("plugins-use-api", "plugins", "from ..testing import api\n", "orbchain.plugins.zz_violation -> orbchain.testing"),
    ("plugins-independent", "plugins", "from .links import store\n",
     "orbchain.plugins.zz_violation -> orbchain.plugins.links.store"),
    ("plugins-independent", "chains", "from .evm import tokens\n",
     "orbchain.chains.zz_violation -> orbchain.chains.evm.tokens"),
    ("core-below-web", "core/cli", "from ...web import envelope\n", "orbchain.core.cli.zz_violation -> orbchain.web"),
    ("core-below-web", "core/cli", "from ...api import Gateway\n", "orbchain.core.cli.zz_violation -> orbchain.api"),
    ("core-below-web", "core/cli", "def later():\n    from ...plugins.dashboard import session\n",
     "orbchain.core.cli.zz_violation -> orbchain.plugins.dashboard.session"),
    ("core-floors", "core/infra", "def later():\n    from ..accounts import auth\n",
     "orbchain.core.infra.zz_violation -> orbchain.core.accounts.auth"),
    ("core-floors", "core/types", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..gateway import Gateway\n",
     "orbchain.core.types.zz_violation -> orbchain.core.gateway"),
    ("core-floors", "core", "UNPLACED = True\n", "orbchain.core.zz_violation"),  # exhaustive: a new room needs a floor
    ("api-below-plugins", "api", "from ..chains.bitcoin import segwit\n",
     "orbchain.api.zz_violation -> orbchain.chains.bitcoin.segwit"),
])
def test_a_broken_contract_is_reported(tmp_path, contract, folder, source, reported):
    status, output = _lint(_tree_with(tmp_path, folder, source))
    contracts = _contracts()
    assert status != 0, output
    for name in (c["name"] for cid, c in contracts.items() if cid != contract):
        assert f"{name} KEPT" in output, output
    assert f"{contracts[contract]['name']} BROKEN" in output, output
    assert reported in output, output


def test_plugins_may_import_nothing_of_orbchain_but_the_api():
    """The forbidden list names every top-level part of the installed package except api, plugins and chains."""
    parts = {entry.name.removesuffix(".py") for entry in _installed_tree().iterdir()}
    expected = {f"orbchain.{name}" for name in parts - {"__init__", "api", "plugins", "chains"}}
    assert set(_contracts()["plugins-use-api"]["forbidden_modules"]) == expected
