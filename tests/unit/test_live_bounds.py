"""web/live.py's bounds without a server: the budget, one page's share, per address (IPv6 /64) and per merchant."""

from types import SimpleNamespace

import pytest

from orbchain.core.types.errors import RateLimited, ServiceUnavailable
from orbchain.core.infra.config import Config, LiveConfig
from orbchain.core.infra.metrics import Metrics
from orbchain.web.live import LiveHub
from orbchain.web.stream_budget import StreamBudget


def hub(streams: int, share: int = 100, **live: int) -> LiveHub:
    config = Config(live=LiveConfig(**live))
    signals = SimpleNamespace(subscribe=lambda topic, callback: (lambda: None))
    budget = StreamBudget(configured=streams, file_limit=1 << 20, open_at_start=0, reserved=0,
                          page_share_percent=share)
    return LiveHub(SimpleNamespace(config=config, signals=signals, metrics=Metrics()), budget)


def refused(metrics: Metrics, bound: str) -> float:
    return metrics.live_streams_refused.labels(bound)._value.get()


def test_the_budget_bounds_the_total_with_503():
    live = hub(2, max_streams_per_ip=8)
    live.open("a", "198.51.100.1")
    live.open("b", "198.51.100.2")
    with pytest.raises(ServiceUnavailable):
        live.open("c", "198.51.100.3")
    assert refused(live.gateway.metrics, "total") == 1


def test_one_page_holds_at_most_its_share():
    live = hub(100, share=10, max_streams_per_ip=100)  # 10 streams per payment
    streams = [live.open("hot", f"198.51.100.{i}") for i in range(10)]
    with pytest.raises(RateLimited, match="for this payment"):
        live.open("hot", "198.51.100.99")
    with pytest.raises(RateLimited, match="for this payment"):  # the dashboard's streams count on the page too
        live.open_for_merchant("hot", "mer_1", "203.0.113.1")
    live.open("other", "198.51.100.99")  # another payment is not affected
    live.close(streams[0])
    live.open("hot", "198.51.100.99")
    assert refused(live.gateway.metrics, "page") == 2


def test_addresses_of_one_ipv6_slash_64_share_one_bound():
    live = hub(100, max_streams_per_ip=2)
    live.open("a", "2001:db8:1:2::1")
    live.open("b", "2001:db8:1:2::ffff")
    with pytest.raises(RateLimited, match="from this address"):
        live.open("c", "2001:db8:1:2:abcd::7")  # a third address of the same /64
    live.open("c", "2001:db8:1:3::1")  # the next /64
    assert refused(live.gateway.metrics, "address") == 1


def test_dashboard_streams_count_per_merchant_and_per_address():
    live = hub(100, max_streams_per_merchant=2, max_dashboard_streams_per_ip=3)
    live.open_for_merchant("a", "mer_1", "198.51.100.1")
    live.open_for_merchant("b", "mer_1", "198.51.100.2")
    with pytest.raises(RateLimited, match="for this merchant"):
        live.open_for_merchant("c", "mer_1", "198.51.100.3")
    live.open_for_merchant("c", "mer_2", "198.51.100.1")
    live.open_for_merchant("d", "mer_3", "198.51.100.1")
    with pytest.raises(RateLimited, match="from this address"):  # many accounts from one address
        live.open_for_merchant("e", "mer_4", "198.51.100.1")
    live.open("e", "198.51.100.1")  # a payer's stream from there is bounded apart


def test_closing_twice_gives_back_one_slot():
    live = hub(1)
    stream = live.open("a", "198.51.100.1")
    live.close(stream)
    live.close(stream)  # the handler's own close after the peer-gone one
    assert live.open_streams == 0
    live.open("a", "198.51.100.1")
    with pytest.raises(ServiceUnavailable):
        live.open("b", "198.51.100.2")
