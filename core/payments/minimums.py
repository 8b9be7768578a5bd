"""The smallest payment: what a payment may ask a payer to send (issue 42 item 8).

Every creator of payments (the API, the dashboard's form, payment links, the
tip page, subscriptions: all price through ``service.price_payment``) gets the
same two rules, refused with 400 ``validation`` naming the field:

- a fiat amount has at most its currency's ISO 4217 minor units
  (``money.FIAT_MINOR_DIGITS``: a cent of USD, a whole yen), as a coin amount
  has at most the coin's decimals: ``0.0000000000000000001`` USD is refused,
  never priced at one satoshi;
- what the payer is asked to send is at least the pay coin's
  ``Coin.min_payment`` (its chain's dust limit or rent floor: less would not
  be relayed, or would leave an output the gateway cannot spend). The message
  names the smallest amount in the currency the caller wrote, at the rate of
  the moment, so a merchant pricing in USD reads a USD figure.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal, localcontext
from typing import TYPE_CHECKING

from ..types.errors import ValidationError
from ..types.messages import N_
from ..money.amounts import AmountError, fiat_decimals, to_base_units

if TYPE_CHECKING:  # pragma: no cover
    from ..money.coins import Coin


def check_fiat_amount(amount: Decimal, currency: str, field: str) -> None:
    """400 naming ``field`` for a fiat amount not above 0 or finer than ``currency``'s minor unit."""
    try:
        to_base_units(amount, fiat_decimals(currency))
    except AmountError as exc:
        raise ValidationError({field: exc.problem}) from None


def require_payable(pay_coin: "Coin", pay_units: int, *, field: str, priced_in: "Coin | str",
                    price: Decimal = Decimal(1)) -> None:
    """400 naming ``field`` when ``pay_units`` of ``pay_coin`` is below its smallest payment.

    The amount was written in ``priced_in`` (a coin, or a fiat code); ``price``
    is what one whole ``pay_coin`` costs in it (1 when it is the coin itself).
    """
    minimum = pay_coin.min_payment_units
    if pay_units >= minimum:
        return
    coin_minimum = pay_coin.format(minimum)
    if not isinstance(priced_in, str) and priced_in.symbol == pay_coin.symbol:
        raise ValidationError({field: N_("must be at least %(minimum)s %(coin)s, the smallest payment %(coin)s "
                                         "can receive", minimum=coin_minimum, coin=pay_coin.symbol)})
    with localcontext() as ctx:
        ctx.prec = 120
        smallest = Decimal(coin_minimum) * price
        if isinstance(priced_in, str):  # a fiat price, to its minor unit as prices are written ("0.60 USD")
            currency = priced_in
            shown = format(smallest.quantize(Decimal(1).scaleb(-fiat_decimals(currency)), rounding=ROUND_CEILING),
                           "f")
        else:
            currency = priced_in.symbol
            shown = priced_in.format(int(smallest.scaleb(priced_in.decimals).to_integral_value(ROUND_CEILING)))
    raise ValidationError({field: N_("must be at least %(minimum)s %(currency)s at the current rate: a %(coin)s "
                                     "payment must be at least %(coin_minimum)s %(coin)s",
                                     minimum=shown, currency=currency, coin=pay_coin.symbol,
                                     coin_minimum=coin_minimum)})
