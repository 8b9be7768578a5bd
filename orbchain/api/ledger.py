"""``orbchain.api.ledger``: moving money between ledger accounts and reading balances.

Money moves only through these (docs/plugins.md, "Core services"): ``post``
and ``transfer`` take ``gateway.db`` and are idempotent by ``reference``;
call ``notify_posted`` after your commit, or ``post_and_notify`` when the
post is the whole transaction. A plugin may open accounts of its own (plain
strings such as ``swap:<venue>``, never containing ``ACCOUNT_SEPARATOR`` in a part); ``balance`` reads one of them.
"""

# Postings and transactions, and the overdraft every account but the world refuses.
from ..core.ledger.book import LedgerOverdraft, LedgerTransaction, Posting

# Writing: one transaction per reference.
from ..core.ledger.book import notify_posted, post, post_and_notify, reverse, transfer

# A sweep's postings from the process that signs it (it writes no ledger): ``serve`` books them once.
from ..core.ledger.sweep_bookings import record_sweep_booking

# Reading balances (``balance(gateway.db, account, coin)``, 0 for an account that never moved).
from ..core.ledger.book import balance, balances, merchant_balances

# Account names: the only place they are spelled.
from ..core.ledger.accounts import (
    NETWORK_FEES, PLATFORM_FEES, WORLD_PREFIX, chain_hot_wallet, merchant_available, merchant_held, payouts_in_flight,
    world,
)
from ..core.ledger.accounts import SEPARATOR as ACCOUNT_SEPARATOR

__all__ = [
    "LedgerOverdraft", "LedgerTransaction", "Posting",
    "notify_posted", "post", "post_and_notify", "reverse", "transfer", "record_sweep_booking",
    "balance", "balances", "merchant_balances",
    "NETWORK_FEES", "PLATFORM_FEES", "WORLD_PREFIX", "chain_hot_wallet", "merchant_available", "merchant_held",
    "payouts_in_flight", "world", "ACCOUNT_SEPARATOR",
]
