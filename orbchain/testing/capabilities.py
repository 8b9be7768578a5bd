"""Which optional roles an adapter has, so the suite can say "not applicable" on purpose.

Tests of the suite name what they need with ``@requires("payouts")``; a
test whose capability the adapter does not declare is reported as skipped
with the reason ``not applicable: <chain> does not declare <capability>``,
never as a failure and never silently.

The core's explicit declaration (``core.chains.Capability`` and
``adapter.supports(...)``) is used when present; until then the roles are
read the way the core itself finds them today.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import pytest

DEPOSITS, MEMPOOL, REORGS, PAYOUTS = "deposits", "mempool", "reorgs", "payouts"
CAPABILITIES = (DEPOSITS, MEMPOOL, REORGS, PAYOUTS)
MARKER = "orbchain_requires"

F = TypeVar("F", bound=Callable[..., Any])


def requires(*capabilities: str) -> Callable[[F], F]:
    """Mark a conformance test as needing these adapter capabilities."""
    unknown = set(capabilities) - set(CAPABILITIES)
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)}; known: {CAPABILITIES}")
    return getattr(pytest.mark, MARKER)(*capabilities)


def _declared(adapter: Any, capability: str) -> bool | None:
    """The adapter's explicit answer, None when the core has no declarations (yet)."""
    from ..core import chains

    enum = getattr(chains, "Capability", None)
    supports = getattr(adapter, "supports", None)
    if enum is None or not callable(supports):
        return None
    member = next((m for m in enum if str(getattr(m, "value", m.name)).lower() == capability
                   or m.name.lower() == capability), None)
    return None if member is None else bool(supports(member))


def supports(adapter: Any, capability: str) -> bool:
    declared = _declared(adapter, capability)
    if declared is not None:
        return declared
    from ..core.chains import ChainAdapter
    from ..core.payouts import sender_of

    if capability == PAYOUTS:
        return sender_of(adapter) is not None
    if capability == MEMPOOL:
        return type(adapter).mempool is not ChainAdapter.mempool
    return capability in (DEPOSITS, REORGS)


def missing(adapter: Any, capabilities: tuple[str, ...] = CAPABILITIES) -> set[str]:
    return {c for c in capabilities if not supports(adapter, c)}


def skip_unless_applicable(request: pytest.FixtureRequest, adapter: Any) -> None:
    """Skip the requesting test, saying why, when the adapter lacks a capability it is marked with."""
    needed = tuple(c for mark in request.node.iter_markers(MARKER) for c in mark.args)
    lacking = sorted(missing(adapter, needed))
    if lacking:
        pytest.skip(f"not applicable: {adapter.name} does not declare {', '.join(lacking)}")
