"""Every built-in hook implementation is typed as its spec is (issue 44): the same parameter names, each
parameter annotated with the spec's type, an answer no wider than the spec's.

Annotations are compared as written, normalised: quotes dropped and a dotted name read as its last part
(``api.Gateway`` is ``Gateway``; the spec's ``Gateway`` is the gateway protocol, a plugin's is
``orbchain.api.Gateway``, the dataclass that satisfies it and that the core passes). An answer may be
narrower than the spec's union (``-> None`` for a decision a plugin never makes is fine), never wider.
"""

from __future__ import annotations

import ast
import inspect
from functools import cache
from typing import Any

import pluggy
import pytest

from orbchain.core.contract.plugins import get_plugin_manager

# A dependant cannot import the declaring plugin's registry type (plugin-to-plugin imports are refused):
# (hook, parameter, plugin) left unannotated on purpose.
UNTYPEABLE = {("register_swap_venues", "registry", "changenow"), ("register_swap_venues", "registry", "devnet_venue")}


def normalised(annotation: Any) -> str | None:
    """An annotation as comparable text: ``"api.Gateway"`` -> ``Gateway``; None when there is none."""
    if annotation is inspect.Parameter.empty:
        return None
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)

    class Last(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:  # ast's visitor name
            return ast.Name(node.attr, ast.Load())

        def visit_Constant(self, node: ast.Constant) -> ast.AST:  # ast's visitor name
            if isinstance(node.value, str):  # a quoted part: read it as code
                return self.visit(ast.parse(node.value, mode="eval").body)
            return node

    return ast.unparse(Last().visit(ast.parse(text.strip("'\""), mode="eval")))


def members(annotation: str) -> set[str]:
    """The members of a union written with ``|``."""
    node = ast.parse(annotation, mode="eval").body
    found: set[str] = set()

    def walk(part: ast.expr) -> None:
        if isinstance(part, ast.BinOp) and isinstance(part.op, ast.BitOr):
            walk(part.left)
            walk(part.right)
        else:
            found.add(ast.unparse(part))

    walk(node)
    return found


@cache
def builtin_impls() -> list[tuple[str, pluggy.HookImpl, inspect.Signature]]:
    """(hook, implementation, spec signature) for every implementation in the orbchain package."""
    pm = get_plugin_manager()
    found = []
    for name in sorted(vars(pm.hook)):
        caller = getattr(pm.hook, name)
        if not isinstance(caller, pluggy.HookCaller) or caller.spec is None:
            continue
        spec = inspect.signature(caller.spec.function)
        for impl in caller.get_hookimpls():
            if impl.wrapper or impl.hookwrapper or not impl.function.__module__.startswith("orbchain."):
                continue
            found.append((name, impl, spec))
    return found


def _where(hook: str, impl: pluggy.HookImpl) -> str:
    return f"{impl.plugin_name}.{hook} ({impl.function.__module__}:{impl.function.__code__.co_firstlineno})"


def test_there_are_builtin_implementations_of_core_and_plugin_declared_hooks():
    hooks = {hook for hook, _, _ in builtin_impls()}
    assert len(builtin_impls()) > 200
    assert {"register_coins", "decide_member", "payment_paid", "register_swap_venues"} <= hooks


def test_every_parameter_is_named_and_typed_as_the_spec_says():
    wrong = []
    for hook, impl, spec in builtin_impls():
        for parameter in inspect.signature(impl.function).parameters.values():
            if parameter.name == "self":
                continue
            if parameter.name not in spec.parameters:
                wrong.append(f"{_where(hook, impl)}: {parameter.name} is not a parameter of the spec")
                continue
            mine = normalised(parameter.annotation)
            theirs = normalised(spec.parameters[parameter.name].annotation)
            if mine is not None and mine != theirs:
                wrong.append(f"{_where(hook, impl)}: {parameter.name}: {mine}, the spec says {theirs}")
    assert wrong == []


def test_no_answer_is_wider_than_the_specs():
    wrong = []
    for hook, impl, spec in builtin_impls():
        mine = normalised(inspect.signature(impl.function).return_annotation)
        theirs = normalised(spec.return_annotation) or "Any"
        if mine is None or theirs == "Any":
            continue
        if not members(mine) <= members(theirs):
            wrong.append(f"{_where(hook, impl)}: -> {mine}, the spec says -> {theirs}")
    assert wrong == []


@pytest.mark.parametrize("part", ["parameters", "answer"])
def test_every_builtin_implementation_is_annotated(part):
    """All of them: the count of those that are not is 0 (the two UNTYPEABLE ones aside)."""
    missing = []
    for hook, impl, _ in builtin_impls():
        signature = inspect.signature(impl.function)
        if part == "answer":
            if signature.return_annotation is inspect.Signature.empty:
                missing.append(f"{_where(hook, impl)}: no answer annotation")
            continue
        missing += [f"{_where(hook, impl)}: {p.name}" for p in signature.parameters.values()
                    if p.name != "self" and p.annotation is inspect.Parameter.empty
                    and (hook, p.name, impl.plugin_name) not in UNTYPEABLE]
    assert missing == [], f"{len(missing)} of {len(builtin_impls())} implementations lack annotations"


def test_the_comparison_catches_a_wrong_type_and_reads_dotted_and_quoted_names():
    assert normalised("'api.Gateway'") == normalised("Gateway") == "Gateway"
    assert normalised("Mapping[str, 'Any']") == "Mapping[str, Any]"
    assert normalised("str") != normalised("Mapping[str, Any]")
    assert members("Member | None") == {"Member", "None"} and not members("str | int") <= members("str | None")
