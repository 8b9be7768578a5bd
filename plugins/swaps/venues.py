"""The swap venue contract: what an exchange plugin implements so the swaps plugin can convert coins.

A venue (an instant-exchange service, the devnet's simulated one) is a
plugin contributed through ``register_swap_venues(registry, gateway)``, the
hook the ``swaps`` plugin declares (``hookspecs.py``). Its features (balance
swaps, auto-settle, a payer paying in a source-only coin) talk to every
venue through this one interface, so a new exchange is a new plugin and
nothing else changes. The core knows no venue. See ``docs/swaps.md``.

Rules every venue follows:

* Amounts are ``int`` base units on both sides (the gateway's coin table
  gives the decimals); a venue that speaks decimals converts at its edge and
  rounds what it promises down, never up.
* Every call that creates or changes something at the venue is idempotent
  by the gateway's ``swap_id``: calling ``create_swap`` again with the same
  id returns the same order and never opens a second exchange; ``refund``
  twice asks once. The gateway retries after crashes and timeouts and relies
  on this.
* A transient failure (timeout, 5xx, connection refused) raises
  :class:`VenueUnavailable`; the gateway asks again later. A refusal (pair
  not offered, amount below the minimum, unknown order) raises
  :class:`VenueRefused`; the gateway does not repeat the same request.
* Results that can be unknown say so: ``status`` reports what the venue
  reported, never a guess.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

from ...api import Registry

# Where an order stands at the venue (``VenueStatus.state``).
WAITING = "waiting"        # order open, the source coin not received (or not confirmed) yet
EXCHANGING = "exchanging"  # the venue has the source coin and is converting or sending
FINISHED = "finished"      # the target coin was sent: ``actual_to_amount`` and ``payout_hash`` set
FAILED = "failed"          # the venue gave up and holds the source coin until a refund
REFUNDED = "refunded"      # the source coin went back: ``refund_hash`` set
EXPIRED = "expired"        # nothing arrived before the order expired; nothing moved
STATES = frozenset({WAITING, EXCHANGING, FINISHED, FAILED, REFUNDED, EXPIRED})
FINAL_STATES = frozenset({FINISHED, REFUNDED, EXPIRED})


class VenueError(Exception):
    """A venue call did not succeed. ``reason`` is short text safe to show a merchant."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class VenueUnavailable(VenueError):
    """Transient: timeout, connection error, 5xx, rate limit. Ask again later."""


class VenueRefused(VenueError):
    """Final for this request: pair not offered, amount out of range, order unknown."""


@dataclass(frozen=True)
class VenueQuote:
    """What the venue would deliver for ``from_amount`` now.

    ``to_amount`` is what reaches the gateway after the venue's fees (the
    gateway adds no markup). ``valid_until`` is Unix seconds; ``floating``
    True means the delivered amount may drift from ``to_amount`` (SPEC 4.12:
    about 2 percent); ``rate_id`` is the venue's handle of a fixed rate, passed
    back to ``create_swap``.
    """

    venue: str
    from_coin: str
    to_coin: str
    from_amount: int
    to_amount: int
    min_from_amount: int
    valid_until: int
    floating: bool = True
    rate_id: str | None = None


@dataclass(frozen=True)
class VenueOrder:
    """An open exchange at the venue: send ``deposit_amount`` of the source coin to ``deposit_address``.

    ``venue_ref`` is the venue's own id of the order (the gateway stores it
    and passes it back). ``funded`` is True when the venue took the source
    coin itself (a simulated venue, or one holding a prefunded account), so
    the gateway must not send anything; False means the gateway sends the
    deposit on-chain. ``to_amount`` is the amount the venue expects to deliver.
    """

    venue_ref: str
    deposit_address: str
    deposit_amount: int
    to_amount: int
    funded: bool = False


@dataclass(frozen=True)
class VenueStatus:
    """Where an order stands (``state`` one of :data:`STATES`).

    ``actual_to_amount`` (base units of the target coin) is set once
    FINISHED; the hashes are the on-chain transactions the venue reported:
    the deposit it received, the payout it sent, the refund it sent.
    """

    state: str
    actual_to_amount: int | None = None
    payin_hash: str | None = None
    payout_hash: str | None = None
    refund_hash: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"unknown venue state {self.state!r}")
        if self.state == FINISHED and (not isinstance(self.actual_to_amount, int) or self.actual_to_amount < 0):
            raise ValueError("a finished order reports actual_to_amount in base units")


class SwapVenue(abc.ABC):
    """One exchange. Subclass it and add an instance in ``register_swap_venues``.

    ``name`` is unique (the ledger account ``swap:<name>`` holds what is on its
    way through this venue). Amounts are ``int`` base units.
    """

    name: str = ""
    # Capability: True when the venue converts only a source coin sent on-chain to the deposit
    # address of its order (an instant exchange such as ChangeNOW); it cannot take the source
    # from the gateway's books. For a coin the gateway cannot send (one watched by a view-only
    # wallet), the swaps plugin then opens the order when the payment is created and shows the
    # payer the order's deposit address and amount, with the venue's payout going to an address
    # of the merchant that the core derives (docs/swaps.md, "Swap-in through a deposit venue").
    needs_deposit: bool = False

    @abc.abstractmethod
    def supports(self, from_coin: str, to_coin: str) -> bool:
        """True when the venue converts ``from_coin`` into ``to_coin`` (no network call)."""

    @abc.abstractmethod
    async def quote(self, from_coin: str, to_coin: str, from_amount: int) -> VenueQuote:
        """What ``from_amount`` would become now. Changes nothing at the venue."""

    @abc.abstractmethod
    async def create_swap(self, swap_id: str, quote: VenueQuote, *, payout_address: str | None,
                          refund_address: str | None) -> VenueOrder:
        """Open the exchange for ``quote``, once per ``swap_id`` (a repeat returns the same order).

        ``payout_address`` receives the target coin, ``refund_address`` gets the
        source back on a refund; both may be None for a venue that funds itself.
        """

    @abc.abstractmethod
    async def status(self, swap_id: str, venue_ref: str) -> VenueStatus:
        """Where the order stands now."""

    @abc.abstractmethod
    async def refund(self, swap_id: str, venue_ref: str, refund_address: str | None) -> VenueStatus:
        """Ask for the source coin back (an order in FAILED); idempotent. Returns the new status."""

    async def close(self) -> None:  # noqa: B027 - optional: most venues hold nothing to close
        """Release connections at shutdown; must not raise."""


class SwapVenueRegistry(Registry[SwapVenue]):
    kind = "swap venue"

    def add(self, item: SwapVenue) -> SwapVenue:
        if not isinstance(item, SwapVenue):
            raise TypeError(f"plugin {self.current_plugin!r} registered {item!r}, not a SwapVenue")
        return super().add(item)

    def for_pair(self, from_coin: str, to_coin: str, preferred: str | None = None) -> SwapVenue | None:
        """The venue that converts the pair: ``preferred`` when it does, else the first registered."""
        if preferred is not None:
            venue = self.get(preferred)
            if venue is not None and venue.supports(from_coin, to_coin):
                return venue
        return next((v for v in self if v.supports(from_coin, to_coin)), None)
