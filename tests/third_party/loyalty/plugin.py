"""The ``loyalty`` plugin: a scope, a documented route, a dashboard page, an event kind and the cashback posting."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from orbchain.api import (
    ACCOUNT_SEPARATOR, PLATFORM_FEES, DashboardView, Posting, enqueue_event, envelope, format_units, gateway_of,
    hookimpl, ledger_balances, principal_of, requires,
)
from orbchain.api.openapi import Op, array, obj
from orbchain.api.openapi import envelope as enveloped

ORBCHAIN_REQUIRES = ">=0.1,<1"
SCOPE = "loyalty:read"
EVENT = "loyalty.cashback"
CASHBACK_BPS = 100  # 1 %
ROUTE = "/v1/loyalty/balance"
PAGE = "/app/loyalty"

routes = web.RouteTableDef()


def account(merchant_id: str) -> str:
    """The merchant's loyalty account: an account of this plugin's own (docs/plugins.md, "Ledger")."""
    return ACCOUNT_SEPARATOR.join(("loyalty", merchant_id))


def cashback(amount: int, fee: int | None) -> int:
    """1 % of the deposit in base units, rounded down, never more than the platform fee that pays it."""
    return min(amount * CASHBACK_BPS // 10_000, fee or 0)


async def balances(gateway, merchant_id: str) -> list[dict[str, str]]:
    """The merchant's cashback per coin, as decimal text in coin units."""
    held = await ledger_balances(gateway.db, account(merchant_id))
    return [{"coin": coin, "amount": format_units(units, gateway.coins.require(coin).decimals)}
            for coin, units in sorted(held.items())]


# -- contributions ------------------------------------------------------------------------------


@hookimpl
def register_scopes(registry):
    registry.add(SCOPE, "Read the loyalty (cashback) balance.")


@hookimpl
def register_event_kinds(registry):
    registry.add(EVENT, "Cashback was added to the merchant's loyalty balance.")


@hookimpl
def register_routes(registry):
    registry.add(routes)


@hookimpl
def register_openapi(registry):
    line = obj({"coin": {"type": "string"}, "amount": {"type": "string"}})
    registry.add_schema("LoyaltyBalance", obj({"balances": array(line)}))
    registry.add(Op("GET", ROUTE, "The merchant's loyalty balance", "Loyalty",
                    enveloped({"$ref": "#/components/schemas/LoyaltyBalance"}), auth=("merchant_key",), scope=SCOPE))


@hookimpl
def register_templates(registry):
    registry.add(templates=Path(__file__).parent / "templates")


@hookimpl
def register_dashboard_pages(registry):
    registry.add("header-nav", "Loyalty", PAGE, order=85, render=page)


# -- the money: a credit-time posting and its webhook ------------------------------------------


@hookimpl
async def filter_credit_postings(gateway, credit, postings):
    """Move the cashback from the platform's fee to the merchant's loyalty account, in the credit itself.

    The same credit always gives the same lines, and the core posts them once
    under the credit's reference: a rescan never pays twice. The webhook is
    written in the same crediting transaction (``enqueue_event``, once per
    reference), so it exists exactly when the cashback was posted. The
    deposit's ``fee`` then shows what the platform kept.
    """
    earned = cashback(credit.amount, credit.fee)
    fees = sum(p.amount for p in postings if p.account == PLATFORM_FEES)
    if earned <= 0 or fees < earned:
        return None  # nothing earned, or another plugin already spent the fee
    kept = [p for p in postings if p.account != PLATFORM_FEES]
    if fees > earned:
        kept.append(Posting(PLATFORM_FEES, credit.coin, fees - earned))
    coin = gateway.coins.require(credit.coin)
    await enqueue_event(gateway, merchant_id=credit.merchant_id, event_type=EVENT,
                        body={"type": "loyalty", "track_id": credit.track_id, "coin": credit.coin,
                              "cashback": format_units(earned, coin.decimals)},
                        logical_key=f"{EVENT}:{credit.reference}")
    return [*kept, Posting(account(credit.merchant_id), credit.coin, earned)]


# -- reading it ----------------------------------------------------------------------------------


@routes.get(ROUTE)
@requires("merchant_key", scope=SCOPE)
async def balance(request):
    gateway = gateway_of(request)
    return envelope({"balances": await balances(gateway, principal_of(request).merchant_id)})


async def page(gateway, merchant_id, query):
    return DashboardView("loyalty/dashboard.html", {"balances": await balances(gateway, merchant_id)})
