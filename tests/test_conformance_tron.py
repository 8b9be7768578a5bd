"""The adapter conformance suite (``orbchain.testing``) against the tron plugin on the stand-in node: TRX and a token.

The node (``tests/tron_node.py``) decodes every transaction we broadcast
with classes generated from Tron's message definitions, checks txID and
signature, and charges bandwidth, energy and account creation; it mines
only when the suite asks, so deposits and payouts wait in its pool.
"""

from __future__ import annotations

import pytest

from orbchain.testing import AdapterConformance, capabilities

from .tron_support import NodeOnline, TronDriver, TronTokenDriver, tron_node  # noqa: F401 - fixtures


class TestTronTrxConformance(AdapterConformance):
    @pytest.fixture
    def chain_driver(self, tron_node: NodeOnline) -> TronDriver:  # noqa: F811 - the fixture
        return TronDriver(tron_node)

    async def test_every_capability_but_the_mempool_and_history_is_declared(self, chain_shop):
        """Tron deposits show from their first block (docs/tron.md); all the rest is declared."""
        assert capabilities.missing(chain_shop.adapter) == {capabilities.MEMPOOL, capabilities.HISTORY, capabilities.PUSH}


class TestTronTokenConformance(AdapterConformance):
    @pytest.fixture
    def chain_driver(self, tron_node: NodeOnline) -> TronTokenDriver:  # noqa: F811 - the fixture
        return TronTokenDriver(tron_node)

    async def test_every_capability_but_the_mempool_and_history_is_declared(self, chain_shop):
        """A TRC-20 token declares what TRX does (docs/tron.md): a capability dropped skips its tests silently."""
        assert capabilities.missing(chain_shop.adapter) == {capabilities.MEMPOOL, capabilities.HISTORY, capabilities.PUSH}
