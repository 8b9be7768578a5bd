"""The core-in-rooms tool (scripts/refactor/rewrite_imports.py, issue 30) on small synthetic trees.

Each test lays a miniature repository in tmp_path (setup.cfg's package_dir, core/, web/, tests/, docs/),
runs the tool without git, and reads what it wrote; one test imports the result to prove it runs.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "refactor"))

import rewrite_imports as tool  # noqa: E402 - the script folder is not a package

SETUP_CFG = """\
[options]
package_dir =
    orbchain = orbchain
    orbchain.core = core
    orbchain.web = web
packages =
    orbchain
    orbchain.core
    orbchain.web

[options.package_data]
orbchain.core = words.txt, notes.txt
"""

MAP = """\
[rooms]
ledger = "The books."
payments = "Money in."
infra = "Plumbing."

[root]
stay = ["__init__", "errors"]

[modules]
ledger = "ledger/book"
ledger_accounts = "ledger/accounts"
payments = "payments/service"
payment_status = "payments/status"
config = "infra"

[patterns]
"db_*" = "infra"

[data]
"words.txt" = "payments"
"notes.txt" = ""
"""

FILES = {
    "orbchain/__init__.py": "",
    "core/__init__.py": '"""Core."""\n',
    "core/errors.py": "class Invalid(Exception):\n    pass\n",
    "core/config.py": "import logging\n\nlog = logging.getLogger(__name__)\nLIMIT = 3\n",
    "core/db_pool.py": "from .config import LIMIT\n\nSIZE = LIMIT * 2\n",
    "core/ledger_accounts.py": "def world():\n    return 'world'\n",
    "core/ledger.py": """\
        from .errors import Invalid
        from .ledger_accounts import world


        def balances():
            return {world(): 0}
        """,
    "core/payment_status.py": "OPEN = 'open'\n",
    "core/payments.py": """\
        \"\"\"Payments; the books are core/ledger.py (``core.ledger.balances``).\"\"\"
        from . import errors, ledger, payment_status
        from .config import LIMIT
        from .db_pool import SIZE


        def create():
            from . import ledger_accounts as names
            return (ledger.balances(), payment_status.OPEN, names.world(), LIMIT, SIZE, errors.Invalid)
        """,
    "core/words.txt": "hello\n",
    "core/notes.txt": "stays\n",
    "web/__init__.py": "",
    "web/app.py": """\
        from ..core import ledger, errors
        from ..core.payments import (
            create,
        )
        from ..core.ledger import balances as books


        def run():
            return create(), books(), ledger.balances(), errors.Invalid
        """,
    "tests/test_thing.py": """\
        from unittest import mock

        import orbchain.core.payments as payments_module
        from orbchain.core import ledger
        from orbchain.core.ledger_accounts import world


        def test_it(caplog):
            caplog.set_level(10, logger="orbchain.core.config")
            with mock.patch("orbchain.core.ledger.balances", return_value={}):
                assert payments_module.create()
        """,
    "docs/guide.md": "See `core/ledger.py`, `orbchain.core.ledger_accounts.world` and `orbchain.core.errors`.\n",
}


def lay(root: Path, files: dict[str, str] = FILES, table: str = MAP) -> Path:
    (root / "setup.cfg").write_text(SETUP_CFG)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    moves = root / "moves.toml"
    moves.write_text(table)
    return moves


def run(root: Path, moves: Path, *extra: str) -> int:
    return tool.main(["--root", str(root), "--map", str(moves), "--no-git", *extra])


@pytest.fixture
def moved(tmp_path: Path) -> Path:
    moves = lay(tmp_path)
    assert run(tmp_path, moves) == 0
    return tmp_path


def read(root: Path, name: str) -> str:
    return (root / name).read_text()


def test_files_move_into_rooms_with_a_docstring_init(moved):
    assert not (moved / "core" / "ledger.py").exists()
    assert read(moved, "core/ledger/__init__.py") == '"""The books."""\n'
    assert (moved / "core" / "ledger" / "book.py").is_file()
    assert (moved / "core" / "payments" / "status.py").is_file()
    assert (moved / "core" / "infra" / "db_pool.py").is_file()  # placed by the db_* pattern
    assert (moved / "core" / "errors.py").is_file()  # stays at the root
    assert read(moved, "core/payments/words.txt") == "hello\n"  # data follows its room
    assert (moved / "core" / "notes.txt").is_file()


@pytest.mark.parametrize("path, line", [
    # relative imports inside the core, keeping each local name; the moved file's own imports re-aimed
    ("core/payments/service.py", "from .. import errors\n"),
    ("core/payments/service.py", "from ..ledger import book as ledger\n"),
    ("core/payments/service.py", "from . import status as payment_status\n"),
    ("core/payments/service.py", "from ..infra.config import LIMIT\n"),
    ("core/payments/service.py", "from ..infra.db_pool import SIZE\n"),
    ("core/payments/service.py", "    from ..ledger import accounts as names\n"),  # function-local
    ("core/ledger/book.py", "from ..errors import Invalid\n"),
    ("core/ledger/book.py", "from .accounts import world\n"),
    ("core/infra/db_pool.py", "from .config import LIMIT\n"),
    # another package, relative; parentheses kept
    ("web/app.py", "from ..core import errors\n"),
    ("web/app.py", "from ..core.ledger import book as ledger\n"),
    ("web/app.py", "from ..core.payments.service import (\n    create,\n)\n"),
    ("web/app.py", "from ..core.ledger.book import balances as books\n"),
    # tests: absolute forms
    ("tests/test_thing.py", "import orbchain.core.payments.service as payments_module\n"),
    ("tests/test_thing.py", "from orbchain.core.ledger import book as ledger\n"),
    ("tests/test_thing.py", "from orbchain.core.ledger.accounts import world\n"),
])
def test_imports_are_rewritten(moved, path, line):
    assert line in read(moved, path)


def test_strings_docstrings_and_docs(moved):
    test = read(moved, "tests/test_thing.py")
    assert 'mock.patch("orbchain.core.ledger.book.balances"' in test
    assert 'logger="orbchain.core.infra.config"' in test
    service = read(moved, "core/payments/service.py")
    assert "core/ledger/book.py (``core.ledger.book.balances``)" in service
    guide = read(moved, "docs/guide.md")
    assert guide == ("See `core/ledger/book.py`, `orbchain.core.ledger.accounts.world` and `orbchain.core.errors`.\n")


def test_setup_cfg_lists_the_rooms_and_their_data(moved):
    cfg = read(moved, "setup.cfg")
    assert "    orbchain.core\n    orbchain.core.infra\n    orbchain.core.ledger\n    orbchain.core.payments\n" in cfg
    assert "orbchain.core = notes.txt\norbchain.core.payments = words.txt\n" in cfg


def test_the_moved_tree_imports_and_runs(moved, tmp_path_factory):
    shadow = tmp_path_factory.mktemp("shadow")
    (shadow / "orbchain").mkdir()
    (shadow / "orbchain" / "__init__.py").write_text("")
    (shadow / "orbchain" / "core").symlink_to(moved / "core")
    (shadow / "orbchain" / "web").symlink_to(moved / "web")
    code = "from orbchain.web.app import run; print(run()[:3])"  # -S: no site, so not the installed orbchain
    done = subprocess.run([sys.executable, "-S", "-c", code], env={"PYTHONPATH": str(shadow)}, cwd=shadow, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(({'world': 0}, 'open', 'world', 3, 6, <class 'orbchain.core.errors.Invalid'>), " \
                                  "{'world': 0}, {'world': 0})"


def test_a_second_run_finds_nothing_to_do(moved, capsys):
    before = {p: p.read_bytes() for p in moved.rglob("*") if p.is_file()}
    assert run(moved, moved / "moves.toml", "--check") == 0
    assert "0 moves, 0 files to change" in capsys.readouterr().out
    assert run(moved, moved / "moves.toml") == 0
    assert {p: p.read_bytes() for p in moved.rglob("*") if p.is_file()} == before


def test_check_reports_and_changes_nothing(tmp_path, capsys):
    moves = lay(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert run(tmp_path, moves, "--check") == 1
    out = capsys.readouterr().out
    assert "move    core/ledger.py -> core/ledger/book.py" in out
    assert "rewrite web/app.py" in out
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_unplaced_modules_and_data_are_reported(tmp_path, capsys):
    moves = lay(tmp_path, {**FILES, "core/mystery.py": "", "core/blob.bin": "x"})
    assert run(tmp_path, moves, "--check") == 2
    err = capsys.readouterr().err
    assert "core/mystery.py" in err and "core/blob.bin" in err
    assert (tmp_path / "core" / "ledger.py").exists()  # nothing moved


def test_a_late_reference_to_an_old_name_is_still_rewritten(moved):
    """A branch merged after the move may still say ``orbchain.core.ledger.balances``; the room's own modules stay."""
    (moved / "tests" / "test_late.py").write_text(
        "from orbchain.core.ledger import balances\nfrom orbchain.core.ledger import book\n"
        "from orbchain.core import ledger_accounts\nPATCH = 'orbchain.core.payment_status.OPEN'\n")
    assert run(moved, moved / "moves.toml") == 0
    assert read(moved, "tests/test_late.py") == (
        "from orbchain.core.ledger.book import balances\nfrom orbchain.core.ledger import book\n"
        "from orbchain.core.ledger import accounts as ledger_accounts\n"
        "PATCH = 'orbchain.core.payments.status.OPEN'\n")


def test_a_module_defining_a_name_of_its_room_is_refused(tmp_path, capsys):
    files = {**FILES, "core/ledger.py": "def accounts():\n    return []\n"}
    moves = lay(tmp_path, files)
    assert run(tmp_path, moves, "--check") == 2
    assert "defines ['accounts']" in capsys.readouterr().err


def test_the_real_map_places_every_core_module_and_names_real_rooms():
    table = tomllib.loads((ROOT / "scripts" / "refactor" / "moves.toml").read_text())
    for leaf, target in table["modules"].items():
        assert target.split("/")[0] in table["rooms"], leaf
    assert set(table["patterns"].values()) <= set(table["rooms"])
    core = ROOT / "core"
    unplaced = [p.name for p in core.glob("*.py") if tool.place(p.stem, table) is None]
    assert unplaced == []


def test_a_long_import_is_wrapped_one_name_a_line(tmp_path):
    names = ", ".join(f"name_number_{i}" for i in range(8))
    files = {**FILES, "core/ledger_accounts.py": "".join(f"name_number_{i} = {i}\n" for i in range(8)),
             "core/payment_status.py": f"def f():\n    from .ledger_accounts import {names}\n"}
    assert run(tmp_path, lay(tmp_path, files)) == 0
    wrapped = "".join(f"        name_number_{i},\n" for i in range(8))
    assert read(tmp_path, "core/payments/status.py") == f"def f():\n    from ..ledger.accounts import (\n{wrapped}    )\n"


def test_a_package_moves_whole_into_its_room(tmp_path):
    """A module split into a package (core/store/) moves with its sub-modules; references follow by prefix."""
    files = {**FILES,
             "core/store/__init__.py": "from .reader import read\n",
             "core/store/reader.py": "from ..errors import Invalid\nfrom ..config import LIMIT\n\n\ndef read():\n"
                                     "    return Invalid, LIMIT\n",
             "web/store_user.py": "from ..core.store.reader import read\nfrom ..core import store\n"
                                  "PATCH = 'orbchain.core.store.reader.read'  # core/store/reader.py\n"}
    assert run(tmp_path, lay(tmp_path, files, MAP.replace('config = "infra"', 'config = "infra"\nstore = "infra"'))) == 0
    assert read(tmp_path, "core/infra/store/__init__.py") == "from .reader import read\n"
    assert read(tmp_path, "core/infra/store/reader.py").startswith("from ...errors import Invalid\nfrom ..config import")
    assert read(tmp_path, "web/store_user.py") == (
        "from ..core.infra.store.reader import read\nfrom ..core.infra import store\n"
        "PATCH = 'orbchain.core.infra.store.reader.read'  # core/infra/store/reader.py\n")
