"""``orbchain custody check``: gather what the ledger owes and what the nodes hold, and compare.

The ledger side is read from the cached balances (``orbchain ledger check``
proves them equal to the postings) in one consistent snapshot; the node
side is asked of each chain adapter that declares ``Capability.CUSTODY``,
once per adapter, outside any database transaction. A coin whose adapter
cannot tell is reported "unsupported", and one whose node did not answer
"unavailable": neither is ever counted as zero.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from ..types.chains import Capability, ChainAdapter, Holding
from ..ledger.sweep_bookings import recorded_sweep_postings
from ..ledger.accounts import NETWORK_FEES, PLATFORM_FEES, SEPARATOR, WORLD_PREFIX
from .hot_wallet import hot_wallet_limits
from .report import OK, SHORTFALL, SURPLUS, UNAVAILABLE, UNSUPPORTED, CoinCustody, CustodyReport, Owed

if TYPE_CHECKING:  # pragma: no cover
    from ..contract.gateway import PluginGateway as Gateway

log = logging.getLogger(__name__)

_OWED_FIELD = {"available": "merchants_available", "held": "merchants_held"}


def classify(account: str) -> str:
    """The :class:`Owed` field an account's balance adds to ("world" for the custody accounts)."""
    if account.startswith(WORLD_PREFIX):
        return "world"
    if account == PLATFORM_FEES:
        return "platform_fees"
    if account == NETWORK_FEES:
        return "network_fees"
    parts = account.split(SEPARATOR)
    if len(parts) == 3 and parts[0] == "merchant" and parts[2] in _OWED_FIELD:
        return _OWED_FIELD[parts[2]]
    if len(parts) == 3 and parts[0] == "payouts" and parts[2] == "in_flight":
        return "payouts_in_flight"
    return "other"


def world_chain(account: str) -> str:
    """``world:<chain>`` and ``world:<chain>:<place>`` -> ``<chain>``."""
    return account[len(WORLD_PREFIX):].split(SEPARATOR)[0]


async def ledger_figures(gateway: "Gateway") -> tuple[dict[str, Owed], dict[tuple[str, str], int]]:
    """Per coin what is owed, and per (chain, coin) what the custody accounts say the chain holds.

    Sweeps recorded but not booked yet (core/ledger/sweep_bookings.py) count as booked: between the signer's
    record and serve's booking the chain has moved already, and that window must never read as a shortfall
    (which may pause payouts). A refused record is not counted: its difference stays loud."""
    db = gateway.db
    top_level = not db.in_transaction
    async with db.transaction():
        if db.is_postgres and top_level:
            await db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        rows = await db.fetch_all("SELECT account, coin, balance FROM ledger_balances")
        recorded = await recorded_sweep_postings(db)
    balances: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        balances[(row["account"], row["coin"])] += db.to_int(row["balance"])
    for posting in recorded:  # a sweep the signer recorded and serve has not booked yet: booked already here
        balances[(posting.account, posting.coin)] += posting.amount
    owed: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    books: dict[tuple[str, str], int] = defaultdict(int)
    for (account, coin), amount in balances.items():
        kind = classify(account)
        if kind == "world":
            books[(world_chain(account), coin)] -= amount
        else:
            owed[coin][kind] += amount
    return {coin: Owed(**parts) for coin, parts in owed.items()}, dict(books)


def judge(coin: str, owed: Owed, books: int, chains: Sequence[str], holdings: Sequence[Holding]) -> CoinCustody:
    """A coin's status from figures already gathered (pure: the tests' and the check's one rule)."""
    held = sum(h.amount for h in holdings)
    status = OK if held == owed.total else SURPLUS if held > owed.total else SHORTFALL
    return CoinCustody(coin, status, owed, books, tuple(chains), tuple(holdings))


async def _ask(adapter: ChainAdapter, cold: Sequence[str]) -> Sequence[Holding] | str:
    """The adapter's holdings, or why it could not say."""
    try:
        return tuple(await adapter.custody_holdings(cold))
    except Exception as exc:  # noqa: BLE001 - any failure is "unavailable", never zero
        log.warning("custody check: %s could not report its holdings: %s: %s", adapter.name, type(exc).__name__, exc)
        return f"{adapter.name}: {type(exc).__name__}: {exc}"


def _coins_to_check(chains: Sequence[ChainAdapter], owed: Mapping[str, Owed],
                    books: Mapping[tuple[str, str], int]) -> list[str]:
    served = {coin for adapter in chains if adapter.supports(Capability.CUSTODY) for coin in adapter.coins}
    booked = {coin for coin, o in owed.items() if o.total} | {coin for (_, coin), v in books.items() if v}
    return sorted(served | booked)


def cold_addresses(gateway: "Gateway", adapter: ChainAdapter) -> list[str]:
    """``custody.cold`` on the adapter's chain, and the cold destinations its coins' sweeps pay (counted as held)."""
    limits = hot_wallet_limits(gateway)
    swept_to = [cold for coin in adapter.coins if coin in limits and (cold := limits[coin].cold)]
    return list(dict.fromkeys([*gateway.config.custody.cold_addresses(adapter.name), *swept_to]))


async def check_custody(gateway: "Gateway", adapters: Iterable[ChainAdapter] | None = None) -> CustodyReport:
    """One custody check over every coin the ledger or a custody-capable adapter knows."""
    owed, books = await ledger_figures(gateway)
    chains = list(gateway.chains if adapters is None else adapters)
    answers: dict[str, Sequence[Holding] | str] = {}
    for adapter in chains:
        if adapter.supports(Capability.CUSTODY):
            answers[adapter.name] = await _ask(adapter, cold_addresses(gateway, adapter))
    results = []
    for coin in _coins_to_check(chains, owed, books):
        serving = [a for a in chains if a.serves(coin)]
        names = tuple(a.name for a in serving)
        coin_owed = owed.get(coin, Owed())
        coin_books = sum(books.get((name, coin), 0) for name in names)
        capable = [a for a in serving if a.name in answers]
        if not capable:
            results.append(CoinCustody(coin, UNSUPPORTED, coin_owed, coin_books, names))
            continue
        errors = [answer for a in capable if isinstance(answer := answers[a.name], str)]
        if errors:
            results.append(CoinCustody(coin, UNAVAILABLE, coin_owed, coin_books, names, error="; ".join(errors)))
            continue
        holdings = [h for a in capable for h in answers[a.name] if isinstance(h, Holding) and h.coin == coin]
        if not holdings:  # the adapter could not tell this coin (a token contract absent from the node)
            results.append(CoinCustody(coin, UNAVAILABLE, coin_owed, coin_books, names,
                                       error="the chain adapter reported nothing for it"))
            continue
        results.append(judge(coin, coin_owed, coin_books, names, holdings))
    return CustodyReport(gateway.now(), tuple(results))
