"""The refactor tool (scripts/refactor/rewrite_imports.py) moving modules from room to room (issue 44's floors).

A [modules] key may name a module inside a room (``"infra.secrets" = "keys"``); the rest of a room stays. On a
miniature tree, without git: the files move, every import form and dotted or path reference follows, a second
run finds nothing to do, and the real map (scripts/refactor/floors_moves.toml) places every module of core/.
"""

from __future__ import annotations

import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "refactor"))

import rewrite_imports as tool  # noqa: E402 - the script folder is not a package

SETUP_CFG = "\n".join([
    "[options]", "package_dir =", "    orbchain = orbchain", "    orbchain.core = core", "    orbchain.web = web",
    "packages =", "    orbchain", "    orbchain.core", "    orbchain.core.infra", "    orbchain.core.contract",
    "    orbchain.web", "",
])

MAP = """\
[rooms]
infra = "Plumbing."
contract = "The contract."
keys = "Keys."
types = "Values."

[root]
stay = ["__init__"]

[modules]
errors = "types"
"infra.secrets" = "keys/seed"
"contract.views" = "types"
"""

FILES = {
    "orbchain/__init__.py": "",
    "core/__init__.py": "",
    "core/errors.py": "class Invalid(Exception):\n    pass\n",
    "core/infra/__init__.py": "",
    "core/infra/config.py": "LIMIT = 3\n",
    "core/infra/secrets.py": """\
        \"\"\"The seed; see core/infra/config.py.\"\"\"
        from .config import LIMIT
        from ..errors import Invalid


        def seed():
            return LIMIT, Invalid
        """,
    "core/contract/__init__.py": "",
    "core/contract/views.py": "VIEW = 'view'\n",
    "core/contract/plugins.py": """\
        from . import views
        from .views import VIEW
        from ..infra import secrets
        from ..infra.secrets import seed as grow


        def load():
            from ..infra import config
            return views.VIEW, VIEW, secrets.seed(), grow(), config.LIMIT
        """,
    "web/__init__.py": "",
    "web/app.py": """\
        from orbchain.core.infra.secrets import seed
        from ..core.contract.views import VIEW

        LOGGER = "orbchain.core.infra.secrets"
        """,
    "docs/guide.md": "Read `core/infra/secrets.py` (`orbchain.core.infra.secrets.seed`); `core/infra/config.py` stays.\n",
}


def lay(root: Path) -> Path:
    (root / "setup.cfg").write_text(SETUP_CFG)
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (root / "floors.toml").write_text(MAP)
    return root / "floors.toml"


def run(root: Path, table: Path, *extra: str) -> int:
    return tool.main(["--root", str(root), "--map", str(table), "--no-git", *extra])


def test_modules_move_from_room_to_room_and_every_reference_follows(tmp_path):
    table = lay(tmp_path)
    assert run(tmp_path, table) == 0
    core = tmp_path / "core"
    assert not (core / "infra" / "secrets.py").exists() and (core / "infra" / "config.py").is_file()
    assert (core / "keys" / "seed.py").is_file() and (core / "types" / "views.py").is_file()
    assert (core / "types" / "errors.py").is_file() and (core / "keys" / "__init__.py").read_text() == '"""Keys."""\n'
    seed = (core / "keys" / "seed.py").read_text()
    assert "from ..infra.config import LIMIT\n" in seed and "from ..types.errors import Invalid\n" in seed
    assert "see core/infra/config.py" in seed
    plugins = (core / "contract" / "plugins.py").read_text()
    for line in ("from ..types import views\n", "from ..types.views import VIEW\n", "from ..keys import seed as secrets\n",
                 "from ..keys.seed import seed as grow\n", "    from ..infra import config\n"):
        assert line in plugins
    app = (tmp_path / "web" / "app.py").read_text()
    assert "from orbchain.core.keys.seed import seed\n" in app and "from ..core.types.views import VIEW\n" in app
    assert 'LOGGER = "orbchain.core.keys.seed"' in app
    guide = (tmp_path / "docs" / "guide.md").read_text()
    assert guide == "Read `core/keys/seed.py` (`orbchain.core.keys.seed.seed`); `core/infra/config.py` stays.\n"
    assert "    orbchain.core.keys\n" in (tmp_path / "setup.cfg").read_text()
    assert run(tmp_path, table, "--check") == 0  # nothing left to do


def test_the_floors_map_places_every_module_of_core():
    table = tomllib.loads((ROOT / "scripts" / "refactor" / "floors_moves.toml").read_text())
    plan = tool.make_plan(ROOT, table)
    assert plan.unplaced == []
    for key in table["modules"]:
        room, dot, module = key.partition(".")
        if dot and key not in table.get("incoming", {}).get("modules", []):
            # a room's module the map names exists where it was or where it went, or the map is stale
            target = table["modules"][key]
            moved_to = target if "/" in target else f"{target}/{module}"
            before, after = ROOT / "core" / room / f"{module}.py", ROOT / "core" / f"{moved_to}.py"
            assert before.is_file() or after.is_file(), key
    floors = {room for rooms in table["floors"]["order"] for room in rooms}
    assert set(table["rooms"]) <= floors


NAMES_MAP = MAP.replace('stay = ["__init__"]', 'stay = ["__init__", "gateway", "startup"]') + """
[names]
"types.views.Value" = "types.values.Value"
"gateway.Gateway" = "contract.protocol.PluginGateway"

[names_keep]
"gateway.Gateway" = ["startup"]
"""

BRANCH_FILES = {  # what another branch, started before the move, adds: every import still in the old layout
    "core/contract/hooks.py": """\
        from ..errors import Invalid
        from ..infra.secrets import seed
        from .views import Value, VIEW
        from ..gateway import Gateway
        """,
    "core/startup.py": "from .gateway import Gateway\n",
    "web/routes.py": """\
        from orbchain.core.contract.views import Value
        from ..core.infra import secrets
        """,
}


def test_a_second_run_rewrites_what_a_merged_branch_added_and_then_finds_nothing(tmp_path):
    table = lay(tmp_path)
    table.write_text(NAMES_MAP)
    (tmp_path / "core" / "gateway.py").write_text("class Gateway:\n    pass\n")
    assert run(tmp_path, table) == 0
    assert run(tmp_path, table, "--check") == 0  # idempotent on the moved tree
    for name, text in BRANCH_FILES.items():  # the merge of a branch that still speaks the old layout
        (tmp_path / name).write_text(textwrap.dedent(text))
    assert run(tmp_path, table, "--check") == 1
    assert run(tmp_path, table) == 0
    hooks = (tmp_path / "core" / "contract" / "hooks.py").read_text()
    assert hooks == textwrap.dedent("""\
        from ..types.errors import Invalid
        from ..keys.seed import seed
        from ..types.values import Value
        from ..types.views import VIEW
        from .protocol import PluginGateway as Gateway
        """)
    assert (tmp_path / "core" / "startup.py").read_text() == "from .gateway import Gateway\n"  # [names_keep]
    routes = (tmp_path / "web" / "routes.py").read_text()  # outside core/ a split value keeps its old name
    assert routes == "from orbchain.core.types.views import Value\nfrom ..core.keys import seed as secrets\n"
    assert run(tmp_path, table, "--check") == 0


def test_a_file_a_merge_left_unparsable_stops_the_run_before_anything_changes(tmp_path):
    table = lay(tmp_path)
    (tmp_path / "web" / "app.py").write_text("<<<<<<< HEAD\nfrom ..core.errors import Invalid\n=======\n")
    assert run(tmp_path, table) == 2
    assert (tmp_path / "core" / "errors.py").is_file() and not (tmp_path / "core" / "types").exists()
