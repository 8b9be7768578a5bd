"""The coin type and the coin registry; the core itself knows no coin.

Every coin (the rows of SPEC 2.7 as much as a third-party chain's) is
registered by the chain plugin that owns it through ``register_coins``:
``orbchain.chains.bitcoin`` registers its UTXO coins, ``orbchain.chains.evm``
the EVM coins and tokens, and so on. Every amount check, address check,
price look-up and ``/v1/common/currencies`` reads the :class:`CoinRegistry`
built at startup.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Iterable, Iterator, Protocol

from ..types.errors import NotConfigured
from ..types.messages import N_
from .amounts import AmountError, format_units, to_base_units
from ..types.registry import Registry, StartupError

# The most one amount of a coin may name when its plugin declares no ``max_amount``: 10**15 whole
# coins, above the total supply of every coin in SPEC 2.7 (the largest is a token's 589 trillion).
DEFAULT_MAX_AMOUNT = "1000000000000000"


@dataclass(frozen=True)
class Coin:
    """A coin the gateway can account for.

    ``confirmations`` is the platform floor (merchants may only raise it);
    ``default_confirmations`` is what a merchant gets without a setting.
    ``address_family`` names the address family (registered by a chain
    plugin through ``register_address_families``) that derives and validates
    its addresses. ``contract`` is the pinned token contract for tokens, None
    for native coins.

    ``payable``: it can be paid out (False for source-only coins).
    ``receivable``: a merchant may list it in accepted_coins.
    ``receive_address``: the gateway has an address to receive it at; False
    (a source-only coin reached through a swap) refuses it as a payment's
    pay currency and as a receive address with 400
    ``<symbol>_receive_unsupported``.
    ``settles_only_via_swap``: accepting it needs a plugin that converts
    it into another coin for the merchant (``decide_settlement_coin``; it is
    swapped, never held).
    ``default_accepted``: in a new merchant's accepted_coins (SPEC 4.8).
    ``rank``: position in listings (``/v1/common/currencies``, default
    accepted coins), lower first, ties in registration order; plugin load
    order is not a meaningful order, so the built-ins use their SPEC 2.7 row.
    ``min_payout``: None where no minimum is published (SPEC 2.7 "not
    payable" or "n/a"); the only floor is then one base unit, and
    ``/v1/common/currencies`` shows that unit ("0" for a coin never paid out).
    ``note``: one sentence for the coin's row in ``/v1/common/currencies``
    saying what its ``confirmations`` and ``min_payout`` mean where they are
    not block confirmations and an on-chain payout minimum (a swap-only
    coin, Lightning); None for the others.
    ``min_payment``: the smallest amount a payment may ask a payer to send,
    in coin units (a decimal string): its chain's dust limit or rent floor,
    below which the payer's transaction would not be relayed or would leave
    the gateway an output it cannot spend. None: one base unit (a chain with
    no such floor). Every payment is refused below it when it is priced
    (core/payments/minimums.py).
    ``price_id``: the asset's id at CoinGecko-compatible price sources
    (tokens price as their asset); ``dev_price_usd``: the offline
    development price of the ``static`` source (a decimal string).
    ``asset`` and ``network_name``: the coin as payers say it on the hosted
    pages, never the internal ``symbol``: the asset's ticker (``USDT``;
    None: the symbol) and its network with the token standard
    (``Ethereum (ERC-20)``; None: the chain's name capitalised). A token's
    pages read "USDT on Ethereum (ERC-20)", so a payer can check the asset
    and network their wallet offers against it.
    ``max_amount``: the most one amount of the coin may be, in coin units (a
    decimal string): its total supply where the protocol caps it (bitcoin's
    ``21000000``); None takes ``DEFAULT_MAX_AMOUNT``. Every amount a request
    names is refused above it (``to_units``), never cut: no real payment,
    payout or transfer is larger than the coin's supply.
    """

    symbol: str
    name: str
    chain: str
    decimals: int
    confirmations: int
    min_payout: str | None
    address_family: str
    contract: str | None = None
    default_confirmations: int | None = None
    payable: bool = True
    receivable: bool = True
    receive_address: bool = True
    settles_only_via_swap: bool = False
    default_accepted: bool = False
    price_id: str | None = None
    dev_price_usd: str | None = None
    rank: int = 1000
    note: str | None = None
    # SPEC 3.1: this coin's payment webhooks show the status in upper case (a Lightning payment.paid: PAID).
    webhook_status_upper: bool = False
    # SPEC 8: payout addresses are at most 128 characters; a coin paid to longer requests (BOLT 11) says so.
    max_destination_length: int = 128
    max_amount: str | None = None
    min_payment: str | None = None
    asset: str | None = None
    network_name: str | None = None

    @property
    def payer_asset(self) -> str:
        """The asset's ticker as payers say it (``USDT``)."""
        return self.asset or self.symbol

    @property
    def payer_network(self) -> str:
        """The network as payers say it (``Ethereum (ERC-20)``)."""
        return self.network_name or self.chain.capitalize()

    @property
    def default_threshold(self) -> int:
        return self.default_confirmations or self.confirmations

    @property
    def min_payout_units(self) -> int:
        if self.min_payout is None:
            return 0
        return to_base_units(self.min_payout, self.decimals, allow_zero=True)

    @cached_property
    def min_payment_units(self) -> int:
        """``min_payment`` in base units (at least one): the smallest ``pay_amount`` a payment may have."""
        if self.min_payment is None:
            return 1
        return max(1, to_base_units(self.min_payment, self.decimals))

    @cached_property
    def max_units(self) -> int:
        """``max_amount`` (or ``DEFAULT_MAX_AMOUNT``) in base units: the one place the bound is derived."""
        return to_base_units(self.max_amount or DEFAULT_MAX_AMOUNT, self.decimals)

    def to_units(self, value: Any) -> int:
        """Coin-unit amount (string or exact number) to base units; see money.to_base_units.

        ``AmountError`` also above ``max_units`` ("must be at most <max_amount> <symbol>").
        """
        units = to_base_units(value, self.decimals)
        if units > self.max_units:
            raise AmountError(N_("must be at most %(maximum)s %(symbol)s", maximum=self.format(self.max_units),
                                 symbol=self.symbol))
        return units

    def format(self, units: int) -> str:
        return format_units(units, self.decimals)

    def currency_entry(self) -> dict[str, Any]:
        """The row of ``GET /v1/common/currencies`` (SPEC 2.6)."""
        return {
            "symbol": self.symbol,
            "name": self.name,
            "network": self.chain,
            "decimals": self.decimals,
            "confirmations": self.confirmations,
            # SPEC 2.6 types a string: where no minimum is published, the only floor (one base unit), or "0"
            # for a coin never paid out; ``note`` says which.
            "min_payout": self.min_payout if self.min_payout is not None else self.format(1 if self.payable else 0),
            "note": self.note,
        }


class CoinRegistry(Registry[Coin]):
    kind = "coin"

    def _key(self, item: Coin) -> str:
        return item.symbol

    def add(self, item: Coin) -> Coin:
        if not isinstance(item.decimals, int) or not 0 <= item.decimals <= 30:
            raise StartupError(f"coin {item.symbol!r} from plugin {self.current_plugin!r} has bad decimals")
        for name, derived in (("max_amount", "max_units"), ("min_payment", "min_payment_units")):
            try:
                getattr(item, derived)
            except AmountError as exc:  # derived once here, so a bad value stops the start
                raise StartupError(f"coin {item.symbol!r} from plugin {self.current_plugin!r} has a bad {name}:"
                                   f" {exc}") from None
        return super().add(item)

    def __iter__(self) -> Iterator[Coin]:
        return iter(sorted(self._items.values(), key=lambda coin: coin.rank))

    def names(self) -> list[str]:
        return [coin.symbol for coin in self]

    def require(self, symbol: str) -> Coin:
        coin = self.get(symbol)
        if coin is None:
            raise KeyError(symbol)
        return coin

    def pin_contract(self, symbol: str, contract: str) -> None:
        """Replace a token's pinned contract (operator config, test networks)."""
        self._items[symbol] = replace(self.require(symbol), contract=contract)

    def default_accepted(self) -> list[str]:
        """A new merchant's accepted_coins: the coins their plugins flag ``default_accepted``."""
        return [coin.symbol for coin in self if coin.default_accepted]

    def check_families(self, family_names: Iterable[str]) -> None:
        """Every coin's address family is registered; else startup stops naming both."""
        known = set(family_names)
        for coin in self:
            if coin.address_family not in known:
                raise StartupError(
                    f"coin {coin.symbol!r} from plugin {self.owner(coin.symbol)!r} uses address family "
                    f"{coin.address_family!r}, which no plugin registered (register_address_families)"
                )


class ServingChains(Protocol):
    """What ``chain_for`` reads of the gateway: its chain adapters."""

    @property
    def chains(self) -> Iterable[Any]: ...


def chain_for(gateway: ServingChains, coin: str) -> Any:
    """The adapter serving ``coin`` (a real chain before a simulated one); 503 when none does."""
    simulated = None
    for adapter in gateway.chains:
        if adapter.serves(coin):
            if not adapter.simulated:
                return adapter
            simulated = simulated or adapter
    if simulated is None:
        raise NotConfigured(f"no chain is configured for {coin}")
    return simulated
