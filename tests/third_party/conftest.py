"""Installing a worked example the way pip would, without pip: a dist-info declaring its entry point.

The packages here (``zed``, ``loyalty``) are plugins a third party could
publish; they reach Orbchain only through ``orbchain.api`` (and their tests
through ``orbchain.testing``). ``install_plugin`` puts a throwaway
``<name>_orbchain-1.0.dist-info`` on ``sys.path`` whose ``orbchain`` entry
point names the package's plugin module, so the gateway under test loads it
exactly as it loads an installed distribution, and only for that test.
"""

from __future__ import annotations

from typing import Callable

import pytest


@pytest.fixture
def install_plugin(tmp_path, monkeypatch) -> Callable[[str, str], None]:
    """``install_plugin("zed", "tests.third_party.zed.plugin")``: the entry point ``zed`` for this test."""

    def install(name: str, module: str) -> None:
        site = tmp_path / f"site-{name}"
        dist = site / f"{name}_orbchain-1.0.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-orbchain\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text(f"[orbchain]\n{name} = {module}\n")
        monkeypatch.syspath_prepend(str(site))

    return install
