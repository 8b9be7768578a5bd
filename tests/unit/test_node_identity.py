"""A node's network and sync state (core/types/node_identity.py) and ``NodeSet.vet``, with scripted nodes.

The wall clock and the monotonic clock are injected: a stale tip is a tip
older than the bound against ``wall``, and a refused node is read again after
``recheck_seconds`` of ``clock``. The real nodes are in tests/test_node_identity.py.
"""

from __future__ import annotations

import logging

import pytest

from orbchain.api import BlockRef, ChainAdapter, ChainUnavailable, NodeIdentity, NodeQuorum, NodeSet
from orbchain.core.contract.nodes import warn_unchecked
from orbchain.core.types.node_identity import INITIAL_SYNC, STALE_TIP, WRONG_NETWORK, judge_node

NOW = 1_800_000_000
MAX_AGE = 3600


def verdict(identity: NodeIdentity, *, now: float = NOW, max_age: int = MAX_AGE) -> str | None:
    refusal = judge_node(identity, networks=frozenset({"main"}), geneses=frozenset({"g0"}), max_tip_age_seconds=max_age,
                    now=now)
    return refusal.reason if refusal else None


def test_the_right_network_with_a_fresh_tip_is_accepted():
    assert verdict(NodeIdentity("main", "g0", False, NOW - MAX_AGE)) is None


@pytest.mark.parametrize("network, genesis", [("regtest", "g0"), ("main", "other"), (None, "g0"), ("main", None)])
def test_another_network_or_genesis_is_refused_naming_both(network, genesis):
    refusal = judge_node(NodeIdentity(network, genesis, False, NOW), networks=frozenset({"main"}),
                    geneses=frozenset({"g0"}), max_tip_age_seconds=0, now=NOW)
    assert refusal is not None and refusal.reason == WRONG_NETWORK
    assert f"reports network {network!r}" in refusal.message and "expects network 'main' and genesis 'g0'" in refusal.message


def test_a_node_in_initial_sync_is_refused_even_with_a_fresh_tip():
    assert verdict(NodeIdentity("main", "g0", True, NOW)) == INITIAL_SYNC


def test_a_tip_older_than_the_bound_is_stale_against_the_injected_wall_clock():
    identity = NodeIdentity("main", "g0", False, NOW - MAX_AGE - 1)
    assert verdict(identity) == STALE_TIP
    assert verdict(identity, now=NOW - 1) is None  # the same tip, a second earlier
    assert verdict(identity, max_age=0) is None  # 0 turns the check off (regtest, devnet)
    refusal = judge_node(identity, networks=frozenset(), geneses=frozenset(), max_tip_age_seconds=MAX_AGE, now=NOW)
    assert refusal is not None and "3601 s old, more than the 3600 s allowed" in refusal.message


# -- NodeSet.vet -----------------------------------------------------------------------------------


class Node:
    def __init__(self, url: str) -> None:
        self.url = url
        self.identity = NodeIdentity("main", "g0", False, NOW)
        self.down = False
        self.identity_reads = self.tip_reads = 0

    async def who(self) -> NodeIdentity:
        self.identity_reads += 1
        if self.down:
            raise ChainUnavailable(f"cannot reach {self.url}")
        return self.identity

    async def tip(self) -> BlockRef:
        self.tip_reads += 1
        if self.down:
            raise ChainUnavailable(f"cannot reach {self.url}")
        return BlockRef(5, "h5")


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Chain(NodeQuorum, ChainAdapter):
    name = "testchain"
    node_networks = frozenset({"main"})
    node_geneses = frozenset({"g0"})
    max_tip_age_seconds = MAX_AGE

    def __init__(self, count: int, quorum: int = 1) -> None:
        self.clock, self.wall = Clock(100.0), Clock(NOW)
        urls = [f"http://user:secret@node{i}.example:8332/key{i}" for i in range(count)]
        self.scripts = {url: Node(url) for url in urls}
        self.nodes = NodeSet(self.name, urls, self.scripts.__getitem__, quorum=quorum, answer_seconds=0.5,
                             clock=self.clock, wall=self.wall, recheck_seconds=60)
        self.client = self.nodes.client()

    async def node_identity(self) -> NodeIdentity:
        return await self.client.who()

    async def node_tip(self) -> BlockRef:
        return await self.client.tip()

    async def node_block_hash(self, height: int) -> str:
        return f"h{height}"

    async def block(self, height: int):  # pragma: no cover - not read here
        raise NotImplementedError


def states(chain: Chain) -> list[tuple[str, str | None]]:
    return [(s.state, s.refused) for s in chain.node_states()]


async def test_a_node_on_another_network_is_never_asked_and_the_others_decide(caplog):
    chain = Chain(3, quorum=2)
    wrong = list(chain.scripts.values())[0]
    wrong.identity = NodeIdentity("test", "t0", False, NOW)
    with caplog.at_level(logging.ERROR):
        assert await chain.tip() == BlockRef(5, "h5")
    assert states(chain) == [("refused", WRONG_NETWORK), ("up", None), ("up", None)]
    assert wrong.tip_reads == 0
    error = chain.node_states()[0].error
    assert error == ("refused: it reports network 'test' (genesis t0); the configuration expects network 'main'"
                     " and genesis 'g0'")
    assert "secret" not in caplog.text and "key0" not in caplog.text and "node0.example" in caplog.text
    await chain.tip()
    assert wrong.identity_reads == 1  # read once, not per scan
    assert sum("refused" in r.message for r in caplog.records) == 1  # logged once


async def test_with_every_node_refused_nothing_is_read():
    chain = Chain(1)
    (node,) = chain.scripts.values()
    node.identity = NodeIdentity("main", "g0", True, NOW)
    with pytest.raises(ChainUnavailable, match="0 of 1 node"):
        await chain.tip()
    assert node.tip_reads == 0 and states(chain) == [("refused", INITIAL_SYNC)]


async def test_a_stale_tip_is_refused_then_accepted_when_rechecked_after_recheck_seconds():
    chain = Chain(1)
    (node,) = chain.scripts.values()
    chain.wall.now = NOW + MAX_AGE + 1
    with pytest.raises(ChainUnavailable):
        await chain.tip()
    assert states(chain) == [("refused", STALE_TIP)]
    node.identity = NodeIdentity("main", "g0", False, NOW + MAX_AGE)  # a new block arrived
    chain.clock.now += 59
    with pytest.raises(ChainUnavailable):
        await chain.tip()  # not read again yet
    chain.clock.now += 1
    assert await chain.tip() == BlockRef(5, "h5")
    assert states(chain) == [("up", None)] and node.identity_reads == 2


async def test_a_node_back_from_down_is_checked_again_before_it_is_used():
    chain = Chain(1)
    (node,) = chain.scripts.values()
    await chain.tip()
    node.down = True
    with pytest.raises(ChainUnavailable):
        await chain.tip()
    node.down = False
    node.identity = NodeIdentity("regtest", "r0", False, NOW)  # another node behind the same URL
    with pytest.raises(ChainUnavailable):
        await chain.tip()
    assert states(chain) == [("refused", WRONG_NETWORK)]


async def test_failover_calls_skip_a_refused_node():
    chain = Chain(2, quorum=1)
    first, second = chain.scripts.values()
    first.identity = NodeIdentity("test", "t0", False, NOW)
    await chain.tip()
    first.tip_reads = second.tip_reads = 0
    assert await chain.client.tip() == BlockRef(5, "h5")
    assert (first.tip_reads, second.tip_reads) == (0, 1)


class Unchecked(NodeQuorum, ChainAdapter):
    """A third-party adapter written before node_identity: it keeps working, unchecked, with a warning."""

    name = "thirdparty"

    def __init__(self) -> None:
        self.script = Node("http://node.example")
        self.nodes = NodeSet(self.name, "http://node.example", lambda url: self.script)
        self.client = self.nodes.client()

    async def node_tip(self) -> BlockRef:
        return await self.client.tip()

    async def block(self, height: int):  # pragma: no cover - not read here
        raise NotImplementedError


async def test_an_adapter_without_node_identity_keeps_working_unchecked_with_a_warning(caplog):
    adapter = Unchecked()
    with caplog.at_level(logging.WARNING):
        warn_unchecked(adapter)
    assert "'thirdparty' does not check its node's network" in caplog.text
    assert await adapter.tip() == BlockRef(5, "h5")
    assert [s.state for s in adapter.node_states()] == ["up"]
