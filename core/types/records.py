"""Rules over a merchant's own stored fields, read by every room that serves a merchant.

Why on the ground floor: payments and payouts both ask which coins a merchant accepts; a rule over a
row's own fields needs no room. (Issue 44 step 6 turns these into methods of a ``Merchant`` record.)
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping


def merchant_coins(merchant: Mapping[str, Any]) -> list[str]:
    value = merchant["accepted_coins"]
    return list(_coins_of_text(value)) if isinstance(value, str) else list(value)


@lru_cache(maxsize=1024)
def _coins_of_text(text: str) -> tuple[str, ...]:
    """A stored ``accepted_coins`` list, parsed once per distinct text (each create reads it)."""
    return tuple(json.loads(text))
