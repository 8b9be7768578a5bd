"""Is this node on our network and caught up? What a node says about itself, and the verdict.

Why: every read of the chain trusts the node's answer. A node on another
network (a testnet node behind a mainnet configuration, a Litecoin node
configured as Bitcoin, an RPC provider pointed at the wrong chain id) would
report its own blocks and the scanner would credit deposits that never
happened on ours; a node still in its initial download, or whose newest
block is hours old, or that knows of blocks its peers have and it has not
(yet) validated, reports a chain that is not the chain's present.

A chain adapter reads one node's :class:`NodeIdentity` (``node_identity``,
a single-node read like ``node_tip``) and declares what the configuration
expects (``node_networks``, ``node_geneses``, ``max_tip_age_seconds``);
:func:`judge_node` compares the two, and the node's own count of blocks it
is behind its peers (``peers_ahead``) with the chain's ``node_lag_blocks``. ``NodeSet.vet`` (core/contract/nodes.py)
applies it to each node at start, after each reconnect and every
``recheck_seconds``; a refused node is not asked for anything.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterable

log = logging.getLogger(__name__)

WRONG_NETWORK = "wrong_network"
INITIAL_SYNC = "initial_sync"
STALE_TIP = "stale_tip"
BEHIND_PEERS = "behind_peers"
REASONS = (WRONG_NETWORK, INITIAL_SYNC, BEHIND_PEERS, STALE_TIP)

TIP_AGE_KEY = "node_max_tip_age_seconds"
LAG_KEY = "node_lag_blocks"


@dataclass(frozen=True)
class NodeIdentity:
    """What one node reports about itself.

    ``network`` is the node's own name for its network (``getblockchaininfo.chain``,
    the EVM chain id in decimal, Monero's ``nettype``); ``genesis`` the id of
    its block 0 where the chain has one to ask for; ``syncing`` True while it
    is still in its initial download (``initialblockdownload``, ``eth_syncing``,
    Monero not ``synchronized``); ``tip_time`` its best block's own timestamp
    (Unix seconds) when the chain tells; ``peers_ahead`` how many blocks (slots)
    the node itself says the network has beyond its validated tip (bitcoin's
    ``headers - blocks``, ``eth_syncing``'s ``highestBlock - currentBlock``,
    Solana's ``numSlotsBehind``, java-tron's peers' ``remainNum``, Monero's
    ``target_height - height``), None when it cannot tell.
    """

    network: str | None = None
    genesis: str | None = None
    syncing: bool = False
    tip_time: int | None = None
    peers_ahead: int | None = None


@dataclass(frozen=True)
class Refusal:
    """Why a node is not used: one of :data:`REASONS`, and what it reported (never its URL)."""

    reason: str
    message: str


def _shown(identity: NodeIdentity, networks: frozenset[str]) -> str:
    if not networks and identity.network is None:  # a chain told apart by its genesis alone (Tron, Solana)
        return f"genesis {identity.genesis}"
    return f"network {identity.network!r}" + (f" (genesis {identity.genesis})" if identity.genesis else "")


def _expected(values: Iterable[str]) -> str:
    return " or ".join(repr(v) for v in sorted(values))


def _behind(identity: NodeIdentity) -> str:
    return "" if identity.peers_ahead is None else f"; {identity.peers_ahead} block(s) behind what its peers have"


def judge_node(identity: NodeIdentity, *, networks: frozenset[str], geneses: frozenset[str],
          max_tip_age_seconds: int, now: float, lag_blocks: int | None = None) -> Refusal | None:
    """None when the node may be used; else why not. ``now`` is the wall clock (Unix seconds).

    ``lag_blocks``: how far behind its peers a node may be (the chain's ``node_lag_blocks``, the bound
    that marks a node behind the quorum's tip); None judges no peer lag.
    """
    if networks and identity.network not in networks or geneses and identity.genesis not in geneses:
        wanted = " and ".join(part for part in (
            networks and f"network {_expected(networks)}", geneses and f"genesis {_expected(geneses)}") if part)
        return Refusal(WRONG_NETWORK, f"reports {_shown(identity, networks)};"
                                      f" the configuration expects {wanted}")
    if identity.syncing:
        return Refusal(INITIAL_SYNC, f"is still in its initial sync (it says so itself){_behind(identity)}")
    if lag_blocks is not None and identity.peers_ahead is not None and identity.peers_ahead > lag_blocks:
        return Refusal(BEHIND_PEERS, f"is {identity.peers_ahead} block(s) behind what its peers have, more than"
                                     f" the {lag_blocks} allowed ({LAG_KEY})")
    if max_tip_age_seconds and identity.tip_time is not None:
        age = int(now) - identity.tip_time
        if age > max_tip_age_seconds:
            return Refusal(STALE_TIP, f"its best block is {age} s old, more than the {max_tip_age_seconds} s"
                                      f" allowed ({TIP_AGE_KEY})")
    return None
