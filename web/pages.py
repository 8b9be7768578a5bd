"""What plugins may add to the hosted payment page (``pay_page_forms`` hook)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PayPageForm:
    """A POST form shown under the payment details while the payment is open.

    ``action`` is the URL the form posts to (a route the plugin registered);
    ``amount`` pre-fills an ``amount`` input when not None; ``note`` is a
    short caption above the button. Rendered escaped; no script involved.
    """

    action: str
    label: str
    note: str = ""
    amount: str | None = None
