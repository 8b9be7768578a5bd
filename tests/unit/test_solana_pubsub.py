"""The gateway's reading of Solana's PubSub slot messages against an independent one (issue 43, item 6).

The judge is solders' ``parse_websocket_message`` (the Python binding of
Agave's own RPC response types, a test dependency that shares no code with
chains/subscription.py or chains/solana/pubsub.py). The messages are the
examples Solana's documentation and a provider publish
(tests/upstream/solana_pubsub.json), messages solders serialises itself, and
one-field changes of the published notification. For each, what our parser
takes (a subscription id, the slot a notification names, or nothing) must be
what solders reads; a change to either side that makes them disagree fails
here, without the project's own node in the loop.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from solders.errors import SerdeJSONError
from solders.rpc.errors import InvalidParamsMessage, MethodNotFoundMessage
from solders.rpc.responses import (
    SlotInfo, SlotNotification, SubscriptionError, SubscriptionResult, UnsubscribeResult, parse_websocket_message,
)

from orbchain.api import ChainUnavailable
from orbchain.chains.solana.pubsub import SLOTS, U64_MAX, slot_of
from orbchain.chains.subscription import SUBSCRIBE_ID, notification_result, read_message, subscription_id

UPSTREAM = json.loads((Path(__file__).resolve().parents[1] / "upstream" / "solana_pubsub.json").read_text())
PUBLISHED = [m["raw"] for m in UPSTREAM["messages"]]
PUBLISHED_NOTE = next(json.loads(m["raw"]) for m in UPSTREAM["messages"] if m["kind"] == "notification")
NOTHING = ("nothing",)


def notification(slot: int, parent: int, root: int, subscription: int) -> str:
    """A slotNotification as solders writes its params (the envelope is JSON-RPC's)."""
    params = json.loads(SlotNotification(SlotInfo(slot=slot, parent=parent, root=root), subscription).to_json())
    return json.dumps({"jsonrpc": "2.0", "method": "slotNotification", "params": params})


def changed(path: tuple[str, ...], value: Any) -> str:
    """The published notification with one field set to ``value`` (``...`` removes it)."""
    message = json.loads(json.dumps(PUBLISHED_NOTE))
    *parents, last = path
    target = message
    for key in parents:
        target = target[key]
    if value is ...:
        del target[last]
    else:
        target[last] = value
    return json.dumps(message)


SERIALISED = [
    SubscriptionResult(id=SUBSCRIBE_ID, result=0).to_json(),
    SubscriptionResult(id=SUBSCRIBE_ID, result=7).to_json(),
    SubscriptionResult(id=SUBSCRIBE_ID, result=U64_MAX).to_json(),
    SubscriptionError(SUBSCRIBE_ID, InvalidParamsMessage("Invalid subscription id.")).to_json(),
    SubscriptionError(SUBSCRIBE_ID, MethodNotFoundMessage("Method not found")).to_json(),
    UnsubscribeResult(id=SUBSCRIBE_ID, result=True).to_json(),
    notification(76, 75, 44, 0),
    notification(0, 0, 0, 3),
    notification(U64_MAX, U64_MAX - 1, 1, U64_MAX),
]
ANSWER_CHANGES = [json.dumps({"jsonrpc": "2.0", "result": result, "id": SUBSCRIBE_ID})
                  for result in ("0", -1, U64_MAX + 1, 1.5, None, [0])]
NOTIFICATION_CHANGES = [
    changed(("params", "result", "root"), ...),
    changed(("params", "result", "parent"), ...),
    changed(("params", "result", "slot"), "76"),
    changed(("params", "result", "slot"), -1),
    changed(("params", "result", "slot"), U64_MAX + 1),
    changed(("params", "result", "slot"), 76.5),
    changed(("params", "result", "slot"), True),
    changed(("params", "result"), None),
    changed(("params", "result"), 76),
    changed(("params", "result", "extra"), {"field": 1}),  # an added field is still a slot notification
    changed(("params", "subscription"), "0"),
    changed(("params", "subscription"), -1),
    changed(("params", "subscription"), ...),
    changed(("params",), ...),
    changed(("method",), "slotsUpdatesNotification"),
    changed(("method",), "rootNotification"),
    changed(("jsonrpc",), ...),
]
CORPUS = PUBLISHED + SERIALISED + ANSWER_CHANGES + NOTIFICATION_CHANGES


def solders_reading(raw: str) -> tuple:
    """What solders makes of ``raw``: a subscription id, a slot of a subscription, or nothing."""
    try:
        [message] = parse_websocket_message(raw)
    except SerdeJSONError:
        return NOTHING
    if isinstance(message, SlotNotification):
        return ("slot", message.subscription, message.result.slot)
    if isinstance(message, SubscriptionResult):
        return ("subscribed", message.result)
    return NOTHING  # an unsubscribe's answer, a refusal: neither an id nor a slot


def our_reading(raw: str, held: Any) -> tuple:
    """What the gateway makes of ``raw`` while holding subscription id ``held``: as ``follow`` reads frames."""
    message = read_message(raw)
    if isinstance(message, dict) and message.get("id") == SUBSCRIBE_ID:
        try:
            return ("subscribed", subscription_id(SLOTS, message, "node"))
        except ChainUnavailable:
            return NOTHING
    matched, result = notification_result(SLOTS, held, message)
    slot = slot_of(result) if matched else None
    return NOTHING if slot is None else ("slot", held, slot)


def ids_we_could_hold(raw: str) -> list[Any]:
    """Subscription ids our parser may hold (it took them from an answer): 0 and the id the message names."""
    params = json.loads(raw).get("params")
    named = params.get("subscription") if isinstance(params, dict) else None
    return [held for held in {0, named} if SLOTS.is_id(held)]


@pytest.mark.parametrize("raw", CORPUS)
def test_our_reading_is_solders_reading(raw):
    theirs = solders_reading(raw)
    if theirs[0] == "subscribed" or "id" in json.loads(raw):
        assert our_reading(raw, 0) == theirs, raw
        return
    for held in ids_we_could_hold(raw) or [0]:
        expected = theirs if theirs[0] == "slot" and theirs[1] == held else NOTHING
        assert our_reading(raw, held) == expected, (raw, held)


def test_the_corpus_covers_each_reading():
    """Both sides must have something to agree on: ids, slots, and messages that are neither."""
    kinds = {solders_reading(raw)[0] for raw in CORPUS}
    assert kinds == {"subscribed", "slot", "nothing"}
    assert {solders_reading(raw)[0] for raw in PUBLISHED} == {"subscribed", "slot", "nothing"}
    assert solders_reading(PUBLISHED[1]) == ("slot", 0, 76)


def test_a_notification_of_another_subscription_is_not_ours():
    assert our_reading(notification(76, 75, 44, 5), 0) == NOTHING
    assert solders_reading(notification(76, 75, 44, 5)) == ("slot", 5, 76)
