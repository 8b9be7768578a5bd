"""What a plugin answers when asked where a payer sends a payment's coin (``decide_receive_target``).

Why on the ground floor: the hook specs name it, and the plugin contract stands below the payments room.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class ReceiveTarget:
    """A plugin's answer: the address to show (None when there is none, e.g. an
    invoice) and extra public fields merged into the payment view (e.g.
    ``{"lightning": {"invoice": ...}}``); extra keys never replace core fields.
    ``watch_index`` asks the core to watch ``address`` like a derived one."""

    address: str | None
    extra: Mapping[str, Any] = field(default_factory=dict)
    # Set by a plugin whose own wallet made the address (a Monero subaddress): the core records
    # it in the address table under the coin's family with this index (unique per merchant,
    # family and network), so the chain adapter's transfers to it credit the payment.
    watch_index: int | None = None
