"""The dashboard's words for refused fields and its money text: pure functions, no server."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from fractions import Fraction
from types import SimpleNamespace

from orbchain.api import Quote, ValidationError, usable_quote, usd_value
from orbchain.core.infra.netguard import UnsafeUrl, check_public_url
from orbchain.plugins.dashboard.amounts import fiat_text
from orbchain.plugins.dashboard.form_errors import error_context, sentence
from orbchain.plugins.dashboard.routes_settings import private_url_help


def test_a_field_complaint_reads_as_a_sentence_with_labels_not_field_names():
    assert sentence("is required") == "Required."
    assert sentence("is required with amount_fiat") == "Required with fiat price."
    assert sentence("give amount or amount_fiat, not both") == "Give amount or fiat price, not both."
    assert sentence("must be at most 43200") == "Must be at most 43200."
    assert sentence("unknown coin some_thing") == "Unknown coin some_thing."  # not a field: left as typed


def test_an_error_naming_fields_goes_beside_them_and_one_naming_none_is_a_banner():
    exc = ValidationError({"lifetime": "must be at least 1", "email": "must be an email address"})
    assert error_context(exc) == {"errors": {"lifetime": "Must be at least 1.", "email": "Must be an email address."}}
    assert error_context(ValidationError({}, "currency not accepted by merchant")) == {
        "error": "Currency not accepted by merchant"}


def test_fiat_prices_show_the_currency_minor_unit_and_nothing_for_no_price():
    assert fiat_text("25", "USD") == "25.00 USD"
    assert fiat_text("1234567.125", "EUR") == "1,234,567.13 EUR"  # half-up to the cent
    assert fiat_text("1500", "JPY") == "1,500 JPY"
    assert fiat_text(None, "USD") == fiat_text("5", None) == fiat_text("NaN", "USD") == fiat_text("x", "USD") == ""


def test_a_balance_value_is_exact_to_the_cent_and_a_stale_quote_values_nothing():
    # Just under half a cent of a 30-decimal coin: 0.0045454...545 x 1.1 has 29 significant digits, which
    # the default 28-digit context would round up to exactly half a cent (then 0.01); exact, it is 0.00.
    units, price = 4545454545454545454545454545, Decimal("1.1")
    assert Fraction(units, 10**30) * Fraction(price) < Fraction(1, 200)
    assert usd_value(units, 30, price) == Decimal("0.00")
    assert usd_value(990000, 8, Decimal("60000")) == Decimal("594.00")
    quote = Quote(Decimal("1"), at=1000.0)
    assert usable_quote(quote, 1600.0) is quote and usable_quote(quote, 1600.5) is None
    assert usable_quote(None, 0.0) is None


def test_private_url_help_follows_the_guards_words_and_the_environment():
    """Help only for a private-URL refusal, fit for where the gateway runs (issue 32 item 8): the
    development switch ORBCHAIN_ALLOW_PRIVATE_URLS is never suggested to a production operator."""

    async def refusal() -> str:
        try:
            await check_public_url("http://10.0.0.5/hook")
        except UnsafeUrl as exc:
            return str(exc)
        raise AssertionError("a private URL passed")

    refused = {"webhook_url": sentence(asyncio.run(refusal()))}  # as the page words it
    development, production = (SimpleNamespace(config=SimpleNamespace(is_development=flag)) for flag in (True, False))
    assert private_url_help(development, refused) == "development"
    assert private_url_help(production, refused) == "production"
    assert private_url_help(development, {"webhook_url": "Must be an http or https URL."}) is None
    assert private_url_help(development, None) is None
