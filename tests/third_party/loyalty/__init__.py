"""``loyalty``: a feature plugin as a third party writes it, from docs/plugins.md and ``orbchain.api`` alone.

Every credited deposit earns its merchant 1 % cashback (rounded down to a
base unit, at most the platform fee of that credit, which pays it), posted
with the credit itself (``filter_credit_postings``) into a ledger account of
the plugin's own, ``loyalty:<merchant id>``. The merchant reads the balance
from ``GET /v1/loyalty/balance`` (scope ``loyalty:read``) or the dashboard's
Loyalty page, and hears of each cashback by a ``loyalty.cashback`` webhook.
The plugin is ``plugin.py``, its tests ``test_loyalty.py``.
"""
