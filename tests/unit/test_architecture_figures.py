"""scripts/architecture_figures.py on a small synthetic tree: each figure counts what was planted, no more.

The tree has two floors of rooms (``base`` under ``top``), one import back up, a pair of rooms importing each
other, a cycle visible only with TYPE_CHECKING imports, one only with function-level imports, a public face
with names used by one plugin, by two and by none, string and pluggy hook calls, and typed and untyped hooks.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import architecture_figures as figures  # noqa: E402 - scripts/ is not a package

FILES = {
    "setup.cfg": """\
        [options]
        package_dir =
            orbchain = orbchain
            orbchain.core = core
            orbchain.plugins = plugins
        """,
    "orbchain/__init__.py": "",
    "orbchain/api/__init__.py": """\
        from ..core.base.values import Value
        from ..core.top.service import serve, spare

        def hookimpl(f=None, **kw):
            return f

        __all__ = ["Value", "serve", "spare", "hookimpl"]
        """,
    "core/__init__.py": "",
    "core/gateway.py": """\
        class Gateway:
            db = None
        """,
    "core/base/__init__.py": "",
    "core/base/values.py": """\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from ..top.service import serve  # back up a floor, for typing only: a cycle with service

        class Value:
            pass
        """,
    "core/base/reader.py": """\
        from ..top import service  # back up a floor at run time


        def read(gateway):
            from .writer import write  # writer imports reader in a function too: a cycle
            return gateway.db, write
        """,
    "core/base/writer.py": """\
        def write():
            from .reader import read
            return read
        """,
    "core/top/__init__.py": "",
    "core/top/service.py": """\
        from ..base.values import Value
        from ..gateway import Gateway


        def serve(gateway: Gateway):
            call_first(gateway.pm, "decide_x", gateway=gateway)
            gateway.pm.hook.decide_y(gateway=gateway)
            return gateway.services["x"], Value


        def spare():
            pass
        """,
    "plugins/__init__.py": "",
    "plugins/one/__init__.py": """\
        from ...api import Value, hookimpl, serve


        @hookimpl
        def decide_x(gateway):
            return None


        @hookimpl(tryfirst=True)
        def decide_y(gateway: object) -> None:
            return None


        @hookimpl(wrapper=True)
        def decide_z(gateway):
            yield
        """,
    "plugins/two.py": """\
        from orbchain.api import Value


        @hookimpl(specname="decide_x")
        def other(gateway, merchant_id: str) -> None:
            return None
        """,
}

FLOORS = """\
[modules]
"top.service" = "base"

[floors]
order = [["base"], ["top"], ["gateway"]]
"""


@pytest.fixture
def tree_root(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (tmp_path / "floors.toml").write_text(FLOORS)
    return tmp_path


def test_imports_back_up_a_floor_today_and_after_the_moves(tree_root):
    tree = figures.read_tree(tree_root)
    floors = figures.Floors.load(tree_root / "floors.toml")
    today, unplaced = figures.breaches(tree, floors, floors.room_today)
    assert not unplaced
    assert sorted((b.source_room, b.target_room, b.imp.source, b.imp.kind) for b in today) == [
        ("base", "top", "orbchain.core.base.reader", "module"),
        ("base", "top", "orbchain.core.base.values", "type_checking"),
        ("top", "gateway", "orbchain.core.top.service", "module"),
    ]
    moved, _ = figures.breaches(tree, floors, floors.room_moved)  # service moved down: only the gateway is above
    assert sorted((b.source_room, b.target_room) for b in moved) == [("base", "gateway")]
    assert figures.mutual_pairs(tree, floors.room_today) == [("base", "top")]


def test_cycles_by_kind_of_import(tree_root):
    tree = figures.read_tree(tree_root)
    assert figures.cycles(tree, [figures.MODULE]) == []
    assert figures.cycles(tree, [figures.MODULE, figures.FUNCTION]) == [
        ["orbchain.core.base.reader", "orbchain.core.base.writer"]]
    assert figures.cycles(tree, [figures.MODULE, figures.FUNCTION, figures.TYPE_CHECKING]) == [
        ["orbchain.core.base.reader", "orbchain.core.base.writer"],
        ["orbchain.core.base.values", "orbchain.core.top.service"]]


def test_the_public_face_and_who_uses_it(tree_root):
    tree = figures.read_tree(tree_root)
    assert figures.api_names(tree) == {"orbchain.api": {"Value", "serve", "spare", "hookimpl"}}
    used = figures.api_use(tree)
    assert used[("orbchain.api", "Value")] == {"plugins.one", "plugins.two"}
    assert used[("orbchain.api", "serve")] == {"plugins.one"}
    assert ("orbchain.api", "spare") not in used


def test_gateway_hook_calls_and_untyped_hooks(tree_root):
    counts = figures.count_uses(figures.read_tree(tree_root))
    assert counts.files["type_checking"] == {"orbchain.core.base.values"}
    assert counts.files["gateway"] == {"orbchain.core.base.reader", "orbchain.core.top.service"}
    assert (counts.counters["gateway.db"], counts.counters["gateway.services"]) == (1, 1)
    assert (counts.counters["string hook calls"], counts.counters["pm.hook calls"]) == (1, 1)
    assert dict(counts.untyped) == {"decide_x": [2, 2], "decide_y": [1, 0]}  # the wrapper is pluggy's form


def test_the_report_prints_every_figure(tree_root, capsys):
    assert figures.main(["--root", str(tree_root), "--map", str(tree_root / "floors.toml"), "--no-duplicates",
                         "--details"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert "runtime imports (module level and in functions): 2 lines, 2 room pairs" in out
    assert "base -> top (2): base.reader:1, base.values:4*" in out
    assert "+ TYPE_CHECKING 2 cycles, 4 modules" in flat
    assert "Files with an `if TYPE_CHECKING` block: 1 of" in out
    assert "orbchain.api 4 names: used 3, by one package 2, by none 1" in flat
    assert "Hook calls by name string: 1 (in 1 files); direct pm.hook.X calls: 1 (in 1 files)" in out
    assert "Hook implementations with an unannotated parameter or answer: 2 of 3" in out
