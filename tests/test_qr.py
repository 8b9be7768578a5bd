"""QR rendering: encoded once per payload (the page refreshes every 15 s), bounded, and still checked."""

from __future__ import annotations

import pytest
import segno

from orbchain.core import qr


@pytest.fixture
def encodings(monkeypatch):
    """Counts how often segno actually encodes, on an empty cache."""
    calls: list[str] = []
    real = segno.make

    def counting(data, **kwargs):
        calls.append(data)
        return real(data, **kwargs)

    qr._svg.cache_clear()
    qr._data_uri.cache_clear()
    monkeypatch.setattr(qr.segno, "make", counting)
    yield calls
    qr._svg.cache_clear()
    qr._data_uri.cache_clear()


def test_svg_is_encoded_once_per_payload_and_options(encodings):
    first = qr.qr_svg("bc1qexampleaddress", scale=5)
    assert first.startswith("<svg") and qr.qr_svg("bc1qexampleaddress", scale=5) == first
    assert encodings == ["bc1qexampleaddress"]
    assert qr.qr_svg("bc1qexampleaddress", scale=4) != first  # other options, another entry
    qr.qr_svg("bc1qotheraddress", scale=5)
    assert encodings == ["bc1qexampleaddress", "bc1qexampleaddress", "bc1qotheraddress"]


def test_data_uri_is_cached_too(encodings):
    uri = qr.qr_data_uri("0x52908400098527886E0F7030069857D2E4169EE7")
    assert uri.startswith("data:image/svg+xml") and qr.qr_data_uri("0x52908400098527886E0F7030069857D2E4169EE7") == uri
    assert len(encodings) == 1


def test_cache_is_bounded(encodings):
    for n in range(qr.QR_CACHE_SIZE + 10):
        qr.qr_svg(f"payload-{n}")
    assert qr._svg.cache_info().currsize == qr.QR_CACHE_SIZE
    qr.qr_svg("payload-0")  # evicted first, so encoded again
    assert encodings.count("payload-0") == 2


@pytest.mark.parametrize("data", ["", "x" * (qr.MAX_QR_DATA + 1)])
def test_bad_payloads_are_refused_before_the_cache(encodings, data):
    with pytest.raises(ValueError):
        qr.qr_svg(data)
    with pytest.raises(ValueError):
        qr.qr_data_uri(data)
    assert encodings == []
