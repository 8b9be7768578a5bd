"""The typed hook facade (core/contract/hooks.py) is generated from the specs and matches them; the spec
marker (core/contract/hook_kinds.py) declares each hook's kind and refuses one its name contradicts."""

from __future__ import annotations

import inspect
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from orbchain.core.contract import hookspecs
from orbchain.core.contract.hook_kinds import (
    TRAITS_ATTR,
    HookKind,
    HookspecMarker,
    HookTraits,
    kind_of_name,
    traits_of,
)
from orbchain.core.contract.hooks import Hooks
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import hook_facade  # noqa: E402 - scripts/ is not a package

SPEC_FUNCTIONS = {name: function for name, function in vars(hookspecs).items()
                  if callable(function) and hasattr(function, "orbchain_spec")}


def test_the_facade_is_up_to_date_with_the_specs():
    assert hook_facade.main(["--check"]) == 0, "run .venv/bin/python scripts/hook_facade.py"


@pytest.mark.parametrize("name", sorted(SPEC_FUNCTIONS))
def test_each_spec_has_its_typed_method(name):
    spec = SPEC_FUNCTIONS[name]
    traits: HookTraits = getattr(spec, TRAITS_ATTR)
    assert traits.kind is kind_of_name(name)
    if spec.orbchain_spec["historic"]:
        assert not hasattr(Hooks, name)  # the plugin manager calls it itself
        return
    method = getattr(Hooks, name)
    assert inspect.iscoroutinefunction(method) is not (traits.sync or traits.kind is HookKind.REGISTER)
    wanted = {p.name: p.default for p in inspect.signature(spec).parameters.values() if p.name != "gateway"}
    extra = {HookKind.REGISTER: {"skip": ()}, HookKind.FILTER: {"steps": None}}.get(traits.kind, {})
    parameters = list(inspect.signature(method).parameters.values())[1:]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
    assert {p.name: p.default for p in parameters} == {**wanted, **extra}


def test_decide_hooks_are_first_result_and_nothing_else_is():
    for name, spec in SPEC_FUNCTIONS.items():
        assert spec.orbchain_spec["firstresult"] is (kind_of_name(name) is HookKind.DECIDE), name


class Member:
    PLUGIN_NAME = "member"

    @hookimpl
    async def decide_member(self, gateway: Any, merchant_id: str, member_id: str) -> Any:
        return None if member_id != "m1" else (gateway.name, merchant_id, member_id)


class Wrong:
    PLUGIN_NAME = "wrong"

    @hookimpl
    def decide_member(self, merchant_id: str) -> Any:
        return None


async def test_a_facade_method_calls_its_hook_with_the_bound_gateway():
    class Gateway:
        name = "the gateway"

    pm = get_plugin_manager([Wrong(), Member()], load_entrypoints=False)
    hooks = Hooks(pm, Gateway())
    assert await hooks.decide_member(merchant_id="acct", member_id="m1") == ("the gateway", "acct", "m1")
    assert await hooks.decide_member(merchant_id="acct", member_id="m2") is None
    with pytest.raises(RuntimeError, match="takes the gateway"):
        await Hooks(pm).decide_member(merchant_id="acct", member_id="m1")


def test_every_hook_the_manager_knows_has_traits():
    pm = get_plugin_manager(load_entrypoints=True)
    for name, hook in vars(pm.hook).items():
        assert traits_of(hook).kind is kind_of_name(name)


# ----------------------------------------------------------------------------------------- the marker


marker = HookspecMarker("orbchain")


def _spec(name: str) -> Any:
    def spec(gateway: Any) -> None:
        """A spec."""

    spec.__name__ = spec.__qualname__ = name
    return spec


@pytest.mark.parametrize("name, declared, message", [
    ("payment_paid", HookKind.DECIDE, "declared 'decide' but its name says 'event'"),
    ("decide_member", HookKind.EVENT, "declared 'event' but its name says 'decide'"),
    ("filter_postings", HookKind.EXTRA, "a extra hook is named 'extra_...'"),
])
def test_a_kind_the_name_contradicts_is_refused(name, declared, message):
    with pytest.raises(ValueError, match=message):
        marker(kind=declared)(_spec(name))


@pytest.mark.parametrize("name, options, message", [
    ("decide_x", {"firstresult": False}, "contradicts its kind 'decide'"),
    ("extra_x", {"firstresult": True}, "contradicts its kind 'extra'"),
    ("payment_x_happened", {"historic": True}, "only register_"),
    ("decide_x", {"isolated": True}, "only events and extra_"),
    ("x_happened", {"isolated": False}, "always isolates"),
    ("register_x", {"sync": False}, "synchronously"),
])
def test_options_the_kind_contradicts_are_refused(name, options, message):
    with pytest.raises(ValueError, match=message):
        marker(**options)(_spec(name))


def test_a_bare_marker_takes_the_kind_its_name_says():
    decided = marker(_spec("decide_colour"))
    assert getattr(decided, TRAITS_ATTR) == HookTraits(HookKind.DECIDE, sync=False, isolated=False)
    assert decided.orbchain_spec["firstresult"] is True
    assert getattr(marker(_spec("register_colours")), TRAITS_ATTR).sync is True
    assert getattr(marker(_spec("colour_chosen")), TRAITS_ATTR).isolated is True


# ----------------------------------------------------------------------------------------- the generator


def test_the_generator_writes_one_method_a_spec_of_any_module(tmp_path, monkeypatch):
    (tmp_path / "colour_specs.py").write_text(textwrap.dedent('''
        from __future__ import annotations
        from typing import TYPE_CHECKING, Any
        from orbchain.core.contract.hook_kinds import HookKind, HookspecMarker
        if TYPE_CHECKING:
            from .palette import Colour, Unused
        hookspec = HookspecMarker("orbchain")

        @hookspec(kind=HookKind.DECIDE)
        def decide_colour(gateway: "Any", merchant_id: str, hint: "Colour | None" = None) -> "Colour | None":
            """The colour of a page."""

        @hookspec(kind=HookKind.EXTRA, sync=True)
        def extra_colours(gateway, name: str) -> "list[Colour] | None":
            """More colours."""
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    specs = hook_facade.read_specs(tmp_path / "colour_specs.py", "colour_specs")
    text = hook_facade.render(specs, (tmp_path / "colour_specs.py").read_text(), "colour_specs")
    assert "from . import colour_specs as specs" in text and "TYPE_CHECKING" not in text
    assert ("async def decide_colour(self, *, merchant_id: str, hint: specs.Colour | None = None)"
            " -> specs.Colour | None:") in text
    assert "return await self.calls.decide(\n            self._pm.hook.decide_colour,\n            gateway=self.gateway," in text
    assert "    def extra_colours(self, *, name: str) -> list[list[specs.Colour]]:" in text
    assert "self.calls.extra_sync(self._pm.hook.extra_colours, gateway=self.gateway, name=name)" in text
    compile(text, "hooks.py", "exec")
