"""Real time end to end (issue 31) on the devnet, both databases: its push stream wakes the scan at once.

The scan interval is an hour, so only the push stream can bring a payment to
Paying and Paid within the hang bound; with the stream broken, a short
interval still credits everything (the poll is the safety net).
"""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from typing import Any

from orbchain.api import PAYMENT_CHANGED, ChainUnavailable
from orbchain.chains.devnet import DevnetAdapter, devnet_chain
from orbchain.testing import open_shop
from orbchain.testing.api import create_payment, view_payment

HANG_SECONDS = 30.0  # only catches a hang
HOUR = 3600


async def _status(shop: Any, track_id: str, wanted: str) -> None:
    """Until the merchant API shows ``wanted``: read once, then once more per change the core announces for
    this payment (its change feed), never on a clock. A payment that push never moves is read once, so a
    broken push fails here as "never reached", not as a 429 from a status poll (bounded only against a hang)."""
    changed = asyncio.Event()
    seen: list[str] = []

    def on_change(payload: str) -> None:
        if payload == track_id:
            changed.set()

    async def watch() -> None:
        while True:
            changed.clear()
            seen.append((await view_payment(shop.client, shop.merchant, track_id))["status"])
            if seen[-1] == wanted:
                return
            await changed.wait()

    unsubscribe = shop.gateway.signals.subscribe(PAYMENT_CHANGED, on_change)
    try:
        await asyncio.wait_for(watch(), HANG_SECONDS)
    except TimeoutError:
        raise AssertionError(f"{track_id} never reached {wanted} in {HANG_SECONDS} s (read {seen})") from None
    finally:
        unsubscribe()


async def _pay_and_confirm(shop: Any) -> None:
    """A devnet payment goes Paying, then Paid once mined to its confirmations."""
    gateway = shop.gateway
    chain, coin = devnet_chain(gateway), gateway.coins.require("BTC")
    payment = await create_payment(shop.client, shop.merchant, "BTC", "0.01")
    await chain.pay(coin, payment["address"], coin.to_units(Decimal(payment["amount"])))
    await _status(shop, payment["track_id"], "Paying")
    await chain.mine(coin.confirmations)
    await _status(shop, payment["track_id"], "Paid")


async def test_a_devnet_payment_is_scanned_at_once_without_waiting_for_the_tick(make_config, make_client):
    """Break caught: the stream not started, heard not waking the scheduler, or the scheduler not running
    the woken job: the payment would wait an hour for its tick."""
    shop = await open_shop(make_config, make_client, scheduler={"enabled": True},
                           plugin={"devnet": {"scan_seconds": HOUR, "block_seconds": HOUR}})
    assert [push.chain for push in shop.gateway.services["push"].chains] == ["devnet"]
    await _pay_and_confirm(shop)
    metrics = shop.gateway.metrics.registry
    assert metrics.get_sample_value("orbchain_chain_push_notifications_total", {"chain": "devnet", "kind": "tx"}) == 1
    assert metrics.get_sample_value("orbchain_chain_push_connected", {"chain": "devnet"}) == 1


async def test_with_the_stream_down_the_poll_still_credits(make_config, make_client, monkeypatch, caplog):
    """The node's stream refuses every connection; the scan every 0.2 s credits the payment all the same,
    and the outage is one warning naming the chain."""
    attempts: list[int] = []

    async def refused(self, heard) -> None:
        attempts.append(1)
        raise ChainUnavailable("notifications unavailable")

    monkeypatch.setattr(DevnetAdapter, "push", refused)
    caplog.set_level(logging.WARNING, "orbchain.core.watching.push")
    shop = await open_shop(make_config, make_client, scheduler={"enabled": True},
                           plugin={"devnet": {"scan_seconds": 0.2, "block_seconds": HOUR}})
    await _pay_and_confirm(shop)
    assert attempts  # the stream was tried, and failed
    lost = [r.getMessage() for r in caplog.records if "push stream of chain devnet lost" in r.getMessage()]
    assert len(lost) == 1 and "notifications unavailable" in lost[0], lost
    assert shop.gateway.metrics.registry.get_sample_value("orbchain_chain_push_connected", {"chain": "devnet"}) == 0


async def test_push_off_follows_no_stream(make_config, make_client):
    """``scheduler.push = false`` (the benchmark's "push disabled"): the scheduler polls, nothing listens."""
    shop = await open_shop(make_config, make_client, scheduler={"enabled": True, "push": False},
                           plugin={"devnet": {"scan_seconds": HOUR, "block_seconds": HOUR}})
    assert "scheduler" in shop.gateway.services and "push" not in shop.gateway.services
    assert devnet_chain(shop.gateway)._listeners == []
