"""What plugins may do to a deposit's credit, and what the core still enforces.

The core proposes the postings of a credit (``world:<chain>`` minus the
deposit, the merchant's available account plus the net, ``platform:fees``
plus the fee); ``filter_credit_postings`` hooks transform them inside the crediting
transaction (a split to two merchants, a swap venue for auto-settle, a brand
fee). Plugins are trusted code, but one plugin's bug must not mint or lose
money, so the result must still:

* be a list of ``ledger.Posting`` in the deposit's coin only;
* keep the world leg exactly: one posting of ``world:<chain>`` for minus the
  deposit amount (no plugin creates or hides money that came from outside);
* sum to zero (``ledger.post`` checks) and name only existing merchants in
  ``merchant:<id>:...`` accounts.

A refusal raises :class:`CreditRefused`; the transaction rolls back and the
deposit stays PENDING, retried at the next scan, with the plugin named in the
log. The ledger then posts the result once under the credit's reference.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from . import ledger
from .deposit_status import CONFIRMED
from .ledger_accounts import WORLD_PREFIX, merchant_of
from .plugins import call_filter, call_first

if TYPE_CHECKING:  # pragma: no cover
    from .gateway import Gateway
    from .views import Credit

log = logging.getLogger(__name__)


class CreditRefused(ValueError):
    """Plugins shaped a credit's postings into something the ledger must not record."""


def default_postings(credit: "Credit") -> list[ledger.Posting]:
    postings = [ledger.Posting(ledger.world(credit.chain), credit.coin, -credit.amount)]
    if credit.amount - credit.fee:
        postings.append(ledger.Posting(ledger.merchant_available(credit.merchant_id), credit.coin,
                                       credit.amount - credit.fee))
    if credit.fee:
        postings.append(ledger.Posting(ledger.PLATFORM_FEES, credit.coin, credit.fee))
    return postings


async def shaped_postings(gateway: "Gateway", credit: "Credit") -> list[ledger.Posting]:
    """The core's postings passed through every ``filter_credit_postings`` plugin, then checked."""
    proposed = default_postings(credit)
    postings = await call_filter(gateway.pm, "filter_credit_postings", "postings", list(proposed),
                                 gateway=gateway, credit=credit)
    if postings == proposed:
        return proposed  # untouched: the core's own lines need no re-check (and no merchant look-up)
    await check_postings(gateway, credit, postings)
    return list(postings)


async def check_postings(gateway: "Gateway", credit: "Credit", postings: Any) -> None:
    if not isinstance(postings, (list, tuple)) or not all(isinstance(p, ledger.Posting) for p in postings):
        raise CreditRefused(f"credit {credit.reference}: filter_credit_postings must return a list of ledger.Posting")
    coins = {p.coin for p in postings}
    if coins != {credit.coin}:
        raise CreditRefused(f"credit {credit.reference}: postings in {sorted(coins)}, expected only {credit.coin}")
    world_legs = [p for p in postings if p.account.startswith(WORLD_PREFIX)]
    if [(p.account, p.amount) for p in world_legs] != [(ledger.world(credit.chain), -credit.amount)]:
        raise CreditRefused(f"credit {credit.reference}: the world leg must stay one posting of"
                            f" {-credit.amount} to {ledger.world(credit.chain)}")
    if sum(p.amount for p in postings) != 0:
        raise CreditRefused(f"credit {credit.reference}: postings do not sum to zero")
    merchants = {m for m in (merchant_of(p.account) for p in postings) if m}
    for merchant_id in sorted(merchants):
        if await gateway.db.fetch_val("SELECT id FROM merchants WHERE id = :m", {"m": merchant_id}) is None:
            raise CreditRefused(f"credit {credit.reference}: unknown merchant {merchant_id!r} in the postings")


async def credit_status(gateway: "Gateway", credit: "Credit") -> str | None:
    """``decide_credit_status``: CONFIRMED holds the deposit until ``complete_credit``; None credits it."""
    answer = await call_first(gateway.pm, "decide_credit_status", gateway=gateway, credit=credit)
    if answer not in (None, CONFIRMED):
        raise CreditRefused(f"credit {credit.reference}: decide_credit_status answered {answer!r},"
                            f" expected None or {CONFIRMED!r}")
    return answer
