"""QR rendering: in the CPU pool, encoded once per payload (the page refreshes every 15 s), bounded, still checked."""

from __future__ import annotations

import threading

import pytest
import segno

from orbchain.core.pages import qr
from orbchain.core.infra.cpu_pool import CpuPool


@pytest.fixture
def encodings(monkeypatch):
    """The threads segno encodes on, one entry per encoding actually done."""
    calls: list[tuple[str, str]] = []
    real = segno.make

    def counting(data, **kwargs):
        calls.append((data, threading.current_thread().name))
        return real(data, **kwargs)

    monkeypatch.setattr(qr.segno, "make", counting)
    return calls


@pytest.fixture
def pool():
    pool = CpuPool(workers=2, queue=8)
    yield pool
    pool.shutdown()


async def test_svg_is_encoded_once_per_payload_and_options_off_the_loop(encodings, pool):
    first = await qr.qr_svg(pool, "bc1qexampleaddress", scale=5)
    assert first.startswith("<svg") and await qr.qr_svg(pool, "bc1qexampleaddress", scale=5) == first
    assert [data for data, _ in encodings] == ["bc1qexampleaddress"]
    assert await qr.qr_svg(pool, "bc1qexampleaddress", scale=4) != first  # other options, another entry
    await qr.qr_svg(pool, "bc1qotheraddress", scale=5)
    assert [data for data, _ in encodings] == ["bc1qexampleaddress", "bc1qexampleaddress", "bc1qotheraddress"]
    # Every encoding ran on a pool thread, none on the event loop's (the test's main thread).
    assert all(thread.startswith("orbchain-cpu") for _, thread in encodings), encodings


async def test_data_uri_is_cached_too(encodings, pool):
    uri = await qr.qr_data_uri(pool, "0x52908400098527886E0F7030069857D2E4169EE7")
    assert uri.startswith("data:image/svg+xml")
    assert await qr.qr_data_uri(pool, "0x52908400098527886E0F7030069857D2E4169EE7") == uri
    assert len(encodings) == 1


async def test_a_secret_payload_is_never_kept(encodings, pool):
    """The 2FA set-up QR carries the TOTP secret: rendered each time, never left in the cache."""
    url = "otpauth://totp/Orbchain:me?secret=JBSWY3DPEHPK3PXP"
    assert await qr.qr_svg(pool, url, cache=False) == await qr.qr_svg(pool, url, cache=False)
    assert len(encodings) == 2 and pool.cached(qr.CACHE_NAME) == 0


async def test_cache_is_bounded(encodings, pool, monkeypatch):
    monkeypatch.setattr(qr, "QR_CACHE_SIZE", 5)
    for n in range(8):
        await qr.qr_svg(pool, f"payload-{n}")
    assert pool.cached(qr.CACHE_NAME) == 5
    await qr.qr_svg(pool, "payload-0")  # evicted first, so encoded again
    assert [data for data, _ in encodings].count("payload-0") == 2


@pytest.mark.parametrize("data", ["", "x" * (qr.MAX_QR_DATA + 1)])
async def test_bad_payloads_are_refused_before_the_pool(encodings, pool, data):
    with pytest.raises(ValueError):
        await qr.qr_svg(pool, data)
    with pytest.raises(ValueError):
        await qr.qr_data_uri(pool, data)
    assert encodings == [] and pool.admitted == 0
