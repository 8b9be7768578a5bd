"""What a hook call costs through the typed caller (core/contract/hook_caller.py) against ``call_first`` (issue 44).

The caller runs pluggy's own call path in a child greenlet and awaits each implementation's answer in the
caller; ``call_first`` (the core's loop before issue 44, copied below as the baseline) walks the
implementations itself. Both are timed on the same first-result hook with
three implementations (two async ones answering None, then one sync answer), and on an event with three async
implementations, with and without a tracer installed. Figures are microseconds per call (median of five runs
of ``--calls`` calls); none fails the run.

    .venv/bin/python bench/bench_hook_caller.py [--calls 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import inspect
import time
from typing import Any, Awaitable, Callable

import pluggy

from orbchain.core.contract.hooks import Hooks
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl


async def call_first(pm: pluggy.PluginManager, hook_name: str, **kwargs: Any) -> Any:
    """The baseline: the removed ``call_first``, a loop over ``impl.function`` past pluggy."""
    for impl in reversed(getattr(pm.hook, hook_name).get_hookimpls()):
        result = impl.function(*[kwargs[arg] for arg in impl.argnames])
        if inspect.isawaitable(result):
            result = await result
        if result is not None:
            return result
    return None


async def call_event(pm: pluggy.PluginManager, hook_name: str, **kwargs: Any) -> None:
    """The baseline: the removed ``call_event`` (its failure isolation left out: nothing fails here)."""
    for impl in reversed(getattr(pm.hook, hook_name).get_hookimpls()):
        result = impl.function(*[kwargs[arg] for arg in impl.argnames])
        if inspect.isawaitable(result):
            await result


class Silent:
    def __init__(self, name: str) -> None:
        self.PLUGIN_NAME = name

    @hookimpl
    async def decide_member(self, merchant_id: str, member_id: str) -> Any:
        return None

    @hookimpl
    async def payment_paid(self, payment: Any) -> None:
        return None


class Answering:
    PLUGIN_NAME = "answering"

    @hookimpl
    def decide_member(self, merchant_id: str, member_id: str) -> Any:
        return member_id

    @hookimpl
    async def payment_paid(self, payment: Any) -> None:
        return None


class Gateway:
    db_outage = None


async def per_call(calls: int, call: Callable[[], Awaitable[Any]]) -> float:
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls):
            await call()
        runs.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(runs)


async def measure(calls: int) -> list[tuple[str, float, float]]:
    pm = get_plugin_manager([Answering(), Silent("b"), Silent("a")], load_entrypoints=False)
    gateway = Gateway()
    hooks = Hooks(pm, gateway)
    rows = []
    for traced in (False, True):
        undo = pm.add_hookcall_monitoring(lambda *a: None, lambda *a: None) if traced else (lambda: None)
        old = await per_call(calls, lambda: call_first(pm, "decide_member", gateway=gateway, merchant_id="m",
                                                       member_id="x"))
        new = await per_call(calls, lambda: hooks.decide_member(merchant_id="m", member_id="x"))
        rows.append((f"decide, 3 impls{' (traced)' if traced else ''}", old, new))
        old = await per_call(calls, lambda: call_event(pm, "payment_paid", gateway=gateway, payment=None))
        new = await per_call(calls, lambda: hooks.payment_paid(payment=None))
        rows.append((f"event, 3 impls{' (traced)' if traced else ''}", old, new))
        undo()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args(argv)
    print(f"{'hook':28} {'call_first/call_event':>22} {'typed caller':>13}   (microseconds per call)")
    for name, old, new in asyncio.run(measure(args.calls)):
        print(f"{name:28} {old:22.1f} {new:13.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
