"""Which optional roles an adapter has, so the suite can say "not applicable" on purpose.

Tests of the suite name what they need with ``@requires("payouts")``; a
test whose capability the adapter does not declare is reported as skipped
with the reason ``not applicable: <chain> does not declare <capability>``,
never as a failure and never silently.

The answer is the adapter's own declaration (``adapter.supports`` with
``orbchain.core.types.chains.Capability``); "reorgs" needs only DEPOSITS, since the
core's scanner rewinds every depositing adapter by its remembered hashes.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import pytest

DEPOSITS, MEMPOOL, REORGS, PAYOUTS, HISTORY, PUSH = "deposits", "mempool", "reorgs", "payouts", "history", "push"
CUSTODY = "custody"
CAPABILITIES = (DEPOSITS, MEMPOOL, REORGS, PAYOUTS, HISTORY, PUSH, CUSTODY)
MARKER = "orbchain_requires"

F = TypeVar("F", bound=Callable[..., Any])


def requires(*capabilities: str) -> Callable[[F], F]:
    """Mark a conformance test as needing these adapter capabilities."""
    unknown = set(capabilities) - set(CAPABILITIES)
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)}; known: {CAPABILITIES}")
    return getattr(pytest.mark, MARKER)(*capabilities)


_CORE_NAMES = {DEPOSITS: "DEPOSITS", MEMPOOL: "MEMPOOL", REORGS: "DEPOSITS", PAYOUTS: "PAYOUTS",
               HISTORY: "HISTORY", PUSH: "PUSH", CUSTODY: "CUSTODY"}


def supports(adapter: Any, capability: str) -> bool:
    """True when ``adapter`` declares the core capability behind ``capability``."""
    from ..core.types.chains import Capability

    return bool(adapter.supports(Capability[_CORE_NAMES[capability]]))


def missing(adapter: Any, capabilities: tuple[str, ...] = CAPABILITIES) -> set[str]:
    return {c for c in capabilities if not supports(adapter, c)}


def skip_unless_applicable(request: pytest.FixtureRequest, adapter: Any) -> None:
    """Skip the requesting test, saying why, when the adapter lacks a capability it is marked with."""
    needed = tuple(c for mark in request.node.iter_markers(MARKER) for c in mark.args)
    lacking = sorted(missing(adapter, needed))
    if lacking:
        pytest.skip(f"not applicable: {adapter.name} does not declare {', '.join(lacking)}")
