"""Recovery codes as typed and as stored (core/accounts/recovery_codes.py; issue 42): pure functions, no database.

A code carries 80 random bits (16 base32 characters) so a plain SHA-256 is safe to store; a person may type it
in any case, with or without the dashes and spaces it is shown with; anything else is not a code (and is then
refused without a look-up).
"""

from __future__ import annotations

import re

import pytest

from orbchain.core.accounts import recovery_codes

SHOWN = re.compile(r"^[a-z2-7]{4}(-[a-z2-7]{4}){3}$")


def test_new_codes_are_16_base32_characters_shown_in_four_groups_and_never_repeat():
    codes = {recovery_codes.new_code() for _ in range(2000)}
    assert len(codes) == 2000 and all(SHOWN.match(code) for code in codes)
    alphabet = {char for code in codes for char in code.replace("-", "")}
    assert alphabet == set("abcdefghijklmnopqrstuvwxyz234567")  # all 32 symbols drawn: 5 bits each


@pytest.mark.parametrize("typed", ["abcd-efgh-ijkl-mn23", "ABCD-EFGH-IJKL-MN23", "abcd efgh ijkl mn23",
                                   " abcdefghijklmn23 ", "AbCd-EfGh ijkl-MN23"])
def test_a_code_is_read_however_it_was_typed(typed):
    assert recovery_codes.normalize(typed) == "abcdefghijklmn23"


@pytest.mark.parametrize("junk", [None, 12345678, "", "abcd-efgh-ijkl", "abcd-efgh-ijkl-mn231",
                                  "abcd-efgh-ijkl-mn18", "abcd-efgh-ijkl-mn2\u00e9", "123456", "a" * 65,
                                  ["abcdefghijklmn23"], "abcd\x00efghijklmn23"])
def test_anything_else_is_not_a_code(junk):
    assert recovery_codes.normalize(junk) is None
