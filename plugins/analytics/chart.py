"""A bar chart of daily USD volume as an SVG drawn on the server: no script, no chart library, no inline CSS.

Values arrive as exact decimal strings; bar heights are computed in
integer cents, so nothing here is a float but the drawing coordinates.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Sequence
from xml.sax.saxutils import escape

from ...api import fiat_text

WIDTH, HEIGHT, PAD, AXIS = 600, 200, 8, 16


def bar_chart(title: str, days: Sequence[str], values: Sequence[str]) -> str:
    """An accessible SVG (``role="img"``, a ``<title>``, one ``<title>`` per bar with its date and value)."""
    cents = [int(Decimal(v) * 100) for v in values]
    top = max(cents) if cents and max(cents) > 0 else 1
    slot = (WIDTH - 2 * PAD) / max(len(days), 1)
    usable = HEIGHT - 2 * PAD - AXIS
    bars = []
    for index, (day, value, amount) in enumerate(zip(days, cents, values)):
        height = round(usable * value / top, 2)
        x = round(PAD + index * slot + slot * 0.15, 2)
        y = round(HEIGHT - PAD - AXIS - height, 2)
        bars.append(f'<rect x="{x}" y="{y}" width="{round(slot * 0.7, 2)}" height="{height}" fill="#2563eb">'
                    f"<title>{escape(day)}: {escape(fiat_text(amount, 'USD'))}</title></rect>")
    first, last = (escape(days[0]), escape(days[-1])) if days else ("", "")
    baseline = HEIGHT - PAD - AXIS
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'aria-labelledby="chart-title"><title id="chart-title">{escape(title)}</title>'
            f'<line x1="{PAD}" y1="{baseline}" x2="{WIDTH - PAD}" y2="{baseline}" stroke="#6b7280"/>'
            + "".join(bars) +
            f'<text x="{PAD}" y="{HEIGHT - 4}" font-size="11" fill="#374151">{first}</text>'
            f'<text x="{WIDTH - PAD}" y="{HEIGHT - 4}" font-size="11" fill="#374151" text-anchor="end">{last}</text>'
            "</svg>")
