"""QR codes rendered on the server (segno), so pages work with JavaScript off.

One helper serves the hosted payment page (inline SVG), the dashboard's
deposit addresses and 2FA set-up, and ``GET /tgapp/qr``.

Encoding a QR code is CPU-bound pure Python (segno tries all eight masks):
a few milliseconds for an address, 150 ms for 512 emoji. So it never runs on
the event loop: every rendering goes through the gateway's bounded CPU pool
(``core/infra/cpu_pool.py``), which answers 503 when full instead of queueing
without end. The payload of an open payment (its address or payment URI)
does not change between the page's refreshes, so renderings are kept per
(payload, options) in the pool's bounded LRU (``QR_CACHE_SIZE`` entries of a
few kilobytes): a page polled every 15 seconds encodes its QR once. A
payload carrying a secret (the TOTP ``otpauth://`` URL) is rendered with
``cache=False`` and never kept.
"""

from __future__ import annotations

import io

import segno

from ..infra.cpu_pool import CpuPool

MAX_QR_DATA = 512  # SPEC 8: QR data max 512 characters
# Distinct payloads kept per process; an SVG at scale 5 is about 3-15 kB, so 1024 held 3-15 MB once full
# (docs/decisions.md, "Worker RSS growth"); the hosted pages also keep theirs in their own cache.
QR_CACHE_SIZE = 256
CACHE_NAME = "qr"


def _check(data: str) -> None:
    if not data or len(data) > MAX_QR_DATA:
        raise ValueError(f"QR data must be 1-{MAX_QR_DATA} characters")


async def qr_svg(pool: CpuPool, data: str, *, scale: int = 4, dark: str = "#111827", cache: bool = True) -> str:
    """An SVG document encoding ``data`` (error correction M, 4-module quiet zone), rendered in ``pool``."""
    _check(data)
    if not cache:
        return await pool.run(render_svg, data, scale, dark)
    return await pool.memo(CACHE_NAME, QR_CACHE_SIZE, ("svg", data, scale, dark), render_svg, data, scale, dark)


async def qr_data_uri(pool: CpuPool, data: str, *, scale: int = 4, cache: bool = True) -> str:
    """The same QR as a ``data:image/svg+xml`` URI for JSON APIs, rendered in ``pool``."""
    _check(data)
    if not cache:
        return await pool.run(render_data_uri, data, scale)
    return await pool.memo(CACHE_NAME, QR_CACHE_SIZE, ("uri", data, scale), render_data_uri, data, scale)


def render_svg(data: str, scale: int, dark: str) -> str:
    """The encoding itself (a pool thread runs it; never call it on the event loop)."""
    buffer = io.BytesIO()
    code = segno.make(data, error="m", micro=False)
    code.save(buffer, kind="svg", scale=scale, dark=dark, xmldecl=False, svgns=True, nl=False)
    # A viewBox too (segno writes only width/height): a code wider than a phone's screen (a Lightning
    # invoice) is then scaled down by the page's max-width instead of being cut off.
    width, height = code.symbol_size(scale=scale)
    return buffer.getvalue().decode("utf-8").replace("<svg ", f'<svg viewBox="0 0 {width} {height}" ', 1)


def render_data_uri(data: str, scale: int) -> str:
    """The data-URI encoding (a pool thread runs it)."""
    return segno.make(data, error="m", micro=False).svg_data_uri(scale=scale)
