"""The venue contract (plugins/swaps/venues.py, ``register_swap_venues``) and the devnet venue (plugins/devnet_venue).

Contract rules checked here: base units on both sides, create idempotent
by swap id, transient failures as ``VenueUnavailable``, refusals as
``VenueRefused``, a venue name registered twice stops startup naming both
plugins; and the ``extra_payment_webhook_fields`` hook never replaces a core field.
"""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

import pytest

from orbchain.core.infra.config import ConfigError, load_config
from orbchain.core.startup import build_gateway
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.core.contract.registries import StartupError
from orbchain.plugins.devnet_venue import DevnetVenue, Knobs
from orbchain.plugins.swaps.venue_registry import venues_of
from orbchain.plugins.swaps.venues import (
    EXCHANGING, FAILED, FINISHED, REFUNDED, SwapVenueRegistry, VenueRefused, VenueStatus, VenueUnavailable,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def venue():
    gateway = build_gateway(load_config(None, environ={}))
    clock = Clock()
    return DevnetVenue(gateway.coins, clock, Knobs(rates={"BTC/ETH": Decimal("20")}, fee_bps=50)), clock


async def test_quote_is_in_base_units_with_the_fee_taken(venue):
    devnet, _ = venue
    quote = await devnet.quote("BTC", "ETH", 100_000_000)  # 1 BTC
    assert quote.to_amount == 19_900_000_000_000_000_000  # 20 ETH less 0.5 %, in wei
    assert quote.venue == "devnet" and quote.min_from_amount > 0
    assert devnet.supports("BTC", "ETH") and not devnet.supports("BTC", "BTC") and not devnet.supports("BTC", "XMR")
    assert devnet.supports("XMR", "BTC")  # a source-only coin converts into a held one
    with pytest.raises(VenueRefused):
        await devnet.quote("BTC", "XMR", 1)


async def test_create_is_idempotent_and_the_order_finishes_after_the_delay(venue):
    devnet, clock = venue
    devnet.knobs.delay_seconds = 30
    quote = await devnet.quote("BTC", "ETH", 100_000_000)
    order = await devnet.create_swap("swp_a", quote, payout_address=None, refund_address=None)
    assert await devnet.create_swap("swp_a", quote, payout_address=None, refund_address=None) == order
    assert devnet.create_calls == 1 and order.funded and order.deposit_amount == 100_000_000
    assert (await devnet.status("swp_a", order.venue_ref)).state == EXCHANGING
    clock.now += 30
    done = await devnet.status("swp_a", order.venue_ref)
    assert done.state == FINISHED and done.actual_to_amount == quote.to_amount and done.payout_hash
    with pytest.raises(VenueRefused):
        await devnet.refund("swp_a", order.venue_ref, None)


async def test_short_delivery_and_failures(venue):
    devnet, _ = venue
    devnet.knobs.short_bps = 200
    quote = await devnet.quote("BTC", "ETH", 100_000_000)
    order = await devnet.create_swap("swp_b", quote, payout_address=None, refund_address=None)
    assert (await devnet.status("swp_b", order.venue_ref)).actual_to_amount == quote.to_amount * 98 // 100
    devnet.knobs.fail_exchange = True
    order = await devnet.create_swap("swp_c", quote, payout_address=None, refund_address=None)
    assert (await devnet.status("swp_c", order.venue_ref)).state == FAILED
    refunded = await devnet.refund("swp_c", order.venue_ref, None)
    assert refunded.state == REFUNDED and refunded.refund_hash
    devnet.knobs.unavailable = True
    with pytest.raises(VenueUnavailable):
        await devnet.status("swp_c", order.venue_ref)
    devnet.knobs.unavailable, devnet.knobs.refuse_create = False, True
    with pytest.raises(VenueRefused):
        await devnet.create_swap("swp_d", quote, payout_address=None, refund_address=None)
    with pytest.raises(VenueRefused):
        await devnet.status("swp_unknown", "x")


def test_a_finished_status_must_say_what_arrived():
    with pytest.raises(ValueError):
        VenueStatus(FINISHED)
    with pytest.raises(ValueError):
        VenueStatus("lost")


def test_register_swap_venues_refuses_a_duplicate_name_naming_both_plugins():
    class Twin:
        @hookimpl
        def register_swap_venues(self, registry, gateway):
            registry.add(DevnetVenue(gateway.coins, gateway.now))

    pm = get_plugin_manager([("twin", Twin())])
    with pytest.raises(StartupError, match="'devnet_venue'.*'twin'|'twin'.*'devnet_venue'"):
        build_gateway(load_config(None, environ={}), pm)
    with pytest.raises(TypeError):
        SwapVenueRegistry().add("not a venue")  # type: ignore[arg-type]


def test_the_devnet_venue_is_off_in_production_and_its_config_is_checked():
    gateway = build_gateway(load_config(None, environ={}).with_overrides(
        plugin={"devnet_venue": {"enabled": False}}))
    assert "devnet" not in venues_of(gateway).names()
    for bad in ({"fee_bps": -1}, {"rates": {"BTC/ETH": 1.5}}, {"nope": 1}, {"delay_seconds": "x"}):
        with pytest.raises(ConfigError):
            build_gateway(load_config(None, environ={}).with_overrides(plugin={"devnet_venue": bad}))


async def test_payment_webhook_fields_never_replace_a_core_field(gateway):
    from orbchain.core.payments.status import add_plugin_fields

    class Extra:
        @hookimpl
        def extra_payment_webhook_fields(self, gateway, payment):
            return {"status": "Hacked", "extra_field": "1"}

    gateway.pm.register(Extra(), name="extra")
    body = {"status": "Paid"}
    await add_plugin_fields(gateway, body, SimpleNamespace(track_id="TRK_NONE"))
    assert body == {"status": "Paid", "extra_field": "1"}
