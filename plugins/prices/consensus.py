"""Several price sources as one: the median of those that answer, a source far from it left out.

Why: one source can be wrong (a stale API, a compromised or spoofed endpoint, a broken token mapping) and a
fiat-priced invoice computes what the payer owes from the price. The median of independent sources moves
only when most of them move; a source further than ``max_deviation_percent`` from the median is set aside
(logged, it is a fault worth seeing), and a coin that keeps fewer than ``min_sources`` agreeing answers is
not priced at all: fiat-priced payment creation answers 503 with the reason (``unpriced``), never a guess.
"""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from typing import Any, Iterable, Mapping, Sequence

log = logging.getLogger(__name__)


def median(values: Sequence[Decimal]) -> Decimal:
    """The middle value; for an even count the mean of the two middle ones (exact: halving terminates)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def percent_apart(value: Decimal, reference: Decimal) -> Decimal:
    return abs(value - reference) * 100 / reference


class ConsensusPriceSource:
    """The agreed price of each coin (and fiat rate) across ``sources``; ``unpriced`` says why one has none."""

    name = "consensus"

    def __init__(self, sources: Sequence[Any], *, min_sources: int, max_deviation_percent: Decimal) -> None:
        self.sources = list(sources)
        self.min_sources = min_sources
        self.max_deviation_percent = max_deviation_percent
        self.unpriced: dict[str, str] = {}  # symbol or fiat code -> why the last fetch gave it no price

    async def _answers(self, method: str, wanted: list[str]) -> list[tuple[str, Mapping[str, Decimal]]]:
        askable = [source for source in self.sources if hasattr(source, method)]

        async def ask(source: Any) -> Mapping[str, Decimal]:
            return await getattr(source, method)(wanted)

        answers = await asyncio.gather(*(ask(source) for source in askable), return_exceptions=True)
        usable = []
        for source, answer in zip(askable, answers):
            if isinstance(answer, BaseException):
                log.warning("price source %s failed: %s", source.name, answer)
            else:
                usable.append((source.name, answer))
        return usable

    def _agree(self, key: str, quotes: dict[str, Decimal], needed: int) -> Decimal | None:
        if len(quotes) < needed:
            said = [reason for source in self.sources
                    if isinstance(reason := getattr(source, "unpriced", {}).get(key), str)]
            self.unpriced[key] = "; ".join([f"{len(quotes)} of {len(self.sources)} price sources gave a {key} price,"
                                            f" {needed} must agree", *said])
            return None
        middle = median(list(quotes.values()))
        agreeing = {name: value for name, value in quotes.items()
                    if percent_apart(value, middle) <= self.max_deviation_percent}
        for name in quotes.keys() - agreeing.keys():
            log.warning("price source %s set aside for %s: %s is more than %s%% from the median %s",
                        name, key, quotes[name], self.max_deviation_percent, middle)
        if len(agreeing) < needed:
            spread = ", ".join(f"{name} {value}" for name, value in sorted(quotes.items()))
            self.unpriced[key] = (f"price sources disagree on {key} by more than {self.max_deviation_percent}%"
                                  f" ({spread})")
            return None
        return median(list(agreeing.values()))

    async def _agreed(self, method: str, keys: Iterable[str], needed: int) -> dict[str, Decimal]:
        wanted = list(keys)
        answers = await self._answers(method, wanted)
        agreed = {}
        for key in wanted:
            quotes = {name: answer[key] for name, answer in answers if answer.get(key)}
            self.unpriced.pop(key, None)
            value = self._agree(key, quotes, needed)
            if value is not None:
                agreed[key] = value
        return agreed

    async def fetch(self, symbols: Iterable[str]) -> dict[str, Decimal]:
        return await self._agreed("fetch", symbols, self.min_sources)

    async def fetch_fiat(self, currencies: Iterable[str]) -> dict[str, Decimal]:
        # Not every ticker API has fiat rates: as many must agree as can answer, up to min_sources.
        can_answer = sum(1 for source in self.sources if hasattr(source, "fetch_fiat"))
        return await self._agreed("fetch_fiat", currencies, max(1, min(self.min_sources, can_answer)))
