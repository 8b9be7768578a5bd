"""The per-process caches of payments' pages and answers fit a memory budget when full (issue 33, soak).

Each cache is bounded by entries, and an entry is far bigger than its
count suggests: the key holds every value of the payment's rows, the
value a rendered page, an encoded answer or an SVG. Sized by count alone,
the caches held about 25 MB per worker when full and took the soak half an
hour to fill, which the soak saw as the workers' RSS growing 27-32 %
(docs/decisions.md, "Worker RSS growth"). Here real entries are measured
(their keys and values, deeply) and each cache's bound times its mean entry
must stay within ``BUDGET_BYTES``. Both databases.
"""

from __future__ import annotations

import sys
import tracemalloc
from typing import Any

from orbchain.core.pages import qr
from orbchain.core.payments import row_cache
from orbchain.web import payment_answer
from orbchain.web.envelope import envelope_bytes, kept_envelope_bytes
from orbchain.web.keys import GATEWAY
from orbchain.web.page_slots import CACHED_PAGES

from .test_pay_page import api_payment, new_invoice
from .test_pay_page_cache import shop, view  # noqa: F401 - the fixture

BUDGET_BYTES = 2 << 20  # one full cache, per worker
PAYMENTS = 6


def deep_size(value: Any, seen: set[int]) -> int:
    """Bytes of ``value`` and what it holds (containers, slotted objects), each object counted once."""
    if id(value) in seen:
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in value.items())
    elif isinstance(value, (list, tuple, set, frozenset)):
        size += sum(deep_size(item, seen) for item in value)
    elif hasattr(value, "__slots__") and not isinstance(value, (str, bytes)):
        size += sum(deep_size(getattr(value, name), seen) for name in value.__slots__ if hasattr(value, name))
    return size


def mean_entry(items: Any) -> float:
    """Mean bytes of an ``LruMap``'s entries, key and value (what the entries share counted once)."""
    entries = list(items._items.items())
    assert entries, "the cache is empty: nothing was measured"
    seen: set[int] = set()
    return sum(deep_size(key, seen) + deep_size(value, seen) for key, value in entries) / len(entries)


async def test_full_page_and_answer_caches_fit_the_budget(shop):  # noqa: F811 - the fixture
    client, key = shop
    for _ in range(PAYMENTS):
        payment = await new_invoice(client, key, pay_currency="BTC")
        await view(client, payment["track_id"])
        await api_payment(client, key, payment["track_id"])
    gateway = client.app[GATEWAY]
    caches = {
        "payment answers": (gateway.services[payment_answer.CACHE], payment_answer.CACHED_ANSWERS),
        "page contents": (gateway.services["pay_page_contents"], CACHED_PAGES),
        "page renderings": (gateway.services["pay_page_template"]._renderings, CACHED_PAGES),
        "QR codes": (gateway.cpu._memos[qr.CACHE_NAME], qr.QR_CACHE_SIZE),
    }
    if gateway.db.is_postgres:  # SQLite reads a payment's rows every time
        caches["payment rows"] = (gateway.services[row_cache.SERVICE]._entries, row_cache.MAX_ENTRIES)
    full = {name: bound * mean_entry(cache) for name, (cache, bound) in caches.items()}
    print({name: f"{size / 2**20:.1f} MiB" for name, size in full.items()})
    for name, (cache, _) in caches.items():
        assert len(cache) == PAYMENTS, name
    assert all(size <= BUDGET_BYTES for size in full.values()), full


def allocated(make: Any) -> tuple[int, bytes]:
    """Bytes still allocated after ``make()`` (its result kept), and the result."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = make()
        return tracemalloc.get_traced_memory()[0] - before, kept
    finally:
        tracemalloc.stop()


def test_a_kept_answer_takes_its_length_not_the_encoders_buffer():
    data = {"track_id": "x" * 22, "transactions": [{"tx_hash": "ab" * 32, "amount": "0.0001"}] * 10}
    size, body = allocated(lambda: kept_envelope_bytes(data))
    assert body == envelope_bytes(data)
    assert size < len(body) + 256, (size, len(body))
