"""One JSON-RPC subscription over a WebSocket, for the chains whose node pushes (EVM, Solana).

Why shared: Ethereum's ``eth_subscribe`` and Solana's PubSub are the same
protocol shape (a request whose result is a subscription id, then
notifications naming a method and carrying ``params.subscription``); only
the method names differ. :func:`follow` connects, subscribes, and calls
``notice`` with each notification's ``result`` until the stream ends, which
it reports as ``ChainUnavailable`` (the contract of ``ChainAdapter.push``).
Cancellation (the gateway stopping) sends the unsubscribe request without
waiting for its answer and closes the socket.

A WebSocket ping every ``heartbeat`` seconds notices a node that vanished
without closing the connection (a dead host, a dropped NAT entry), where
no notification would otherwise ever come.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Mapping

import aiohttp

from ..api import ChainUnavailable
from .jsonrpc import JsonRpcError, rpc_result

SUBSCRIBE_ID = 1
UNSUBSCRIBE_ID = 2


def _number_or_text(value: Any) -> bool:
    """Any JSON-RPC subscription id: eth_subscribe answers hex strings, Solana's PubSub numbers."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Subscription:
    """What to ask for: ``method(params)`` answers an id; notifications come as ``notification``."""

    method: str
    notification: str
    unsubscribe: str
    params: tuple[Any, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    is_id: Callable[[Any], bool] = _number_or_text  # what a subscription id may be


def subscription_id(subscription: Subscription, answer: Any, what: str) -> Any:
    """The subscription id ``answer`` (the reply to ``subscription.method``) carries; ``ChainUnavailable`` for a
    refusal or an answer without a valid id."""
    try:
        sub_id = rpc_result(subscription.method, answer)
    except JsonRpcError as exc:
        raise ChainUnavailable(f"{what} refused {subscription.method}: {exc.message}") from None
    if not subscription.is_id(sub_id):
        raise ChainUnavailable(f"{what} answered {subscription.method} without a subscription id")
    return sub_id


def notification_result(subscription: Subscription, sub_id: Any, message: Any) -> tuple[bool, Any]:
    """``(True, result)`` when ``message`` is a notification of subscription ``sub_id``, else ``(False, None)``."""
    if not isinstance(message, dict) or message.get("method") != subscription.notification:
        return False, None
    params = message.get("params")
    if isinstance(params, dict) and params.get("subscription") == sub_id and "result" in params:
        return True, params["result"]
    return False, None


def read_message(data: str | bytes) -> Any | None:
    """One WebSocket frame's JSON (numbers with a fraction as ``Decimal``); None for a frame that is not JSON."""
    try:
        return json.loads(data, parse_float=Decimal)
    except ValueError:
        return None  # a stray frame must not end a healthy stream


def is_ws_url(value: Any) -> bool:
    """Whether a setting names a WebSocket endpoint (``ws://`` or ``wss://``)."""
    return isinstance(value, str) and value.startswith(("ws://", "wss://")) and len(value) > len("wss://")


async def follow(url: str, subscription: Subscription, notice: Callable[[Any], None], *, what: str,
                 timeout: float = 10.0, heartbeat: float = 30.0) -> None:
    """Subscribe and pass every notification's ``result`` to ``notice``; never returns normally.

    Raises ``ChainUnavailable`` when the connection fails, the node refuses
    the subscription or the stream ends. ``url`` is never put in a message
    (providers embed API keys in it).
    """
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout)) as session:
            async with session.ws_connect(url, headers=dict(subscription.headers), heartbeat=heartbeat) as ws:
                await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": SUBSCRIBE_ID, "method": subscription.method,
                                              "params": list(subscription.params)}))
                sub_id = await asyncio.wait_for(_subscribed(ws, subscription, what), timeout)
                try:
                    await _notifications(ws, subscription, sub_id, notice, what)
                except asyncio.CancelledError:
                    with contextlib.suppress(Exception):  # best effort: the close drops it on the node anyway
                        await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": UNSUBSCRIBE_ID,
                                                      "method": subscription.unsubscribe, "params": [sub_id]}))
                    raise
    except TimeoutError:  # before OSError, its base class
        raise ChainUnavailable(f"{what} WebSocket timed out (connecting or {subscription.method})") from None
    except (aiohttp.ClientError, OSError) as exc:
        raise ChainUnavailable(f"{what} WebSocket failed: {type(exc).__name__}") from None
    raise ChainUnavailable(f"{what} WebSocket closed")


async def _message(ws: aiohttp.ClientWebSocketResponse, what: str) -> Any | None:
    """The next JSON message; None for a frame that is not one; ``ChainUnavailable`` once the stream ends."""
    message = await ws.receive()
    if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED,
                        aiohttp.WSMsgType.ERROR):
        raise ChainUnavailable(f"{what} WebSocket closed ({message.type.name.lower()})")
    if message.type not in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
        return None
    return read_message(message.data)


async def _subscribed(ws: aiohttp.ClientWebSocketResponse, subscription: Subscription, what: str) -> Any:
    while True:
        answer = await _message(ws, what)
        if isinstance(answer, dict) and answer.get("id") == SUBSCRIBE_ID:
            return subscription_id(subscription, answer, what)


async def _notifications(ws: aiohttp.ClientWebSocketResponse, subscription: Subscription, sub_id: Any,
                         notice: Callable[[Any], None], what: str) -> None:
    while True:
        matched, result = notification_result(subscription, sub_id, await _message(ws, what))
        if matched:
            notice(result)
