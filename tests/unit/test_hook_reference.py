"""docs/plugins.md's hook table ("Every hook at a glance") is generated from the specs and kept current
(scripts/hook_reference.py, issue 44)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import hook_reference  # noqa: E402 - scripts/ is not a package


def test_the_hook_table_is_up_to_date_with_the_specs():
    assert hook_reference.main(["--check"]) == 0, "run .venv/bin/python scripts/hook_reference.py"


def test_the_table_has_one_row_per_spec_from_its_docstring():
    from orbchain.core.contract import hookspecs

    specs = {name for name, f in vars(hookspecs).items() if callable(f) and hasattr(f, "orbchain_spec")}
    rows = hook_reference.read_rows()
    assert [row.name for row in rows if row.name in specs] == [row.name for row in rows]
    assert {row.name for row in rows} == specs
    decide_member = next(row for row in rows if row.name == "decide_member")
    assert decide_member.summary == hookspecs.decide_member.__doc__.strip().splitlines()[0]
    assert (decide_member.traits, decide_member.params) == ("decide", "merchant_id: str, member_id: str")


def test_a_stale_table_is_caught():
    """The check compares the whole block: one changed word in a row is stale."""
    text = hook_reference.DOCS.read_text(encoding="utf-8")
    block = hook_reference.render(hook_reference.read_rows())
    assert hook_reference.rewritten(text, block) == text
    stale = text.replace("| `decide_member` | decide |", "| `decide_member` | extra |")
    assert stale != text and hook_reference.rewritten(stale, block) != stale
