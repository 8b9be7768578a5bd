"""Several nodes behind one chain adapter: failover, per-node health, and a quorum on the chain.

Why one shared module: every chain plugin talks to its node through a client
object of its own (``NodeRpc``, ``JsonRpc``, ``TronHttp``, ...). A
:class:`NodeSet` holds one such client per configured URL and stands in for
"the client" (``nodes.client()``): each call goes to the healthiest node and
moves on to the next when one errors or times out, so payouts, mempool
reads and fee estimates fail over without the plugin knowing.

What the chain *is* (the tip, a block's hash, a block's transfers) is not
taken from one node: :class:`NodeQuorum` runs the plugin's single-node reads
(``node_tip``, ``node_block_hash``, ``node_block``) on several nodes, each
pinned to its node, and answers only what ``quorum`` of them report alike
and no other group matches. A node whose answer differs from the agreed one
is set aside for ``set_aside_seconds`` and logged once; a tie or too few
answers raises ``ChainUnavailable``, so the scanner waits instead of
crediting on one node's word. One configured node means quorum 1: exactly
the single-node behaviour.

Before a node is asked anything, ``vet`` checks what it says about itself
(core/types/node_identity.py): a node on another network, in its initial
sync, further behind its own peers than ``lag_blocks`` or with a stale tip
is ``refused`` and left out until a later check
(every ``recheck_seconds``, and after each time it was down) accepts it.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections import Counter
from contextvars import ContextVar
from typing import Any, Awaitable, Callable, Generic, Hashable, Mapping, Sequence, TypeVar, cast
from urllib.parse import urlsplit

from ..infra.config import ConfigError, int_setting
from ..types.chains import Block, BlockRef, BlocksPruned, ChainAdapter, ChainUnavailable, NodeState
from ..types.node_identity import LAG_KEY, NodeIdentity, Refusal, judge_node

log = logging.getLogger(__name__)

C = TypeVar("C")
T = TypeVar("T")

SET_ASIDE_SECONDS = 600.0  # how long a node that contradicted the quorum is not asked
RECHECK_SECONDS = 60.0  # how often a node's network and sync state are read again (one or two calls)


class Health(enum.Enum):
    UNKNOWN = "unknown"
    UP = "up"
    BEHIND = "behind"
    DOWN = "down"
    SET_ASIDE = "set aside"
    REFUSED = "refused"


PREFERENCE = {Health.UP: 0, Health.UNKNOWN: 1, Health.BEHIND: 2, Health.DOWN: 3}


def node_name(url: str) -> str:
    """``scheme://host:port`` of a node URL: no userinfo, path or query, where credentials and API keys live."""
    parts = urlsplit(url)
    host = parts.hostname or "node"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


def node_urls_setting(block: Mapping[str, Any], prefix: str, name: str) -> tuple[str, ...] | None:
    """One URL (``"http://..."``) or a list of them; None when absent. Errors name ``prefix.name``."""
    value = block.get(name)
    if value is None:
        return None
    urls = [value] if isinstance(value, str) else value
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) and u for u in urls):
        raise ConfigError(f"config key '{prefix}.{name}' must be a URL or a non-empty list of URLs")
    if len(set(urls)) != len(urls):
        raise ConfigError(f"config key '{prefix}.{name}' lists the same URL twice")
    return tuple(urls)


def lag_setting(block: Mapping[str, Any], prefix: str, default: int) -> int:
    """``node_lag_blocks``: how far below the agreed tip a node may be before it is "behind".

    Per chain because block times differ (2 on Bitcoin's ten minutes, 150 of
    Solana's 0.4 s slots); the chain passes its own default. 0 marks any lag.
    The same bound refuses a node that says it is further behind its own peers
    (``NodeIdentity.peers_ahead``): the quorum's tip and the peers' are two
    references for one operator judgement, "how far behind is too far".
    """
    return int_setting(block, prefix, LAG_KEY, default, minimum=0)


def quorum_setting(block: Mapping[str, Any], prefix: str, nodes: int) -> int:
    """``quorum``: how many nodes must agree; default a majority of the configured nodes (1 of 1, 2 of 2 or 3)."""
    quorum = int_setting(block, prefix, "quorum", nodes // 2 + 1, minimum=1)
    if quorum > nodes:
        raise ConfigError(f"config key '{prefix}.quorum' is {quorum} but only {nodes} node URL(s) are configured")
    return quorum


class _Node(Generic[C]):
    def __init__(self, name: str, url: str, client: C) -> None:
        self.name, self.client = name, client
        parts = urlsplit(url)
        self._secrets = [url, *([parts.netloc] if "@" in parts.netloc else []),
                         *(s for s in (parts.path, parts.query) if len(s) > 1)]
        self.health = Health.UNKNOWN
        self.height: int | None = None
        self.error: str | None = None
        self.aside_until = 0.0
        self.probe: asyncio.Task[None] | None = None
        self.checked_at: float | None = None  # when vet last read its identity; None since it (re)connected
        self.refusal: Refusal | None = None

    def state(self) -> NodeState:
        return NodeState(self.name, self.health.value, self.height, self.error,
                         self.refusal.reason if self.refusal else None)

    def scrub(self, error: str) -> str:
        """``error`` without the node's URL, userinfo, path or query (API keys), which clients may quote."""
        for secret in self._secrets:
            error = error.replace(secret, self.name)
        return error


def _names(urls: Sequence[str]) -> list[str]:
    names = [node_name(u) for u in urls]
    if len(set(names)) == len(names):
        return names
    return [f"{n}#{i + 1}" for i, n in enumerate(names)]


class NodeSet(Generic[C]):
    """One client per node of ``chain``, their health, and the quorum their reads must reach."""

    def __init__(self, chain: str, urls: str | Sequence[str], make: Callable[[str], C], *, quorum: int = 1,
                 lag_blocks: int = 2, answer_seconds: float = 30.0,  # float ok: a duration
                 set_aside_seconds: float = SET_ASIDE_SECONDS, clock: Callable[[], float] = time.monotonic,
                 recheck_seconds: float = RECHECK_SECONDS, wall: Callable[[], float] = time.time) -> None:
        urls = (urls,) if isinstance(urls, str) else tuple(urls)
        if not urls or not 1 <= quorum <= len(urls):
            raise ValueError(f"{chain}: quorum {quorum} of {len(urls)} node(s)")
        self.chain, self.quorum, self.lag_blocks = chain, quorum, lag_blocks
        self.answer_seconds, self.set_aside_seconds, self._clock = answer_seconds, set_aside_seconds, clock
        self.recheck_seconds, self._wall = recheck_seconds, wall
        self.vetting = False  # set by the first vet of an adapter that checks: from then on only vetted nodes
        self.nodes = [_Node(name, url, make(url)) for name, url in zip(_names(urls), urls)]
        self._agreed_height = -1  # the last agreed tip, which "behind" is measured from
        # Told (chain, node name, refusal) when a node is newly refused or its reason changes: the operator's
        # webhook (core/health/node_refusals.py); the core sets it, a plugin never needs to.
        self.on_refused: Callable[[str, str, Refusal], None] | None = None
        self._pinned: ContextVar[_Node[C] | None] = ContextVar(f"pinned node of {chain}", default=None)

    def client(self) -> C:
        """A stand-in for one client: its coroutine methods fail over, or use the node a quorum read pinned."""
        return cast(C, _Failover(self))

    def states(self) -> tuple[NodeState, ...]:
        self._release()
        return tuple(n.state() for n in self.nodes)

    # -- health ---------------------------------------------------------------------------------

    def _release(self) -> None:
        now = self._clock()
        for node in self.nodes:
            if node.health is Health.SET_ASIDE and now >= node.aside_until:
                node.health, node.error = Health.UNKNOWN, None
                log.info("%s: node %s is asked again after being set aside", self.chain, node.name)

    def _down(self, node: _Node[C], error: str) -> None:
        error = node.scrub(error)
        node.checked_at = None  # whatever answers at that URL next is checked again before it is used
        if node.health is Health.SET_ASIDE:
            return
        node.refusal = None
        if node.health is not Health.DOWN:
            log.warning("%s: node %s is down: %s", self.chain, node.name, error)
        node.health, node.error = Health.DOWN, error

    def _set_aside(self, node: _Node[C], what: str) -> None:
        node.health, node.aside_until = Health.SET_ASIDE, self._clock() + self.set_aside_seconds
        node.error = f"reported {what} that the other nodes do not"
        log.warning("%s: node %s reported %s, unlike the quorum of %d: set aside for %g s",
                    self.chain, node.name, what, self.quorum, self.set_aside_seconds)

    def _usable(self) -> list[_Node[C]]:
        self._release()
        live = [n for n in self.nodes if n.health not in (Health.SET_ASIDE, Health.REFUSED)
                and (not self.vetting or n.checked_at is not None)]
        return sorted(live, key=lambda n: PREFERENCE[n.health])

    # -- identity -------------------------------------------------------------------------------

    async def vet(self, adapter: ChainAdapter, read_tip: Callable[[], Awaitable[BlockRef]] | None = None) -> None:
        """Check each node due for it (never checked, back from down, or checked ``recheck_seconds`` ago).

        A node that is down is checked in the background, as ``agreed_tip`` probes it, never waited for;
        once accepted its tip is read (``read_tip``) so it shows up, behind or unknown at once.
        """
        if not identity_checked(adapter):
            return
        self.vetting = True
        self._release()
        now = self._clock()
        due = [n for n in self.nodes if n.health is not Health.SET_ASIDE
               and (n.checked_at is None or now - n.checked_at >= self.recheck_seconds)]
        waited = [n for n in due if n.health is not Health.DOWN]
        live = [n for n in self.nodes if n.health not in (Health.DOWN, Health.SET_ASIDE, Health.REFUSED)]
        if len(live) < self.quorum:  # as agreed_tip: without them there is no quorum, so they are waited for
            waited = due
        for node in due:
            if node not in waited and (node.probe is None or node.probe.done()):
                node.probe = asyncio.get_running_loop().create_task(self._check_then_place(node, adapter, read_tip))
        await asyncio.gather(*(self._check(n, adapter) for n in waited))

    async def _check_then_place(self, node: _Node[C], adapter: ChainAdapter,
                                read_tip: Callable[[], Awaitable[BlockRef]] | None) -> None:
        await self._check(node, adapter)
        if read_tip is not None and node.checked_at is not None and node.health is not Health.REFUSED:
            answer = await self._ask(node, read_tip)
            if isinstance(answer, BlockRef):
                self._place(node, answer.height)

    async def _check(self, node: _Node[C], adapter: ChainAdapter) -> None:
        try:
            identity: NodeIdentity = await self._on(node, adapter.node_identity)
        except TimeoutError:
            self._down(node, f"no answer in {self.answer_seconds:g} s")
            return
        except Exception as exc:  # noqa: BLE001 - a node that cannot say who it is is down, like any failure
            self._down(node, str(exc) or type(exc).__name__)
            return
        node.checked_at = self._clock()
        refusal = judge_node(identity, networks=adapter.node_networks, geneses=adapter.node_geneses,
                        max_tip_age_seconds=adapter.max_tip_age_seconds, now=self._wall(), lag_blocks=self.lag_blocks)
        if refusal is not None:
            if node.refusal is None or node.refusal.reason != refusal.reason:
                log.error("%s: node %s refused: it %s", self.chain, node.name, refusal.message)
                if self.on_refused is not None:
                    self.on_refused(self.chain, node.name, refusal)
            node.health, node.refusal, node.error = Health.REFUSED, refusal, f"refused: it {refusal.message}"
        elif node.health in (Health.REFUSED, Health.DOWN):
            if node.health is Health.REFUSED:
                log.warning("%s: node %s is accepted again (%s)", self.chain, node.name, identity.network)
            node.health, node.refusal, node.error = Health.UNKNOWN, None, None

    # -- calls ----------------------------------------------------------------------------------

    async def _on(self, node: _Node[C], read: Callable[[], Awaitable[T]]) -> T:
        """``read`` with every client call going to ``node``, bounded by ``answer_seconds``."""
        token = self._pinned.set(node)
        try:
            return await asyncio.wait_for(read(), self.answer_seconds)
        finally:
            self._pinned.reset(token)

    async def _ask(self, node: _Node[C], read: Callable[[], Awaitable[T]]) -> T | BaseException:
        try:
            answer = await self._on(node, read)
        except BlocksPruned as exc:
            return exc  # the node is fine; it just forgot that block
        except TimeoutError:
            self._down(node, f"no answer in {self.answer_seconds:g} s")
            return ChainUnavailable(f"{node.name}: no answer in {self.answer_seconds:g} s")
        except Exception as exc:  # noqa: BLE001 - any failure of one node is that node's, and the others answer
            self._down(node, str(exc) or type(exc).__name__)
            return exc
        if node.health in (Health.DOWN, Health.UNKNOWN):
            if node.health is Health.DOWN:
                log.info("%s: node %s answers again", self.chain, node.name)
            node.health, node.error = Health.UP, None
        return answer

    async def first(self, call: Callable[[C], Awaitable[T]]) -> T:
        """``call`` on the pinned node, or on each usable node in turn until one answers (failover)."""
        pinned = self._pinned.get()
        if pinned is not None:
            return await call(pinned.client)
        failure: Exception | None = None
        for node in self._usable():
            try:
                answer = await asyncio.wait_for(call(node.client), self.answer_seconds)
            except BlocksPruned:
                raise
            except TimeoutError:
                failure = ChainUnavailable(f"{node.name}: no answer in {self.answer_seconds:g} s")
            except ChainUnavailable as exc:  # a node's own refusal (a rejected transaction) is raised as it is
                failure = exc
            else:
                if node.health is Health.DOWN:
                    log.info("%s: node %s answers again", self.chain, node.name)
                    node.health, node.error = Health.UNKNOWN, None
                return answer
            self._down(node, str(failure))
            failure = ChainUnavailable(node.scrub(str(failure)))
        raise ChainUnavailable(f"{self.chain}: no node answered (last: {failure})")

    # -- quorum reads ---------------------------------------------------------------------------

    def _decide(self, answers: dict[_Node[C], Any], what: str, key: Callable[[Any], Hashable]) -> Any:
        """The answer ``quorum`` nodes gave alike and no other group matches; sets the dissenters aside."""
        good = {n: a for n, a in answers.items() if not isinstance(a, BaseException)}
        counts = Counter(key(a) for a in good.values())
        ranked = counts.most_common(2)
        if not ranked or ranked[0][1] < self.quorum or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
            pruned = next((a for a in answers.values() if isinstance(a, BlocksPruned)), None)
            if pruned is not None:
                raise pruned
            raise ChainUnavailable(f"{self.chain}: no {self.quorum} of the nodes agree on {what}"
                                   f" ({len(good)} answered, {len(counts)} different answer(s))")
        winner = ranked[0][0]
        for node, answer in good.items():
            if key(answer) != winner:
                self._set_aside(node, what)
        return next(a for a in good.values() if key(a) == winner)

    async def agree(self, read: Callable[[], Awaitable[T]], height: int, what: str,
                    key: Callable[[Any], Hashable] = lambda a: a) -> T:
        """``read`` (a plugin's single-node read) as ``quorum`` nodes answer it about block ``height``.

        The first ``quorum`` usable nodes are asked; only when they fail or differ are the others asked too.
        """
        eligible = [n for n in self._usable() if n.height is None or n.height >= height]
        first, rest = eligible[:self.quorum], eligible[self.quorum:]
        answers = dict(zip(first, await asyncio.gather(*(self._ask(n, read) for n in first))))
        values = list(answers.values())
        if len(values) == self.quorum and not any(isinstance(v, BaseException) for v in values) \
                and len({key(v) for v in values}) == 1:
            return cast(T, values[0])
        answers.update(zip(rest, await asyncio.gather(*(self._ask(n, read) for n in rest))))
        return cast(T, self._decide(answers, what, key))

    async def agreed_tip(self, read_tip: Callable[[], Awaitable[BlockRef]],
                         read_hash: Callable[[int], Awaitable[str]]) -> BlockRef:
        """The highest block ``quorum`` nodes have and agree on; marks each node up, behind or down."""
        usable = self._usable()
        live = [n for n in usable if n.health is not Health.DOWN]
        if len(live) >= self.quorum:  # a down node (perhaps hanging) is probed aside, never waited for
            for node in usable:
                if node not in live:
                    self._probe(node, read_tip)
            usable = live
        tips = dict(zip(usable, await asyncio.gather(*(self._ask(n, read_tip) for n in usable))))
        reached = {n: t for n, t in tips.items() if isinstance(t, BlockRef)}
        if len(reached) < self.quorum:
            raise ChainUnavailable(f"{self.chain}: {len(reached)} of {len(self.nodes)} node(s) answered,"
                                   f" {self.quorum} must agree")
        height = sorted((t.height for t in reached.values()), reverse=True)[self.quorum - 1]
        higher = [n for n, t in reached.items() if t.height > height]
        hashes: dict[_Node[C], Any] = {n: t.hash for n, t in reached.items() if t.height == height}
        hashes.update(zip(higher, await asyncio.gather(*(self._ask(n, lambda: read_hash(height)) for n in higher))))
        agreed = self._decide(hashes, f"block {height}", lambda a: a)
        self._agreed_height = height
        for node, ref in reached.items():
            self._place(node, ref.height)
        return BlockRef(height, agreed)

    def _place(self, node: _Node[C], height: int) -> None:
        """Record a node's tip: up, or behind when it is more than ``lag_blocks`` below the agreed tip."""
        node.height = height
        if node.health not in (Health.SET_ASIDE, Health.REFUSED):
            node.health = Health.BEHIND if height < self._agreed_height - self.lag_blocks else Health.UP

    def _probe(self, node: _Node[C], read_tip: Callable[[], Awaitable[BlockRef]]) -> None:
        """Ask a down node for its tip in the background (one probe at a time): it is up again once it answers."""
        if node.probe is not None and not node.probe.done():
            return

        async def probe() -> None:
            answer = await self._ask(node, read_tip)
            if isinstance(answer, BlockRef) and (not self.vetting or node.checked_at is not None):
                self._place(node, answer.height)

        node.probe = asyncio.get_running_loop().create_task(probe())

    async def close(self) -> None:
        for node in self.nodes:
            if node.probe is not None:
                node.probe.cancel()
            close = getattr(node.client, "close", None)
            if close is not None:
                await close()


class _Failover:
    """What ``NodeSet.client()`` returns: a client whose coroutine methods go through ``NodeSet.first``."""

    def __init__(self, nodes: NodeSet[Any]) -> None:
        self._nodes = nodes

    def __getattr__(self, name: str) -> Any:
        nodes = self._nodes
        pinned = nodes._pinned.get()
        target = getattr((pinned or nodes.nodes[0]).client, name)
        if name == "close":
            return nodes.close
        if not asyncio.iscoroutinefunction(target):
            return target
        return lambda *args, **kwargs: nodes.first(lambda client: getattr(client, name)(*args, **kwargs))

    def __repr__(self) -> str:
        return f"<nodes of {self._nodes.chain}: {', '.join(n.name for n in self._nodes.nodes)}>"


class NodeQuorum:
    """Mixin for a ``ChainAdapter`` reading through a ``NodeSet``: ``tip``, ``block_hash`` and ``block``
    are what the quorum agrees on. The plugin implements the single-node reads, using its client as usual.
    """

    nodes: NodeSet[Any]

    async def node_tip(self) -> BlockRef:
        raise NotImplementedError

    async def node_block_hash(self, height: int) -> str:
        raise NotImplementedError

    async def node_block(self, height: int) -> Block:
        raise NotImplementedError

    async def tip(self) -> BlockRef:
        # Every scan (and /ready) starts here, so each node is vetted before any block of it is read; from
        # then on block reads and failover calls skip nodes that are refused or not checked since they
        # came back.
        await self.nodes.vet(cast(ChainAdapter, self), self.node_tip)
        return await self.nodes.agreed_tip(self.node_tip, self.node_block_hash)

    async def block_hash(self, height: int) -> str:
        return await self.nodes.agree(lambda: self.node_block_hash(height), height, f"block {height}")

    async def block(self, height: int) -> Block:
        return await self.nodes.agree(lambda: self.node_block(height), height, f"the content of block {height}")

    def node_states(self) -> Sequence[NodeState]:
        return self.nodes.states()


def warn_unchecked(adapter: "ChainAdapter") -> None:
    """Once per adapter at start: a deposit-watching adapter whose nodes are believed unchecked."""
    from ..types.chains import Capability

    if adapter.simulated or not adapter.supports(Capability.DEPOSITS):
        return
    if not identity_checked(adapter) or not isinstance(adapter, NodeQuorum):
        log.warning("chain adapter %r does not check its node's network or sync (no node_identity through"
                    " NodeQuorum): a node on another network would be believed", adapter.name)


def identity_checked(adapter: "ChainAdapter") -> bool:
    """Whether the adapter reads its nodes' identity at all (it implements ``node_identity``)."""
    own = getattr(type(adapter), "node_identity", None)
    return own is not None and own is not ChainAdapter.node_identity
