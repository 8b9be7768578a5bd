"""Renamed hooks keep their old names for one release (core/contract/hook_aliases.py, issue 30).

A plugin implementing an old name is called under the new one and its author
is told once (DeprecationWarning and a log line) per plugin and hook; a plugin
using the new names hears nothing.
"""

from __future__ import annotations

import logging
import types
import uuid
import warnings

import pytest

from orbchain.core.contract import hookspecs
from orbchain.core.infra.config import ConfigError, load_config
from orbchain.core.startup import build_gateway
from orbchain.core.contract.hook_aliases import RENAMED_HOOKS
from orbchain.core.contract.hooks import Hooks
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl


def _unique(prefix: str) -> str:
    """A plugin name never registered before: the warning is once per process, per plugin and hook."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _deprecations(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, DeprecationWarning)]


def test_every_rename_points_from_a_gone_name_to_a_hookspec():
    specs = {name for name, func in vars(hookspecs).items() if hasattr(func, "orbchain_spec")}
    assert set(RENAMED_HOOKS.values()) <= specs
    assert not set(RENAMED_HOOKS) & specs, "an old name is still a hook of its own"
    assert len(set(RENAMED_HOOKS.values())) == len(RENAMED_HOOKS)


async def test_an_old_event_name_is_called_under_the_new_one_and_warns_once(caplog):
    seen = []

    class OldListener:
        @hookimpl
        async def payment_paying(self, payment):
            seen.append(payment["track_id"])

    name = _unique("old_listener")
    caplog.set_level(logging.WARNING, logger="orbchain.core.contract.hook_aliases")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        pm = get_plugin_manager([(name, OldListener())], load_entrypoints=False)
        get_plugin_manager([(name, OldListener())], load_entrypoints=False)  # a second manager: told already
    [message] = _deprecations(record)
    assert f"plugin '{name}' implements the hook 'payment_paying', renamed 'payment_detected'" in message
    assert [r.getMessage() for r in caplog.records] == [message]
    assert not hasattr(pm.hook, "payment_paying")
    await Hooks(pm, "gw").payment_detected(payment={"track_id": "T1"})
    assert seen == ["T1"]


async def test_an_old_decision_name_in_a_module_plugin_answers_the_new_hook():
    module = types.ModuleType("old_style_plugin")

    @hookimpl
    def deposit_credit_status(credit):
        return "CONFIRMED" if credit == "swap me" else None

    module.deposit_credit_status = deposit_credit_status  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match="'deposit_credit_status', renamed 'decide_credit_status'"):
        pm = get_plugin_manager([(_unique("module"), module)], load_entrypoints=False)
    assert await Hooks(pm, "gw").decide_credit_status(credit="swap me") == "CONFIRMED"
    assert await Hooks(pm, "gw").decide_credit_status(credit="keep") is None
    assert deposit_credit_status.orbchain_impl["specname"] is None  # type: ignore[attr-defined]


def test_an_old_name_given_as_specname_is_renamed_too():
    class Explicit:
        @hookimpl(specname="pay_page_forms")
        def forms(self, payment):
            return [payment]

    with pytest.warns(DeprecationWarning, match="'pay_page_forms', renamed 'extra_pay_page_forms'"):
        pm = get_plugin_manager([(_unique("explicit"), Explicit())], load_entrypoints=False)
    assert pm.hook.extra_pay_page_forms(gateway="gw", payment="P") == [["P"]]


def test_new_names_register_without_a_warning():
    class NewListener:
        @hookimpl
        def payment_detected(self, payment):
            pass

        @hookimpl
        def decide_credit_status(self, credit):
            return None

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pm = get_plugin_manager([(_unique("new_listener"), NewListener())], load_entrypoints=False)
    assert len(pm.hook.payment_detected.get_hookimpls()) == 1


def test_a_plugin_implementing_both_names_is_called_once_through_the_new_one():
    class Both:
        @hookimpl
        def payment_qr_payload(self, payment, coin):
            return "old"

        @hookimpl
        def decide_qr_payload(self, payment, coin):
            return "new"

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pm = get_plugin_manager([(_unique("both"), Both())], load_entrypoints=False)
    assert [impl.function.__name__ for impl in pm.hook.decide_qr_payload.get_hookimpls()] == ["decide_qr_payload"]
    assert pm.hook.decide_qr_payload(gateway="gw", payment={}, coin=None) == "new"


def test_an_old_validate_config_still_reads_its_block(tmp_path):
    """``validate_config`` (now ``check_config``) still claims the plugin's config block and still refuses."""
    name = _unique("configured")

    class Configured:
        PLUGIN_NAME = name

        @hookimpl
        def validate_config(self, gateway):
            block = gateway.config.plugin_config(name)
            if set(block) - {"colour"}:
                raise ConfigError(f"plugin.{name}: unknown keys {sorted(set(block) - {'colour'})}")

    base = load_config(None, environ={}).with_overrides(server={"data_dir": str(tmp_path)})
    with pytest.warns(DeprecationWarning, match="'validate_config', renamed 'check_config'"):
        pm = get_plugin_manager([Configured()], load_entrypoints=False)
    build_gateway(base.with_overrides(plugin={name: {"colour": "blue"}}), pm)
    with pytest.raises(ConfigError, match="unknown keys \\['shade'\\]"):
        build_gateway(base.with_overrides(plugin={name: {"shade": "dark"}}), pm)
