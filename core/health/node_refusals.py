"""A node refused (wrong network, initial sync, stale tip) reaches the operator's webhook, not only the log.

``NodeSet`` (core/contract/nodes.py) tells ``on_refused`` when a node is newly refused or its reason changes;
this writes the ``node.refused`` operator event from a task (the check runs inside a scan's read, which must not
wait on the database for an announcement). Every ``serve`` process vets its own nodes, so the event's key holds
the hour: several processes refusing the same node for the same reason in one hour announce it once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Callable

from ..contract.nodes import NodeSet
from ..events.operator import NODE_REFUSED, notify_operator
from ..types.node_identity import Refusal
from ..types.services import ServiceKey

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

_TASKS = ServiceKey[set["asyncio.Task[None]"]]("operator.node_refusals")


def announce_refused_nodes(gateway: "Gateway") -> None:
    """Wire every adapter's ``NodeSet`` to the operator's webhook (chains read without one are not covered)."""
    refused = refusal_announcer(gateway)
    for adapter in gateway.chains:
        nodes = getattr(adapter, "nodes", None)
        if isinstance(nodes, NodeSet):
            nodes.on_refused = refused


def refusal_announcer(gateway: "Gateway") -> Callable[[str, str, Refusal], None]:
    """``NodeSet.on_refused`` for this gateway: queue the event from a task (its pending ones in services)."""
    tasks = gateway.services.setdefault(_TASKS, set())

    def refused(chain: str, node: str, refusal: Refusal) -> None:
        body = {"chain": chain, "node": node, "reason": refusal.reason, "message": refusal.message}
        key = f"{NODE_REFUSED}:{chain}:{node}:{refusal.reason}:{int(time.time()) // 3600}"
        task = asyncio.get_running_loop().create_task(_write(gateway, body, key))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    return refused


async def _write(gateway: "Gateway", body: dict[str, str], key: str) -> None:
    try:
        await notify_operator(gateway, NODE_REFUSED, body, key)
    except Exception as exc:  # noqa: BLE001 - the refusal itself is logged and on /ready; this is the echo
        log.warning("operator webhook: node refusal of %s not queued: %s", body["chain"], exc)
