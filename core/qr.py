"""QR codes rendered on the server (segno), so pages work with JavaScript off.

One helper serves the hosted payment page (inline SVG), the dashboard's
deposit addresses (data URIs) and later ``GET /tgapp/qr``.
"""

from __future__ import annotations

import io

import segno

MAX_QR_DATA = 512  # SPEC 8: QR data max 512 characters


def qr_svg(data: str, *, scale: int = 4, dark: str = "#111827") -> str:
    """An SVG document encoding ``data`` (error correction M, 4-module quiet zone)."""
    if not data or len(data) > MAX_QR_DATA:
        raise ValueError(f"QR data must be 1-{MAX_QR_DATA} characters")
    buffer = io.BytesIO()
    segno.make(data, error="m", micro=False).save(buffer, kind="svg", scale=scale, dark=dark, xmldecl=False,
                                                   svgns=True, nl=False)
    return buffer.getvalue().decode("utf-8")


def qr_data_uri(data: str, *, scale: int = 4) -> str:
    """The same QR as an ``data:image/svg+xml`` URI for JSON APIs."""
    if not data or len(data) > MAX_QR_DATA:
        raise ValueError(f"QR data must be 1-{MAX_QR_DATA} characters")
    return segno.make(data, error="m", micro=False).svg_data_uri(scale=scale)
