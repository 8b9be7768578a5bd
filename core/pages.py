"""What a plugin may add to the hosted payment page, as plain data.

The type lives in the core because the hook that returns it
(``pay_page_forms`` in ``core/hookspecs.py``) is core; ``orbchain.web.pages``
re-exports it for plugins written against the old name. The web layer
renders it; the core never imports the web layer (tests/test_layering.py).
"""

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
