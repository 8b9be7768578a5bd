"""Sweep bookkeeping shared by chain plugins, so each sweeper keeps only its chain's transactions.

Why: the EVM and Tron sweepers (and the Solana one for the ledger side) run
the same state machine over the same kind of tables: a ``<prefix>_sweeps``
row per sweep (``topup`` -> ``sweeping`` -> ``done`` / ``failed``), a
``<prefix>_sweep_marks`` row per (address, coin) saying up to which credit
it was swept, and custody postings between two sub-accounts of the outside
world (recorded by the signing job, booked by ``serve``:
core/ledger/sweep_bookings.py). What differs is how a transaction is built,
sent and judged final; a plugin passes that in (``SweepSteps``) and keeps its
tables (this module only names them by the plugin's prefix).

Ledger (docs/evm.md)::

    sweep:   world:<chain>:deposit_addresses -> world:<chain>:hot_wallet
    top-up:  world:<chain>:hot_wallet -> world:<chain>:deposit_addresses
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from ..api import CreditedAddress, Posting, credited_addresses, ledger, world

if TYPE_CHECKING:  # pragma: no cover
    from ..api import Gateway

log = logging.getLogger(__name__)

SWEEP, TOPUP = "sweep", "topup"


class SweepFeeTooHigh(Exception):
    """The sweep's fee would be above the operator's share of what it moves: it waits for a later run.

    Nothing is signed or marked, so the (address, coin) stays a candidate and
    is looked at again at each run until the fee falls (or more arrives).
    """


def check_fee_share(fee: int, amount: int, max_percent: int | None, coin: str) -> None:
    """Raise ``SweepFeeTooHigh`` when ``fee`` (base units of ``coin``) is above ``max_percent`` % of ``amount``."""
    if max_percent is not None and fee * 100 > amount * max_percent:
        raise SweepFeeTooHigh(f"fee {fee} is above {max_percent}% of {amount} ({coin} base units)")


def deposit_addresses_account(chain: str) -> str:
    return f"{world(chain)}:deposit_addresses"


def hot_wallet_account(chain: str) -> str:
    return f"{world(chain)}:hot_wallet"


def cold_account(chain: str) -> str:
    """What the hot wallet swept to the operator's cold storage (``chains/bitcoin/cold_sweep.py``)."""
    return f"{world(chain)}:cold"


@dataclass
class SweepReport:
    started: int = 0
    finished: int = 0
    failed: int = 0


async def record_nonzero(gateway: "Gateway", chain: str, reference: str, kind: str, postings: list[Posting]) -> None:
    """Record for booking unless an amount is zero (a free transaction, nothing moved); idempotent by reference.

    Recorded, not posted: the process that signs writes no ledger; ``serve`` books it (``record_sweep_booking``).
    """
    if all(p.amount for p in postings):
        await ledger.record_sweep_booking(gateway, chain=chain, kind=kind, reference=reference, postings=postings)


async def record_custody(gateway: "Gateway", chain: str, kind: str, coin: str, amount: int, reference: str,
                         ledger_kind: str) -> None:
    """The custody move of one final sweep (deposit addresses -> hot wallet) or top-up (the other way)."""
    source, target = ((deposit_addresses_account(chain), hot_wallet_account(chain)) if kind == SWEEP
                      else (hot_wallet_account(chain), deposit_addresses_account(chain)))
    await record_nonzero(gateway, chain, reference, ledger_kind,
                         [Posting(source, coin, -amount), Posting(target, coin, amount)])


class SweepTables:
    """SQL on a plugin's ``<prefix>_sweeps`` and ``<prefix>_sweep_marks``.

    ``chain`` is given when the tables hold several chains (a ``chain``
    column, part of the marks' key); None when they belong to one chain.
    """

    def __init__(self, prefix: str, chain: str | None = None):
        self.sweeps, self.marks, self.chain = f"{prefix}_sweeps", f"{prefix}_sweep_marks", chain
        self._cols = "chain, " if chain is not None else ""
        self._vals = ":c, " if chain is not None else ""
        self._where = "chain = :c AND " if chain is not None else ""
        self._only = " WHERE chain = :c" if chain is not None else ""

    def _params(self, **values: Any) -> dict[str, Any]:
        return {"c": self.chain, **values} if self.chain is not None else values

    async def set_status(self, gateway: "Gateway", sweep_id: str, status: str, reason: str | None = None) -> None:
        await gateway.db.execute(f"UPDATE {self.sweeps} SET status = :s, failure_reason = :r, updated_at = :now"
                                 " WHERE id = :id",
                                 {"s": status, "r": reason, "now": gateway.now(), "id": sweep_id})

    async def mark_swept(self, gateway: "Gateway", address: str, coin: str, through: int) -> None:
        await gateway.db.execute(
            f"INSERT INTO {self.marks} ({self._cols}address, coin, swept_through) VALUES ({self._vals}:a, :k, :t)"
            f" ON CONFLICT ({self._cols}address, coin) DO UPDATE SET swept_through = excluded.swept_through"
            f" WHERE {self.marks}.swept_through < excluded.swept_through",
            self._params(a=address, k=coin, t=through))

    async def candidates(self, gateway: "Gateway", chain: str) -> list[CreditedAddress]:
        """(address, coin) with a deposit credited since its last sweep read the balance, none live.

        ``swept_through`` is the time the last sweep read the balance: everything
        credited before then was in it. Credits of that same second are looked
        at once more (a zero balance then just moves the mark). The credits come
        from the core's service; marks and live sweeps are the plugin's tables.
        """
        marks = {(r["address"], r["coin"]): int(r["swept_through"]) for r in await gateway.db.fetch_all(
            f"SELECT address, coin, swept_through FROM {self.marks}{self._only}", self._params())}
        live = {r["address"] for r in await gateway.db.fetch_all(
            f"SELECT DISTINCT address FROM {self.sweeps} WHERE {self._where}status IN ('topup', 'sweeping')",
            self._params())}
        return [credit for credit in await credited_addresses(gateway, chain)
                if credit.address not in live
                and credit.last_credited_at >= marks.get((credit.address, credit.coin), 0)]

    async def new_sweep(self, gateway: "Gateway", address: str, coin: str, status: str, amount: int,
                        through: int) -> str:
        sweep_id = "swp_" + secrets.token_hex(10)
        await gateway.db.execute(
            f"INSERT INTO {self.sweeps} (id, {self._cols}address, coin, status, amount, credited_through,"
            f" created_at, updated_at) VALUES (:id, {self._vals}:a, :k, :s, :amt, :t, :now, :now)",
            self._params(id=sweep_id, a=address, k=coin, s=status, amt=gateway.db.amount_param(amount), t=through,
                         now=gateway.now()))
        return sweep_id

    async def live(self, gateway: "Gateway") -> list[Mapping[str, Any]]:
        return list(await gateway.db.fetch_all(
            f"SELECT * FROM {self.sweeps} WHERE {self._where}status IN ('topup', 'sweeping') ORDER BY created_at",
            self._params()))

    async def get(self, gateway: "Gateway", sweep_id: str) -> Mapping[str, Any]:
        row = await gateway.db.fetch_one(f"SELECT * FROM {self.sweeps} WHERE id = :id", {"id": sweep_id})
        assert row is not None, "the sweep was stored above, and sweeps are never deleted"
        return row


class SweepSteps(Protocol):
    """What a chain plugin supplies to ``sweep_chain``: its transactions, and how one moves along."""

    name: str
    native: str

    async def find(self, kind: str, sweep_id: str) -> Any | None:
        """The stored transaction of ``kind`` (SWEEP or TOPUP) for a sweep, or None."""

    async def advance(self, gateway: "Gateway", tx: Any) -> str:
        """Push one stored transaction along (send, re-send, book): 'pending', 'done' or 'failed'."""

    async def topup_failed(self, sweep_id: str) -> None:
        """A sweep's top-up failed: release what its signed transfer holds (e.g. a nonce)."""

    def token_contract(self, coin: str) -> str | None:
        """The pinned contract of a token coin, or None when the coin is not one of this chain's tokens."""

    async def token_balance(self, contract: str, address: str) -> int:
        """The token balance of ``address`` as the contract reports it."""

    async def start_token(self, gateway: "Gateway", address: str, coin: str, contract: str, amount: int,
                          through: int) -> str:
        """Sign and store a sweep of ``amount`` tokens (with a top-up when the fees need one); its id."""

    async def start_native(self, gateway: "Gateway", address: str, through: int) -> str | None:
        """Sign and store a sweep of the native balance; its id, or None (after marking) when only dust is left."""


async def start(gateway: "Gateway", steps: SweepSteps, tables: SweepTables, address: str, coin: str,
                through: int) -> str | None:
    """A new sweep of (address, coin); its id, or None when nothing is worth sweeping (an empty balance is marked)."""
    if coin == steps.native:
        return await steps.start_native(gateway, address, through)
    contract = steps.token_contract(coin)
    if contract is None:
        return None
    amount = await steps.token_balance(contract, address)
    if amount <= 0:
        await tables.mark_swept(gateway, address, coin, through)
        return None
    return await steps.start_token(gateway, address, coin, contract, amount, through)


async def follow(gateway: "Gateway", steps: SweepSteps, tables: SweepTables, sweep: Mapping[str, Any],
                 report: SweepReport, topup_failure: str) -> None:
    """Move one live sweep along: its top-up first, then the transfer; record the outcome."""
    sweep_id = sweep["id"]
    if sweep["status"] == "topup":
        topup = await steps.find(TOPUP, sweep_id)
        state = "done" if topup is None else await steps.advance(gateway, topup)
        if state == "failed":
            await steps.topup_failed(sweep_id)
            await tables.set_status(gateway, sweep_id, "failed", topup_failure)
            report.failed += 1
            return
        if state == "pending":
            return
        await tables.set_status(gateway, sweep_id, "sweeping")
    transfer = await steps.find(SWEEP, sweep_id)
    if transfer is None:  # crashed between writing the sweep and signing it
        await tables.set_status(gateway, sweep_id, "failed", "not signed")
        report.failed += 1
        return
    state = await steps.advance(gateway, transfer)
    if state == "done":
        await tables.set_status(gateway, sweep_id, "done")
        await tables.mark_swept(gateway, sweep["address"], sweep["coin"], int(sweep["credited_through"]))
        report.finished += 1
    elif state == "failed":
        await tables.set_status(gateway, sweep_id, "failed", "sweep transaction failed")
        report.failed += 1


async def sweep_chain(gateway: "Gateway", steps: SweepSteps, tables: SweepTables, *, topup_failure: str,
                      retry_later: tuple[type[BaseException], ...],
                      address_of: Callable[[str], str] = str) -> SweepReport:
    """One run of a sweep job: follow the live sweeps, then start one per credited (address, coin).

    Tokens go first: a native sweep of the same address would spend what
    their fees need, so an address with a sweep started (or one that failed
    with ``retry_later``) is left alone for the rest of the run.
    """
    report = SweepReport()
    for sweep in await tables.live(gateway):
        await follow(gateway, steps, tables, sweep, report, topup_failure)
    busy: set[str] = set()
    started: list[str] = []
    for credit in sorted(await tables.candidates(gateway, steps.name), key=lambda c: c.coin == steps.native):
        address, coin = address_of(credit.address), credit.coin
        if address in busy:
            continue
        try:
            sweep_id = await start(gateway, steps, tables, address, coin, gateway.now())
        except SweepFeeTooHigh as exc:
            log.info("%s: sweep of %s %s waits: %s", steps.name, coin, address, exc)
            busy.add(address)
            continue
        except retry_later as exc:
            log.warning("%s: cannot sweep %s %s yet: %s", steps.name, coin, address, exc)
            busy.add(address)
            continue
        if sweep_id is not None:
            busy.add(address)
            started.append(sweep_id)
            report.started += 1
    for sweep_id in started:  # send what was just signed (the same path re-sends after a crash)
        await follow(gateway, steps, tables, await tables.get(gateway, sweep_id), report, topup_failure)
    return report

