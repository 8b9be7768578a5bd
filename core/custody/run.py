"""One custody check end to end, as the ``custody.check`` job and ``orbchain custody check`` run it.

Check, then make the result loud where it must be: a shortfall is an ERROR
naming the coin and the amount, a surplus an INFO line, a coin the node
could not answer for a WARNING; the result is stored (history, latest per
coin, payout pauses when ``custody.pause_payouts`` is on) for /metrics and
the payout worker.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from ..money.amounts import format_units
from .check import check_custody
from .hot_wallet import hot_wallet_limits
from ..events import operator as operator_events
from ..events.operator import notify_operator
from .report import OK, SHORTFALL, SURPLUS, CoinCustody, CustodyReport, seen_twice
from .store import latest_by_coin, record_custody_check

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

JOB_NAME = "custody.check"


def amount_formatter(gateway: "Gateway") -> Callable[[str, int], str]:
    """Render base units of a coin as its decimal string (base units for a coin not registered here)."""
    def fmt(coin: str, units: int) -> str:
        known = gateway.coins.get(coin)
        return format_units(units, known.decimals) if known is not None else str(units)
    return fmt


async def run_custody_check(gateway: "Gateway", source: str) -> CustodyReport:
    latest = await latest_by_coin(gateway.db)
    before = {row["coin"]: row["status"] for row in latest}
    was_below = {row["coin"] for row in latest if _below(gateway, row["coin"], row["hot"])}
    report = await check_custody(gateway)
    if report.shortfalls:  # a shortfall must be seen on a second look (report.seen_twice says why)
        report = seen_twice(report, await check_custody(gateway))
    fmt = amount_formatter(gateway)
    for coin in report.shortfalls:
        log.error("custody SHORTFALL: %s short by %s (held %s, owed %s)%s", coin.coin, fmt(coin.coin, coin.shortfall),
                  fmt(coin.coin, coin.held or 0), fmt(coin.coin, coin.owed.total),
                  "; its payouts wait for a clean check" if gateway.config.custody.pause_payouts else "")
    for coin in report.coins:
        if coin.status == SURPLUS:
            log.info("custody surplus: %s holds %s more than it owes", coin.coin, fmt(coin.coin, coin.difference or 0))
    for coin in report.unavailable:
        log.warning("custody check: %s could not be checked: %s", coin.coin, coin.error)
    for coin in below_floor(gateway, report):
        log.error("hot wallet BELOW FLOOR: %s holds %s spendable, floor %s; payouts beyond it wait until it is"
                  " funded", coin.coin, fmt(coin.coin, coin.hot or 0),
                  fmt(coin.coin, hot_wallet_limits(gateway)[coin.coin].floor or 0))
    await record_custody_check(gateway.db, report, source=source, pause_payouts=gateway.config.custody.pause_payouts,
                               fmt=fmt)
    await announce_changes(gateway, before, report, fmt)
    await announce_below_floor(gateway, was_below, report, fmt)
    return report


async def announce_changes(gateway: "Gateway", before: dict[str, str], report: CustodyReport,
                           fmt: Callable[[str, int], str]) -> None:
    """The operator's webhook hears a coin becoming short and a short coin checked clean again, once each."""
    for coin in report.coins:
        was_short = before.get(coin.coin) == SHORTFALL
        if coin.status == SHORTFALL and not was_short:
            kind, extra = operator_events.SHORTFALL, {"shortfall": fmt(coin.coin, coin.shortfall)}
        elif coin.status in (OK, SURPLUS) and was_short:
            kind, extra = operator_events.RECOVERED, {}
        else:
            continue
        body = {"coin": coin.coin, "status": coin.status, "held": fmt(coin.coin, coin.held or 0),
                "owed": fmt(coin.coin, coin.owed.total), "checked_at": report.checked_at, **extra}
        await notify_operator(gateway, kind, body, f"{kind}:{coin.coin}:{report.checked_at}")


async def announce_below_floor(gateway: "Gateway", was_below: set[str], report: CustodyReport,
                               fmt: Callable[[str, int], str]) -> None:
    """The operator's webhook hears a coin's hot wallet falling below its floor, once until it is above again."""
    for coin in below_floor(gateway, report):
        if coin.coin in was_below:
            continue
        floor = hot_wallet_limits(gateway)[coin.coin].floor or 0
        body = {"coin": coin.coin, "hot": fmt(coin.coin, coin.hot or 0), "floor": fmt(coin.coin, floor),
                "checked_at": report.checked_at}
        await notify_operator(gateway, operator_events.BELOW_FLOOR, body,
                              f"{operator_events.BELOW_FLOOR}:{coin.coin}:{report.checked_at}")


def below_floor(gateway: "Gateway", report: CustodyReport) -> list[CoinCustody]:
    """Coins whose spendable hot balance the node showed below the operator's floor."""
    return [c for c in report.coins if _below(gateway, c.coin, c.hot)]


def _below(gateway: "Gateway", coin: str, hot: int | None) -> bool:
    limits = hot_wallet_limits(gateway).get(coin)
    return hot is not None and limits is not None and limits.floor is not None and hot < limits.floor


async def custody_check_job(gateway: "Gateway") -> None:
    await run_custody_check(gateway, "job")
