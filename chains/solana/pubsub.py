"""Solana's PubSub slot subscription, read as Solana's RPC writes it.

Why its own module: what the adapter takes from a ``slotNotification`` is
checked against an independent reading of the same messages (solders, the
Python binding of Agave's own RPC types, and the examples of
solana.com/docs/rpc/websocket/slotsubscribe: tests/unit/test_solana_pubsub.py).
Subscription ids and slots are u64 numbers there; a message of another shape
(a string id, a slot missing its ``root``) is not a slot notification and
wakes nothing.
"""

from __future__ import annotations

from typing import Any

from ..subscription import Subscription

U64_MAX = 2**64 - 1


def is_u64(value: Any) -> bool:
    """A JSON number Solana writes for a slot or a subscription id (Rust's ``u64``)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= U64_MAX


SLOTS = Subscription("slotSubscribe", "slotNotification", "slotUnsubscribe", is_id=is_u64)


def slot_of(result: Any) -> int | None:
    """The processed slot a ``slotNotification``'s result names (``{parent, root, slot}``); None for another shape."""
    if not isinstance(result, dict) or not all(is_u64(result.get(key)) for key in ("parent", "root", "slot")):
        return None
    return int(result["slot"])
