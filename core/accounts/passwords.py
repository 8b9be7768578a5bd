"""Which new passwords are refused: wrong length, only whitespace, or among the most common.

SPEC 4.7 fixes 8-128 characters. Length alone let ``password``, ``12345678``
and eight spaces through, the first guesses of any credential-stuffing run.
``common_passwords.txt.gz`` lists the 8-128 character entries of the 20,000
most common passwords shipped by Django (see docs/decisions.md for its source
and licence); it is read once, on first use. Compared case-insensitively,
surrounding whitespace ignored, as the list itself is lower case.
"""

from __future__ import annotations

import gzip
from functools import lru_cache
from importlib import resources

MIN_LENGTH, MAX_LENGTH = 8, 128
_LIST = "common_passwords.txt.gz"


@lru_cache(maxsize=1)
def common_passwords() -> frozenset[str]:
    data = resources.files(__package__).joinpath(_LIST).read_bytes()
    return frozenset(line.strip() for line in gzip.decompress(data).decode("utf-8").splitlines() if line.strip())


def password_problem(password: str) -> str | None:
    """Why ``password`` may not be set as a new password, or None when it may."""
    if not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        return f"must be {MIN_LENGTH}-{MAX_LENGTH} characters"
    if not password.strip():
        return "must not be only whitespace"
    if password.strip().lower() in common_passwords():
        return "is too common; choose a password that is not on lists of common passwords"
    return None
