"""Core services for balances and the ledger: a spendable balance, its USD value, and the history.

Why its own module: plugins that decide on a balance (auto-withdraw, schedules) or keep a view
derived from ledger events (analytics, referrals) read the ledger here, never its tables.

Records, never rows: plugins reach these through ``orbchain.api`` (docs/plugins.md, "Core services").
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, AsyncIterator, Iterable

from . import book as ledger
from .accounts import merchant_available
from ..contract.gateway import PluginGateway as Gateway
from ..money.prices import PRICES


async def available_balance(gateway: "Gateway", merchant_id: str, coin: str) -> int:
    """The merchant's spendable balance of ``coin`` in base units (what a full-balance payout sends)."""
    return max(0, await ledger.balance(gateway.db, merchant_available(merchant_id), coin))


USD_DECIMALS = 8  # plugins keep USD as integer 1e-8 dollars: exact sums in SQL, never a float


async def usd_price(gateway: "Gateway", coin: str) -> Decimal:
    """One whole ``coin`` in USD now (the price service's price, cached up to a minute); 0 when unknown.
    A fetch on a cache miss: read it before opening a transaction, then value amounts with ``usd_units``."""
    service = gateway.services.get(PRICES)
    return Decimal(0) if service is None else Decimal(await service.price(coin))


async def usd_units(gateway: "Gateway", coin: str, units: int, price: Decimal | None = None) -> int:
    """``units`` of ``coin`` valued in USD at ``price`` (``usd_price``'s; None: read it now), as an int
    of 1e-8 dollars rounded half-even; 0 when the price is unknown. Format it with
    ``orbchain.core.money.amounts.format_units(value, USD_DECIMALS)``."""
    if not units:
        return 0
    if price is None:
        price = await usd_price(gateway, coin)
    value = (Decimal(price) * units).scaleb(USD_DECIMALS - gateway.coins.require(coin).decimals)
    return int(value.to_integral_value(rounding=ROUND_HALF_EVEN))


async def reversed_references(gateway: "Gateway", references: Iterable[str]) -> set[str]:
    """Which of these ledger references name a transaction that has since been reversed
    (a credited deposit that left the chain)."""
    wanted = sorted(set(references))
    found: set[str] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        names = {f"r{i}": ref for i, ref in enumerate(chunk)}
        rows = await gateway.db.fetch_all(
            "SELECT t.reference FROM ledger_transactions t JOIN ledger_transactions r ON r.reverses = t.id"
            f" WHERE t.reference IN ({', '.join(':' + name for name in names)})", names)
        found.update(row["reference"] for row in rows)
    return found


async def ledger_history(gateway: "Gateway", start: int, end: int, kinds: Iterable[str],
                         page: int = 1000) -> AsyncIterator[dict[str, Any]]:
    """Committed ledger transactions of ``kinds`` created in [start, end) (Unix seconds), oldest
    first, each in the shape ``ledger_posted`` receives: for plugins that keep a derived view
    (analytics, referrals) and must catch up on events a crash kept from them. Read in pages;
    a transaction may be yielded twice when a page boundary splits a second (be idempotent)."""
    kinds = list(kinds)
    while start < end:
        batch = await ledger.transactions_between(gateway.db, start, end, kinds, page)
        for txn in batch:
            yield txn.as_event()
        if len(batch) < page:
            return
        last = batch[-1].created_at
        if last == start:  # a whole page within one second: take the rest of that second at once
            rest = await ledger.transactions_between(gateway.db, start, start + 1, kinds, 1_000_000)
            for txn in rest[page:]:
                yield txn.as_event()
            last += 1
        start = last
