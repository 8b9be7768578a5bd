"""core/watching/push.py: a chain's notification stream wakes its scan, reconnects with backoff, stops cleanly.

No node and no database: a scripted adapter stands for the node, the
backoff's sleep is recorded instead of slept, and the gateway is the three
things the stream uses (signals, metrics, clock).
"""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest

from orbchain.core.types.chains import Block, BlockRef, Capability, ChainAdapter, ChainUnavailable
from orbchain.core.infra.metrics import Metrics
from orbchain.core.infra.signals import WAKE, Signals
from orbchain.core.watching.push import Backoff, ChainPush, PushStreams

HANG_SECONDS = 30.0  # only catches a hang


class Scripted(ChainAdapter):
    """``push`` plays one step per call: "return", "raise", "hear" (a notification, then the stream stays open
    until ``drop`` is set) or "hold" (open, silent, until cancelled)."""

    name = "scripted"
    capabilities = frozenset({Capability.DEPOSITS, Capability.PUSH})

    def __init__(self, *steps: str) -> None:
        self.steps = list(steps)
        self.calls = 0
        self.closed = 0
        self.drop = asyncio.Event()
        self.holding = asyncio.Event()

    async def tip(self) -> BlockRef:
        return BlockRef(0, "00")

    async def block(self, height: int) -> Block:
        return Block(0, "00", "")

    async def push(self, heard):
        self.calls += 1
        step = self.steps.pop(0) if self.steps else "hold"
        try:
            if step == "raise":
                raise ChainUnavailable("node refused the connection")
            if step == "hear":
                heard("block")
                await self.drop.wait()
                self.drop.clear()
            elif step == "hold":
                self.holding.set()
                await asyncio.Event().wait()
        finally:
            self.closed += 1


def _gateway(*adapters: ChainAdapter) -> SimpleNamespace:
    return SimpleNamespace(signals=Signals(), metrics=Metrics(), clock=lambda: 1000.0, chains=list(adapters))


async def _until(condition) -> None:
    async def poll() -> None:
        while True:
            if condition():
                return
            await asyncio.sleep(0)

    await asyncio.wait_for(poll(), HANG_SECONDS)


def _value(gateway, name: str, **labels: str) -> float | None:
    return gateway.metrics.registry.get_sample_value(name, labels)


async def test_a_lost_stream_is_reopened_with_doubling_backoff_reset_once_it_worked(caplog):
    """Raise, return, raise: waits 1, 2, 4 (capped at 5); a notification proves the stream up, so the next
    outage starts at 1 again. One warning per outage, one info line each time it is back.

    Break caught: no reconnect (push called once), no backoff (every wait 1), no reset (the wait after the
    restored stream is 5), a warning per attempt, a stream left open on cancel.
    """
    adapter = Scripted("raise", "return", "raise", "hear", "raise", "hear")
    gateway = _gateway(adapter)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(0)

    push = ChainPush(gateway, adapter, Backoff(first=1, longest=5, healthy_after=HANG_SECONDS), sleep)
    woken: list[str] = []
    gateway.signals.subscribe(WAKE, woken.append)
    caplog.set_level(logging.DEBUG, "orbchain.core.watching.push")
    following = asyncio.create_task(push.follow())
    try:
        await _until(lambda: adapter.calls == 4 and push.up)
        assert _value(gateway, "orbchain_chain_push_connected", chain="scripted") == 1
        assert woken == ["chain.scripted.scan"]
        adapter.drop.set()  # the restored stream ends; the next call raises, then one hears and stays open
        await _until(lambda: adapter.calls == 6 and push.up)
    finally:
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)
    assert waits == [1, 2, 4, 1, 2]
    assert adapter.calls == 6 and adapter.closed == 6  # the last stream closed on cancel
    assert _value(gateway, "orbchain_chain_push_reconnects_total", chain="scripted") == 5
    assert _value(gateway, "orbchain_chain_push_connected", chain="scripted") == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and all("chain scripted lost" in w for w in warnings), warnings
    assert "node refused the connection" in warnings[0] and "the stream ended" in warnings[1]
    restored = [r.getMessage() for r in caplog.records if "restored" in r.getMessage()]
    assert len(restored) == 2, restored


async def test_a_silent_stream_counts_as_up_once_open_long_enough():
    """The other proof of a working stream: still open after ``healthy_after``, though the chain was quiet."""
    adapter = Scripted("hold")
    gateway = _gateway(adapter)
    push = ChainPush(gateway, adapter, Backoff(healthy_after=0.01))
    following = asyncio.create_task(push.follow())
    try:
        await asyncio.wait_for(adapter.holding.wait(), HANG_SECONDS)
        await _until(lambda: push.up)
        assert _value(gateway, "orbchain_chain_push_connected", chain="scripted") == 1
    finally:
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)
    assert adapter.closed == 1


async def test_a_burst_keeps_one_publication_in_flight_and_sends_the_first_at_once():
    """Ten announcements while the first NOTIFY is on its way: this process's scheduler is woken at once,
    the other processes get exactly one more wake after the first one left, and then nothing.

    Break caught: one NOTIFY per announcement (sent would hold 10), a lost follow-up (1), a delayed first.
    """
    adapter = Scripted()
    gateway = _gateway(adapter)
    sent: list[str] = []
    release = asyncio.Event()

    async def send(message: str) -> None:
        sent.append(message)
        await release.wait()

    gateway.signals.attach(send)
    woken: list[str] = []
    gateway.signals.subscribe(WAKE, woken.append)
    push = ChainPush(gateway, adapter)
    push.heard("tx")
    assert woken == ["chain.scripted.scan"]  # delivered here before heard returned
    for _ in range(9):
        push.heard("tx")
    push.heard("weird")
    await asyncio.sleep(0)
    assert len(sent) == 1
    release.set()
    await _until(lambda: len(sent) == 2 and push.wake.idle)
    assert push.wake.published == 2  # nothing more to send
    assert [m.split(" ", 1)[1] for m in sent] == ["wake chain.scripted.scan"] * 2
    assert _value(gateway, "orbchain_chain_push_notifications_total", chain="scripted", kind="tx") == 10
    assert _value(gateway, "orbchain_chain_push_notifications_total", chain="scripted", kind="other") == 1


async def test_streams_follow_push_chains_only_and_stop_closes_them():
    class Polled(Scripted):
        name = "polled"
        capabilities = frozenset({Capability.DEPOSITS})

    pushing, polled = Scripted("hold"), Polled()
    streams = PushStreams(_gateway(pushing, polled))
    assert [push.chain for push in streams.chains] == ["scripted"]
    streams.start()
    await asyncio.wait_for(pushing.holding.wait(), HANG_SECONDS)
    await streams.stop()
    assert pushing.closed == 1 and polled.calls == 0
    await streams.stop()  # again: nothing left


@pytest.mark.parametrize("value, expected", [("false", False), ("true", True)])
def test_push_can_be_turned_off_from_the_environment(value, expected):
    from orbchain.core.infra.config import load_config

    assert load_config(None, environ={"ORBCHAIN_SCHEDULER__PUSH": value}).scheduler.push is expected
    assert load_config(None, environ={}).scheduler.push is True
