"""QR codes rendered on the server (segno), so pages work with JavaScript off.

One helper serves the hosted payment page (inline SVG), the dashboard's
deposit addresses (data URIs) and later ``GET /tgapp/qr``.

Encoding a QR code (segno tries all eight masks in pure Python) costs a few
milliseconds, several times a whole database read, while the payload of an
open payment (its address or payment URI) does not change between the
page's refreshes. So each rendering is cached per (payload, options) in a
bounded LRU: a page polled every 15 seconds encodes its QR once, and the
memory stays bounded (``QR_CACHE_SIZE`` entries of a few kilobytes).
"""

from __future__ import annotations

import io
from functools import lru_cache

import segno

MAX_QR_DATA = 512  # SPEC 8: QR data max 512 characters
QR_CACHE_SIZE = 1024  # distinct payloads kept; an SVG at scale 5 is about 5-15 kB


def _check(data: str) -> None:
    if not data or len(data) > MAX_QR_DATA:
        raise ValueError(f"QR data must be 1-{MAX_QR_DATA} characters")


def qr_svg(data: str, *, scale: int = 4, dark: str = "#111827") -> str:
    """An SVG document encoding ``data`` (error correction M, 4-module quiet zone)."""
    _check(data)
    return _svg(data, scale, dark)


def qr_data_uri(data: str, *, scale: int = 4) -> str:
    """The same QR as an ``data:image/svg+xml`` URI for JSON APIs."""
    _check(data)
    return _data_uri(data, scale)


@lru_cache(maxsize=QR_CACHE_SIZE)
def _svg(data: str, scale: int, dark: str) -> str:
    buffer = io.BytesIO()
    code = segno.make(data, error="m", micro=False)
    code.save(buffer, kind="svg", scale=scale, dark=dark, xmldecl=False, svgns=True, nl=False)
    # A viewBox too (segno writes only width/height): a code wider than a phone's screen (a Lightning
    # invoice) is then scaled down by the page's max-width instead of being cut off.
    width, height = code.symbol_size(scale=scale)
    return buffer.getvalue().decode("utf-8").replace("<svg ", f'<svg viewBox="0 0 {width} {height}" ', 1)


@lru_cache(maxsize=QR_CACHE_SIZE)
def _data_uri(data: str, scale: int) -> str:
    return segno.make(data, error="m", micro=False).svg_data_uri(scale=scale)
