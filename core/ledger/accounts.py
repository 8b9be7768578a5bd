"""Names of ledger accounts, and which of them may go below zero.

Accounts are plain strings so a plugin can open its own (the swaps plugin's
``swap:<venue>``, a referral pool) without a schema change; these
constructors are the only place the core's names are spelled, so a typo
cannot open a stray account.

Sign convention: a positive balance is value the gateway holds for someone
(a merchant, the operator, a payout being broadcast). Money enters and
leaves the books through ``world:<chain>``, the counter-party outside the
gateway: a deposit moves value from world to a merchant, a confirmed payout
moves it back. World accounts are therefore negative (minus everything that
came in, plus everything that went out) and are the only accounts allowed
below zero. Every other account must never go negative; ``post`` refuses
the posting, except for an explicit reorg reversal (see ``ledger.reverse``).

A payout moves value through three accounts, so a crash at any point leaves
it visible and nothing double-spent::

    reserve:   merchant_available(m)  -> payouts_in_flight(chain)
    confirmed: payouts_in_flight(chain) -> world(chain)
    failed:    payouts_in_flight(chain) -> merchant_available(m)

In-flight is pooled per chain because the broadcaster and the hot-wallet
reconciliation are per chain; the payout row (and the ledger transaction's
``merchant_id``) says whose money it is.
"""

from __future__ import annotations

SEPARATOR = ":"
WORLD_PREFIX = "world:"

PLATFORM_FEES = "platform:fees"
# Network fees the platform pays for payouts and sweeps: an expense account,
# so its balance is the (negative) running cost and may go below zero.
NETWORK_FEES = "platform:network_fees"


def _part(value: str, what: str) -> str:
    if not isinstance(value, str) or not value or SEPARATOR in value:
        raise ValueError(f"{what} must be a non-empty string without {SEPARATOR!r}: {value!r}")
    return value


def merchant_available(merchant_id: str) -> str:
    """What the merchant may pay out, transfer or swap now."""
    return f"merchant:{_part(merchant_id, 'merchant_id')}:available"


def merchant_held(merchant_id: str) -> str:
    """Credited to the merchant but not spendable yet (e.g. a hold or dispute)."""
    return f"merchant:{_part(merchant_id, 'merchant_id')}:held"


def payouts_in_flight(chain: str) -> str:
    """Reserved for payouts being signed or broadcast on ``chain``."""
    return f"payouts:{_part(chain, 'chain')}:in_flight"


def chain_hot_wallet(chain: str) -> str:
    """The operator's own float on ``chain`` (e.g. to pay network fees)."""
    return f"chain:{_part(chain, 'chain')}:hot_wallet"


def world(chain: str) -> str:
    """The outside world on ``chain``: deposits come from it, payouts go to it."""
    return f"{WORLD_PREFIX}{_part(chain, 'chain')}"


def may_go_negative(account: str) -> bool:
    """True for the outside world (money outside the books) and the platform's
    network-fee expense account; every other account stays at or above zero."""
    return account.startswith(WORLD_PREFIX) or account == NETWORK_FEES


def merchant_of(account: str) -> str | None:
    """The merchant id of a ``merchant:<id>:...`` account, else None."""
    parts = account.split(SEPARATOR)
    if len(parts) == 3 and parts[0] == "merchant":
        return parts[1]
    return None
