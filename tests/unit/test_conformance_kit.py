"""The kit's own mechanics: capabilities and the "not applicable" report of the conformance suite."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from orbchain.core.types import chains
from orbchain.core.types.chains import Block, BlockRef, ChainAdapter
from orbchain.testing import AdapterConformance, capabilities


class WatchOnly(ChainAdapter):
    """Deposits only: no mempool, no payout role."""

    name = "watchonly"

    async def tip(self) -> BlockRef:
        return BlockRef(0, "00")

    async def block(self, height: int) -> Block:
        return Block(0, "00", "")


def _request(*needed: str) -> SimpleNamespace:
    marks = [getattr(pytest.mark, capabilities.MARKER)(*needed).mark]
    return SimpleNamespace(node=SimpleNamespace(iter_markers=lambda name: [m for m in marks if m.name == name]))


def test_a_missing_capability_is_reported_as_not_applicable():
    adapter = WatchOnly()
    assert capabilities.missing(adapter) == {capabilities.MEMPOOL, capabilities.PAYOUTS, capabilities.HISTORY,
                                         capabilities.PUSH, capabilities.CUSTODY}
    with pytest.raises(pytest.skip.Exception, match="not applicable: watchonly does not declare payouts"):
        capabilities.skip_unless_applicable(_request(capabilities.DEPOSITS, capabilities.PAYOUTS), adapter)
    capabilities.skip_unless_applicable(_request(capabilities.DEPOSITS, capabilities.REORGS), adapter)  # runs


def test_payout_tests_of_the_suite_require_the_payout_capability():
    def needed(test) -> set[str]:
        return {c for m in test.pytestmark if m.name == capabilities.MARKER for c in m.args}

    assert capabilities.PAYOUTS in needed(AdapterConformance.test_payout_signed_broadcast_and_confirmed)
    assert capabilities.PAYOUTS in needed(AdapterConformance.test_crash_rebroadcasts_the_stored_transaction)
    assert capabilities.PAYOUTS not in needed(AdapterConformance.test_reorg_after_credit_reverses_with_an_event)
    with pytest.raises(ValueError, match="unknown capabilities"):
        capabilities.requires("teleport")


def test_the_kit_asks_the_adapters_own_declaration():
    """A declared capability counts even where the adapter would look able otherwise, and vice versa."""
    adapter = WatchOnly()
    adapter.capabilities = frozenset({chains.Capability.DEPOSITS, chains.Capability.MEMPOOL})
    assert capabilities.missing(adapter) == {capabilities.PAYOUTS, capabilities.HISTORY, capabilities.PUSH,
                                         capabilities.CUSTODY}
    adapter.capabilities = frozenset()
    assert capabilities.missing(adapter) == set(capabilities.CAPABILITIES)
