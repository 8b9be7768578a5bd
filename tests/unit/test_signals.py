"""core/infra/signals.py: delivery here at once, forwarding to other processes, own echoes skipped."""

from __future__ import annotations

import asyncio

import pytest

from orbchain.core.infra.signals import RESET, Signals


async def test_publish_reaches_local_subscribers_and_forwards_once() -> None:
    signals, sent, heard = Signals(), [], []
    signals.subscribe("payment", heard.append)

    async def send(message: str) -> None:
        sent.append(message)

    signals.attach(send)
    signals.publish("payment", "pay_1")
    assert heard == ["pay_1"]
    await signals.detach()
    assert sent == [f"{signals.origin} payment pay_1"]
    signals.received(sent[0])  # our own NOTIFY coming back: already delivered
    assert heard == ["pay_1"]


async def test_other_process_signal_is_delivered_and_unsubscribe_stops_it() -> None:
    signals, heard = Signals(), []
    stop = signals.subscribe("wake", heard.append)
    signals.received("otherproc wake chain.litecoin.scan")
    stop()
    signals.received("otherproc wake chain.evm.scan")
    assert heard == ["chain.litecoin.scan"]
    assert signals.subscribers("wake") == 0


async def test_failing_subscriber_and_failing_send_do_not_silence_others(caplog: pytest.LogCaptureFixture) -> None:
    signals, heard, resets = Signals(), [], []

    def broken(_payload: str) -> None:
        raise RuntimeError("subscriber bug")

    async def down(_message: str) -> None:
        raise ConnectionError("side connection is down")

    signals.subscribe("payment", broken)
    signals.subscribe("payment", heard.append)
    signals.subscribe(RESET, resets.append)
    signals.attach(down)
    signals.publish("payment", "pay_2")
    await asyncio.sleep(0)
    await signals.detach()
    signals.lost()
    assert heard == ["pay_2"] and resets == [""]
    assert "subscriber for 'payment' failed" in caplog.text


def test_topic_and_payload_are_checked() -> None:
    signals = Signals()
    with pytest.raises(ValueError, match="one non-empty word"):
        signals.publish("two words")
    with pytest.raises(ValueError, match="longer than"):
        signals.publish("payment", "x" * 8000)
