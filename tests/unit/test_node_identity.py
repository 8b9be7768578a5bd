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
from orbchain.chains.evm.adapter import sync_gap
from orbchain.chains.solana.adapter import slots_behind
from orbchain.chains.tron.adapter import peers_ahead
from orbchain.core.types.node_identity import BEHIND_PEERS, INITIAL_SYNC, STALE_TIP, WRONG_NETWORK, judge_node

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


def test_a_node_further_behind_its_peers_than_the_lag_bound_is_refused_saying_how_far():
    def judged(ahead: int | None, lag: int | None = 4):
        return judge_node(NodeIdentity("main", "g0", False, NOW, ahead), networks=frozenset({"main"}),
                          geneses=frozenset({"g0"}), max_tip_age_seconds=MAX_AGE, now=NOW, lag_blocks=lag)

    refusal = judged(5)
    assert refusal is not None and refusal.reason == BEHIND_PEERS
    assert refusal.message == "is 5 block(s) behind what its peers have, more than the 4 allowed (node_lag_blocks)"
    assert judged(4) is None  # at the bound: accepted, as the quorum's "behind" is
    assert judged(None) is None  # the node cannot tell (a provider without the call)
    assert judged(10**6, lag=None) is None  # a caller with no bound (Lightning) judges no peer lag
    syncing = judge_node(NodeIdentity("main", "g0", True, NOW, 900), networks=frozenset(), geneses=frozenset(),
                         max_tip_age_seconds=0, now=NOW, lag_blocks=4)
    assert syncing is not None and syncing.reason == INITIAL_SYNC
    assert syncing.message == "is still in its initial sync (it says so itself); 900 block(s) behind what its peers have"


def test_each_chain_reads_how_far_its_peers_are_ahead_from_its_own_answer():
    # EVM eth_syncing: false, or the progress object (quantities in hex).
    assert sync_gap(False) is None
    assert sync_gap({"startingBlock": "0x0", "currentBlock": "0x64", "highestBlock": "0x96"}) == 50
    assert sync_gap({"currentBlock": "0x96", "highestBlock": "0x64"}) == 0
    # Solana getHealth's -32005 data: {"numSlotsBehind": N}, or {} / null when the node cannot say.
    assert slots_behind({"numSlotsBehind": 42}) == 42
    assert slots_behind({}) is None and slots_behind(None) is None and slots_behind({"numSlotsBehind": True}) is None
    # java-tron getnodeinfo: the furthest peer's remainNum + syncToFetchSize; no peers listed, no answer.
    assert peers_ahead({"peerList": [{"remainNum": 3, "syncToFetchSize": 2}, {"remainNum": 0}]}) == 5
    assert peers_ahead({"peerInfoList": [{"remainNum": 7}]}) == 7
    assert peers_ahead({"peerList": []}) is None and peers_ahead(None) is None


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


async def test_a_node_behind_its_peers_is_refused_until_a_check_finds_it_caught_up(caplog):
    chain = Chain(2, quorum=1)
    lagging, healthy = chain.scripts.values()
    lagging.identity = NodeIdentity("main", "g0", False, NOW, peers_ahead=3)  # lag_blocks is 2
    with caplog.at_level(logging.ERROR):
        assert await chain.tip() == BlockRef(5, "h5")
    assert states(chain) == [("refused", BEHIND_PEERS), ("up", None)]
    assert lagging.tip_reads == 0
    assert chain.node_states()[0].error == ("refused: it is 3 block(s) behind what its peers have, more than the 2"
                                            " allowed (node_lag_blocks)")
    assert "node0.example:8332 refused: it is 3 block(s) behind" in caplog.text
    lagging.identity = NodeIdentity("main", "g0", False, NOW, peers_ahead=0)
    chain.clock.now += 60
    await chain.tip()
    assert states(chain) == [("up", None), ("up", None)]


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
