"""Hooks called through pluggy's own machinery over awaited answers: one caller per kind (issue 44).

Why not pluggy alone: pluggy calls no coroutine. Its first-result loop stops
at the first ``async def`` implementation (a coroutine object is not None),
and its wrappers and tracers would see coroutine objects, not answers. Why
not a loop of our own over ``impl.function`` (what ``call_first`` and its six
siblings in ``core/contract/plugins.py`` do): then ``firstresult``, hook
wrappers, ``tryfirst``/``trylast`` and ``pm.add_hookcall_monitoring`` /
``pm.enable_tracing`` are all bypassed.

How: the call runs pluggy's real call path (``PluginManager._hookexec``:
its call monitors, then ``_multicall`` with its ordering, wrappers and
first-result rule) inside a child greenlet. Each implementation is wrapped
for the call: when it returns an awaitable, the wrapper hands it to the
parent greenlet, the coroutine that made the call, which awaits it on the
event loop and switches back with the answer. So pluggy sees every answer
already awaited, one implementation at a time: a decision stops at the first
answer that is not None *after* awaiting, a wrapper's ``yield`` receives the
awaited result, a tracer's ``after`` sees it too. The child shares the
caller's ``contextvars`` (a transaction bound to the task stays bound), and
cancellation or an exception while awaiting is thrown back into the child,
where pluggy's wrappers see it as they would see any exception. This is the
design pluggy's maintainers are bringing upstream (a greenlet submitter
threaded into ``_multicall``, awaited by ``pm.run_async``); when that ships,
``run_bridged`` is what it replaces.

What each kind adds, in the same per-call wrapper (``_CallPlan.wrap``):
``register`` tells the registry which plugin is adding (``current_plugin``)
and can leave plugins out (``skip``); ``filter`` threads its value, the
spec's last parameter, from one plugin to the next and records ``steps``;
``event`` isolates a failing plugin (logged, or held in
``gateway.held_events`` while the database is away);
an ``extra_*`` hook declared ``isolated`` logs and skips a failing plugin (a
database outage is the outage's to log, once).
A hook declared ``sync`` refuses an awaitable answer, naming the plugin.

Implementations must take pluggy's form: plain or ``async def`` functions,
wrappers as generator functions (pluggy's ``wrapper=True`` or old-style
``hookwrapper=True``); a wrapper cannot itself await.
"""

from __future__ import annotations

import functools
import inspect
import logging
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Collection, NamedTuple, Sequence

import greenlet
import pluggy

from .held import HeldCall
from .hook_kinds import HookKind, HookTraits, traits_of

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------- the bridge


IDLE_WORKERS = 64  # greenlets kept for reuse: a fresh one costs several times a switch (bench/bench_hook_caller.py)


class _Finished:
    """What a worker hands back when its function returned or raised (anything else is an awaitable)."""

    __slots__ = ("value", "error")

    def __init__(self, value: Any, error: BaseException | None) -> None:
        self.value, self.error = value, error


class _Worker(greenlet.greenlet):
    """A child greenlet that runs one bridged function at a time, kept for the next (pluggy's planned
    async support keeps one too); ``await_in_bridge`` only works inside one."""

    def __init__(self) -> None:
        super().__init__(self._serve)

    def _serve(self, function: Callable[[], Any]) -> None:
        while True:
            try:
                finished = _Finished(function(), None)
            except greenlet.GreenletExit:
                raise  # collected while suspended: end, do not serve again
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, who raises it
                finished = _Finished(None, exc)
            function = self.parent.switch(finished)


_idle: list[_Worker] = []


async def run_bridged(function: Callable[[], Any]) -> Any:
    """Run ``function`` synchronously in a child greenlet, awaiting here every awaitable it hands over."""
    here = greenlet.getcurrent()
    worker = _idle.pop() if _idle and _idle[-1].parent is here else _Worker()
    worker.gr_context = here.gr_context  # the caller's contextvars, shared, not copied
    handed = worker.switch(function)
    while not isinstance(handed, _Finished):
        try:
            answer = await handed
        except BaseException as exc:  # noqa: BLE001 - cancellation too: the child's wrappers see it, it comes back
            # With its traceback: ``throw(exc)`` alone starts a new one, and the outage test
            # (core/infra/db_faults.py) and a refused credit's culprit read where it was raised.
            handed = worker.throw(type(exc), exc, exc.__traceback__)
        else:
            handed = worker.switch(answer)
    worker.gr_context = None  # hold no task's context while idle
    if len(_idle) < IDLE_WORKERS:
        _idle.append(worker)
    if handed.error is not None:
        raise handed.error
    return handed.value


def await_in_bridge(awaitable: Awaitable[Any]) -> Any:
    """Block this child greenlet until its parent awaited ``awaitable``; its answer (or exception)."""
    current = greenlet.getcurrent()
    if not isinstance(current, _Worker):
        raise RuntimeError("await_in_bridge outside a bridged hook call")
    return current.parent.switch(awaitable)


# ----------------------------------------------------------------------------------------- one call


class Answer(NamedTuple):
    """A decision's answer and the plugin that gave it (``(None, None)`` when nobody answered)."""

    plugin: str | None
    value: Any


@dataclass
class _CallPlan:
    """One call of one hook: what each implementation's wrapper does before and after it runs."""

    hook_name: str
    traits: HookTraits
    kwargs: dict[str, Any]
    value_name: str | None = None  # a filter's threaded parameter (the caller's kwargs keep the first value)
    value: Any = None  # what the filter's next plugin receives
    steps: list[tuple[str, Any]] | None = None
    answered: list[tuple[str, Any]] = field(default_factory=list)  # (plugin, answer not None), in call order

    def run(self, impl: pluggy.HookImpl, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if self.traits.kind is HookKind.REGISTER:
            registry = self.kwargs["registry"]
            if hasattr(registry, "current_plugin"):
                registry.current_plugin = impl.plugin_name
        if self.value_name is not None:
            if self.value_name in impl.argnames:
                args[impl.argnames.index(self.value_name)] = self.value
            elif self.value_name in kwargs:
                kwargs[self.value_name] = self.value
        try:
            answer = self.resolve(impl, impl.function(*args, **kwargs))
        except Exception as exc:
            if not self.traits.isolated:
                raise
            self.isolate(impl, exc)
            return None
        if answer is not None:
            self.answered.append((impl.plugin_name, answer))
            if self.value_name is not None:
                self.value = answer
                if self.steps is not None:
                    self.steps.append((impl.plugin_name, answer))
        return answer

    def resolve(self, impl: pluggy.HookImpl, answer: Any) -> Any:
        if not inspect.isawaitable(answer):
            return answer
        if self.traits.sync:
            close = getattr(answer, "close", None)
            if close is not None:
                close()  # never awaited: say so instead of "coroutine was never awaited"
            raise TypeError(f"plugin {impl.plugin_name} answered {self.hook_name} with an awaitable:"
                            " this hook must answer synchronously (no async def)")
        return await_in_bridge(answer)

    def isolate(self, impl: pluggy.HookImpl, exc: Exception) -> None:
        """A failing plugin of an isolated hook: while the database is away, an event's call is held (called
        again once it is back) and a page decoration's is the outage's to log once; else logged here."""
        where = f"plugin {impl.plugin_name} in hook {self.hook_name}"
        gateway = self.kwargs.get("gateway")
        outage = getattr(gateway, "db_outage", None)
        event = self.traits.kind is HookKind.EVENT
        if outage is not None and outage.absorb(exc, where if event else f"hook {self.hook_name}"):
            if event:
                assert gateway is not None, "an outage is only met through a gateway"
                arguments = {arg: self.kwargs[arg] for arg in (*impl.argnames, *impl.kwargnames)
                             if arg in self.kwargs}
                gateway.held_events.hold(HeldCall(impl.plugin_name, self.hook_name, impl.function, arguments))
            return
        log.exception("plugin %s failed in hook %s", impl.plugin_name, self.hook_name)


_PLAN: ContextVar[_CallPlan] = ContextVar("orbchain_hook_call")


def _wrap(impl: pluggy.HookImpl) -> pluggy.HookImpl:
    """``impl`` as pluggy calls it here: same plugin, options and parameters (pluggy reads them through
    ``__wrapped__``), run by the current call's plan (``_PLAN``), which awaits and shapes its answer."""
    if impl.wrapper or impl.hookwrapper:
        return impl

    @functools.wraps(impl.function)
    def run(*args: Any, **kwargs: Any) -> Any:
        return _PLAN.get().run(impl, list(args), kwargs)

    return pluggy.HookImpl(impl.plugin, impl.plugin_name, run, impl.opts)


# ----------------------------------------------------------------------------------------- the callers


class HookCalls:
    """One caller per hook kind, each taking the pluggy hook (``pm.hook.<name>``), never its name.

    The typed face over these is ``core/contract/hooks.py`` (``gateway.hooks.<name>(...)``). A caller
    refuses a hook of another kind, and arguments the spec does not name or leaves out, with a
    ``TypeError``.
    """

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        # hook name -> (its implementations, wrapped): wrapping once per registration, not per call (bench/).
        self._wrapped: dict[str, tuple[tuple[pluggy.HookImpl, ...], list[pluggy.HookImpl]]] = {}

    # -- startup

    def register(self, hook: pluggy.HookCaller, *, skip: Collection[str] = (), **kwargs: Any) -> Any:
        """Collect: each plugin adds to ``registry``, which knows who is adding; plugins in ``skip`` are
        not asked. Returns the registry."""
        plan = self._plan(hook, HookKind.REGISTER, kwargs)
        try:
            self._run(hook, plan, skip)
        finally:
            if hasattr(kwargs["registry"], "current_plugin"):
                kwargs["registry"].current_plugin = "core"
        return kwargs["registry"]

    # -- the rest: awaited, each implementation's answer awaited in turn

    async def check(self, hook: pluggy.HookCaller, **kwargs: Any) -> None:
        """A veto: every plugin asked in order; the first to raise refuses (the exception propagates)."""
        await self._arun(hook, self._plan(hook, HookKind.CHECK, kwargs))

    async def decide(self, hook: pluggy.HookCaller, **kwargs: Any) -> Any:
        """The first answer that is not None, each implementation awaited before the next is asked."""
        return (await self.decide_answer(hook, **kwargs)).value

    async def decide_answer(self, hook: pluggy.HookCaller, **kwargs: Any) -> Answer:
        """``decide`` with the name of the plugin that answered."""
        plan = self._plan(hook, HookKind.DECIDE, kwargs)
        await self._arun(hook, plan)
        return Answer(*plan.answered[0]) if plan.answered else Answer(None, None)

    async def filter(self, hook: pluggy.HookCaller, *, steps: list[tuple[str, Any]] | None = None,
                     **kwargs: Any) -> Any:
        """The spec's last parameter through every plugin in turn; None passes it on unchanged.

        ``steps`` receives ``(plugin, value it returned)`` for each plugin that returned one. Exceptions
        propagate (a filter runs inside the caller's transaction, which must roll back).
        """
        plan = self._plan(hook, HookKind.FILTER, kwargs)
        plan.value_name, plan.steps = _last_parameter(hook), steps
        plan.value = plan.kwargs[plan.value_name]
        await self._arun(hook, plan)
        return plan.value

    async def extra(self, hook: pluggy.HookCaller, **kwargs: Any) -> list[Any]:
        """Every plugin's answer that is not None, in call order."""
        return [answer for _, answer in await self.extra_answers(hook, **kwargs)]

    async def extra_answers(self, hook: pluggy.HookCaller, **kwargs: Any) -> list[tuple[str, Any]]:
        """``extra`` with the plugin of each answer."""
        plan = self._plan(hook, HookKind.EXTRA, kwargs)
        await self._arun(hook, plan)
        return plan.answered

    async def event(self, hook: pluggy.HookCaller, *, only: Collection[pluggy.HookImpl] | None = None,
                    **kwargs: Any) -> None:
        """Tell every plugin; a failing one is logged (held while the database is away) and the rest run.

        ``only``: of the hook's implementations (``hook.get_hookimpls()``), these alone are told (a hook
        declared ``selective``, whose listeners say which calls they want).
        """
        plan = self._plan(hook, HookKind.EVENT, kwargs)
        if only is not None and not plan.traits.selective:
            raise TypeError(f"hook {hook.name} is not declared selective: every implementation is told")
        await self._arun(hook, plan, only)

    # -- the same kinds for hooks declared ``sync`` (their callers cannot await)

    def check_sync(self, hook: pluggy.HookCaller, **kwargs: Any) -> None:
        self._run(hook, self._plan(hook, HookKind.CHECK, kwargs, sync=True))

    def decide_sync(self, hook: pluggy.HookCaller, **kwargs: Any) -> Any:
        plan = self._plan(hook, HookKind.DECIDE, kwargs, sync=True)
        self._run(hook, plan)
        return plan.answered[0][1] if plan.answered else None

    def extra_sync(self, hook: pluggy.HookCaller, **kwargs: Any) -> list[Any]:
        plan = self._plan(hook, HookKind.EXTRA, kwargs, sync=True)
        self._run(hook, plan)
        return [answer for _, answer in plan.answered]

    # -- machinery

    def _plan(self, hook: pluggy.HookCaller, kind: HookKind, kwargs: dict[str, Any],
              sync: bool = False) -> _CallPlan:
        traits = traits_of(hook)
        if traits.kind is not kind:
            raise TypeError(f"hook {hook.name} is a {traits.kind.value} hook, not a {kind.value} hook")
        if sync and not traits.sync:
            raise TypeError(f"hook {hook.name} may be answered asynchronously: await its {kind.value} call")
        spec = hook.spec
        assert spec is not None, "traits_of names the hook's spec"
        call_kwargs = {**spec.kwargdefaults, **kwargs}  # pluggy's own defaults rule
        missing = [name for name in spec.argnames if name not in call_kwargs]
        unknown = sorted(set(call_kwargs) - set(spec.argnames) - set(spec.kwargnames))
        if missing or unknown:
            raise TypeError(f"hook {hook.name}: arguments missing {missing}, not in the spec {unknown}")
        return _CallPlan(hook.name, traits, call_kwargs)

    def _impls(self, hook: pluggy.HookCaller, skip: Collection[str] = (),
               only: Collection[pluggy.HookImpl] | None = None) -> list[pluggy.HookImpl]:
        """The hook's implementations in pluggy's order, wrapped (the same list until one is (un)registered)."""
        current = tuple(hook.get_hookimpls())
        cached = self._wrapped.get(hook.name)
        if cached is None or cached[0] != current:
            cached = self._wrapped[hook.name] = (current, [_wrap(impl) for impl in current])
        if only is not None:
            return [wrapped for impl, wrapped in zip(*cached) if impl in only]
        return [impl for impl in cached[1] if impl.plugin_name not in skip] if skip else cached[1]

    def _run(self, hook: pluggy.HookCaller, plan: _CallPlan, skip: Collection[str] = (),
             only: Collection[pluggy.HookImpl] | None = None) -> Any:
        """pluggy's call path (monitors, ordering, wrappers, first result) with the wrapped impls."""
        impls: Sequence[pluggy.HookImpl] = self._impls(hook, skip, only)
        token = _PLAN.set(plan)
        try:
            return self.pm._hookexec(hook.name, impls, plan.kwargs, plan.traits.kind is HookKind.DECIDE)
        finally:
            _PLAN.reset(token)

    async def _arun(self, hook: pluggy.HookCaller, plan: _CallPlan,
                    only: Collection[pluggy.HookImpl] | None = None) -> Any:
        return await run_bridged(functools.partial(self._run, hook, plan, (), only))


def _last_parameter(hook: pluggy.HookCaller) -> str:
    spec = hook.spec
    if spec is None or not spec.argnames:
        raise TypeError(f"filter hook {hook.name} has no parameter to filter")
    return spec.argnames[-1]
