"""The hook caller of each kind (core/contract/hook_caller.py): pluggy's ordering, wrappers and tracing over
awaited answers, and what each kind adds (firstresult, filter steps, registry ownership, event isolation).

The hooks here are this module's own specs (one per kind), so the tests say what the caller does, not what
a built-in plugin happens to implement. Each plugin below has a sync and an async flavour of its answer.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
from typing import Any

import pluggy
import pytest

from orbchain.core.contract.hook_caller import Answer, HookCalls, run_bridged
from orbchain.core.contract.hook_kinds import HookKind, HookspecMarker
from orbchain.core.contract.held import HeldCall

hookspec = HookspecMarker("orbchain")
hookimpl = pluggy.HookimplMarker("orbchain")


# ----------------------------------------------------------------------------------------- the specs


@hookspec(kind=HookKind.REGISTER)
def register_things(registry: Any, gateway: Any) -> None:
    """Add things."""


def declare(name: str, **options: Any) -> Any:
    """A spec ``name(gateway, value)`` marked with ``options``."""

    def spec(gateway: Any, value: Any) -> Any:
        """A test hook."""

    spec.__name__ = spec.__qualname__ = name
    return hookspec(**options)(spec)


check_thing = declare("check_thing", kind=HookKind.CHECK)
decide_thing = declare("decide_thing", kind=HookKind.DECIDE)
decide_now = declare("decide_now", kind=HookKind.DECIDE, sync=True)  # its callers cannot await
filter_thing = declare("filter_thing", kind=HookKind.FILTER)
extra_things = declare("extra_things", kind=HookKind.EXTRA)
extra_decorations = declare("extra_decorations", kind=HookKind.EXTRA, isolated=True)  # a failure only logged
thing_happened = declare("thing_happened", kind=HookKind.EVENT)
thing_watched = declare("thing_watched", kind=HookKind.EVENT, selective=True)  # listeners may be chosen


SPECS = sys.modules[__name__]


def manager(*plugins: Any) -> pluggy.PluginManager:
    pm = pluggy.PluginManager("orbchain")
    pm.add_hookspecs(SPECS)
    for plugin in plugins:
        pm.register(plugin, name=plugin.name)
    return pm


def answer(asynchronous: bool, value: Any) -> Any:
    """``value``, or an awaitable of it that first yields to the event loop (a real await, not a ready value)."""
    if not asynchronous:
        return value

    async def later() -> Any:
        await asyncio.sleep(0)
        return value

    return later()


class Plugin:
    """Answers every hook with ``<name>:<value>`` (sync or async) and records its calls in ``calls``."""

    def __init__(self, name: str, asynchronous: bool = False, answers: bool = True) -> None:
        self.name, self.asynchronous, self.answers = name, asynchronous, answers
        self.calls: list[tuple[str, Any]] = []

    def _answer(self, hook: str, value: Any) -> Any:
        self.calls.append((hook, value))
        return answer(self.asynchronous, f"{value}>{self.name}" if self.answers else None)

    @hookimpl
    def register_things(self, registry: Any) -> None:
        registry.add(self.name)

    @hookimpl
    def check_thing(self, value: Any) -> Any:
        self.calls.append(("check_thing", value))
        return answer(self.asynchronous, None)

    @hookimpl
    def decide_thing(self, value: Any) -> Any:
        return self._answer("decide_thing", value)

    @hookimpl
    def filter_thing(self, value: Any) -> Any:
        return self._answer("filter_thing", value)

    @hookimpl
    def extra_things(self, value: Any) -> Any:
        return self._answer("extra_things", value)

    @hookimpl
    def thing_happened(self, value: Any) -> Any:
        self.calls.append(("thing_happened", value))
        return answer(self.asynchronous, None)


class Registry:
    def __init__(self) -> None:
        self.current_plugin = "core"
        self.added: list[tuple[str, str]] = []

    def add(self, thing: str) -> None:
        self.added.append((self.current_plugin, thing))


class Gateway:
    """What an isolated event needs of the gateway: the outage and the held calls."""

    def __init__(self, away: bool = False) -> None:
        self.held: list[HeldCall] = []
        self.absorbed: list[str] = []
        self.db_outage = self
        self.held_events = self
        self.away = away

    def absorb(self, exc: BaseException, where: str) -> bool:
        self.absorbed.append(where)
        return self.away

    def hold(self, call: HeldCall) -> None:
        self.held.append(call)


async def call_kind(calls: HookCalls, hook: str, value: Any = "v") -> Any:
    pm_hook = getattr(calls.pm.hook, hook)
    gateway = Gateway()
    if hook == "register_things":
        return calls.register(pm_hook, registry=Registry(), gateway=gateway).added
    caller = {"check_thing": calls.check, "decide_thing": calls.decide, "filter_thing": calls.filter,
              "extra_things": calls.extra, "thing_happened": calls.event}[hook]
    return await caller(pm_hook, gateway=gateway, value=value)


# ----------------------------------------------------------------------------------------- pluggy's machinery


KINDS = ("register_things", "check_thing", "decide_thing", "filter_thing", "extra_things", "thing_happened")


class Wrappers:
    """A new-style wrapper and an old-style hookwrapper on every hook: what each saw come back."""

    name = "wrappers"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Any]] = []

    def _wrap(self, hook: str) -> Any:
        result = yield
        self.seen.append(("wrapper", hook, result))
        return result

    def _old(self, hook: str) -> Any:
        outcome = yield
        self.seen.append(("hookwrapper", hook, outcome.exception or outcome.get_result()))


for _hook in KINDS:
    def _make(hook: str) -> tuple[Any, Any]:
        def wrapper(self: Wrappers) -> Any:
            return (yield from self._wrap(hook))

        def old(self: Wrappers) -> Any:
            yield from self._old(hook)

        wrapper.__name__ = hook
        old.__name__ = hook
        return hookimpl(wrapper=True, specname=hook)(wrapper), hookimpl(hookwrapper=True, specname=hook)(old)

    _wrapper, _old_wrapper = _make(_hook)
    setattr(Wrappers, f"wrap_{_hook}", _wrapper)
    setattr(Wrappers, f"old_{_hook}", _old_wrapper)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("hook", KINDS)
async def test_wrappers_and_the_tracer_see_every_kind_with_awaited_answers(hook, asynchronous):
    plugin, wrappers = Plugin("p", asynchronous), Wrappers()
    pm = manager(plugin, wrappers)
    traced: list[tuple[str, list[str], Any]] = []
    pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: traced.append(("before", [i.plugin_name for i in impls], None)),
        lambda outcome, name, impls, kwargs: traced.append((name, [i.plugin_name for i in impls],
                                                            outcome.get_result())))
    lines: list[str] = []
    pm.trace.root.setwriter(lines.append)
    pm.enable_tracing()

    result = await call_kind(HookCalls(pm), hook)

    expected = {"register_things": [], "check_thing": [], "decide_thing": "v>p", "filter_thing": ["v>p"],
                "extra_things": ["v>p"], "thing_happened": []}[hook]
    assert traced[-1] == (hook, ["p", "wrappers", "wrappers"], expected)  # pluggy's result, already awaited
    assert ("wrapper", hook, expected) in wrappers.seen and ("hookwrapper", hook, expected) in wrappers.seen
    assert any(hook in line and "finish" in line for line in lines), lines
    assert not any("coroutine" in repr(entry) for entry in traced + wrappers.seen)
    if hook == "register_things":
        assert result == [("p", "p")]


class SeeingFailures:
    """A new-style wrapper of ``decide_thing`` that records what failed through it, and lets it through."""

    name = "seeing"

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl(wrapper=True)
    def decide_thing(self) -> Any:
        try:
            return (yield)
        except BaseException as exc:  # the test's point: what a wrapper sees (re-raised)
            self.seen.append(f"{type(exc).__name__}: {exc}")
            raise


async def test_a_wrapper_sees_an_awaited_failure_and_the_caller_gets_it():
    class Failing(Plugin):
        @hookimpl
        def decide_thing(self, value: Any) -> Any:
            async def fail() -> None:
                await asyncio.sleep(0)
                raise ValueError("nope")

            return fail()

    wrappers, catching = Wrappers(), SeeingFailures()
    pm = manager(Failing("f"), wrappers, catching)
    with pytest.raises(ValueError, match="nope"):
        await HookCalls(pm).decide(pm.hook.decide_thing, gateway=None, value="v")
    assert catching.seen == ["ValueError: nope"]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_a_decision_stops_at_the_first_answer_that_is_not_none_after_awaiting(asynchronous):
    silent = Plugin("silent", asynchronous=True, answers=False)  # its coroutine is not None; its answer is
    answering, never_asked = Plugin("answering", asynchronous), Plugin("late", asynchronous)
    # pluggy calls the last registered first: silent, then answering, then late.
    pm = manager(never_asked, answering, silent)

    result = await HookCalls(pm).decide_answer(pm.hook.decide_thing, gateway=None, value="v")

    assert result == Answer("answering", "v>answering")
    assert silent.calls and answering.calls and not never_asked.calls


async def test_nobody_deciding_is_none():
    pm = manager(Plugin("a", True, answers=False), Plugin("b", False, answers=False))
    assert await HookCalls(pm).decide_answer(pm.hook.decide_thing, gateway=None, value="v") == Answer(None, None)


async def test_tryfirst_and_trylast_order_every_kind():
    order: list[str] = []

    class Ordered:
        def __init__(self, name: str) -> None:
            self.name = name

        def note(self) -> Any:
            order.append(self.name)
            return answer(True, None)

    class First(Ordered):
        @hookimpl(tryfirst=True)
        def thing_happened(self) -> Any:
            return self.note()

    class Last(Ordered):
        @hookimpl(trylast=True)
        def thing_happened(self) -> Any:
            return self.note()

    class Middle(Ordered):
        @hookimpl
        def thing_happened(self) -> Any:
            return self.note()

    pm = manager(First("first"), Middle("middle"), Last("last"))
    await HookCalls(pm).event(pm.hook.thing_happened, gateway=Gateway(), value="v")
    assert order == ["first", "middle", "last"]


# ----------------------------------------------------------------------------------------- what each kind adds


async def test_a_filter_threads_its_value_and_names_each_step():
    class Keeps(Plugin):
        @hookimpl
        def filter_thing(self, value: Any) -> Any:
            self.calls.append(("filter_thing", value))
            return answer(self.asynchronous, None)  # None passes the value on unchanged

    a, keeps, b = Plugin("a", True), Keeps("keeps"), Plugin("b", False)
    pm = manager(b, keeps, a)  # called a, keeps, b
    steps: list[tuple[str, Any]] = []

    result = await HookCalls(pm).filter(pm.hook.filter_thing, gateway=None, value="v", steps=steps)

    assert result == "v>a>b"
    assert steps == [("a", "v>a"), ("b", "v>a>b")]
    assert keeps.calls == [("filter_thing", "v>a")] and b.calls == [("filter_thing", "v>a")]


async def test_a_filter_lets_an_exception_through():
    class Raising(Plugin):
        @hookimpl
        def filter_thing(self, value: Any) -> Any:
            raise RuntimeError("refused")

    later = Plugin("later")
    pm = manager(later, Raising("raising"))
    with pytest.raises(RuntimeError, match="refused"):
        await HookCalls(pm).filter(pm.hook.filter_thing, gateway=None, value="v")
    assert later.calls == []


def test_register_tells_the_registry_who_adds_and_skips_whom_it_is_told():
    pm = manager(Plugin("a"), Plugin("b"), Plugin("c"))
    registry = Registry()

    returned = HookCalls(pm).register(pm.hook.register_things, skip={"b"}, registry=registry, gateway=None)

    assert returned is registry
    assert registry.added == [("c", "c"), ("a", "a")]
    assert registry.current_plugin == "core"


def test_register_resets_the_registry_owner_when_a_plugin_fails():
    class Broken(Plugin):
        @hookimpl
        def register_things(self, registry: Any) -> None:
            raise ValueError("duplicate")

    registry = Registry()
    pm = manager(Broken("broken"))
    with pytest.raises(ValueError, match="duplicate"):
        HookCalls(pm).register(pm.hook.register_things, registry=registry, gateway=None)
    assert registry.current_plugin == "core"


async def test_a_check_asks_everyone_until_one_refuses():
    class Refusing(Plugin):
        @hookimpl
        def check_thing(self, value: Any) -> Any:
            async def refuse() -> None:
                raise PermissionError(f"{self.name} refuses {value}")

            return refuse()

    first, after = Plugin("first", True), Plugin("after")
    pm = manager(after, Refusing("refusing"), first)
    with pytest.raises(PermissionError, match="refusing refuses v"):
        await HookCalls(pm).check(pm.hook.check_thing, gateway=None, value="v")
    assert first.calls and not after.calls

    pm = manager(Plugin("a", True), Plugin("b"))
    assert await HookCalls(pm).check(pm.hook.check_thing, gateway=None, value="v") is None


class Failing(Plugin):
    """Its event and extra implementations raise ``error`` (after an await when async)."""

    def __init__(self, name: str, asynchronous: bool, error: Exception) -> None:
        super().__init__(name, asynchronous)
        self.error = error

    def _fail(self) -> Any:
        if not self.asynchronous:
            raise self.error

        async def fail() -> None:
            await asyncio.sleep(0)
            raise self.error

        return fail()

    @hookimpl
    def thing_happened(self, value: Any) -> Any:
        return self._fail()

    @hookimpl
    def extra_decorations(self, value: Any) -> Any:
        return self._fail()


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_an_event_logs_a_failing_plugin_and_the_others_still_hear(asynchronous, caplog):
    after, before = Plugin("after"), Plugin("before", True)
    pm = manager(after, Failing("failing", asynchronous, KeyError("bug")), before)
    gateway = Gateway(away=False)

    with caplog.at_level(logging.ERROR, logger="orbchain.core.contract.hook_caller"):
        await HookCalls(pm).event(pm.hook.thing_happened, gateway=gateway, value="v")

    assert before.calls == after.calls == [("thing_happened", "v")]
    assert "plugin failing failed in hook thing_happened" in caplog.text
    assert gateway.held == [] and gateway.absorbed == ["plugin failing in hook thing_happened"]


async def test_an_event_that_met_the_database_away_is_held_and_replays_that_plugin_alone():
    class Recovering(Failing):
        @hookimpl
        def thing_happened(self, value: Any) -> Any:
            if self.error is not None:
                return self._fail()
            self.calls.append(("thing_happened", value))
            return None

    failing, other = Recovering("failing", True, ConnectionError("database away")), Plugin("other")
    pm = manager(other, failing)
    gateway = Gateway(away=True)

    await HookCalls(pm).event(pm.hook.thing_happened, gateway=gateway, value="v")

    [held] = gateway.held
    assert (held.plugin, held.hook_name, dict(held.kwargs)) == ("failing", "thing_happened", {"value": "v"})
    assert other.calls == [("thing_happened", "v")]
    failing.error = None  # the database is back
    await held.run()
    assert failing.calls == [("thing_happened", "v")]


async def test_an_isolated_extra_skips_a_failing_plugin_and_a_plain_one_does_not(caplog):
    pm = manager(Plugin("good", True), Failing("failing", True, ValueError("broken")))
    calls = HookCalls(pm)
    with caplog.at_level(logging.ERROR, logger="orbchain.core.contract.hook_caller"):
        answers = await calls.extra_answers(pm.hook.extra_decorations, gateway=Gateway(), value="v")
    assert answers == [] and "plugin failing failed in hook extra_decorations" in caplog.text

    class Both(Failing):
        @hookimpl
        def extra_things(self, value: Any) -> Any:
            return self._fail()

    pm = manager(Plugin("good", True), Both("failing", True, ValueError("broken")))
    with pytest.raises(ValueError, match="broken"):
        await HookCalls(pm).extra(pm.hook.extra_things, gateway=None, value="v")


async def test_an_isolated_extra_leaves_a_database_outage_to_the_outage(caplog):
    """A page decoration that met the database away: the outage counts and logs it once, not the caller."""
    pm = manager(Failing("failing", True, ValueError("away")))
    gateway = Gateway(away=True)
    with caplog.at_level(logging.ERROR, logger="orbchain.core.contract.hook_caller"):
        answers = await HookCalls(pm).extra_answers(pm.hook.extra_decorations, gateway=gateway, value="v")
    assert answers == []
    assert gateway.absorbed == ["hook extra_decorations"] and gateway.held == []
    assert "failing" not in caplog.text


async def test_an_awaited_failure_keeps_where_it_was_raised():
    """The outage test and a refused credit's culprit read the traceback: the bridge must not cut it."""

    async def deep_in_the_driver() -> None:
        await asyncio.sleep(0)
        raise ConnectionRefusedError(111, "refused")

    class Driver:
        name = "driver"

        @hookimpl
        def decide_thing(self, value: Any) -> Any:
            return deep_in_the_driver()

    pm = manager(Driver())
    with pytest.raises(ConnectionRefusedError) as raised:
        await HookCalls(pm).decide(pm.hook.decide_thing, gateway=None, value="v")
    assert "deep_in_the_driver" in [frame.name for frame in raised.traceback]


async def test_a_selective_event_tells_only_the_implementations_given():
    heard: list[str] = []

    class Listener:
        def __init__(self, name: str) -> None:
            self.name = name

        @hookimpl
        async def thing_watched(self, value: Any) -> None:
            heard.append(self.name)

        @hookimpl
        def thing_happened(self, value: Any) -> None:
            heard.append(self.name)

    pm = manager(Listener("a"), Listener("b"), Listener("c"))
    calls = HookCalls(pm)
    chosen = [impl for impl in pm.hook.thing_watched.get_hookimpls() if impl.plugin_name != "b"]
    await calls.event(pm.hook.thing_watched, only=chosen, gateway=None, value="v")
    assert heard == ["c", "a"]
    await calls.event(pm.hook.thing_watched, only=(), gateway=None, value="v")
    assert heard == ["c", "a"]
    with pytest.raises(TypeError, match="thing_happened is not declared selective"):
        await calls.event(pm.hook.thing_happened, only=chosen, gateway=None, value="v")


async def test_extra_returns_every_answer_with_its_plugin():
    pm = manager(Plugin("b", False), Plugin("silent", True, answers=False), Plugin("a", True))
    answers = await HookCalls(pm).extra_answers(pm.hook.extra_things, gateway=None, value="v")
    assert answers == [("a", "v>a"), ("b", "v>b")]


# ----------------------------------------------------------------------------------------- refusals


def test_a_sync_hook_refuses_an_async_answer_naming_the_plugin():
    class Async(Plugin):
        @hookimpl
        async def decide_now(self, value: Any) -> Any:
            return "late"

    pm = manager(Async("slow"))
    with pytest.raises(TypeError, match="plugin slow answered decide_now with an awaitable"):
        HookCalls(pm).decide_sync(pm.hook.decide_now, gateway=None, value="v")


async def test_a_caller_refuses_another_kind_and_arguments_off_the_spec():
    pm = manager(Plugin("p"))
    calls = HookCalls(pm)
    with pytest.raises(TypeError, match="thing_happened is a event hook, not a decide hook"):
        await calls.decide(pm.hook.thing_happened, gateway=None, value="v")
    with pytest.raises(TypeError, match=r"missing \['value'\]"):
        await calls.decide(pm.hook.decide_thing, gateway=None)
    with pytest.raises(TypeError, match=r"not in the spec \['valu'\]"):
        await calls.decide(pm.hook.decide_thing, gateway=None, value="v", valu="typo")
    with pytest.raises(TypeError, match="may be answered asynchronously"):
        calls.decide_sync(pm.hook.decide_thing, gateway=None, value="v")


# ----------------------------------------------------------------------------------------- the bridge


async def test_the_bridge_shares_the_callers_context_and_runs_calls_side_by_side():
    current = contextvars.ContextVar("current", default="unset")

    async def one(n: int) -> tuple[int, str]:
        current.set(f"task {n}")

        async def read() -> str:
            await asyncio.sleep(0.001 * (5 - n))  # finish in the reverse order of starting
            return current.get()

        def call() -> tuple[int, str]:
            from orbchain.core.contract.hook_caller import await_in_bridge

            return n, await_in_bridge(read())

        return await run_bridged(call)

    assert await asyncio.gather(*(one(n) for n in range(5))) == [(n, f"task {n}") for n in range(5)]


async def test_cancelling_a_call_reaches_its_wrappers_and_the_caller():
    started = asyncio.Event()

    class Slow(Plugin):
        @hookimpl
        async def decide_thing(self, value: Any) -> Any:
            started.set()
            await asyncio.sleep(3600)

    watching = SeeingFailures()
    pm = manager(Slow("slow"), watching)
    task = asyncio.ensure_future(HookCalls(pm).decide(pm.hook.decide_thing, gateway=None, value="v"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert watching.seen == ["CancelledError: "]


async def test_the_bridge_reuses_its_greenlets_and_serves_on_after_a_failure():
    from orbchain.core.contract import hook_caller

    def fail() -> None:
        raise LookupError("gone")

    await run_bridged(lambda: 1)
    worker = hook_caller._idle[-1]
    with pytest.raises(LookupError, match="gone"):
        await run_bridged(fail)
    assert hook_caller._idle[-1] is worker and worker.gr_context is None  # reused; holds no task's context
    assert await run_bridged(lambda: hook_caller.await_in_bridge(asyncio.sleep(0, result="served"))) == "served"
    stray = asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="outside a bridged hook call"):
        hook_caller.await_in_bridge(stray)
    stray.close()
