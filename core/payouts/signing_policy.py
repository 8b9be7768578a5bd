"""The signer's spending policy: a pure verdict over what the ledger and the payouts table say.

Why pure: the check must run wherever the keys are. Today that is the payout
worker in ``serve`` (``core/payouts/signing_gate.py`` reads the facts and
calls :func:`judge` right before ``sign_payout``); with a separate
``orbchain signer`` process (issue 45 item 1) the same function runs there,
on facts that process reads itself. Nothing here touches the database, a
chain or the clock.

Two kinds of reason to hold a payout:

* integrity (never overridden, not even by an operator's release): no
  reserve posting for this payout, a reserve that does not match the row
  (merchant, coin, chain, amount), a reserve already given back, an approval
  the account's policy asked for and nobody gave;
* operator policy (an operator's release lets one payout past them): a
  destination whose binding digest does not verify (edited by SQL, or made
  before the binding existed), the per-payout, hourly, daily and
  per-merchant daily caps, and the destination allow-lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Callable, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from ..infra.config import SigningConfig

# Reasons, as stored in ``payouts.policy_hold`` and the metric's ``reason`` label (a fixed set).
NO_RESERVATION = "no_reservation"
RESERVATION_MISMATCH = "reservation_mismatch"
RESERVATION_RELEASED = "reservation_released"
APPROVAL_MISSING = "approval_missing"
BINDING_MISMATCH = "binding_mismatch"
OVER_PAYOUT_CAP = "over_payout_cap"
OVER_HOURLY_CAP = "over_hourly_cap"
OVER_DAILY_CAP = "over_daily_cap"
OVER_MERCHANT_DAILY_CAP = "over_merchant_daily_cap"
DESTINATION_NOT_ALLOWED = "destination_not_allowed"
INTEGRITY_REASONS = frozenset({NO_RESERVATION, RESERVATION_MISMATCH, RESERVATION_RELEASED, APPROVAL_MISSING})

HOUR_SECONDS, DAY_SECONDS = 3600, 86400


@dataclass(frozen=True)
class CoinLimits:
    """One coin's caps in base units (None: no cap) and its allow-list (None: any destination)."""

    per_payout: int | None = None
    per_hour: int | None = None
    per_day: int | None = None
    merchant_per_day: int | None = None
    destinations: frozenset[str] | None = None


@dataclass(frozen=True)
class SigningPolicy:
    """The operator's policy, per coin; ``merchant_destinations`` narrows one merchant's destinations of a coin."""

    coins: Mapping[str, CoinLimits] = field(default_factory=dict)
    merchant_destinations: Mapping[tuple[str, str], frozenset[str]] = field(default_factory=dict)

    def limits(self, coin: str) -> CoinLimits:
        return self.coins.get(coin, CoinLimits())


@dataclass(frozen=True)
class Reservation:
    """The reserve posting the ledger holds for a payout, as the ledger says it (not as the row says)."""

    merchant_id: str | None
    coin: str
    chain: str
    amount: int
    binding_ok: bool  # its memo's digest binds this row's id, merchant, coin, chain, amount and destination


@dataclass(frozen=True)
class SigningFacts:
    """Everything :func:`judge` looks at, read from the database in one locked transaction."""

    payout_id: str
    merchant_id: str
    coin: str
    chain: str
    amount: int
    destination: str
    reservation: Reservation | None
    reservation_released: bool
    approval_objection: str | None  # a plugin's refusal (``check_payout_signing``), e.g. no approval recorded
    operator_released: bool  # an operator let this payout past the operator policy (``payouts release``)
    coin_last_hour: int  # other payouts of the coin authorized in the last hour, base units
    coin_last_day: int
    merchant_last_day: int  # the same merchant's payouts of the coin in the last day


def judge(facts: SigningFacts, policy: SigningPolicy) -> str | None:
    """The reason to hold this payout, or None to sign it. Integrity first, then the operator's policy."""
    reason = _integrity(facts)
    if reason is not None or facts.operator_released:
        return reason
    if facts.reservation is not None and not facts.reservation.binding_ok:
        return BINDING_MISMATCH
    return _operator_policy(facts, policy)


def _integrity(facts: SigningFacts) -> str | None:
    reason = reservation_problem(facts.reservation, facts.reservation_released, merchant_id=facts.merchant_id,
                                 coin=facts.coin, chain=facts.chain, amount=facts.amount)
    if reason is None and facts.approval_objection is not None:
        return APPROVAL_MISSING
    return reason


def reservation_problem(reserved: Reservation | None, released: bool, *, merchant_id: str, coin: str, chain: str,
                        amount: int) -> str | None:
    """What is wrong with the ledger's reserve for a payout row saying these fields, or None when it backs it.

    The one proof both ends of a payout's money use: the signer before it
    signs (``judge``) and a failed payout before its money is given back
    (``core/payouts/reserve_release.py``).
    """
    if reserved is None:
        return NO_RESERVATION
    if (reserved.merchant_id, reserved.coin, reserved.chain, reserved.amount) != (merchant_id, coin, chain, amount):
        return RESERVATION_MISMATCH
    if released:
        return RESERVATION_RELEASED
    return None


def _operator_policy(facts: SigningFacts, policy: SigningPolicy) -> str | None:
    limits = policy.limits(facts.coin)
    amount = facts.amount
    if limits.per_payout is not None and amount > limits.per_payout:
        return OVER_PAYOUT_CAP
    reason = _over_windows(limits, amount, facts.coin_last_hour, facts.coin_last_day, facts.merchant_last_day)
    if reason is not None:
        return reason
    if limits.destinations is not None and facts.destination not in limits.destinations:
        return DESTINATION_NOT_ALLOWED
    narrowed = policy.merchant_destinations.get((facts.merchant_id, facts.coin))
    if narrowed is not None and facts.destination not in narrowed:
        return DESTINATION_NOT_ALLOWED
    return None


def judge_fee_bump(policy: SigningPolicy, coin: str, extra_fee: int, coin_last_hour: int, coin_last_day: int,
                   merchant_last_day: int) -> str | None:
    """The cap a bump's ``extra_fee`` would pass, or None. Only the windows count it: the payout's own amount
    was judged (and counted) when it was signed, and the per-payout cap and allow-lists are about the amount."""
    return _over_windows(policy.limits(coin), extra_fee, coin_last_hour, coin_last_day, merchant_last_day)


def judge_hot_wallet_spend(policy: SigningPolicy, coin: str, amount: int, coin_last_hour: int, coin_last_day: int,
                           *, per_spend: bool) -> str | None:
    """The cap a spend of the hot wallet that is no payout (a gas top-up) would pass, or None.

    Capped like a payout of ``coin`` (``per_spend``: the per-payout cap too; a
    re-signing's extra fee passes only the windows, like a payout's bump).
    Not the merchant's cap: the platform pays for its own sweeps.
    """
    limits = policy.limits(coin)
    if per_spend and limits.per_payout is not None and amount > limits.per_payout:
        return OVER_PAYOUT_CAP
    return _over_windows(limits, amount, coin_last_hour, coin_last_day, None)


def _over_windows(limits: CoinLimits, amount: int, last_hour: int, last_day: int,
                  merchant_last_day: int | None) -> str | None:
    """The window cap ``amount`` more would pass: the coin's hour and day, the merchant's day (None: no merchant)."""
    if limits.per_hour is not None and last_hour + amount > limits.per_hour:
        return OVER_HOURLY_CAP
    if limits.per_day is not None and last_day + amount > limits.per_day:
        return OVER_DAILY_CAP
    if (merchant_last_day is not None and limits.merchant_per_day is not None
            and merchant_last_day + amount > limits.merchant_per_day):
        return OVER_MERCHANT_DAILY_CAP
    return None


def needs_window_counts(policy: SigningPolicy, coin: str) -> bool:
    """Whether any cap of ``coin`` sums a window (else the boundary skips the counting queries)."""
    limits = policy.limits(coin)
    return any(cap is not None for cap in (limits.per_hour, limits.per_day, limits.merchant_per_day))


# -- from the config --------------------------------------------------------------------------------

ToUnits = Callable[[str, Decimal], int]  # (coin, amount in the coin's unit) -> base units; ValueError if unknown
Canonical = Callable[[str, str], str]  # (coin, address) -> the address as payouts store it; ValueError if invalid


def policy_from_config(signing: "SigningConfig", to_units: ToUnits, canonical: Canonical) -> SigningPolicy:
    """The policy of the ``[signing]`` block; ``ValueError`` naming the entry for an unknown coin or a bad address.

    The config loader checked each entry's shape; the chains judge coins and addresses here, so an
    allow-listed address is compared in the same canonical form as a payout's destination.
    """
    caps: dict[str, dict[str, int]] = {}
    for key, name in (("max_per_payout", "per_payout"), ("max_per_hour", "per_hour"), ("max_per_day", "per_day"),
                      ("max_per_merchant_day", "merchant_per_day")):
        for entry in getattr(signing, key):
            coin, _, amount = entry.partition("=")
            caps.setdefault(coin, {})[name] = _units(to_units, key, entry, coin, amount)
    destinations: dict[str, set[str]] = {}
    for entry in signing.allowed_destinations:
        coin, _, address = entry.partition("=")
        destinations.setdefault(coin, set()).add(_address(canonical, "allowed_destinations", entry, coin, address))
    merchant_destinations: dict[tuple[str, str], set[str]] = {}
    for entry in signing.merchant_allowed_destinations:
        scope, _, address = entry.partition("=")
        merchant_id, _, coin = scope.partition(":")
        merchant_destinations.setdefault((merchant_id, coin), set()).add(
            _address(canonical, "merchant_allowed_destinations", entry, coin, address))
    coins = {coin: CoinLimits(**caps.get(coin, {}), destinations=_frozen(destinations.get(coin)))
             for coin in set(caps) | set(destinations)}
    return SigningPolicy(coins, {scope: frozenset(found) for scope, found in merchant_destinations.items()})


def _frozen(found: set[str] | None) -> frozenset[str] | None:
    return None if found is None else frozenset(found)


def _units(to_units: ToUnits, key: str, entry: str, coin: str, amount: str) -> int:
    try:
        return to_units(coin, Decimal(amount))
    except (ValueError, ArithmeticError) as exc:
        raise ValueError(f"config key 'signing.{key}' entry {entry!r}: {exc}") from None


def _address(canonical: Canonical, key: str, entry: str, coin: str, address: str) -> str:
    try:
        return canonical(coin, address)
    except ValueError as exc:
        raise ValueError(f"config key 'signing.{key}' entry {entry!r}: {exc}") from None
