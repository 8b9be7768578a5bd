"""WCAG 2.x contrast of brand accents (core/types/contrast.py, issue 49 item 3).

Reference ratios are WebAIM's contrast checker's for the same pairs; the
stylesheet a branded page loads is checked to draw only readable accents.
"""

from __future__ import annotations

import re

import pytest

from orbchain.core.types.contrast import (
    AA_NORMAL_TEXT, DARK_LABEL, LIGHT_LABEL, accent_hover, accent_label, accent_problem, contrast_ratio,
    readable_accent, relative_luminance, shown_ratio,
)
from orbchain.core.types.pages import accent_stylesheet


@pytest.mark.parametrize("first, second, expected", [
    ("#000000", "#ffffff", "21.00:1"), ("#ffffff", "#ffffff", "1.00:1"),
    ("#0a84ff", "#ffffff", "3.64:1"),  # the old README accent under a white label (issue 49: "Switch coin")
    ("#0a84ff", "#93c5fd", "2.02:1"),  # the dark theme's link colour on it (issue 49's "Open in wallet")
    ("#777777", "#ffffff", "4.47:1"), ("#767676", "#ffffff", "4.54:1"), ("#0060df", "#ffffff", "5.61:1"),
])
def test_ratios_match_the_wcag_formula(first, second, expected):
    assert shown_ratio(contrast_ratio(first, second)) == expected
    assert contrast_ratio(first, second) == contrast_ratio(second, first)


def test_relative_luminance_ends_and_linear_segment():
    assert relative_luminance("#000000") == 0 and relative_luminance("#ffffff") == pytest.approx(1)
    assert relative_luminance("#0a0a0a") == pytest.approx(10 / 255 / 12.92)  # below 0.04045: the linear part


def test_ratios_are_shown_rounded_down_so_a_shown_pass_is_a_pass():
    assert shown_ratio(4.4999) == "4.49:1"


@pytest.mark.parametrize("color, label", [
    ("#000000", LIGHT_LABEL), ("#ffffff", DARK_LABEL), ("#0060df", LIGHT_LABEL), ("#0a84ff", DARK_LABEL),
    ("#ff5500", DARK_LABEL), ("#c2410c", LIGHT_LABEL),
])
def test_the_label_is_the_one_that_contrasts_more(color, label):
    chosen, ratio = accent_label(color)
    assert chosen == label and ratio >= AA_NORMAL_TEXT
    assert accent_problem(color) is None and readable_accent(color) == color


@pytest.mark.parametrize("color, shown", [("#ff0000", "4.43:1"), ("#808080", "4.49:1"), ("#777777", "4.47:1")])
def test_a_colour_between_both_labels_reach_is_named_with_its_ratio(color, shown):
    problem = accent_problem(color)
    assert problem is not None and color in problem and shown in problem and "4.5:1" in problem


@pytest.mark.parametrize("color", ["#ff0000", "#808080", "#777777", "#7f7f7f", "#e34234", "#2a7fd4"])
def test_a_failing_colour_is_drawn_as_a_near_shade_that_passes(color):
    if accent_problem(color) is None:
        pytest.fail(f"{color} was meant to fail AA")
    shade = readable_accent(color)
    assert accent_problem(shade) is None
    assert max(abs(int(shade[i:i + 2], 16) - int(color[i:i + 2], 16)) for i in (1, 3, 5)) <= 16


@pytest.mark.parametrize("color", ["#000000", "#ffffff", "#0060df", "#0a84ff", "#ff5500", "#2f80ed", "#e0115f"])
def test_hovering_never_lowers_the_contrast(color):
    label, ratio = accent_label(color)
    assert contrast_ratio(accent_hover(color), label) >= ratio


def test_the_stylesheet_draws_only_readable_accents():
    css = accent_stylesheet("ff0000")
    found = dict(re.findall(r"--([a-z-]+): (#[0-9a-f]{6})", css))
    assert found["accent"] == readable_accent("#ff0000") != "#ff0000"
    assert contrast_ratio(found["accent"], found["accent-text"]) >= AA_NORMAL_TEXT
    assert contrast_ratio(found["accent-hover"], found["accent-text"]) >= AA_NORMAL_TEXT
    assert accent_stylesheet("0060df") == (
        f":root {{ --accent: #0060df; --accent-text: #ffffff; --accent-hover: {accent_hover('#0060df')}; }}\n")
