"""WCAG 2.x contrast of a brand's accent colour against the text drawn on it (issue 49 item 3).

A brand's accent is the background of the hosted pages' buttons ("Open in
wallet", "Switch coin", "Pay"); their label is one of two text colours, the
one that reads better on it. Both themes (LIGHT and DARK) draw the label in
that colour (``orbchain.css`` keeps ``a.button`` out of the dark theme's link
colour), so one pair per accent is what AA judges: 4.5:1 for normal text.

Colours between the two labels' reach (mid greys, some oranges) fail with
either label. A merchant entering one is refused (``accent_problem``); a
colour stored before this check is drawn as the nearest shade that passes
(``readable_accent``), so no page is ever unreadable and none breaks. Ratios
are reported rounded down, so a colour shown as "4.50:1" really passes.
"""

from __future__ import annotations

import math

AA_NORMAL_TEXT = 4.5
LIGHT_LABEL, DARK_LABEL = "#ffffff", "#111827"  # the button label on a dark or a light accent
HOVER_STEP = 0.12  # how far a hovered button moves away from its label's colour (its contrast only grows)


def _channels(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def _hex(channels: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{max(0, min(255, round(c))):02x}" for c in channels)


def relative_luminance(color: str) -> float:
    """WCAG 2.x relative luminance of ``#rrggbb``: sRGB channels linearised, weighted 0.2126/0.7152/0.0722."""
    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    red, green, blue = (linear(c) for c in _channels(color))
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast_ratio(first: str, second: str) -> float:
    """(L1 + 0.05) / (L2 + 0.05) with L1 the lighter colour: 1 (same) to 21 (black on white)."""
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def shown_ratio(ratio: float) -> str:
    """A ratio as people write it, rounded down to two decimals ("3.65:1")."""
    return f"{math.floor(ratio * 100) / 100:.2f}:1"


def accent_label(color: str) -> tuple[str, float]:
    """The label colour drawn on ``color`` (the better of the two) and its contrast ratio."""
    return max(((label, contrast_ratio(color, label)) for label in (LIGHT_LABEL, DARK_LABEL)),
               key=lambda pair: pair[1])


def accent_problem(color: str) -> str | None:
    """Why ``color`` cannot be a brand's accent (naming it and its best ratio), or None when AA holds."""
    _, ratio = accent_label(color)
    if ratio >= AA_NORMAL_TEXT:
        return None
    return (f"{color} gives its button text at most {shown_ratio(ratio)} contrast, below the "
            f"{AA_NORMAL_TEXT}:1 WCAG AA needs; choose a darker or a lighter colour")


def _toward(color: str, target: str, share: float) -> str:
    return _hex(tuple(c + (t - c) * share for c, t in zip(_channels(color), _channels(target))))  # type: ignore[arg-type]


def readable_accent(color: str) -> str:
    """``color`` itself when it passes AA, else the nearest shade (toward black or white) that does.

    Steps of 1% toward each end; the first shade that passes with either
    label wins, darker first on a tie. Black and white pass, so it ends.
    """
    if accent_problem(color) is None:
        return color
    for step in range(1, 101):
        for end in ("#000000", "#ffffff"):
            shade = _toward(color, end, step / 100)
            if accent_problem(shade) is None:
                return shade
    raise AssertionError("unreachable: black passes with a white label")  # pragma: no cover


def accent_hover(color: str) -> str:
    """The hovered button: the accent moved away from its label, so hovering never lowers the contrast."""
    label, _ = accent_label(color)
    return _toward(color, "#000000" if label == LIGHT_LABEL else "#ffffff", HOVER_STEP)
