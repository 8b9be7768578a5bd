"""No hook is called by a name string or past the typed caller (issue 44): every call site reads
``gateway.hooks.<name>(...)`` (core/contract/hooks.py), so mypy checks its arguments and pluggy's ordering,
wrappers and tracing see it.

An AST scan of core/, web/, plugins/ and chains/ for what the string dispatchers' call sites looked like:
a call of ``call_first`` and its siblings (``call_collect`` is kept in ``orbchain.api`` for plugins written
before, and no built-in calls it), ``gateway.emit("name", ...)``, ``getattr(pm.hook, "name")`` and a
direct ``pm.hook.<name>(...)``. ``pm.hook.<name>.get_hookimpls()`` (reading who implements a hook) and
pluggy's own ``call_historic`` registration are not calls of the hook and stay allowed.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ("core", "web", "plugins", "chains")
DISPATCHERS = {"call_first", "call_first_answer", "call_collect", "call_collect_answers", "call_event",
               "call_event_impls", "call_filter"}
DEFINED_IN = Path("core", "contract", "plugins.py")  # call_collect's own definition, for third parties


def _is_hook_namespace(node: ast.expr) -> bool:
    """``<anything>.hook``: pluggy's ``pm.hook`` (``gateway.pm.hook``, ``self._pm.hook`` ...)."""
    return isinstance(node, ast.Attribute) and node.attr == "hook"


def _is_string(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def offences(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for every string or direct hook call in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in DISPATCHERS:
            found.append((node.lineno, f"{name}(...): call gateway.hooks.<name>(...)"))
        elif name == "emit" and node.args and _is_string(node.args[0]):
            found.append((node.lineno, f"emit({node.args[0].value!r}): call gateway.hooks.<name>(...)"))  # type: ignore[attr-defined]
        elif name == "getattr" and len(node.args) >= 2 and _is_hook_namespace(node.args[0]) and _is_string(node.args[1]):
            found.append((node.lineno, f"getattr(pm.hook, {node.args[1].value!r})"))  # type: ignore[attr-defined]
        elif isinstance(func, ast.Attribute) and _is_hook_namespace(func.value):
            found.append((node.lineno, f"pm.hook.{func.attr}(...): call gateway.hooks.{func.attr}(...)"))
    return found


def scan(root: Path = ROOT) -> dict[str, list[tuple[int, str]]]:
    """Offences per file (relative path) under the rooms of ``root``."""
    report = {}
    for room in ROOMS:
        for path in sorted((root / room).rglob("*.py")):
            relative = path.relative_to(root)
            if relative == DEFINED_IN:
                continue
            found = offences(path.read_text(encoding="utf-8"))
            if found:
                report[str(relative)] = found
    return report


def test_no_hook_is_called_by_name_or_past_the_typed_caller():
    report = scan()
    assert report == {}, "\n".join(f"{path}:{line}: {what}" for path, found in report.items()
                                    for line, what in found)


def test_the_scan_sees_each_old_way_of_calling_a_hook():
    """The scan itself can fail: each form the call sites had before issue 44 is reported, the typed
    facade, reading a hook's implementations and pluggy's historic registration are not."""
    old = textwrap.dedent('''
        await call_first(gateway.pm, "decide_member", gateway=gateway, merchant_id=m, member_id=x)
        plugin, answer = await call_first_answer(gateway.pm, "decide_credit_status", gateway=gateway, credit=c)
        call_collect(pm, "register_coins", registry, gateway=gateway)
        await call_collect_answers(gateway.pm, "extra_dashboard_notices", gateway=gateway)
        await call_event(gateway.pm, "gateway_started", gateway=gateway)
        await call_event_impls(listeners, HOOK, gateway=gateway, request=view)
        await call_filter(gateway.pm, "filter_credit_postings", "postings", p, gateway=gateway, credit=c)
        await gateway.emit("payment_cancelled", payment=view)
        impls = getattr(gateway.pm.hook, "api_key_request_answered").get_hookimpls()
        pm.hook.check_config(gateway=gateway, config=config)
        forms = gateway.pm.hook.extra_pay_page_forms(gateway=gateway, payment=view)
    ''')
    assert sorted(line for line, _ in offences(old)) == list(range(2, 13))
    allowed = textwrap.dedent('''
        await gateway.hooks.decide_member(merchant_id=m, member_id=x)
        gateway.hooks.register_coins(registry=gateway.coins)
        readers = {impl.plugin_name for impl in pm.hook.check_config.get_hookimpls()}
        pm.hook.register_hookspecs.call_historic(kwargs={"registry": registry})
        gateway.signals.emit(WAKE)
    ''')
    assert offences(allowed) == []
