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

A refusal raises :class:`CreditRefused` naming the plugin whose result broke
a rule; the transaction rolls back and the deposit stays PENDING, retried at
the next scan. ``report_refusal`` logs it once per plugin and reason in a
process (every scan retries the deposit: the same line each time would bury
the rest of the log). A plugin whose hook raises is reported the same way
(:class:`CreditHookFailed`, its exception the cause), once per plugin and
deposit with the traceback: a bug may fail one deposit and not another. The
ledger then posts the result once under the credit's reference.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from . import book as ledger
from ..types.deposit_status import CONFIRMED
from .accounts import WORLD_PREFIX, merchant_of
from ..infra.db_faults import unavailable_cause

from ..contract.gateway import PluginGateway as Gateway
from ..types.services import ServiceKey

if TYPE_CHECKING:  # pragma: no cover
    from ..types.views import Credit

log = logging.getLogger(__name__)


# The (plugin, reason) pairs (and (raised, plugin, deposit)) this process already logged.
REFUSALS_LOGGED = ServiceKey[set[tuple[str | None, ...]]]("credit_refusals_logged")


class CreditRefused(ValueError):
    """A plugin shaped a credit's postings into something the ledger must not record.

    ``reason`` is the rule broken, the same for every deposit (what the log
    is deduplicated on); ``detail`` the amounts or names of this credit.
    """

    def __init__(self, reference: str, reason: str, detail: str = "", plugin: str | None = None) -> None:
        self.reference, self.reason, self.detail, self.plugin = reference, reason, detail, plugin
        by = f"plugin {plugin}: " if plugin else ""
        super().__init__(f"{by}credit {reference}: {reason}" + (f" ({detail})" if detail else ""))

    def by(self, plugin: str) -> "CreditRefused":
        return CreditRefused(self.reference, self.reason, self.detail, plugin)


class CreditHookFailed(CreditRefused):
    """A plugin's ``filter_credit_postings`` raised; the exception is ``__cause__``.

    Logged once per (plugin, deposit) rather than per reason: the message of
    a bug's exception differs from deposit to deposit, and each failing
    deposit deserves its one traceback.
    """


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
    steps: list[tuple[str, Any]] = []
    try:
        postings = await gateway.hooks.filter_credit_postings(credit=credit, postings=list(proposed), steps=steps)
    except Exception as exc:  # a plugin's bug: named, rolled back, retried at the next scan, logged once
        if unavailable_cause(exc) is not None:
            raise  # the database went away under the plugin: not its bug (core/infra/db_faults.py)
        raise CreditHookFailed(credit.reference, f"filter_credit_postings raised {type(exc).__name__}", str(exc),
                               _raised_by(gateway, exc)) from exc
    if postings == proposed:
        return proposed  # untouched: the core's own lines need no re-check (and no merchant look-up)
    try:
        await check_postings(gateway, credit, postings)
    except CreditRefused as refused:
        raise (await _first_to_break(gateway, credit, steps, refused)) from None
    return list(postings)


async def _first_to_break(gateway: "Gateway", credit: "Credit", steps: list[tuple[str, Any]],
                          refused: CreditRefused) -> CreditRefused:
    """The refusal of the first plugin whose result broke a rule (acceptance still judges only the end
    result, as before: a later plugin may repair an earlier one's lines)."""
    for plugin, postings in steps:
        try:
            await check_postings(gateway, credit, postings)
        except CreditRefused as first:
            return first.by(plugin)
    # Nobody returned a bad list: one changed the list it was given in place.
    return refused.by(" or ".join(_implementers(gateway)))


def _implementers(gateway: "Gateway") -> list[str]:
    return sorted({impl.plugin_name for impl in gateway.pm.hook.filter_credit_postings.get_hookimpls()})


def _raised_by(gateway: "Gateway", exc: BaseException) -> str:
    """The plugin whose ``filter_credit_postings`` the traceback passes through first (the one the core called)."""
    plugins = {getattr(impl.function, "__code__", None): impl.plugin_name
               for impl in gateway.pm.hook.filter_credit_postings.get_hookimpls()}
    frame = exc.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code in plugins:
            return plugins[frame.tb_frame.f_code]
        frame = frame.tb_next
    return " or ".join(_implementers(gateway))  # a wrapped implementation: name every suspect


async def check_postings(gateway: "Gateway", credit: "Credit", postings: Any) -> None:
    reference = credit.reference
    if not isinstance(postings, (list, tuple)) or not all(isinstance(p, ledger.Posting) for p in postings):
        raise CreditRefused(reference, "filter_credit_postings must return a list of ledger.Posting")
    coins = {p.coin for p in postings}
    if coins != {credit.coin}:
        raise CreditRefused(reference, "postings in another coin than the deposit's",
                            f"{sorted(coins)}, expected only {credit.coin}")
    world_legs = [p for p in postings if p.account.startswith(WORLD_PREFIX)]
    if [(p.account, p.amount) for p in world_legs] != [(ledger.world(credit.chain), -credit.amount)]:
        raise CreditRefused(reference, f"the world leg must stay one posting of minus the deposit to"
                                       f" {ledger.world(credit.chain)}", f"{-credit.amount}")
    if sum(p.amount for p in postings) != 0:
        raise CreditRefused(reference, "postings do not sum to zero", f"they sum to {sum(p.amount for p in postings)}")
    merchants = {m for m in (merchant_of(p.account) for p in postings) if m}
    for merchant_id in sorted(merchants):
        if await gateway.db.fetch_val("SELECT id FROM merchants WHERE id = :m", {"m": merchant_id}) is None:
            raise CreditRefused(reference, "postings name an unknown merchant", repr(merchant_id))


async def credit_status(gateway: "Gateway", credit: "Credit") -> str | None:
    """``decide_credit_status``: CONFIRMED holds the deposit until ``complete_credit``; None credits it."""
    plugin, answer = await gateway.hooks.decide_credit_status_answers(credit=credit)
    if answer not in (None, CONFIRMED):
        raise CreditRefused(credit.reference, f"decide_credit_status must answer None or {CONFIRMED!r}",
                            repr(answer), plugin)
    return answer


def report_refusal(gateway: "Gateway", refused: CreditRefused, deposit_id: str) -> None:
    """Log a refused credit once per (plugin, reason) in this process; a repeat only at debug level.

    The deposit stays PENDING and every scan retries it, so the same error
    would otherwise fill the log once a scan until the plugin is fixed. A
    hook that raised (``CreditHookFailed``) is logged once per (plugin,
    deposit), with its traceback.
    """
    logged = gateway.services.setdefault(REFUSALS_LOGGED, set())
    failed = isinstance(refused, CreditHookFailed)
    key = ("raised", refused.plugin, deposit_id) if failed else (refused.plugin, refused.reason)
    if key in logged:
        log.debug("deposit %s stays PENDING: %s", deposit_id, refused)
        return
    logged.add(key)
    log.error("%s; deposit %s stays PENDING and is retried at every scan (logged once per plugin and %s"
              " until restart)", refused, deposit_id, "deposit" if failed else "reason",
              exc_info=refused.__cause__ if failed else None)
